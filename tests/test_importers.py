"""Importers: LEVER verification files and OpenAI / vLLM completion outputs (fixtures in tests/fixtures/python_data)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from lever_jax.cli import main as cli_main
from lever_jax.data import jsonl
from lever_jax.data.datasets import load_problems
from lever_jax.data.importers import completions, lever
from lever_jax.data.importers.merge import merge_candidates
from lever_jax.data.schema import Candidate

FIXTURES = Path(__file__).parent / "fixtures" / "python_data"


# ---------------------------------------------------------------------------------------------
# LEVER verification files


def test_infer_dataset_split() -> None:
    assert lever.infer_dataset_split("/x/mbpp_codex_verification_dev.jsonl") == ("mbpp", "dev")
    assert lever.infer_dataset_split("wikitq_codex_verification_test.jsonl.gz") == ("wikitq", "test")
    assert lever.infer_dataset_split("other.jsonl") == (None, None)


def test_lever_gsm8k_final_layout() -> None:
    ids = {p.question: p.problem_id for p in load_problems("gsm8k", "test")}
    first, second = lever.import_lever(FIXTURES / "gsm8k_codex_verification_dev.jsonl", ids_by_question=ids)
    assert first.problem_id == "gsm8k-test-0000"  # matched to the bundled test set by question text
    assert second.problem_id == "gsm8k-dev-0001" and second.gold == 1000.0  # '#### 1,000' parsed
    assert first.dataset == "gsm8k" and first.gold == 18.0 and first.context == {}
    c = first.candidates
    assert [x.count for x in c] == [3, 1, 1, 1]
    assert c[0].gen_logprob == -2.5 and c[0].num_tokens == 10  # gen_prob / norm_gen_prob
    assert c[1].num_tokens == 6 and c[2].num_tokens == 5
    assert [x.is_greedy for x in c] == [True, False, False, False]
    assert all(x.execution is None for x in c) and c[0].source == "lever:gsm8k_codex_verification_dev"


def test_lever_recorded_execution_groups_gsm8k_answers() -> None:
    (first, _) = lever.import_lever(FIXTURES / "gsm8k_codex_verification_dev.jsonl", recorded_execution=True)
    ex = [c.execution for c in first.candidates]
    assert [e.status for e in ex] == ["ok", "ok", "error", "ok"]
    assert [e.correct for e in ex] == [True, False, False, True]
    assert ex[0].result_key == ex[3].result_key  # 18 and 18.0000001 group at 1e-6
    assert ex[0].result_key != ex[1].result_key
    assert ex[2].result_key == "!err:gsm8k-dev-0000:2" and ex[2].error.startswith("ERROR")
    assert all(e.details == {"recorded": True} for e in ex)


def test_lever_mbpp_fields_and_exec_match_minus_one() -> None:
    (p,) = lever.import_lever(FIXTURES / "mbpp_codex_verification_test.jsonl", recorded_execution=True)
    assert p.problem_id == "mbpp-11" and p.context["task_id"] == 11 and len(p.context["test_list"]) == 3
    assert p.gold.startswith("def remove_Occ") and p.question.startswith("Write a python function")
    assert [c.execution.correct for c in p.candidates] == [False, False]
    assert [c.execution.status for c in p.candidates] == ["ok", "error"]
    assert p.candidates[0].is_greedy and p.candidates[0].num_tokens == 20


def test_lever_pre_dedup_layout_keeps_duplicates_unless_merged() -> None:
    (p,) = lever.import_lever(FIXTURES / "spider_codex_verification_dev.jsonl")
    assert p.problem_id == "spider-dev-0000" and p.context == {"db_id": "concert_singer"}
    assert p.gold == "SELECT count(*) FROM singer"
    # LEVER's readers keep one candidate per program dict
    assert [(c.program, c.count) for c in p.candidates] == [
        ("SELECT count(*) FROM singer", 1), ("SELECT count(*) FROM singer", 1), ("SELECT count(name) FROM singer", 1)]
    (m,) = lever.import_lever(FIXTURES / "spider_codex_verification_dev.jsonl", merge_duplicates=True)
    assert [(c.program, c.count) for c in m.candidates] == [
        ("SELECT count(*) FROM singer", 2), ("SELECT count(name) FROM singer", 1)]
    assert m.candidates[0].is_greedy and m.candidates[0].num_tokens == 6


def test_lever_wikitq_fields() -> None:
    (p,) = lever.import_lever(FIXTURES / "wikitq_codex_verification_test.jsonl", recorded_execution=True)
    assert p.context == {"table_id": "204_126"} and p.gold == ["-1"]
    assert p.candidates[0].count == 4 and p.candidates[0].gen_logprob is None
    assert p.candidates[0].execution.correct


@pytest.mark.parametrize("line,field", [
    ({"metadata": {"answer": 3}, "generated_programs": []}, "metadata.question"),
    ({"metadata": {"question": "q", "answer": 3}}, "generated_programs"),
    ({"metadata": {"question": "q", "answer": 3}, "generated_programs": [{"gen_prob": -1}]}, "generated_programs[0].code"),
    ({"metadata": {"question": "q", "answer": 3}, "generated_programs": [{"code": "a", "program_count": 0}]},
     "generated_programs[0].program_count"),
])
def test_lever_errors_name_line_and_field(tmp_path: Path, line: dict, field: str) -> None:
    good = json.loads((FIXTURES / "gsm8k_codex_verification_dev.jsonl").read_text().splitlines()[1])
    path = tmp_path / "gsm8k_codex_verification_test.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(jsonl.DataFileError) as err:
        list(lever.import_lever(path))
    assert err.value.line == 2 and err.value.field == field


def test_lever_unknown_dataset_needs_argument(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text("{}\n")
    with pytest.raises(ValueError, match="dataset"):
        list(lever.import_lever(path))


# ---------------------------------------------------------------------------------------------
# OpenAI / vLLM completions


def test_cut_and_logprob_prefix() -> None:
    assert completions.cut_at_stop("ab\n\ncd", ["\n\n"]) == 2
    assert completions.cut_at_stop("abc", ["\n\n"]) == 3
    assert completions.cut_at_stop("x#y\n\n", ["\n\n", "#"]) == 1
    tokens = ["a", "b\n", "\nc", "d"]
    # the stop "\n\n" starts inside token 1: tokens starting before the cut (0, 1) count
    assert completions.logprob_prefix(tokens, [-1.0, -2.0, -4.0, -8.0], 2) == (-3.0, 2)
    assert completions.logprob_prefix(tokens, [None, -2.0, -4.0, -8.0], 100) == (-14.0, 3)
    with pytest.raises(ValueError):
        completions.logprob_prefix(tokens, [-1.0], 2)


def test_import_openai_layouts() -> None:
    base = load_problems("gsm8k", "test")[:5]
    from lever_jax.data.prompts import STOP_SEQUENCES

    # LEVER's generation stop ("\n\n"): the chat reply below is cut at its blank line
    out = list(completions.import_completions(FIXTURES / "openai_completions.jsonl", base,
                                              stops=STOP_SEQUENCES["gsm8k"], source="openai"))
    assert [p.problem_id for p in out] == ["gsm8k-test-0000", "gsm8k-test-0001", "gsm8k-test-0002"]
    p0 = out[0]
    assert [(c.program, c.count) for c in p0.candidates] == [("n = 16 - 3 - 4\nanswer = n * 2", 1), ("answer = 18", 2)]
    assert p0.candidates[0].gen_logprob == pytest.approx(-3.0) and p0.candidates[0].num_tokens == 7
    assert p0.candidates[1].gen_logprob == pytest.approx(-2.0) and p0.candidates[1].num_tokens == 3
    (chat,) = out[1].candidates
    assert chat.program == "answer = 2 + 1" and chat.gen_logprob == pytest.approx(-0.3) and chat.num_tokens == 2
    vllm = out[2].candidates
    assert (vllm[0].gen_logprob, vllm[0].num_tokens) == (-2.0, 4)
    assert (vllm[1].gen_logprob, vllm[1].num_tokens) == (None, 2)
    assert out[0].gold == 18.0 and out[0].question == base[0].question


def test_import_openai_humaneval_program_is_prompt_plus_completion(tmp_path: Path) -> None:
    problem = load_problems("humaneval", "test")[0]
    text = "    return any(abs(a - b) < threshold for a in numbers for b in numbers if a is not b)\n\ndef extra():\n    pass"
    line = {"problem_id": problem.problem_id, "choices": [{"text": text, "logprobs": None}]}
    path = tmp_path / "he.jsonl"
    path.write_text(json.dumps(line) + "\n")
    (out,) = completions.import_completions(path, [problem])
    (cand,) = out.candidates
    assert cand.program == problem.context["prompt"] + text.split("\n\ndef")[0]
    assert cand.gen_logprob is None and cand.num_tokens is None


def test_import_openai_errors(tmp_path: Path) -> None:
    base = load_problems("gsm8k", "test")[:2]
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"problem_id": "gsm8k-test-0000", "choices": []}) + "\n"
                    + json.dumps({"problem_id": "gsm8k-test-9999", "choices": []}) + "\n")
    with pytest.raises(jsonl.DataFileError, match=r"bad.jsonl:2: field 'problem_id'"):
        list(completions.import_completions(path, base))
    path.write_text(json.dumps({"problem_id": "gsm8k-test-0000", "choices": [{"logprobs": None}]}) + "\n")
    with pytest.raises(jsonl.DataFileError, match=r"field 'choices\[0\]'"):
        list(completions.import_completions(path, base))
    path.write_text(json.dumps({"problem_id": "gsm8k-test-0000", "nothing": 1}) + "\n")
    with pytest.raises(jsonl.DataFileError, match=r"field 'response'"):
        list(completions.import_completions(path, base))


def test_merge_candidates() -> None:
    merged = merge_candidates([
        Candidate("a", gen_logprob=-1.0, source="s1"), Candidate("b", source="s1"),
        Candidate("a", gen_logprob=-9.0, count=2, source="s2", is_greedy=True), Candidate("a", source="s1")])
    assert [(c.program, c.count, c.source, c.is_greedy, c.gen_logprob) for c in merged] == [
        ("a", 4, "s1,s2", True, -1.0), ("b", 1, "s1", False, None)]


# ---------------------------------------------------------------------------------------------
# CLI


def test_cli_import_lever_and_openai(tmp_path: Path, capsys) -> None:
    out = tmp_path / "mbpp.jsonl.gz"
    assert cli_main(["import", "--format", "lever", "--input", str(FIXTURES / "mbpp_codex_verification_test.jsonl"),
                     "--output", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    summary = json.loads(captured.err.strip().splitlines()[-1])
    assert {k: summary[k] for k in ("problems", "candidates", "samples", "with_logprobs",
                                    "problems_mixed_logprobs")} == {
        "problems": 1, "candidates": 2, "samples": 2, "with_logprobs": 2, "problems_mixed_logprobs": 0}
    (p,) = jsonl.read_problems(out)
    assert p.problem_id == "mbpp-11"
    out2 = tmp_path / "gsm.jsonl"
    assert cli_main(["import", "--format", "openai", "--dataset", "gsm8k", "--split", "test",
                     "--input", str(FIXTURES / "openai_completions.jsonl"), "--output", str(out2)]) == 0
    problems = list(jsonl.read_problems(out2))
    assert len(problems) == 3 and problems[0].candidates[0].source == "openai:openai_completions"
