"""The data contract: schema validation, JSONL round trips, gzip, atomic writes, streaming, errors."""
from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lever_jax.data import jsonl
from lever_jax.data.arrays import problems_to_arrays
from lever_jax.data.schema import (
    SCHEMA_VERSION,
    STATUSES,
    Candidate,
    Execution,
    Problem,
    SchemaError,
    problem_from_dict,
    problem_to_dict,
)


def _problem(pid: str = "gsm8k-test-0000", executed: bool = True) -> Problem:
    def ex(key: str, correct: bool, status: str = "ok") -> Execution | None:
        if not executed:
            return None
        return Execution(status=status, result_key=key, result_text=f"answer = {key}", correct=correct,
                         error=None if status == "ok" else "ZeroDivisionError", details={"answer": key})

    return Problem(
        problem_id=pid,
        dataset="gsm8k",
        question="Janet has 3 apples. How many?",
        context={},
        gold=18.0,
        candidates=(
            Candidate("answer = 18", gen_logprob=-3.5, num_tokens=7, count=2, source="code002_NL+SL",
                      is_greedy=True, execution=ex("18", True)),
            Candidate("answer = 1/0", gen_logprob=None, num_tokens=None, source=None,
                      execution=ex("error:0", False, "error")),
            Candidate("answer = 17", gen_logprob=float("-inf"), num_tokens=0, execution=ex("17", False)),
        ),
    )


def _line(obj: dict) -> str:
    return json.dumps(obj) + "\n"


# ---------------------------------------------------------------------------------------------
# Round trips


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_round_trip_plain_and_gzip(tmp_path: Path, suffix: str) -> None:
    problems = [_problem("p0"), _problem("p1")]
    path = tmp_path / f"pool{suffix}"
    assert jsonl.write_problems(path, problems) == 2
    back = list(jsonl.read_problems(path, require_execution=True))
    assert back == problems
    assert back[0].is_executed and back[0].candidates[0].is_greedy
    if suffix.endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8") as fh:  # really gzip-compressed
            assert json.loads(fh.readline())["schema_version"] == SCHEMA_VERSION


