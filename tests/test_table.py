"""The one method table: keys, the paper's baselines (ML + EP, error-free voting), errored
programs never grouping, greedy over known problems, LEVER's aliases, and the SeqIO / eval paths
giving the same numbers as `rerank`."""
from __future__ import annotations

import math

import numpy as np
import pytest

from lever_jax.data.arrays import from_flat, problems_to_arrays
from lever_jax.data.schema import Candidate, Execution, Problem
from lever_jax.rerank import grouping, methods, table


def _cand(key: str, correct: bool, *, status: str = "ok", lp: float | None = None, count: int = 1,
          greedy: bool = False) -> Candidate:
    return Candidate(program=f"p{key}{lp}", gen_logprob=lp, num_tokens=2, count=count, is_greedy=greedy,
                     execution=Execution(status=status, result_key=key, result_text=key, correct=correct))


def _pool() -> list[Problem]:
    return [
        # The most likely program errors; ML picks it, ML + EP the next one (correct).
        Problem("a", "gsm8k", "q", {}, 1.0, (_cand("!err", False, status="error", lp=-0.1),
                                              _cand("1", True, lp=-1.0), _cand("2", False, lp=-2.0))),
        # Two errored programs with the SAME (malformed) key: they must not form a group of 2, so
        # majority vote is a three-way tie -> first; error-free voting picks the first ok one.
        Problem("b", "gsm8k", "q", {}, 1.0, (_cand("!e", False, status="timeout", lp=-0.5),
                                              _cand("!e", False, status="timeout", lp=-0.6),
                                              _cand("1", True, lp=-3.0, greedy=True))),
        # No greedy marked here: greedy is computed over problems a..b only where known.
        Problem("c", "gsm8k", "q", {}, 1.0, (_cand("1", True, lp=-1.0, count=2), _cand("2", False, lp=-0.5))),
    ]


def test_errored_programs_never_group():
    arrays = problems_to_arrays(_pool())
    assert arrays.result_ids[1].tolist() == [0, 1, 2]  # equal keys, but both errored
    assert arrays.errored[1].tolist() == [True, True, False]


def test_paper_baselines_and_greedy():
    arrays = problems_to_arrays(_pool())
    res = table.per_problem(arrays)
    assert list(res) == [k for k in table.METHODS if k in res]  # display order
    assert res["max_gen_prob"][1].tolist() == [0, 0, 1]
    assert res["ml_ep"][1].tolist() == [1, 2, 1]
    assert res["majority_vote"][1].tolist() == [0, 0, 0]
    assert res["voting_error_free"][1].tolist() == [1, 2, 0]
    # greedy known for problem b only (correct): 1 of 1, not 1 of 3
    t = table.method_table(arrays, n_resamples=20)
    assert t["greedy"].num_problems == 1 and t["greedy"].ci.mean == 1.0
    assert t["ml_ep"].ci.mean == pytest.approx(2 / 3) and t["max_gen_prob"].ci.mean == pytest.approx(0.0)
    assert "(1 of 3 problems)" in table.format_table(t)


def test_all_errored_rows_fall_back():
    err = np.array([[True, True]])
    mask = np.ones((1, 2), bool)
    assert methods.ml_ep(np.array([[-2.0, -1.0]]), err, mask).tolist() == [1]
    assert methods.voting_error_free(np.array([[0, 1]]), err, mask, np.array([[1, 3]])).tolist() == [1]


def test_lever_aliases_are_the_same_numbers():
    arrays = problems_to_arrays(_pool())
    ver = np.log(np.array([[0.1, 0.9, 0.2], [0.5, 0.5, 0.4], [0.9, 0.2, 1e-9]], np.float32))
    m = table.lever_metrics(arrays, ver)
    acc = table.accuracies(arrays, ver)
    for alias, key in table.LEVER_METRIC_ALIASES.items():
        assert m[alias] == acc[key] == m[f"{key}_acc"]
    assert set(acc) == set(table.METHODS)  # every method applies to this pool


def test_seqio_metric_equals_the_table():
    problems = _pool()
    arrays = problems_to_arrays(problems)
    ver = np.log(np.array([[0.1, 0.9, 0.2], [0.5, 0.5, 0.4], [0.9, 0.2, 0.3]], np.float32))
    targets, scores = [], []
    for p, problem in enumerate(problems):
        for c, cand in enumerate(problem.candidates):
            targets.append(dict(problem_index=p, candidate_index=c, gen_logprob=cand.gen_logprob,
                                result_id=hash(cand.execution.result_key) % 97, correct=int(cand.execution.correct),
                                count=cand.count, num_tokens=cand.num_tokens, has_gen_logprob=1,
                                errored=int(cand.execution.status != "ok"), is_greedy=int(cand.is_greedy)))
            scores.append(float(ver[p, c]))
    order = np.random.default_rng(0).permutation(len(targets))
    got = grouping.make_rerank_metric_fn(scores_are="yes")([targets[i] for i in order], [scores[i] for i in order])
    expected = table.lever_metrics(arrays, ver)
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, nan_ok=True), key


def test_from_flat_without_status_leaves_out_status_methods():
    arrays = from_flat(["x"], np.array([0, 2]), gen_logprob=np.array([-1.0, -2.0]), num_tokens=np.array([1, 1]),
                       counts=np.array([1, 1]), result_ids=np.array([5, 5]), correct=np.array([True, True]))
    assert not arrays.errored_known and arrays.result_ids.tolist() == [[0, 0]]
    res = table.per_problem(arrays)
    assert "ml_ep" not in res and "voting_error_free" not in res and "majority_vote" in res


def test_frequency_fallback_is_the_one_normalisation():
    arrays = problems_to_arrays([Problem("z", "gsm8k", "q", {}, 1.0,
                                         (_cand("1", True, count=3), _cand("2", False, lp=-0.1)))])
    gen = table.gen_logprob_for_rerank(arrays)
    assert gen[0].tolist() == pytest.approx([math.log(3 / 4), math.log(1 / 4)])
