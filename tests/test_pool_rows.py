"""ml_ep (the one method table) on Binder statuses, lever_count_fallback and the second-checker table
(lever_jax.rerank.pool_rows)."""
from __future__ import annotations

import numpy as np

from lever_jax.data.arrays import problems_to_arrays
from lever_jax.data.schema import Candidate, Execution, Problem
from lever_jax.rerank import pool_rows, report


def _cand(logprob: float, status: str, key: str, correct: bool, official: bool, count: int = 1) -> Candidate:
    ex = Execution(status=status, result_key=key if status == "ok" else f"!err:{key}", result_text="",
                   correct=correct, details={"correct_official": official})
    return Candidate(program=key, gen_logprob=logprob, num_tokens=4, count=count, execution=ex)


PROBLEMS = [
    Problem("a", "wikitq_binder", "q", {}, ["x"], (
        _cand(-1.0, "error", "e1", False, False), _cand(-2.0, "ok", "r1", False, False),
        _cand(-3.0, "ok", "r2", True, False, count=5))),
    Problem("b", "wikitq_binder", "q", {}, ["x"], (
        _cand(-1.0, "unsupported", "n1", False, False), _cand(-4.0, "error", "e2", False, False))),
]


def test_ml_ep_skips_errored_programs_and_falls_back() -> None:
    arrays = problems_to_arrays(PROBLEMS)
    ok = pool_rows.candidate_flags(PROBLEMS, arrays.shape[1])
    assert ok.tolist() == [[False, True, True], [False, False, False]]
    ver = np.log(np.full(arrays.shape, 0.5, np.float32))
    table = report.method_table(arrays, ver, n_resamples=50)
    assert table["ml_ep"].choice.tolist() == [1, 0]  # 'unsupported' is not error-free; b: nothing ran -> max overall


def test_count_fallback_and_second_checker() -> None:
    arrays = problems_to_arrays(PROBLEMS)
    ver = np.log(np.full(arrays.shape, 0.5, np.float32))
    rows = pool_rows.extra_rows(PROBLEMS, arrays, ver, n_resamples=50)
    assert set(rows) == {"lever_count_fallback"}
    # equal P(yes): real log-probs pick the errored e1 (-1 is the highest; LEVER leaves errors to the
    # verifier), the count fallback picks r2 (5 of the 7 samples)
    assert rows["lever_count_fallback"].choice[0] == 2 and rows["lever_count_fallback"].ci.mean == 0.5
    table = {**report.method_table(arrays, ver, n_resamples=50), **rows}
    assert table["lever"].choice[0] == 0
    second = pool_rows.second_checker(PROBLEMS, arrays, table, "correct_official", n_resamples=50)
    assert second["oracle"].ci.mean == 0.0 and table["oracle"].ci.mean == 0.5
    assert second["lever_count_fallback"].ci.mean == 0.0
