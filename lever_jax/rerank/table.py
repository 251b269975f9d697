"""The one method table: every selection method, computed once on :class:`CandidateArrays`.

`lever-jax rerank`, `lever-jax run` (table and accuracy-vs-k curves), `lever-jax eval` /
training's checkpoint metrics (``lever_metrics``) and the SeqIO metric all come from here, so they
agree to the last digit. Method keys, in display order (:data:`METHODS`):

============================  ================================================================
``random``                    expected accuracy of a uniformly random sample (count-weighted)
``first_sample``              the first candidate of the pool
``greedy``                    the greedy decode (problem-level ``greedy`` program or the
                              ``is_greedy`` candidate), over the problems that have one
``max_gen_prob``              highest generation log-prob ("ML"; needs log-probs)
``max_norm_gen_prob``         highest per-token mean generation log-prob (needs token counts)
``ml_ep``                     highest generation log-prob among programs that execute without
                              error ("ML + EP", the paper's main baseline)
``majority_vote``             largest execution-result group, count-weighted (MBR-exec)
``voting_error_free``         majority vote over programs that execute without error
``verifier_only``             highest P(yes)
``lever_no_agg``              LEVER, no aggregation (LEVER's ``rerank_acc``)
``lever``                     LEVER, "summing" aggregation (``summing_agg_rerank_acc``)
``lever_voting``              LEVER, "voting" aggregation (``voting_agg_rerank_acc``)
``oracle``                    any correct candidate (pass@k upper bound)
============================  ================================================================

A method is absent when its inputs are (no log-probs, no greedy decode, no verifier scores, no
execution status: ``CandidateArrays.errored_known``); :func:`format_table` says so for greedy
(:data:`GREEDY_UNAVAILABLE`), never counting an unknown greedy decode as wrong or as the first sample.
Errored programs are counted as LEVER does in every method: they never join a group
(``lever_jax.data.arrays``), they cast no vote in ``voting_error_free`` and are skipped by
``ml_ep``; everywhere else they are ordinary (wrong) candidates. The generation log-prob that
LEVER's score uses is :func:`gen_logprob_for_rerank` (``methods.lever_gen_logprob``: the pool's
summed log-prob, its per-token mean with ``normalize_gen``, or LEVER's ``log(count / total)``
fallback for rows lacking one), the only normalisation in the package.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Mapping, Optional, Sequence

import numpy as np

from lever_jax.data.arrays import CandidateArrays
from lever_jax.rerank import methods, statistics

METHODS: dict[str, str] = {
    "random": "random candidate (expected)",
    "first_sample": "first sample",
    "greedy": "greedy decode",
    "max_gen_prob": "max gen-prob (ML)",
    "max_norm_gen_prob": "max normalised gen-prob",
    "ml_ep": "ML + EP (max gen-prob, error-free)",
    "majority_vote": "majority vote over execution results",
    "voting_error_free": "majority vote, error-free programs",
    "verifier_only": "verifier only",
    "lever_no_agg": "LEVER without aggregation",
    "lever": "LEVER (summing)",
    "lever_voting": "LEVER (voting)",
    "oracle": "oracle (any correct)",
}

# LEVER's metric names (training selects checkpoints by them) -> method key.
LEVER_METRIC_ALIASES: dict[str, str] = {
    "rerank_acc": "lever_no_agg",
    "summing_agg_rerank_acc": "lever",
    "voting_agg_rerank_acc": "lever_voting",
}

Chooser = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (mask, counts) -> int32[P] choice


@dataclasses.dataclass(frozen=True)
class MethodResult:
    """Accuracy of one method with its bootstrap CI over ``num_problems`` problems; ``choice`` is
    None for expectation rows (random) and -1 where a problem has no choice; ``values`` (when
    known) the per-problem correctness the CI resamples (f64[P], NaN where the method does not
    apply), so per-problem reports need not recompute the table."""

    name: str
    ci: statistics.BootstrapCI
    choice: Optional[np.ndarray]
    num_problems: int
    values: Optional[np.ndarray] = None


def gen_logprob_for_rerank(arrays: CandidateArrays, normalize_gen: bool = False,
                           mask: Optional[np.ndarray] = None, counts: Optional[np.ndarray] = None) -> np.ndarray:
    """log P_LM as LEVER uses it (``methods.lever_gen_logprob``), optionally on a sub-sample."""
    return methods.lever_gen_logprob(
        arrays.gen_logprob, arrays.num_tokens, arrays.counts if counts is None else counts,
        arrays.mask if mask is None else mask, normalize=normalize_gen)


def choosers(
    arrays: CandidateArrays,
    verifier_logprob: Optional[np.ndarray] = None,
    *,
    normalize_gen: bool = False,
    use_gen_prob: bool = True,
    voting_threshold: float = 0.5,
) -> dict[str, Chooser]:
    """Every subset-selectable method as ``f(mask, counts) -> choice`` (random and greedy, which do
    not depend on the sampled subset, are not here). ``use_gen_prob=False`` drops P_LM from
    LEVER's score (ablation)."""
    ids, err = arrays.result_ids, arrays.errored
    out: dict[str, Chooser] = {"first_sample": lambda m, c: methods.first_sample(m)}
    if arrays.has_logprobs:
        out["max_gen_prob"] = lambda m, c: methods.max_gen_logprob(arrays.gen_logprob, m)
        if (arrays.num_tokens[arrays.mask] > 0).all():
            out["max_norm_gen_prob"] = lambda m, c: methods.max_normalized_gen_logprob(
                arrays.gen_logprob, arrays.num_tokens, m)
        if arrays.errored_known:
            out["ml_ep"] = lambda m, c: methods.ml_ep(arrays.gen_logprob, err, m)
    out["majority_vote"] = lambda m, c: methods.majority_vote(ids, m, c)
    if arrays.errored_known:
        out["voting_error_free"] = lambda m, c: methods.voting_error_free(ids, err, m, c)
    if verifier_logprob is not None:
        ver = np.asarray(verifier_logprob, np.float32)

        def gen(m: np.ndarray, c: np.ndarray) -> np.ndarray:
            g = gen_logprob_for_rerank(arrays, normalize_gen, m, c)
            return g if use_gen_prob else np.zeros_like(g)

        out["verifier_only"] = lambda m, c: methods.verifier_only(ver, m)
        out["lever_no_agg"] = lambda m, c: methods.lever(gen(m, c), ver, ids, m, aggregate=False)
        out["lever"] = lambda m, c: methods.lever(gen(m, c), ver, ids, m, aggregate=True)
        out["lever_voting"] = lambda m, c: methods.lever_voting(gen(m, c), ver, ids, m,
                                                                threshold=voting_threshold)
    out["oracle"] = lambda m, c: methods.oracle(arrays.correct, m)
    return out


