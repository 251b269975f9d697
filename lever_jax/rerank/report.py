"""Method tables and per-candidate score files: what `rerank`, `eval` and `run` print and write.

One place computes every selection method on the same :class:`CandidateArrays` so that reports,
the evaluation JSON and the end-to-end run agree to the last digit.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

import numpy as np

from lever_jax.rerank import methods, statistics, scoring
from lever_jax.data.arrays import CandidateArrays

# Display names in table order (issue 7's rows); a method is absent when its inputs are.
METHOD_LABELS: dict[str, str] = {
    "random": "random candidate (expected)",
    "first_sample": "first sample",
    "greedy": "greedy (marked in pool)",
    "max_gen_prob": "max gen-prob",
    "max_norm_gen_prob": "max normalised gen-prob",
    "majority_vote": "majority vote over execution results",
    "verifier_only": "verifier only",
    "lever_no_agg": "LEVER without aggregation",
    "lever": "LEVER (summing)",
    "lever_voting": "LEVER (voting)",
    "oracle": "oracle (any correct)",
}


@dataclasses.dataclass(frozen=True)
class MethodResult:
    """Accuracy of one method with its bootstrap CI; ``choice`` is None for expectation rows."""

    name: str
    ci: statistics.BootstrapCI
    choice: np.ndarray | None


def gen_logprob_for_rerank(arrays: CandidateArrays, normalize: bool = False) -> np.ndarray:
    """log P_LM used by LEVER: pool log-probs (optionally per-token mean) or the count fallback."""
    return methods.lever_gen_logprob(
        arrays.gen_logprob, arrays.num_tokens, arrays.counts, arrays.mask, normalize=normalize
    )


def method_choices(
    arrays: CandidateArrays,
    verifier_logprob: np.ndarray | None = None,
    *,
    normalize_gen: bool = False,
    use_gen_prob: bool = True,
    voting_threshold: float = 0.5,
) -> dict[str, np.ndarray]:
    """Chosen candidate index per problem for every applicable method (random excluded)."""
    mask = arrays.mask
    choices: dict[str, np.ndarray] = {"first_sample": methods.first_sample(mask)}
    if arrays.is_greedy.any():
        choices["greedy"] = methods.greedy(arrays.is_greedy, mask)
    if arrays.has_logprobs:
        choices["max_gen_prob"] = methods.max_gen_logprob(arrays.gen_logprob, mask)
        if (arrays.num_tokens[mask] > 0).all():
            choices["max_norm_gen_prob"] = methods.max_normalized_gen_logprob(
                arrays.gen_logprob, arrays.num_tokens, mask
            )
    choices["majority_vote"] = methods.majority_vote(arrays.result_ids, mask, arrays.counts)
    if verifier_logprob is not None:
        gen = gen_logprob_for_rerank(arrays, normalize_gen)
        if not use_gen_prob:
            gen = np.zeros_like(gen)
        ver = np.asarray(verifier_logprob, np.float32)
        choices["verifier_only"] = methods.verifier_only(ver, mask)
        choices["lever_no_agg"] = methods.lever(gen, ver, arrays.result_ids, mask, aggregate=False)
        choices["lever"] = methods.lever(gen, ver, arrays.result_ids, mask, aggregate=True)
        choices["lever_voting"] = methods.lever_voting(
            gen, ver, arrays.result_ids, mask, threshold=voting_threshold
        )
    choices["oracle"] = methods.oracle(arrays.correct, mask)
    return choices


def method_table(
    arrays: CandidateArrays,
    verifier_logprob: np.ndarray | None = None,
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
    **choice_options: Any,
) -> dict[str, MethodResult]:
    """Accuracy + 95% bootstrap CI (resampling problems) of every method, in display order."""
    per_problem: dict[str, tuple[np.ndarray, np.ndarray | None]] = {
        "random": (methods.random_expected(arrays.correct, arrays.mask, arrays.counts), None)
    }
    for name, choice in method_choices(arrays, verifier_logprob, **choice_options).items():
        per_problem[name] = (statistics.choice_correct(choice, arrays.correct).astype(np.float64), choice)
    table = {}
    for name in METHOD_LABELS:
        if name in per_problem:
            values, choice = per_problem[name]
            values = np.nan_to_num(values, nan=0.0)  # a problem without candidates counts as wrong
            table[name] = MethodResult(name, statistics.bootstrap_ci(values, n_resamples=n_resamples, seed=seed), choice)
    return table


def format_table(table: Mapping[str, MethodResult], title: str = "") -> str:
    """Markdown table: method | accuracy | 95% CI."""
    lines = [f"### {title}", ""] if title else []
    lines += ["| method | accuracy (%) | 95% CI |", "|---|---:|---:|"]
    for name, result in table.items():
        ci = result.ci
        lines.append(
            f"| {METHOD_LABELS.get(name, name)} | {100 * ci.mean:.1f} | [{100 * ci.low:.1f}, {100 * ci.high:.1f}] |"
        )
    return "\n".join(lines)


def metrics_json(table: Mapping[str, MethodResult]) -> dict[str, dict[str, float]]:
    """method -> {accuracy, ci_low, ci_high, confidence}, for metrics.json."""
    return {
        name: {
            "accuracy": r.ci.mean,
            "ci_low": r.ci.low,
            "ci_high": r.ci.high,
            "confidence": r.ci.confidence,
        }
        for name, r in table.items()
    }


def scores_json(
    arrays: CandidateArrays,
    table: Mapping[str, MethodResult],
    verifier_logprob: np.ndarray | None = None,
    *,
    normalize_gen: bool = False,
) -> dict[str, Any]:
    """Per problem, per candidate: gen_logprob, verifier_logprob, group, LEVER score, and the
    choice of every method (the layout documented in docs/data_format.md)."""
    gen = gen_logprob_for_rerank(arrays, normalize_gen)
    cand_scores = group_scores = None
    if verifier_logprob is not None:
        out = scoring.rerank(gen, np.asarray(verifier_logprob, np.float32), arrays.result_ids, arrays.mask,
                             ids_are_dense=True)
        cand_scores, group_scores = np.asarray(out.candidate_scores), np.asarray(out.group_scores)
    problems = []
    for row, problem_id in enumerate(arrays.problem_ids):
        candidates = []
        for col in np.flatnonzero(arrays.mask[row]):
            entry: dict[str, Any] = {
                "index": int(col),
                "gen_logprob": _finite_or_none(gen[row, col]),
                "group": int(arrays.result_ids[row, col]),
                "count": int(arrays.counts[row, col]),
                "correct": bool(arrays.correct[row, col]),
            }
            if verifier_logprob is not None:
                entry["verifier_logprob"] = _finite_or_none(verifier_logprob[row, col])
                entry["score"] = _finite_or_none(cand_scores[row, col])  # type: ignore[index]
                entry["group_score"] = _finite_or_none(group_scores[row, col])  # type: ignore[index]
            candidates.append(entry)
        problems.append(
            {
                "problem_id": problem_id,
                "candidates": candidates,
                "choices": {n: int(r.choice[row]) for n, r in table.items() if r.choice is not None},
            }
        )
    return {"format": "lever-jax/scores/v1", "problems": problems}


def _finite_or_none(value: float) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None
