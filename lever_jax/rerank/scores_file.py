"""From per-candidate verifier scores to LEVER's metrics and per-problem JSON score records.

Inputs: an `inputs.EvalSet` (every candidate of every problem) and log P(yes) per candidate.
Metrics (fractions in [0, 1]; the names of LEVER and of lever_jax.rerank.grouping): binary_acc,
rerank_acc, summing_agg_rerank_acc, voting_agg_rerank_acc, and baselines (lm, verifier only,
majority vote, random, oracle), from the choices of `lever_jax.rerank.methods` (LEVER's through the
jitted `lever_jax.rerank.scoring`) scored by `lever_jax.rerank.statistics`, plus the expected calibration error
of P(yes) (`metrics.reliability`, 10 equal-width bins over candidates).

GSM8k uses LEVER's length-normalised generation log-prob (`gen_normalize='mean'`) when the pool
has real log-probs; the frequency fallback is never normalised.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from lever_jax.rerank import methods, scoring
from lever_jax.rerank import statistics as metrics_lib
from lever_jax.inputs.feeds import EvalSet
from lever_jax.rerank.grouping import GroupedScores

METHODS = ("rerank", "summing_agg", "voting_agg", "lm", "verifier_only", "majority_vote", "oracle")


def default_gen_normalize(dataset: str) -> str:
    return "mean" if dataset == "gsm8k" else "sum"


def calibration_error(p_yes: np.ndarray, labels: np.ndarray, num_bins: int = 10) -> float:
    """Expected calibration error of P(yes) against the labels (`metrics.reliability`)."""
    p_yes = np.asarray(p_yes, np.float64).reshape(1, -1)
    if p_yes.size == 0:
        return float("nan")
    with np.errstate(divide="ignore"):
        logp = np.log(p_yes)
    return metrics_lib.reliability(logp, np.asarray(labels, bool).reshape(1, -1),
                                   np.ones_like(p_yes, bool), num_bins).ece


def grouped(eval_set: EvalSet, verifier_logprob: np.ndarray,
            gen_normalize: Optional[str] = None) -> GroupedScores:
    """Padded [P, N] arrays of an eval set and its scores."""
    gen_normalize = gen_normalize or default_gen_normalize(eval_set.dataset)
    if gen_normalize not in ("sum", "mean"):
        raise ValueError(f"gen_normalize must be 'sum' or 'mean', got {gen_normalize!r}")
    gen = eval_set.gen_logprob.astype(np.float64)
    if gen_normalize == "mean":
        per_cand_has = np.repeat(eval_set.has_gen_logprob, np.diff(eval_set.offsets))
        ok = per_cand_has & (eval_set.num_tokens > 0)
        gen = np.where(ok, gen / np.maximum(eval_set.num_tokens, 1), gen)
    mask = eval_set.mask()
    return GroupedScores(
        gen_logprob=eval_set.to_rows(gen.astype(np.float32)),
        verifier_logprob=eval_set.to_rows(np.asarray(verifier_logprob, np.float32)),
        result_ids=np.where(mask, eval_set.to_rows(eval_set.result_ids, -1), -1).astype(np.int32),
        counts=eval_set.to_rows(eval_set.counts),
        labels=eval_set.to_rows(eval_set.labels.astype(bool), False),
        mask=mask,
        problem_index=np.arange(eval_set.num_problems, dtype=np.int32))


def choices(g: GroupedScores) -> dict[str, np.ndarray]:
    """Chosen candidate index per problem for every method (-1: none), via lever_jax.rerank.methods."""
    args = (g.gen_logprob, g.verifier_logprob, g.result_ids, g.mask)
    return {
        "rerank": methods.lever(*args, aggregate=False),
        "summing_agg": methods.lever(*args, aggregate=True),
        "voting_agg": methods.lever_voting(*args),
        "lm": methods.max_gen_logprob(g.gen_logprob, g.mask),
        "verifier_only": methods.verifier_only(g.verifier_logprob, g.mask),
        "majority_vote": methods.majority_vote(g.result_ids, g.mask, g.counts),
        "oracle": methods.oracle(g.labels, g.mask),
    }


def compute_metrics(eval_set: EvalSet, verifier_logprob: np.ndarray,
                    gen_normalize: Optional[str] = None) -> dict[str, float]:
    """LEVER's metrics (seqio_metrics names) + baselines + calibration error, in [0, 1]."""
    g = grouped(eval_set, verifier_logprob, gen_normalize)
    picked = choices(g)
    acc = {m: metrics_lib.accuracy(c, g.labels) for m, c in picked.items()}
    out = {
        "binary_acc": metrics_lib.binary_accuracy(g.verifier_logprob, g.labels, g.mask),
        "rerank_acc": acc["rerank"],
        "summing_agg_rerank_acc": acc["summing_agg"],
        "voting_agg_rerank_acc": acc["voting_agg"],
        "lm_rerank_acc": acc["lm"],
        "verifier_only_rerank_acc": acc["verifier_only"],
        "majority_vote_acc": acc["majority_vote"],
        "random_acc": float(np.nanmean(methods.random_expected(g.labels, g.mask, g.counts))),
        "oracle_acc": acc["oracle"],
        "calibration_error": metrics_lib.reliability(g.verifier_logprob, g.labels, g.mask).ece,
        "num_problems": float(g.mask.shape[0]),
        "num_candidates": float(g.mask.sum()),
    }
    return out


def score_records(eval_set: EvalSet, verifier_logprob: np.ndarray,
                  gen_normalize: Optional[str] = None) -> list[dict[str, Any]]:
    """One JSON record per problem: candidates (gen_logprob, verifier_logprob, group, final
    score, correct) and each method's chosen candidate and whether it is correct."""
    g = grouped(eval_set, verifier_logprob, gen_normalize)
    picked = choices(g)
    summing = scoring.rerank(g.gen_logprob, g.verifier_logprob, g.result_ids, g.mask,
                             aggregate=True, ids_are_dense=True)
    final = np.asarray(summing.candidate_scores)
    group_score = np.asarray(summing.group_scores)
    records = []
    for i, pid in enumerate(eval_set.problem_ids):
        n = int(eval_set.offsets[i + 1] - eval_set.offsets[i])
        cands = [{
            "candidate_index": j,
            "gen_logprob": float(g.gen_logprob[i, j]),
            "verifier_logprob": float(g.verifier_logprob[i, j]),
            "group": int(g.result_ids[i, j]),
            "final_score": float(final[i, j]),
            "group_score": float(group_score[i, j]) if np.isfinite(group_score[i, j]) else None,
            "correct": bool(g.labels[i, j]),
        } for j in range(n)]
        chosen = {m: int(picked[m][i]) for m in METHODS}
        records.append({
            "problem_id": pid,
            "candidates": cands,
            "choice": chosen,
            "choice_correct": {m: bool(c >= 0 and g.labels[i, c]) for m, c in chosen.items()},
        })
    return records
