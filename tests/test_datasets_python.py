"""Python datasets (GSM8k, MBPP, HumanEval) and the bundled GSM8k / HumanEval pools."""
from __future__ import annotations

import collections
import functools
import gzip
import json
import warnings
from pathlib import Path

import pytest

from lever_jax.data import datasets, jsonl
from lever_jax.data.bundled import BUNDLED_DIR, bundled_path
from lever_jax.data.datasets import gsm8k, humaneval, mbpp


# ---------------------------------------------------------------------------------------------
# Loaders


def test_gsm8k_counts_and_gold() -> None:
    train = datasets.load_problems("gsm8k", "train")
    test = datasets.load_problems("gsm8k", "test")
    assert (len(train), len(test)) == (7473, 1319)
    assert test[0].problem_id == "gsm8k-test-0000" and test[0].gold == 18.0
    assert test[1318].problem_id == "gsm8k-test-1318"
    assert all(isinstance(p.gold, float) for p in train + test)
    assert test[0].context == {} and test[0].candidates == ()
    assert datasets.gold_program("gsm8k", test[0]) is None


@pytest.mark.parametrize("text,gold", [("so 5\n#### 1,234", 1234.0), ("#### -3.5", -3.5), ("a #### b #### 7", 7.0)])
def test_gsm8k_parse_gold(text: str, gold: float) -> None:
    assert gsm8k.parse_gold_answer(text) == gold


@pytest.mark.parametrize("text", ["no marker", "#### seven", "#### 1/2"])
def test_gsm8k_parse_gold_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        gsm8k.parse_gold_answer(text)


def test_gsm8k_bad_file_names_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"question": "q", "answer": "#### 1"}\n{"question": "q2", "answer": "#### x"}\n')
    with pytest.raises(jsonl.DataFileError, match=r"t.jsonl:2: field 'answer'"):
        gsm8k.problems_from_file(path, "test")


def test_mbpp_official_split() -> None:
    sizes = {s: len(datasets.load_problems("mbpp", s)) for s in mbpp.SPLITS}
    assert sizes == {"prompt": 10, "test": 500, "validation": 90, "train": 374, "all": 974}
    test = datasets.load_problems("mbpp", "test")
    assert test[0].problem_id == "mbpp-11" and test[-1].problem_id == "mbpp-510"
    ids = [p.context["task_id"] for p in datasets.load_problems("mbpp", "all")]
    assert ids == list(range(1, 975))
    p = test[0]
    assert p.question.startswith("Write a python function to remove first and last occurrence")
    assert set(p.context) >= {"test_list", "test_setup_code", "challenge_test_list"}
    assert len(p.context["test_list"]) == 3 and all(t.startswith("assert") for t in p.context["test_list"])
    assert datasets.gold_program("mbpp", p) == p.gold and "def remove_Occ" in p.gold
    assert [mbpp.split_of(i) for i in (1, 10, 11, 510, 511, 600, 601, 974)] == [
        "prompt", "prompt", "test", "test", "validation", "validation", "train", "train"]


def test_mbpp_sanitized_variant() -> None:
    sizes = {s: len(datasets.load_problems("mbpp", s, "sanitized")) for s in ("prompt", "test", "validation", "train")}
    assert sizes == {"prompt": 7, "test": 257, "validation": 43, "train": 120}
    p = datasets.load_problems("mbpp", "test", "sanitized")[0]
    assert p.problem_id == "mbpp-11" and "remove first and last occurrence" in p.question
    assert p.context["entry_point"] == "remove_Occ" and p.gold.startswith("def remove_Occ(s,ch): \n    for i")
    assert "Write a python" not in p.gold  # docstring dropped: CodeT's solutions are indented differently
    assert all(t.startswith("assert ") for t in p.context["test_list"]) and len(p.context["test_list"]) >= 3
    sanitized = datasets.load_problems("mbpp", "all", "sanitized")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # some solutions have invalid escapes such as '\w'
        for q in sanitized:
            compile(q.gold, q.problem_id, "exec")  # every repaired gold parses
    by_id = {q.problem_id: q for q in sanitized}
    assert by_id["mbpp-98"].context["test_setup_code"] == "import math\n"  # tests use math.isclose
    assert mbpp.test_imports(["assert re.match('a', x)", "assert f(1) == 2"]) == "import re\n"


def test_mbpp_asserts_from_check_handles_multiline() -> None:
    src = "def check(candidate):\n    assert f(\n        1) == 2\n    x = 1\n    assert f(2) == 3, 'msg'\n"
    assert mbpp.asserts_from_check(src) == ["assert f(1) == 2", "assert f(2) == 3, 'msg'"]


