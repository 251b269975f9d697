"""Rerank-aware SeqIO metrics: group per-candidate verifier scores by problem, report LEVER's metrics.

SeqIO evaluates one example (candidate) at a time; LEVER's metrics need all candidates of a
problem. The task's ``postprocess_fn`` (:func:`verifier_postprocess`) turns each target into a dict
with the candidate's rerank fields, and the score metric (:func:`make_rerank_metric_fn`) regroups
``(targets, scores)`` into padded ``[P, N]`` arrays and scores them with the selectors of
``lever_jax.rerank.methods`` (LEVER's own choices run the jitted ``lever_jax.rerank.scoring.rerank`` /
``rerank_voting``), as ``lever-jax rerank`` does.

Reported (fractions in [0, 1]; LEVER's names): ``binary_acc`` (P(yes) > 0.5 vs label, averaged per
problem then over problems), ``rerank_acc`` (no aggregation), ``summing_agg_rerank_acc``,
``voting_agg_rerank_acc``, and baselines ``lm_rerank_acc`` (highest generation log-prob, or the count fallback),
``verifier_only_rerank_acc`` (log P(yes) alone), ``majority_vote_acc`` (execution-result groups
weighted by count), ``random_acc`` (expected accuracy of a count-weighted random candidate),
``oracle_acc``; plus ``num_problems`` and ``num_candidates``.

Score conventions (``scores_are``): ``'target'`` (default; seqio's score = log-likelihood of the
target token under the verifier's 2-way yes/no softmax, so log P(yes) = s for yes-targets and
log(1 - e^s) for no-targets) or ``'yes'`` (the score already is log P(yes)).
No TensorFlow here: jax + numpy only.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from lever_jax.rerank import methods, statistics

RERANK_KEYS = ("problem_index", "candidate_index", "gen_logprob", "result_id", "correct", "count", "num_tokens", "has_gen_logprob")


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
    out = {k: _scalar(example[k]) for k in RERANK_KEYS}
    out["label"] = int(out["correct"])
    return out


@dataclasses.dataclass(frozen=True)
class GroupedScores:
    """Per-problem padded arrays built from per-candidate targets and scores."""

    gen_logprob: np.ndarray  # f32[P, N]
    verifier_logprob: np.ndarray  # f32[P, N]
    result_ids: np.ndarray  # i32[P, N]
    counts: np.ndarray  # i32[P, N]
    labels: np.ndarray  # bool[P, N]
    mask: np.ndarray  # bool[P, N]
    problem_index: np.ndarray  # i32[P]


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
    targets: Sequence[Mapping[str, Any]], scores: Sequence[float] | np.ndarray, scores_are: str = "target", gen_normalize: str = "sum"
) -> GroupedScores:
    """Regroup per-candidate ``(target, score)`` pairs into padded ``[P, N]`` arrays (by problem_index)."""
    scores = np.asarray(scores, np.float64).reshape(-1)
    if len(targets) != len(scores):
        raise ValueError(f"{len(targets)} targets but {len(scores)} scores")
    if not len(targets):
        raise ValueError("no targets to evaluate")
    problems = sorted({int(t["problem_index"]) for t in targets})
    row_of = {p: i for i, p in enumerate(problems)}
    width = max(int(t["candidate_index"]) for t in targets) + 1
    shape = (len(problems), width)
    gen = np.zeros(shape, np.float32)
    ver = np.zeros(shape, np.float32)
    ids = np.full(shape, -1, np.int32)
    counts = np.zeros(shape, np.int32)
    labels = np.zeros(shape, bool)
    mask = np.zeros(shape, bool)
    label_vec = np.array([bool(t["correct"]) for t in targets])
    ver_vec = verifier_logprob_from_scores(scores, label_vec, scores_are)
    for t, v in zip(targets, ver_vec):
        r, c = row_of[int(t["problem_index"])], int(t["candidate_index"])
        if mask[r, c]:
            raise ValueError(f"duplicate candidate {c} of problem {t['problem_index']}")
        lp = float(t["gen_logprob"])
        if gen_normalize == "mean" and int(t["has_gen_logprob"]) and int(t["num_tokens"]) > 0:
            lp /= int(t["num_tokens"])
        elif gen_normalize not in ("sum", "mean"):
            raise ValueError(f"gen_normalize must be 'sum' or 'mean', got {gen_normalize!r}")
        gen[r, c], ver[r, c] = lp, v
        ids[r, c], counts[r, c] = int(t["result_id"]), int(t["count"])
        labels[r, c], mask[r, c] = bool(t["correct"]), True
    return GroupedScores(gen, ver, ids, counts, labels, mask, np.array(problems, np.int32))


def rerank_metrics(grouped: GroupedScores, gen_coef: float = 1.0, verifier_coef: float = 1.0) -> dict[str, float]:
    """LEVER's metrics and the baselines on grouped scores (``lever_jax.rerank.methods`` selectors, which
    run the jitted scorer for LEVER's own choices; ``lever_jax.rerank.statistics`` accuracies)."""
    g = grouped
    acc = functools.partial(statistics.accuracy, correct=g.labels)
    args = (g.gen_logprob, g.verifier_logprob, g.result_ids, g.mask)
    coefs = dict(gen_coef=gen_coef, verifier_coef=verifier_coef)
    out = {
        "binary_acc": statistics.binary_accuracy(g.verifier_logprob, g.labels, g.mask),
        "rerank_acc": acc(methods.lever(*args, aggregate=False, **coefs)),
        "summing_agg_rerank_acc": acc(methods.lever(*args, aggregate=True, **coefs)),
        "voting_agg_rerank_acc": acc(methods.lever_voting(*args, gen_coef=gen_coef)),
        "lm_rerank_acc": acc(methods.max_gen_logprob(g.gen_logprob, g.mask)),
        "verifier_only_rerank_acc": acc(methods.verifier_only(g.verifier_logprob, g.mask)),
        "majority_vote_acc": acc(methods.majority_vote(g.result_ids, g.mask, g.counts)),
        "random_acc": float(np.nanmean(methods.random_expected(g.labels, g.mask, g.counts))),
        "oracle_acc": acc(methods.oracle(g.labels, g.mask)),
        "num_problems": float(g.mask.shape[0]),
        "num_candidates": float(g.mask.sum()),
    }
    return out


def make_rerank_metric_fn(
    scores_are: str = "target", gen_normalize: str = "sum", gen_coef: float = 1.0, verifier_coef: float = 1.0
) -> Callable[..., dict[str, float]]:
    """A seqio score metric ``fn(targets, scores) -> {name: value}`` with these settings."""

    def lever_rerank_metrics(targets: Sequence[Mapping[str, Any]], scores: Sequence[float]) -> dict[str, float]:
        grouped = group_scores(targets, scores, scores_are=scores_are, gen_normalize=gen_normalize)
        return rerank_metrics(grouped, gen_coef=gen_coef, verifier_coef=verifier_coef)

    return lever_rerank_metrics

