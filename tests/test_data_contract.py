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
    record = {"problem_id": "x", "dataset": "mbpp", "question": "q", "gold": None,
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
_problem_st = st.builds(
    Problem,
    problem_id=_text,
    dataset=st.sampled_from(["gsm8k", "mbpp", "humaneval", "spider", "wikitq"]),
    question=_text,
    context=st.dictionaries(_text, st.none() | _text | st.lists(_text, max_size=3), max_size=3),
    gold=st.none() | _text | st.floats(allow_nan=False, allow_infinity=False) | st.lists(_text, max_size=3),
    candidates=st.lists(_candidate, max_size=4).map(tuple),
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
