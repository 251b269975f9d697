"""Rerank-aware SeqIO metrics: regroup per-candidate verifier scores by problem, report the table.

SeqIO evaluates one example (candidate) at a time; LEVER's metrics need all candidates of a
problem. The task's ``postprocess_fn`` (:func:`verifier_postprocess`) turns each target into a dict
with the candidate's rerank fields, and the score metric (:func:`make_rerank_metric_fn`) regroups
``(targets, scores)`` into the one ``[P, N]`` container (``lever_jax.data.arrays.CandidateArrays``)
and reports ``lever_jax.rerank.table.lever_metrics``: LEVER's names (``binary_acc``,
``rerank_acc``, ``summing_agg_rerank_acc``, ``voting_agg_rerank_acc``), ``<method>_acc`` for every
method key of the table, ``calibration_error``, ``num_problems`` and ``num_candidates``. The same
numbers `lever-jax eval` and `lever-jax rerank` report.

Score conventions (``scores_are``): ``'target'`` (default; seqio's score = log-likelihood of the
target token under the verifier's 2-way yes/no softmax, so log P(yes) = s for yes-targets and
log(1 - e^s) for no-targets) or ``'yes'`` (the score already is log P(yes)).
No TensorFlow here: jax + numpy only.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from lever_jax.data.arrays import CandidateArrays, from_flat
from lever_jax.rerank import table

RERANK_KEYS = ("problem_index", "candidate_index", "gen_logprob", "result_id", "correct", "count", "num_tokens", "has_gen_logprob")
OPTIONAL_KEYS = ("errored", "is_greedy")  # read when the task's examples carry them


def _scalar(value: Any) -> Any:
    value = np.asarray(value)
    return value.reshape(()).item() if value.size == 1 else value


def verifier_postprocess(output_or_target: Any, example: Mapping[str, Any] | None = None, is_target: bool = False) -> Any:
    """SeqIO postprocess_fn: targets become dicts of rerank fields; predictions pass through."""
    if not is_target:
        return output_or_target
    if example is None:
        raise ValueError("verifier_postprocess needs the example for targets (seqio passes it)")
    missing = [k for k in RERANK_KEYS if k not in example]
    if missing:
        raise ValueError(f"example lacks rerank fields {missing}: build it with tasks/lever_tasks.py")
    out = {k: _scalar(example[k]) for k in RERANK_KEYS + OPTIONAL_KEYS if k in example}
    out["label"] = int(out["correct"])
    return out


def _log1mexp(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(x > -math.log(2), np.log(-np.expm1(x)), np.log1p(-np.exp(x)))


def verifier_logprob_from_scores(scores: np.ndarray, labels: np.ndarray, scores_are: str) -> np.ndarray:
    """log P(yes) per candidate from seqio scores (see the module docstring)."""
    scores = np.asarray(scores, np.float64)
    if scores_are == "yes":
        return scores
    if scores_are == "target":
        return np.where(labels, scores, _log1mexp(np.minimum(scores, 0.0)))
    raise ValueError(f"scores_are must be 'target' or 'yes', got {scores_are!r}")


def group_scores(
    targets: Sequence[Mapping[str, Any]], scores: Sequence[float] | np.ndarray, scores_are: str = "target"
) -> tuple[CandidateArrays, np.ndarray]:
    """Regroup per-candidate ``(target, score)`` pairs (any order) by ``problem_index`` ->
    (CandidateArrays, f32[P, N] log P(yes))."""
    scores = np.asarray(scores, np.float64).reshape(-1)
    if len(targets) != len(scores):
        raise ValueError(f"{len(targets)} targets but {len(scores)} scores")
    if not len(targets):
        raise ValueError("no targets to evaluate")
    keys = [(int(t["problem_index"]), int(t["candidate_index"])) for t in targets]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    for a, b in zip(order, order[1:]):
        if keys[a] == keys[b]:
            raise ValueError(f"duplicate candidate {keys[a][1]} of problem {keys[a][0]}")
    problems = sorted({p for p, _ in keys})  # candidates packed in candidate_index order
    ts = [targets[i] for i in order]
    sizes = np.bincount(np.searchsorted(problems, [keys[i][0] for i in order]), minlength=len(problems))
    has = np.array([bool(int(t["has_gen_logprob"])) for t in ts])
    labels = np.array([bool(t["correct"]) for t in ts])
    arrays = from_flat(
        [str(p) for p in problems], np.concatenate([[0], np.cumsum(sizes)]),
        gen_logprob=np.where(has, [float(t["gen_logprob"]) for t in ts], np.nan),
        num_tokens=np.array([int(t["num_tokens"]) for t in ts]),
        counts=np.array([int(t["count"]) for t in ts]),
        result_ids=np.array([int(t["result_id"]) for t in ts]),
        correct=labels,
        errored=np.array([bool(t.get("errored", False)) for t in ts]),
        is_greedy=np.array([bool(t.get("is_greedy", False)) for t in ts]),
    )
    ver = np.full(arrays.shape, -np.inf, np.float32)
    ver[arrays.mask] = verifier_logprob_from_scores(scores[order], labels, scores_are)
    return arrays, ver


def make_rerank_metric_fn(
    scores_are: str = "target", gen_normalize: str = "sum", gen_coef: float = 1.0, verifier_coef: float = 1.0
) -> Callable[..., dict[str, float]]:
    """A seqio score metric ``fn(targets, scores) -> {name: value}`` (``table.lever_metrics``).

    ``gen_coef`` / ``verifier_coef`` other than 1.0 (LEVER's) are not supported by the one table
    and raise; ``gen_normalize='mean'`` is LEVER's GSM8k per-token mean."""
    if gen_normalize not in ("sum", "mean"):
        raise ValueError(f"gen_normalize must be 'sum' or 'mean', got {gen_normalize!r}")
    if (gen_coef, verifier_coef) != (1.0, 1.0):
        raise ValueError("the method table uses LEVER's coefficients (1.0, 1.0)")

    def lever_rerank_metrics(targets: Sequence[Mapping[str, Any]], scores: Sequence[float]) -> dict[str, float]:
        arrays, ver = group_scores(targets, scores, scores_are=scores_are)
        return table.lever_metrics(arrays, ver, normalize_gen=gen_normalize == "mean")

    return lever_rerank_metrics