def per_problem(
    arrays: CandidateArrays, verifier_logprob: Optional[np.ndarray] = None, *,
    chosen: Optional[Mapping[str, np.ndarray]] = None, **options: object
) -> dict[str, tuple[np.ndarray, Optional[np.ndarray]]]:
    """method -> (f64[P] per-problem correctness, NaN where the method does not apply; choice),
    in :data:`METHODS` order. Problems without candidates count as wrong. ``chosen``: choices on
    the whole pool a caller computed already (`lever-jax eval`'s one LEVER rerank), not recomputed."""
    found: dict[str, tuple[np.ndarray, Optional[np.ndarray]]] = {}
    rand = methods.random_expected(arrays.correct, arrays.mask, arrays.counts)
    found["random"] = (np.nan_to_num(rand, nan=0.0), None)
    if not np.isnan(arrays.greedy_correct).all():
        found["greedy"] = (arrays.greedy_correct.astype(np.float64),
                           methods.greedy(arrays.is_greedy, arrays.mask))
    for name, choose in choosers(arrays, verifier_logprob, **options).items():  # type: ignore[arg-type]
        choice = chosen[name] if chosen and name in chosen else choose(arrays.mask, arrays.counts)
        found[name] = (statistics.choice_correct(choice, arrays.correct).astype(np.float64), choice)
    return {name: found[name] for name in METHODS if name in found}


def accuracies(arrays: CandidateArrays, verifier_logprob: Optional[np.ndarray] = None,
               **options: object) -> dict[str, float]:
    """method -> accuracy in [0, 1] (mean over the problems where it applies)."""
    return {name: _mean(values) for name, (values, _) in per_problem(arrays, verifier_logprob, **options).items()}


def method_table(
    arrays: CandidateArrays,
    verifier_logprob: Optional[np.ndarray] = None,
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
    **options: object,
) -> dict[str, MethodResult]:
    """Accuracy + 95% bootstrap CI (resampling problems) of every method, in display order."""
    table = {}
    for name, (values, choice) in per_problem(arrays, verifier_logprob, **options).items():
        known = values[~np.isnan(values)]
        ci = statistics.bootstrap_ci(known, n_resamples=n_resamples, seed=seed)
        table[name] = MethodResult(name, ci, choice, int(known.size), values)
    return table