def test_humaneval() -> None:
    problems = datasets.load_problems("humaneval", "test")
    assert len(problems) == 164
    p = problems[0]
    assert p.problem_id == "humaneval-0" and p.context["entry_point"] == "has_close_elements"
    assert "def check(candidate)" in p.context["test"]
    assert p.gold.startswith(p.context["prompt"]) and p.question == p.context["prompt"]
    assert problems[-1].problem_id == "humaneval-163"
    compile(p.gold, "<gold>", "exec")


def test_unknown_dataset_split_variant_errors() -> None:
    with pytest.raises(ValueError, match="unknown dataset"):
        datasets.load_problems("imagenet", "test")
    with pytest.raises(ValueError, match="no split"):
        datasets.load_problems("gsm8k", "dev")
    with pytest.raises(ValueError, match="variant"):
        datasets.load_problems("mbpp", "test", "tiny")


def test_bundled_path_stays_inside() -> None:
    assert bundled_path("gsm8k", "test.jsonl.gz").exists()
    with pytest.raises(ValueError):
        bundled_path("..", "..", "etc")
    with pytest.raises(FileNotFoundError, match="DATA_CARD"):
        bundled_path("nope.txt", must_exist=True)


@pytest.mark.parametrize("folder", ["gsm8k", "gsm8k_pool", "mbpp", "humaneval", "humaneval_pool"])
def test_bundle_folders_have_licence_and_card(folder: str) -> None:
    path = BUNDLED_DIR / folder
    assert (path / "DATA_CARD.md").is_file()
    assert any(p.name.startswith("LICENSE") for p in path.iterdir())
    for f in path.rglob("*"):  # keep the repository small: everything big is compressed
        if f.is_file() and not f.name.endswith(".gz"):
            assert f.stat().st_size < 64 * 1024, f


# ---------------------------------------------------------------------------------------------
# The GSM8k pools


@functools.lru_cache(maxsize=None)
def _pool(name: str, kind: str = "recorded") -> tuple:
    """A bundled GSM8k pool: 'recorded' (pre-filled answers, what the data card's statistics
    describe), 'executed' (`lever-jax execute`'s output) or 'samples'."""
    return tuple(jsonl.read_problems(bundled_path("gsm8k_pool", f"{name}.{kind}.jsonl.gz"),
                                     require_execution=kind != "samples"))


@pytest.fixture(scope="module")
def code002():
    return _pool("code002")


def test_gsm8k_pool_matches_test_set(code002) -> None:
    test = datasets.load_problems("gsm8k", "test")
    assert [p.problem_id for p in code002] == [p.problem_id for p in test]
    assert all(p.gold == t.gold and p.question == t.question for p, t in zip(code002, test))
    raw = sum(c.count for p in code002 for c in p.candidates)
    assert raw == 12 * 1319 + 1318 + 1317  # 12 Faithful-CoT settings + two PoT files (rows missing)


def test_gsm8k_pool_sources_counts_greedy(code002) -> None:
    per_source = collections.Counter()
    for p in code002:
        programs = [c.program for c in p.candidates]
        assert len(programs) == len(set(programs))  # duplicates merged
        assert sum(c.is_greedy for c in p.candidates) == 1
        for c in p.candidates:
            sources = c.source.split(",")
            assert len(sources) == c.count and len(set(sources)) == c.count
            assert c.is_greedy == ("code002_NL+SL" in sources)
            per_source.update(sources)
            assert c.gen_logprob is None
    assert per_source["code002_NL+SL"] == 1319 and per_source["pot_codex_fewshot"] == 1318
    assert "code002_nosolver" not in per_source and len(per_source) == 14


def test_gsm8k_pool_statistics_match_data_card(code002) -> None:
    stats = json.loads(bundled_path("gsm8k_pool", "stats.json").read_text())["stats"]
    oracle = majority = 0
    for p in code002:
        oracle += any(c.execution.correct for c in p.candidates)
        votes: dict[str, list] = {}
        for c in p.candidates:
            ex = c.execution
            if ex.status == "ok":
                votes.setdefault(ex.result_key, [0, ex.correct])[0] += c.count
            else:
                assert ex.result_key.startswith(f"!err:{p.problem_id}:") and not ex.correct
        if votes:
            majority += max(votes.values(), key=lambda v: v[0])[1]
    assert round(100 * oracle / 1319, 1) == round(stats["code002"]["oracle"], 1) == 93.6
    assert round(100 * majority / 1319, 1) == round(stats["code002"]["majority_vote"], 1) == 81.7
    greedy = sum(c.execution.correct for p in code002 for c in p.candidates if c.is_greedy)
    assert round(100 * greedy / 1319, 1) == 72.3


