"""The greedy decode when it is not among the samples: LEVER's ``generated_program`` -> the
problem-level ``greedy`` program (data contract) -> ``lever-jax execute`` -> the method table's
``greedy`` row; a pool without a greedy decode reports greedy as unavailable.

Fixture: tests/fixtures/lever_released/gsm8k_greedy_codex_verification_test.jsonl (GSM8k test
problems 1-4; greedy in LEVER's prediction layout ``{program, exec_result, exec_acc, exec_rate}``,
in the samples' ``{code, exec_result, exec_match}`` spelling, equal to a sample, and absent)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from lever_jax.cli import main as cli_main
from lever_jax.data import jsonl
from lever_jax.data.arrays import from_flat, problems_to_arrays
from lever_jax.data.importers.lever import import_lever
from lever_jax.data.schema import Candidate, Execution, Problem, SchemaError, problem_from_dict, problem_to_dict
from lever_jax.rerank import table

FIXTURE = Path(__file__).parent / "fixtures" / "lever_released" / "gsm8k_greedy_codex_verification_test.jsonl"
GREEDY_A = "blue = 2\nwhite = blue / 2\nanswer = blue + white"
GREEDY_B = "cost = 80000 + 50000\nvalue = 80000 * 1.5\nanswer = value - cost"


def test_importer_fills_greedy_only_when_not_a_sample():
    a, b, c, d = import_lever(FIXTURE)
    assert a.greedy.program == GREEDY_A and b.greedy.program == GREEDY_B
    assert a.greedy.execution is None and a.greedy.source == "lever:gsm8k_greedy_codex_verification_test"
    assert [len(p.candidates) for p in (a, b, c, d)] == [2, 2, 2, 2]  # never added to the candidates
    assert not any(x.is_greedy for p in (a, b) for x in p.candidates)
    assert c.greedy is None and [x.is_greedy for x in c.candidates] == [False, True]
    assert d.greedy is None and not any(x.is_greedy for x in d.candidates)


def test_importer_recorded_greedy_execution():
    a, b, _, _ = import_lever(FIXTURE, recorded_execution=True)
    assert a.greedy.execution.correct and a.greedy.execution.details == {"recorded": True}  # exec_acc 1.0
    assert not b.greedy.execution.correct  # exec_match false
    assert a.greedy.execution.result_text == "{'blue': '2', 'white': '1.0', 'answer': '3.0'}"
    arrays = problems_to_arrays(list(import_lever(FIXTURE, recorded_execution=True)))
    assert arrays.greedy_correct[:3].tolist() == [1.0, 0.0, 1.0] and math.isnan(arrays.greedy_correct[3])


def test_import_execute_rerank(tmp_path, capsys):
    samples, executed = tmp_path / "samples.jsonl", tmp_path / "executed.jsonl"
    assert cli_main(["import", "--format", "lever", "--input", str(FIXTURE), "--output", str(samples)]) == 0
    assert cli_main(["execute", "--dataset", "gsm8k", "--input", str(samples), "--output", str(executed),
                     "--no-cache", "--no-progress", "--workers", "1"]) == 0
    problems = list(jsonl.read_problems(executed, require_execution=True))
    a, b, c, d = problems
    assert a.greedy.execution.status == "ok" and a.greedy.execution.correct
    assert b.greedy.execution.status == "ok" and not b.greedy.execution.correct
    assert a.greedy.execution.details["answer"] == 3.0 and b.greedy.execution.details["answer"] == -10000.0
    assert [len(p.candidates) for p in problems] == [2, 2, 2, 2]
    arrays = problems_to_arrays(problems)
    assert arrays.greedy_correct[:3].tolist() == [1.0, 0.0, 1.0] and math.isnan(arrays.greedy_correct[3])
    t = table.method_table(arrays, n_resamples=10)
    assert t["greedy"].num_problems == 3 and t["greedy"].ci.mean == pytest.approx(2 / 3)
    assert t["first_sample"].num_problems == 4  # the greedy program is not a candidate of any method
    capsys.readouterr()
    assert cli_main(["rerank", "--input", str(executed), "--bootstrap", "10"]) == 0
    assert "greedy decode (3 of 4 problems)" in capsys.readouterr().out


def test_errored_greedy_program_gets_its_own_error_key(tmp_path):
    problem = Problem("p", "gsm8k", "q", {}, 1, (Candidate("answer = 1"),), greedy=Candidate("answer = nope"))
    path, out = tmp_path / "s.jsonl", tmp_path / "e.jsonl"
    jsonl.write_problems(path, [problem])
    assert cli_main(["execute", "--dataset", "gsm8k", "--input", str(path), "--output", str(out),
                     "--no-cache", "--no-progress", "--workers", "1"]) == 0
    (done,) = jsonl.read_problems(out, require_execution=True)
    assert done.greedy.execution.status == "error" and done.greedy.execution.result_key.startswith("!err:")
    assert done.greedy.execution.result_key != done.candidates[0].execution.result_key
    assert problems_to_arrays([done]).greedy_correct.tolist() == [0.0]


EX = {"status": "ok", "result_key": "1", "result_text": "{}", "correct": True}


def _line(**greedy):
    return {"problem_id": "p", "dataset": "gsm8k", "question": "q", "gold": 1,
            "candidates": [{"program": "answer = 1", "execution": EX}], **greedy}


def test_schema_greedy_field():
    ex = EX
    p = problem_from_dict(_line(greedy={"program": "answer = 1", "gen_logprob": -1.5, "execution": ex}),
                          require_execution=True)
    assert p.greedy.program == "answer = 1" and p.greedy.gen_logprob == -1.5 and p.is_executed
    again = problem_to_dict(p)
    assert set(again["greedy"]) == {"program", "gen_logprob", "num_tokens", "source", "execution"}
    assert problem_from_dict(json.loads(json.dumps(again))) == p
    assert "greedy" not in problem_to_dict(p.replace(greedy=None))  # files without one are unchanged
    with pytest.raises(SchemaError, match="greedy.execution"):
        problem_from_dict(_line(greedy={"program": "answer = 1"}), require_execution=True)
    with pytest.raises(SchemaError, match="greedy.count"):
        problem_from_dict(_line(greedy={"program": "answer = 1", "count": 2}))
    marked = _line(greedy={"program": "answer = 2"})
    marked["candidates"][0]["is_greedy"] = True
    with pytest.raises(SchemaError, match="is_greedy"):
        problem_from_dict(marked)


def _cand(key: str, correct: bool, greedy: bool = False) -> Candidate:
    return Candidate(f"p{key}", is_greedy=greedy, execution=Execution("ok", key, key, correct=correct))


def test_pool_without_greedy_reports_it_unavailable():
    problems = [Problem("a", "gsm8k", "q", {}, 1, (_cand("1", True), _cand("2", False))),
                Problem("b", "gsm8k", "q", {}, 1, (_cand("1", True),))]
    arrays = problems_to_arrays(problems)
    assert np.isnan(arrays.greedy_correct).all()
    t = table.method_table(arrays, n_resamples=10)
    assert "greedy" not in t  # neither 0 nor the first sample
    assert "greedy" not in table.accuracies(arrays)
    assert table.format_table(t).endswith(table.GREEDY_UNAVAILABLE)
    marked = [problems[0].replace(candidates=(_cand("1", True), _cand("2", False, greedy=True)))] + problems[1:]
    text = table.format_table(table.method_table(problems_to_arrays(marked), n_resamples=10))
    assert table.GREEDY_UNAVAILABLE not in text and "greedy decode (1 of 2 problems)" in text


def test_from_flat_greedy_correct_overrides_where_known():
    common = dict(gen_logprob=np.full(3, np.nan), num_tokens=np.zeros(3), counts=np.ones(3),
                  result_ids=np.array([0, 1, 0]), correct=np.array([True, False, True]),
                  is_greedy=np.array([False, True, False]))
    marked = from_flat(["a", "b"], np.array([0, 2, 3]), **common)
    assert marked.greedy_correct[0] == 0.0 and math.isnan(marked.greedy_correct[1])
    given = from_flat(["a", "b"], np.array([0, 2, 3]), greedy_correct=np.array([np.nan, 1.0]), **common)
    assert given.greedy_correct.tolist() == [0.0, 1.0]


def test_second_checker_judges_the_greedy_program():
    from lever_jax.rerank import pool_rows

    def ex(ok: bool, official: bool) -> Execution:
        return Execution("ok", str(ok), "t", correct=ok, details={"correct_official": official})

    problems = [Problem("a", "wikitq", "q", {"table_id": "t"}, ["1"], (Candidate("x", execution=ex(True, True)),),
                        greedy=Candidate("g", execution=ex(True, False))),
                Problem("b", "wikitq", "q", {"table_id": "t"}, ["1"],
                        (Candidate("y", is_greedy=True, execution=ex(False, True)),)),
                Problem("c", "wikitq", "q", {"table_id": "t"}, ["1"], (Candidate("z", execution=ex(True, True)),))]
    arrays = problems_to_arrays(problems)
    main = table.method_table(arrays, n_resamples=10)
    assert main["greedy"].num_problems == 2 and main["greedy"].ci.mean == 0.5
    second = pool_rows.second_checker(problems, arrays, main, "correct_official", n_resamples=10)
    assert second["greedy"].num_problems == 2 and second["greedy"].ci.mean == 0.5  # a: False, b: True; c unknown
    assert second["first_sample"].num_problems == 3


def test_eval_path_counts_the_greedy_program(tmp_path):
    """`lever-jax eval`'s path (file task -> EvalSet and its CandidateArrays) judges the problem-level
    greedy program as `lever-jax rerank` does, not only an is_greedy candidate."""
    from lever_jax.inputs.examples import file_spec
    from lever_jax.inputs.feeds import load_eval_set
    from lever_jax.inputs.tokenizers import ByteTokenizer

    samples, executed = tmp_path / "samples.jsonl", tmp_path / "executed.jsonl"
    assert cli_main(["import", "--format", "lever", "--input", str(FIXTURE), "--output", str(samples)]) == 0
    assert cli_main(["execute", "--dataset", "gsm8k", "--input", str(samples), "--output", str(executed),
                     "--no-cache", "--no-progress", "--workers", "1"]) == 0
    eval_set = load_eval_set(file_spec(executed), ByteTokenizer(), 64)
    arrays = eval_set.arrays
    expected = problems_to_arrays(list(jsonl.read_problems(executed, require_execution=True))).greedy_correct
    np.testing.assert_array_equal(arrays.greedy_correct, expected)
    assert arrays.greedy_correct[:3].tolist() == [1.0, 0.0, 1.0] and math.isnan(arrays.greedy_correct[3])