def lever_metrics(arrays: CandidateArrays, verifier_logprob: np.ndarray,
                  found: Optional[Mapping[str, tuple[np.ndarray, Optional[np.ndarray]]]] = None,
                  **options: object) -> dict[str, float]:
    """The flat metric dict of `eval`, training and SeqIO: ``<method>_acc`` for every method,
    LEVER's names (``binary_acc``, ``rerank_acc``, ``summing_agg_rerank_acc``,
    ``voting_agg_rerank_acc``) as aliases of the same numbers, the expected calibration error of
    P(yes), ``num_problems`` and ``num_candidates``. ``found``: :func:`per_problem` of the same
    arguments when the caller has it already (not computed twice)."""
    if found is None:
        found = per_problem(arrays, verifier_logprob, **options)
    acc = {name: _mean(values) for name, (values, _) in found.items()}
    ver = np.asarray(verifier_logprob, np.float32)
    out = {"binary_acc": statistics.binary_accuracy(ver, arrays.correct, arrays.mask)}
    out.update({alias: acc[key] for alias, key in LEVER_METRIC_ALIASES.items()})
    out.update({f"{key}_acc": value for key, value in acc.items()})
    out["calibration_error"] = statistics.reliability(ver, arrays.correct, arrays.mask).ece
    out["num_problems"] = float(arrays.num_problems)
    out["num_candidates"] = float(arrays.mask.sum())
    return out


def accuracy_curves(
    arrays: CandidateArrays,
    verifier_logprob: Optional[np.ndarray],
    ks: Sequence[int],
    trials: int,
    **options: object,
) -> dict[str, list[dict[str, float]]]:
    """Accuracy vs number of samples k for every method (random k-subsets of each pool's samples,
    ``statistics.accuracy_at_k``); random and greedy do not depend on k and are flat lines."""
    out: dict[str, list[dict[str, float]]] = {}
    flat = {name: _mean(values) for name, (values, _) in per_problem(arrays, None).items()
            if name in ("random", "greedy")}
    subset = choosers(arrays, verifier_logprob, **options)  # type: ignore[arg-type]
    for name in METHODS:
        if name in flat:
            out[name] = [{"k": int(k), "accuracy": flat[name], "std": 0.0} for k in ks]
        elif name in subset:
            points = statistics.accuracy_at_k(subset[name], arrays.correct, arrays.mask, arrays.counts,
                                              ks, num_trials=trials)
            out[name] = [{"k": p.k, "accuracy": p.mean, "std": p.std} for p in points]
    return out


# Rows other modules add beside the table (lever_jax.rerank.pool_rows), labelled the same way.
EXTRA_LABELS: dict[str, str] = {"lever_count_fallback": "LEVER (summing), count-based P_LM (ablation)"}


GREEDY_UNAVAILABLE = ("greedy decode (`greedy`): unavailable -- no problem of this pool has a greedy program "
                      "(a candidate marked `is_greedy` or a problem-level `greedy`, docs/data_format.md)")


def format_table(table: Mapping[str, MethodResult], title: str = "") -> str:
    """Markdown table: method | key | accuracy | 95% CI (a method over fewer problems says so);
    a table without a ``greedy`` row ends with :data:`GREEDY_UNAVAILABLE`."""
    total = max((r.num_problems for r in table.values()), default=0)
    lines = [f"### {title}", ""] if title else []
    lines += ["| method | key | accuracy (%) | 95% CI |", "|---|---|---:|---:|"]
    for name, r in table.items():
        label = METHODS.get(name) or EXTRA_LABELS.get(name, name)
        if r.num_problems != total:
            label += f" ({r.num_problems} of {total} problems)"
        lines.append(f"| {label} | `{name}` | {100 * r.ci.mean:.1f} | [{100 * r.ci.low:.1f}, {100 * r.ci.high:.1f}] |")
    if "greedy" not in table:
        lines += ["", GREEDY_UNAVAILABLE]
    return "\n".join(lines)


def metrics_json(table: Mapping[str, MethodResult]) -> dict[str, dict[str, float]]:
    """method -> {accuracy, ci_low, ci_high, confidence, num_problems}, for metrics.json."""
    return {
        name: {"accuracy": r.ci.mean, "ci_low": r.ci.low, "ci_high": r.ci.high,
               "confidence": r.ci.confidence, "num_problems": r.num_problems}
        for name, r in table.items()
    }


def _mean(values: np.ndarray) -> float:
    known = values[~np.isnan(values)]
    return float(known.mean()) if known.size else float("nan")