def test_gsm8k_pool_error_keys_unique_and_correctness(code002) -> None:
    for p in code002[:200]:
        keys = [c.execution.result_key for c in p.candidates if c.execution.status != "ok"]
        assert len(keys) == len(set(keys))
        for c in p.candidates:
            if c.execution.status == "ok":
                assert c.execution.correct == (abs(c.execution.details["answer"] - p.gold) <= 1e-4)


def test_gsm8k_samples_files_equal_executed_without_execution() -> None:
    for name in ("code002", "other_llms"):
        samples = _pool(name, "samples")
        executed = _pool(name)
        assert len(samples) == len(executed) == 1319
        for s, e in zip(samples, executed):
            assert all(c.execution is None for c in s.candidates)
            assert [(c.program, c.count, c.source) for c in s.candidates] == [
                (c.program, c.count, c.source) for c in e.candidates]


def test_other_llm_pool_sources() -> None:
    pool = _pool("other_llms")
    sources = collections.Counter(s for p in pool for c in p.candidates for s in c.source.split(","))
    assert set(sources) == {f"{m}_{v}" for m in ("code001", "text002", "text003", "gpt-3.5-turbo", "gpt4")
                            for v in ("NL+SL", "noNL")}
    assert all(n == 1319 for n in sources.values())
    assert not any(c.is_greedy for p in pool for c in p.candidates)


def test_gsm8k_pool_gzip_is_deterministic_header() -> None:
    raw = bundled_path("gsm8k_pool", "code002.samples.jsonl.gz").read_bytes()
    assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\x00\x00\x00\x00"  # mtime 0
    with gzip.open(bundled_path("gsm8k_pool", "code002.samples.jsonl.gz"), "rt") as fh:
        assert json.loads(fh.readline())["problem_id"] == "gsm8k-test-0000"


# ---------------------------------------------------------------------------------------------
# The HumanEval pool (CodeGen-16B x 100, CodeT)


def _script(name: str):
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_humaneval_pool_file() -> None:
    pool = list(jsonl.read_problems(bundled_path("humaneval_pool", "codegen16b.samples.jsonl.gz")))
    problems = datasets.load_problems("humaneval", "test")
    assert [p.problem_id for p in pool] == [p.problem_id for p in problems]
    for p, ref in zip(pool, problems):
        assert sum(c.count for c in p.candidates) == 100
        assert len({c.program for c in p.candidates}) == len(p.candidates)
        assert p.context == ref.context and p.gold == ref.gold
        entry = p.context["entry_point"]
        assert all(f"def {entry}(" in c.program for c in p.candidates)
        assert all(c.source == "codegen16b_codet" and c.execution is None for c in p.candidates)


def test_humaneval_truncation_and_test_extraction() -> None:
    build = _script("build_humaneval_pool")
    assert build.truncate("    return 1\n\n\ndef g():\n    pass") == "    return 1\n\n"
    assert build.truncate("    x = 1\n    # inner comment\n    return x\n# end\nprint(1)") == (
        "    x = 1\n    # inner comment\n    return x")
    assert build.truncate("    return 2\nif __name__ == '__main__':\n    f()") == "    return 2"
    sample = "f(1) == 2\nassert f(2) == 3, 'two'\nassert \n    f(3) == 4\nassert g(1) == 1\nassert f(\n"
    assert build.extract_tests(sample, "f") == ["assert f(1) == 2", "assert f(2) == 3, 'two'", "assert f(3) == 4"]
    assert len(build.extract_tests("f(1)\n" + "assert f(1)\n" * 10, "f")) == 5


def test_humaneval_test_cases_file() -> None:
    with gzip.open(bundled_path("humaneval_pool", "codet_test_cases.jsonl.gz"), "rt") as fh:
        rows = [json.loads(line) for line in fh]
    assert len(rows) == 164 and rows[0]["problem_id"] == "humaneval-0"
    assert rows[0]["tests"][0] == "assert has_close_elements([], 1) == False, 'Empty list'"
    for row in rows:
        assert len(row["tests"]) == len(set(row["tests"])) <= row["num_extracted"]
        for t in row["tests"]:
            compile(t, "<test>", "exec")


def test_pass_at_k_estimator() -> None:
    build = _script("build_humaneval_pool")
    assert build.pass_at_k(100, 0, 1) == 0.0 and build.pass_at_k(100, 100, 1) == 1.0
    assert build.pass_at_k(100, 25, 1) == pytest.approx(0.25)
    assert build.pass_at_k(10, 1, 10) == 1.0 and build.pass_at_k(100, 95, 10) == 1.0
    assert build.pass_at_k(4, 2, 2) == pytest.approx(1 - (2 * 1) / (4 * 3))


