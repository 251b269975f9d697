"""From per-candidate verifier scores to LEVER's metrics and per-problem JSON score records.

Inputs: an `inputs.EvalSet` (every candidate of every problem) and log P(yes) per candidate.
Metrics (fractions in [0, 1], LEVER's names) come from `lever_jax.seqio_metrics.rerank_metrics`
(the same numbers the SeqIO evaluation reports: binary_acc, rerank_acc,
summing_agg_rerank_acc, voting_agg_rerank_acc and the baselines) plus the expected calibration
error of P(yes) (`calibration_error`, 10 equal-width bins over candidates). Choices per method
come from `lever_jax.scoring.rerank` / `rerank_voting` with dense result ids.

GSM8k uses LEVER's length-normalised generation log-prob (`gen_normalize='mean'`) when the pool
has real log-probs; the frequency fallback is never normalised.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from lever_jax import scoring
from lever_jax.inputs import EvalSet
from lever_jax.seqio_metrics import GroupedScores, rerank_metrics

METHODS = ("rerank", "summing_agg", "voting_agg", "lm", "verifier_only", "majority_vote")


def default_gen_normalize(dataset: str) -> str:
    return "mean" if dataset == "gsm8k" else "sum"


def calibration_error(p_yes: np.ndarray, labels: np.ndarray, num_bins: int = 10) -> float:
    """Expected calibration error of P(yes) against the labels (equal-width bins)."""
    p_yes, labels = np.asarray(p_yes, np.float64), np.asarray(labels, np.float64)
    if p_yes.size == 0:
        return float("nan")
    bins = np.minimum((p_yes * num_bins).astype(int), num_bins - 1)
    total = 0.0
    for b in range(num_bins):
        sel = bins == b
        if sel.any():
            total += sel.sum() * abs(p_yes[sel].mean() - labels[sel].mean())
    return float(total / p_yes.size)


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


def compute_metrics(eval_set: EvalSet, verifier_logprob: np.ndarray,
                    gen_normalize: Optional[str] = None) -> dict[str, float]:
    g = grouped(eval_set, verifier_logprob, gen_normalize)
    out = rerank_metrics(g)
    out["calibration_error"] = calibration_error(np.exp(verifier_logprob), eval_set.labels)
    return out


def choices(g: GroupedScores) -> dict[str, np.ndarray]:
    """Chosen candidate index per problem for every method (-1: none)."""
    dense = dict(ids_are_dense=True)
    args = (g.gen_logprob, g.verifier_logprob, g.result_ids, g.mask)
    with np.errstate(divide="ignore"):
        log_counts = np.where(g.mask, np.log(np.maximum(g.counts, 1)), 0.0).astype(np.float32)
    zeros = np.zeros_like(g.verifier_logprob)
    outs = {
        "rerank": scoring.rerank(*args, aggregate=False, **dense),
        "summing_agg": scoring.rerank(*args, aggregate=True, **dense),
        "voting_agg": scoring.rerank_voting(*args, **dense),
        "lm": scoring.rerank(*args, gen_coef=1.0, verifier_coef=0.0, aggregate=False, **dense),
        "verifier_only": scoring.rerank(*args, gen_coef=0.0, verifier_coef=1.0, aggregate=False, **dense),
        "majority_vote": scoring.rerank(log_counts, zeros, g.result_ids, g.mask, gen_coef=1.0,
                                        verifier_coef=0.0, aggregate=True, **dense),
    }
    return {k: np.asarray(v.choice) for k, v in outs.items()}


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