def test_gzip_output_is_deterministic(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl.gz"
    jsonl.write_problems(a, [_problem()])
    jsonl.write_problems(b, [_problem()])
    assert a.read_bytes() == b.read_bytes()


def test_samples_file_has_no_execution(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    jsonl.write_problems(path, [_problem(executed=False)])
    record = json.loads(path.read_text())
    assert all("execution" not in c for c in record["candidates"])
    (problem,) = jsonl.read_problems(path)
    assert not problem.is_executed
    with pytest.raises(jsonl.DataFileError) as err:
        list(jsonl.read_problems(path, require_execution=True))
    assert err.value.line == 1 and err.value.field == "candidates[0].execution"


def test_defaults_for_optional_candidate_fields() -> None:
    record = {"problem_id": "x", "dataset": "gsm8k", "question": "q", "gold": None,
              "candidates": [{"program": "pass"}]}
    (cand,) = problem_from_dict(record).candidates
    assert cand == Candidate(program="pass", gen_logprob=None, num_tokens=None, count=1, source=None)
    assert problem_from_dict(record).context == {}


_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)
_execution = st.builds(
    Execution,
    status=st.sampled_from(STATUSES),
    result_key=_text,
    result_text=_text,
    error=st.none() | _text,
    correct=st.booleans(),
    details=st.none() | st.dictionaries(_text, st.integers(-5, 5), max_size=2),
)
_candidate = st.builds(
    Candidate,
    program=_text,
    gen_logprob=st.none() | st.floats(max_value=0.0, allow_nan=False, allow_infinity=False),
    num_tokens=st.none() | st.integers(0, 10_000),
    count=st.integers(1, 100),
    source=st.none() | _text,
    is_greedy=st.booleans(),
    execution=st.none() | _execution,
)
_extra = st.dictionaries(_text.map(lambda k: "x_" + k), st.none() | _text | st.lists(_text, max_size=3), max_size=2)
_nonempty = _text.filter(lambda t: t.strip() != "")
# (dataset, context, gold) that mean something for each executor (see schema._check_dataset_fields)
_dataset_fields = st.one_of(
    st.tuples(st.just("gsm8k"), _extra, st.none() | st.floats(allow_nan=False, allow_infinity=False)),
    st.tuples(st.just("mbpp"), st.builds(lambda t, e: {**e, "test_list": t}, st.lists(_text, min_size=1, max_size=3),
                                         _extra), st.none() | _text),
    st.tuples(st.just("humaneval"), st.builds(lambda t, n, e: {**e, "test": t, "entry_point": n}, _nonempty, _nonempty,
                                              _extra), st.none() | _text),
    st.tuples(st.just("spider"), st.builds(lambda d, e: {**e, "db_id": d}, _text, _extra), st.none() | _text),
    st.tuples(st.just("wikitq"), st.builds(lambda d, e: {**e, "table_id": d}, _text, _extra),
              st.none() | _text | st.lists(_text, max_size=3)),
)
_problem_st = st.builds(
    lambda pid, fields, question, candidates: Problem(pid, fields[0], question, fields[1], fields[2], candidates),
    _text, _dataset_fields, _text, st.lists(_candidate, max_size=4).map(tuple),
)


@settings(max_examples=60, deadline=None)
@given(_problem_st)
def test_dict_round_trip_property(problem: Problem) -> None:
    encoded = json.loads(json.dumps(problem_to_dict(problem)))
    assert problem_from_dict(encoded) == problem


# ---------------------------------------------------------------------------------------------
# Atomic writes


class _Boom(RuntimeError):
    pass


def _exploding(n: int):
    for i in range(n):
        yield _problem(f"p{i}")
    raise _Boom("generator failed mid-way")


@pytest.mark.parametrize("name", ["out.jsonl", "out.jsonl.gz"])
def test_writer_that_raises_leaves_no_target_and_no_temp_file(tmp_path: Path, name: str) -> None:
    target = tmp_path / name
    with pytest.raises(_Boom):
        jsonl.write_problems(target, _exploding(3))
    assert not target.exists()
    assert os.listdir(tmp_path) == []


def test_failed_write_keeps_previous_file(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    jsonl.write_problems(target, [_problem("old")])
    before = target.read_bytes()
    with pytest.raises(_Boom):
        jsonl.write_problems(target, _exploding(2))
    assert target.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["out.jsonl"]


def test_atomic_output_has_normal_permissions(tmp_path: Path) -> None:
    target = tmp_path / "scores.json"
    jsonl.write_json(target, {"a": 1})
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask
    assert json.loads(target.read_text()) == {"a": 1}


def test_write_json_lines_creates_parent_dirs(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "er" / "x.jsonl"
    assert jsonl.write_json_lines(target, [{"a": 1}, {"b": 2}]) == 2
    assert [o for _, o in jsonl.iter_json_lines(target)] == [{"a": 1}, {"b": 2}]


# ---------------------------------------------------------------------------------------------
# Reader errors name file:line:field


def _good() -> dict:
    return problem_to_dict(_problem())


def _bad_cases() -> list[tuple[str, dict | str, str | None]]:
    cases: list[tuple[str, dict | str, str | None]] = []

    def mutate(name: str, fn, field: str | None) -> None:
        obj = _good()
        fn(obj)
        cases.append((name, obj, field))

    mutate("missing problem_id", lambda o: o.pop("problem_id"), "problem_id")
    mutate("bad dataset", lambda o: o.update(dataset="imagenet"), "dataset")
    mutate("bad version", lambda o: o.update(schema_version=99), "schema_version")
    mutate("context list", lambda o: o.update(context=[1]), "context")
    mutate("candidates not list", lambda o: o.update(candidates={}), "candidates")
    mutate("program missing", lambda o: o["candidates"][1].pop("program"), "candidates[1].program")
    mutate("program int", lambda o: o["candidates"][0].update(program=3), "candidates[0].program")
    mutate("logprob str", lambda o: o["candidates"][2].update(gen_logprob="-1"), "candidates[2].gen_logprob")
    mutate("logprob positive inf", lambda o: o["candidates"][0].update(gen_logprob=float("inf")),
           "candidates[0].gen_logprob")
    mutate("count zero", lambda o: o["candidates"][0].update(count=0), "candidates[0].count")
    mutate("num_tokens float", lambda o: o["candidates"][0].update(num_tokens=1.5), "candidates[0].num_tokens")
    mutate("is_greedy str", lambda o: o["candidates"][0].update(is_greedy="yes"), "candidates[0].is_greedy")
    mutate("status unknown", lambda o: o["candidates"][1]["execution"].update(status="crashed"),
           "candidates[1].execution.status")
    mutate("correct missing", lambda o: o["candidates"][2]["execution"].pop("correct"),
           "candidates[2].execution.correct")
    mutate("result_key int", lambda o: o["candidates"][0]["execution"].update(result_key=18),
           "candidates[0].execution.result_key")
    cases.append(("not an object", "[1, 2]", "<record>"))
    cases.append(("invalid json", '{"problem_id": ', None))
    return cases


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
@pytest.mark.parametrize("name,bad,field", _bad_cases(), ids=[c[0] for c in _bad_cases()])
def test_reader_error_names_file_line_field(tmp_path: Path, suffix: str, name: str, bad, field) -> None:
    path = tmp_path / f"bad{suffix}"
    good = _good()
    bad_line = bad if isinstance(bad, str) else json.dumps(bad)
    # line 1 good, line 2 blank (skipped but counted), line 3 good with another id, line 4 bad
    other = dict(good, problem_id="other")
    with jsonl.open_text(path, "wt") as fh:
        fh.write(_line(good) + "\n" + _line(other) + bad_line + "\n")
    with pytest.raises(jsonl.DataFileError) as err:
        list(jsonl.read_problems(path))
    msg = str(err.value)
    assert err.value.path == str(path) and err.value.line == 4 and err.value.field == field
    assert msg.startswith(f"{path}:4:")
    if field is not None:
        assert f"field '{field}'" in msg


def test_duplicate_problem_id_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "dup.jsonl"
    path.write_text(_line(_good()) + _line(_good()))
    with pytest.raises(jsonl.DataFileError, match=r"dup.jsonl:2: field 'problem_id': duplicate"):
        list(jsonl.read_problems(path))


def test_missing_file_is_a_data_file_error(tmp_path: Path) -> None:
    with pytest.raises(jsonl.DataFileError, match="no such file"):
        list(jsonl.read_problems(tmp_path / "nope.jsonl"))


def test_corrupt_gzip_is_a_data_file_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl.gz"
    jsonl.write_problems(path, [_problem(f"p{i}") for i in range(50)])
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # truncated download
    with pytest.raises(jsonl.DataFileError, match="broken.jsonl.gz"):
        list(jsonl.read_problems(path))
    path.write_bytes(b"not gzip at all\n")
    with pytest.raises(jsonl.DataFileError, match="broken.jsonl.gz"):
        list(jsonl.read_problems(path))


def test_invalid_utf8_is_a_data_file_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(_line(_good()).encode() + b'{"question": "caf\xe9"}\n')
    with pytest.raises(jsonl.DataFileError, match=r"latin1.jsonl:2"):
        list(jsonl.read_problems(path))


def test_schema_error_carries_field() -> None:
    with pytest.raises(SchemaError) as err:
        problem_from_dict({"dataset": "gsm8k", "candidates": []})
    assert err.value.field == "problem_id"


# ---------------------------------------------------------------------------------------------
# Streaming


def test_reader_streams_before_reaching_a_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "stream.jsonl.gz"
    with jsonl.open_text(path, "wt") as fh:
        for i in range(3):
            fh.write(_line(problem_to_dict(_problem(f"p{i}"))))
        fh.write("this is not json\n")
    it = jsonl.read_problems(path)
    assert [next(it).problem_id for _ in range(3)] == ["p0", "p1", "p2"]
    with pytest.raises(jsonl.DataFileError):
        next(it)


def test_writer_consumes_a_generator_lazily(tmp_path: Path) -> None:
    produced: list[int] = []

    def gen():
        for i in range(1000):
            produced.append(i)
            yield _problem(f"p{i}", executed=False)

    path = tmp_path / "big.jsonl.gz"
    assert jsonl.write_problems(path, gen()) == 1000
    first = next(jsonl.read_problems(path))
    assert first.problem_id == "p0" and len(produced) == 1000


def test_read_records_custom_parser(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1}\n{"a": "x"}\n')

    def parse(obj):
        if not isinstance(obj["a"], int):
            raise SchemaError("a", "expected int")
        return obj["a"]

    it = jsonl.read_records(path, parse)
    assert next(it) == 1
    with pytest.raises(jsonl.DataFileError, match=r"r.jsonl:2: field 'a': expected int"):
        next(it)


# ---------------------------------------------------------------------------------------------
# Arrays


def test_problems_to_arrays_dense_ids_and_padding() -> None:
    p = _problem()
    q = p.replace(problem_id="q", candidates=(p.candidates[2], p.candidates[2], p.candidates[0]))
    arrays = problems_to_arrays([p, q, p.replace(problem_id="empty", candidates=())])
    assert arrays.shape == (3, 3)
    assert arrays.result_ids.tolist() == [[0, 1, 2], [0, 0, 1], [-1, -1, -1]]
    assert arrays.mask.tolist() == [[True] * 3, [True] * 3, [False] * 3]
    assert arrays.counts.tolist()[0] == [2, 1, 1]
    assert arrays.correct.tolist()[1] == [False, False, True]
    assert arrays.is_greedy.tolist()[0] == [True, False, False]
    assert not arrays.has_logprobs  # one candidate has gen_logprob None -> NaN


def test_problems_to_arrays_rejects_unexecuted() -> None:
    with pytest.raises(ValueError, match="has no execution"):
        problems_to_arrays([_problem(executed=False)])


# ---------------------------------------------------------------------------------------------
# Bad input (issue 12, section 7): one line naming file, line and field; exit 2; nothing written


def _record(**changes):
    record = {"problem_id": "p1", "dataset": "gsm8k", "question": "q", "context": {}, "gold": 3.0,
              "candidates": [{"program": "answer = 3", "gen_logprob": -1.0}]}
    record.update(changes)
    return record


def _mbpp(context):
    return {"problem_id": "m1", "dataset": "mbpp", "question": "q", "context": context, "gold": "",
            "candidates": [{"program": "def f(x):\n    return x"}]}


_BAD_LINES = {
    "nested": ('{"problem_id": "p", "context": {"x": ' + "[" * 50_000 + "]" * 50_000 + "}}", None, "nested too deeply"),
    "nested_moderately": (json.dumps(_record(context={"x": json.loads("[" * 300 + "]" * 300)})), "context.x[...]", "nested more"),
    "lone_surrogate": (json.dumps(_record(question="ok \ud800")), "question", "lone surrogate"),
    "nan_gold": (json.dumps(_record()).replace('"gold": 3.0', '"gold": NaN'), "gold", "NaN is not a JSON number"),
    "inf_logprob": (json.dumps(_record()).replace('-1.0', 'Infinity'), "candidates[0].gen_logprob", "Infinity"),
    "gold_text": (json.dumps(_record(gold="three")), "gold", "expected a number"),
    "gold_inf": (json.dumps(_record()).replace('"gold": 3.0', '"gold": -Infinity'), "gold", "finite"),
    "positive_logprob": (json.dumps(_record(candidates=[{"program": "x", "gen_logprob": 2.5}])),
                         "candidates[0].gen_logprob", "<= 0"),
    "huge_count": (json.dumps(_record(candidates=[{"program": "x", "count": 10**30}])), "candidates[0].count", "[1,"),
    "unknown_candidate_key": (json.dumps(_record(candidates=[{"program": "x", "logprob": -1.0}])),
                              "candidates[0].logprob", "did you mean 'gen_logprob'"),
    "unknown_problem_key": (json.dumps({**_record(), "golds": 1}), "golds", "unknown field"),
    "unknown_execution_key": (json.dumps(_record(candidates=[{"program": "x", "execution": {
        "status": "ok", "result_key": "k", "result_text": "", "correct": True, "corect": True}}])),
        "candidates[0].execution.corect", "did you mean 'correct'"),
    "mbpp_test_list_string": (json.dumps(_mbpp({"test_list": "assert f(1) == 1"})), "context.test_list", "one string"),
    "mbpp_test_list_missing": (json.dumps(_mbpp({})), "context.test_list", "missing"),
    "mbpp_test_list_empty": (json.dumps(_mbpp({"test_list": []})), "context.test_list", "at least one"),
    "humaneval_no_test": (json.dumps({**_mbpp({"entry_point": "f"}), "dataset": "humaneval"}), "context.test", "missing"),
    "spider_no_db": (json.dumps({**_mbpp({}), "dataset": "spider", "gold": "SELECT 1"}), "context.db_id", "missing"),
}


@pytest.mark.parametrize("case", sorted(_BAD_LINES))
def test_bad_input_names_file_line_field(tmp_path: Path, case: str) -> None:
    line, field, words = _BAD_LINES[case]
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(_record(problem_id="first")) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(jsonl.DataFileError) as info:
        list(jsonl.read_problems(path))
    err = info.value
    assert (err.line, err.field) == (2, field), str(err)
    assert words in str(err) and "\n" not in str(err) and str(err).startswith(f"{path}:2:")


def test_corrupt_deflate_stream(tmp_path: Path) -> None:
    body = "".join(json.dumps(_record(problem_id=f"p{i}")) + "\n" for i in range(300)).encode()
    data = bytearray(gzip.compress(body))
    for i in range(40, 80):
        data[i] ^= 0xFF
    path = tmp_path / "bad.jsonl.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(jsonl.DataFileError, match="corrupt compressed data"):
        list(jsonl.read_problems(path))


def _cli(argv: list[str]) -> int:
    from lever_jax.cli.main import main

    return main(argv)


def test_cli_bad_input_exit_2_one_line_no_output(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(_BAD_LINES["lone_surrogate"][0] + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    code = _cli(["execute", "--dataset", "gsm8k", "--input", str(bad), "--output", str(out), "--no-cache",
                 "--no-progress", "--workers", "1"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and not out.exists() and not list(tmp_path.glob(".out*"))
    assert err.count("\n") == 0 and f"{bad}:1: field 'question'" in err and "Traceback" not in err
    for name, text in (("empty.jsonl", ""), ("count.jsonl", _BAD_LINES["huge_count"][0] + "\n")):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        assert _cli(["rerank", "--input", str(path)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"lever-jax: error: {path}") and err.count("\n") == 0


def test_bad_line_after_executed_windows_keeps_cache_and_writes_nothing(tmp_path: Path) -> None:
    from lever_jax.execution.base import Limits
    from lever_jax.execution.cache import ExecutionCache
    from lever_jax.execution.python_gsm8k import GSM8kExecutor
    from lever_jax.execution.runner import execute_problems
    from lever_jax.execution.sandbox import Sandbox

    path = tmp_path / "in.jsonl"
    lines = [json.dumps(_record(problem_id=f"p{i}", candidates=[{"program": f"answer = {i}"}])) for i in range(4)]
    path.write_text("\n".join(lines + [_BAD_LINES["gold_text"][0]]) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    cache = ExecutionCache(tmp_path / "cache")
    with Sandbox(workers=1, limits=Limits(timeout_s=5)) as sandbox:
        with pytest.raises(jsonl.DataFileError):
            jsonl.write_problems(out, execute_problems(jsonl.read_problems(path), GSM8kExecutor(), sandbox, cache,
                                                       progress=False, window=2))
    cache.close()
    assert not out.exists() and not list(tmp_path.glob(".out*"))
    cache = ExecutionCache(tmp_path / "cache")
    assert len(cache) == 4  # both windows before the bad line were executed and kept
    cache.close()


def test_lone_surrogates_from_programs_are_written(tmp_path: Path) -> None:
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inp.write_text(json.dumps(_record(candidates=[{"program": "answer = '\\ud800'\nnote = 'x\\udfff'"}])) + "\n")
    assert _cli(["execute", "--dataset", "gsm8k", "--input", str(inp), "--output", str(out), "--no-cache",
                 "--no-progress", "--workers", "1"]) == 0
    (problem,) = jsonl.read_problems(out, require_execution=True)
    assert "\\ud800" in problem.candidates[0].execution.result_text
