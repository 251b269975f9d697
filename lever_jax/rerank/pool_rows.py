"""Rows beside the one method table (lever_jax.rerank.table, which has ``ml_ep``): LEVER with the
count fallback, and accuracies under a second correctness checker (WikiTQ's official evaluator).

Used by ``lever-jax run`` for pools with real generation log-probs (``wikitq_binder``):

- ``lever_count_fallback``: LEVER (summing) with ``log P_LM = log(count / total)`` in place of the
  real log-probs: the ablation that shows what the real probabilities add.
- :func:`second_checker`: every method's accuracy when its chosen candidate is judged by the
  executions' ``details[<key>]`` (``correct_official``) instead of ``correct``; the choices do not
  change (the verifier was trained on ``correct``), only the verdicts.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from lever_jax.data.arrays import CandidateArrays
from lever_jax.data.schema import Problem
from lever_jax.rerank import methods, statistics
from lever_jax.rerank.report import MethodResult


def candidate_flags(problems: Sequence[Problem], width: int, key: str | None = None) -> np.ndarray:
    """bool[B, N]: execution status ``ok`` (``key`` None) or ``details[key]`` true, per candidate."""
    out = np.zeros((len(problems), width), bool)
    for row, problem in enumerate(problems):
        for col, cand in enumerate(problem.candidates[:width]):
            ex = cand.execution
            if ex is not None:
                out[row, col] = ex.status == "ok" if key is None else bool((ex.details or {}).get(key))
    return out


def extra_rows(problems: Sequence[Problem], arrays: CandidateArrays, verifier_logprob: np.ndarray | None,
               n_resamples: int, seed: int = 0) -> dict[str, MethodResult]:
    """With a verifier and real log-probs: ``lever_count_fallback``, as a :func:`report.method_table` row."""
    if not arrays.has_logprobs or verifier_logprob is None:
        return {}
    counts_only = np.full(arrays.gen_logprob.shape, np.nan, np.float32)  # forces the count fallback
    gen = methods.lever_gen_logprob(counts_only, arrays.num_tokens, arrays.counts, arrays.mask)
    choices = {"lever_count_fallback": methods.lever(gen, np.asarray(verifier_logprob, np.float32),
                                                     arrays.result_ids, arrays.mask, aggregate=True)}
    return {name: MethodResult(name, statistics.bootstrap_ci(
                statistics.choice_correct(choice, arrays.correct), n_resamples=n_resamples, seed=seed), choice,
                arrays.num_problems)
            for name, choice in choices.items()}


def second_checker(problems: Sequence[Problem], arrays: CandidateArrays, table: Mapping[str, MethodResult],
                   key: str, n_resamples: int, seed: int = 0) -> dict[str, MethodResult]:
    """Every row of ``table`` re-judged with ``details[key]`` (random/oracle recomputed)."""
    correct = candidate_flags(problems, arrays.shape[1], key)
    out = {}
    for name, result in table.items():
        if name == "random":
            values = np.nan_to_num(methods.random_expected(correct, arrays.mask, arrays.counts), nan=0.0)
            choice = None
        elif name == "greedy":
            choice = result.choice
            values = _greedy_values(problems, choice, correct, key)
        else:
            choice = methods.oracle(correct, arrays.mask) if name == "oracle" else result.choice
            if choice is None:
                continue
            values = statistics.choice_correct(choice, correct)
        known = values[~np.isnan(values)] if values.dtype.kind == "f" else values
        out[name] = MethodResult(name, statistics.bootstrap_ci(known, n_resamples=n_resamples, seed=seed), choice,
                                 int(known.size))
    return out


def _greedy_values(problems: Sequence[Problem], choice: np.ndarray, correct: np.ndarray, key: str) -> np.ndarray:
    """Per problem, the greedy decode judged by ``details[key]``: the problem-level greedy program,
    else the ``is_greedy`` candidate; NaN where neither exists (as the main table's greedy row)."""
    values = np.full(len(problems), np.nan)
    for row, problem in enumerate(problems):
        if problem.greedy is not None and problem.greedy.execution is not None:
            values[row] = float(bool((problem.greedy.execution.details or {}).get(key)))
        elif choice[row] >= 0:
            values[row] = float(correct[row, choice[row]])
    return values