def test_humaneval_executed_pool_matches_card() -> None:
    path = bundled_path("humaneval_pool", "codegen16b.executed.jsonl.gz")
    stats = json.loads(bundled_path("humaneval_pool", "stats.json").read_text())["executed"]
    pool = list(jsonl.read_problems(path, require_execution=True))
    assert len(pool) == 164 and all(sum(c.count for c in p.candidates) == 100 for p in pool)
    pass1 = sum(sum(c.count for c in p.candidates if c.execution.correct) / 100 for p in pool) / 164
    assert round(100 * pass1, 1) == round(stats["pass@1"], 1) == 22.2  # the card's number (22.16)
    assert abs(100 * pass1 - 22.1) < 0.1  # LEVER_NOTES' 22.1, up to the load-dependent 5 s time-outs
    assert sum(any(c.execution.correct for c in p.candidates) for p in pool) == stats["solvable_problems"] == 121


@pytest.mark.parametrize("dataset,split", [("humaneval", "test"), ("mbpp", "prompt")])
def test_verify_gold_command(dataset: str, split: str, capsys, tmp_path: Path) -> None:
    from lever_jax.cli import main as cli_main

    out = tmp_path / "gold.jsonl"
    assert cli_main(["verify-gold", "--dataset", dataset, "--split", split, "--limit", "3", "--workers", "1",
                     "--output", str(out)]) == 0
    assert json.loads(capsys.readouterr().out) == {"problems": 3, "executed": 3, "correct": 3}
    problems = list(jsonl.read_problems(out, require_execution=True))
    assert [p.candidates[0].source for p in problems] == ["gold"] * 3


def test_verify_gold_reports_failures(monkeypatch, capsys) -> None:
    from lever_jax.cli import main as cli_main

    good, bad = datasets.load_problems("humaneval", "test")[:2]
    bad = bad.replace(gold=bad.context["prompt"] + "    return None\n")
    monkeypatch.setattr(datasets, "load_problems", lambda dataset, split, variant=None: [good, bad])
    assert cli_main(["verify-gold", "--dataset", "humaneval", "--split", "test", "--workers", "1",
                     "--show-failures"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["problems"], summary["executed"], summary["correct"]) == (2, 2, 1)
    assert [f["problem_id"] for f in summary["failures"]] == ["humaneval-1"]


def test_codet_test_results_align_with_pool() -> None:
    with gzip.open(bundled_path("humaneval_pool", "codet_test_cases.jsonl.gz"), "rt") as fh:
        tests = {row["problem_id"]: row["tests"] for row in map(json.loads, fh)}
    with gzip.open(bundled_path("humaneval_pool", "codet_test_results.jsonl.gz"), "rt") as fh:
        results = {row["problem_id"]: row for row in map(json.loads, fh)}
    assert set(results) == {pid for pid, t in tests.items() if t}
    pool = {p.problem_id: p for p in jsonl.read_problems(bundled_path("humaneval_pool", "codegen16b.samples.jsonl.gz"))}
    for pid, row in results.items():
        assert row["num_tests"] == len(tests[pid]) and len(row["passed"]) == len(pool[pid].candidates)
        assert all(len(bits) == row["num_tests"] and set(bits) <= {"0", "1"} for bits in row["passed"])
    stats = json.loads(bundled_path("humaneval_pool", "stats.json").read_text())["codet"]
    executed = list(jsonl.read_problems(bundled_path("humaneval_pool", "codegen16b.executed.jsonl.gz")))
    run = _script("run_codet_tests")
    passed = {pid: row["passed"] for pid, row in results.items()}
    assert run.dual_agreement(passed, executed, True) == pytest.approx(stats["codet_sqrt_programs_x_tests"])


def test_dual_agreement_toy() -> None:
    from lever_jax.data.schema import Candidate, Execution, Problem

    run = _script("run_codet_tests")

    def cand(count: int, correct: bool) -> Candidate:
        return Candidate("p", count=count, execution=Execution("ok", "k", "", correct=correct))

    # cluster "11" (1 program x 2 tests) vs cluster "10" (3 programs x 1 test)
    problem = Problem("humaneval-0", "humaneval", "q", {}, None, (cand(1, True), cand(3, False)))
    assert run.dual_agreement({"humaneval-0": ["11", "10"]}, [problem], sqrt_programs=False) == 0.0  # 3 > 2
    assert run.dual_agreement({"humaneval-0": ["11", "10"]}, [problem], sqrt_programs=True) == 100.0  # 2 > 1.73
    assert run.dual_agreement({}, [problem], sqrt_programs=True) == 25.0  # no tests: random sample
