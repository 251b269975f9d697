"""Evaluation metrics for reranking (numpy only).

* :func:`accuracy` / :func:`choice_correct`: correctness of chosen candidates (choice -1 = wrong);
* :func:`bootstrap_ci`: percentile bootstrap over problems, deterministic seed, vectorised;
* :func:`accuracy_ci`, :func:`paired`, :func:`paired_gain`: an accuracy and a paired gain with their
  bootstrap CIs, as the reports and tables write them;
* :func:`accuracy_at_k`: accuracy with k samples per problem, averaged over random subsets;
* :func:`binary_accuracy`: LEVER's ``binary_acc`` (P(yes) > threshold vs label, per problem, then
  averaged over problems);
* :func:`reliability`: reliability bins and expected calibration error of P(yes).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Sequence

import numpy as np

__all__ = [
    "choice_correct",
    "accuracy",
    "BootstrapCI",
    "bootstrap_ci",
    "accuracy_ci",
    "paired",
    "paired_gain",
    "AccuracyAtK",
    "subsample_counts",
    "accuracy_at_k",
    "binary_accuracy",
    "Reliability",
    "reliability",
]


def choice_correct(choice: np.ndarray, correct: np.ndarray) -> np.ndarray:
    """float[B]: 1.0 where the chosen candidate is correct; a choice of -1 counts as wrong."""
    choice = np.asarray(choice)
    correct = np.asarray(correct, bool)
    if choice.shape != correct.shape[:1]:
        raise ValueError(f"choice shape {choice.shape} does not match correct {correct.shape}")
    if np.any(choice >= correct.shape[1]):
        raise ValueError("choice index out of range")
    picked = np.take_along_axis(correct, np.maximum(choice, 0)[:, None], axis=1)[:, 0]
    return np.where(choice >= 0, picked, False).astype(np.float64)


def accuracy(choice: np.ndarray, correct: np.ndarray) -> float:
    """Fraction of problems whose chosen candidate is correct."""
    per_problem = choice_correct(choice, correct)
    return float(per_problem.mean()) if per_problem.size else float("nan")


@dataclasses.dataclass(frozen=True)
class BootstrapCI:
    """Mean of per-problem values with a percentile-bootstrap confidence interval."""

    mean: float
    low: float
    high: float
    confidence: float
    n_resamples: int
    seed: int

    def __str__(self) -> str:
        return f"{100 * self.mean:.1f} [{100 * self.low:.1f}, {100 * self.high:.1f}]"


def bootstrap_ci(
    values: np.ndarray,
    *,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    max_chunk_elements: int = 2_000_000,
) -> BootstrapCI:
    """Percentile bootstrap CI of ``mean(values)`` resampling problems with replacement.

    Deterministic for a given ``seed``. Vectorised: resamples are drawn in chunks of at most
    ``max_chunk_elements`` indices, so memory stays bounded for large B.
    NaN values (e.g. problems without candidates) are an error: drop them first.
    """
    values = np.asarray(values, np.float64).reshape(-1)
    if values.size == 0:
        raise ValueError("bootstrap_ci needs at least one value")
    if np.isnan(values).any():
        raise ValueError("bootstrap_ci got NaN values; drop undefined problems first")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    rng = np.random.default_rng(seed)
    n = values.size
    per_chunk = max(1, max_chunk_elements // n)
    means = np.empty(n_resamples)
    for start in range(0, n_resamples, per_chunk):
        stop = min(n_resamples, start + per_chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = values[idx].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return BootstrapCI(float(values.mean()), float(low), float(high), confidence, n_resamples, seed)


def accuracy_ci(values: Sequence[Optional[float]], n_resamples: int) -> Optional[dict[str, float]]:
    """Accuracy + percentile bootstrap CI over the problems where ``values`` is defined (None: none)."""
    known = np.array([v for v in values if v is not None], np.float64)
    if not known.size:
        return None
    ci = bootstrap_ci(known, n_resamples=n_resamples)
    return {"accuracy": ci.mean, "ci_low": ci.low, "ci_high": ci.high, "problems": int(known.size)}


def paired(a: Sequence[Optional[float]], b: Sequence[Optional[float]], n_resamples: int) -> Optional[dict[str, float]]:
    """Paired bootstrap of mean(a - b) over the problems where both are defined (None: neither)."""
    both = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
    if not both:
        return None
    diff = np.array([x - y for x, y in both], np.float64)
    ci = bootstrap_ci(diff, n_resamples=n_resamples)
    return {"gain": ci.mean, "ci_low": ci.low, "ci_high": ci.high, "problems": len(both)}


def paired_gain(a: np.ndarray, b: np.ndarray, correct: np.ndarray, n_resamples: int) -> dict[str, float]:
    """Bootstrap CI of accuracy(choice ``a``) - accuracy(choice ``b``), resampling problems (paired)."""
    diff = choice_correct(a, correct).astype(np.float64) - choice_correct(b, correct).astype(np.float64)
    ci = bootstrap_ci(np.nan_to_num(diff), n_resamples=n_resamples)
    return {"gain": ci.mean, "ci_low": ci.low, "ci_high": ci.high}


@dataclasses.dataclass(frozen=True)
class AccuracyAtK:
    """Accuracy with k samples: mean over trials (and its std across trials)."""

    k: int
    mean: float
    std: float
    num_trials: int


def subsample_counts(
    counts: np.ndarray, mask: np.ndarray, k: int, rng: np.random.Generator
) -> np.ndarray:
    """Draw k of each row's samples without replacement; returns the per-candidate counts.

    A candidate with ``count = c`` stands for c separate samples of the same program (pools
    merge duplicates), so subsets are drawn from the expanded multiset of samples, as if the LLM
    had been sampled k times. Rows with fewer than k samples keep all of them.
    """
    mask = np.asarray(mask, bool)
    counts = np.where(mask, np.asarray(counts, np.int64), 0)
    if np.any(counts < 0):
        raise ValueError("counts must be non-negative")
    batch, width = counts.shape
    totals = counts.sum(axis=1)
    max_total = int(totals.max(initial=0))
    if max_total == 0:
        return np.zeros_like(counts)
    # sample s of row b belongs to candidate searchsorted(cumsum(counts[b]), s, 'right')
    cum = np.cumsum(counts, axis=1)
    slots = np.arange(max_total)
    owner = np.stack([np.searchsorted(cum[b], slots, side="right") for b in range(batch)])
    keys = rng.random((batch, max_total))
    keys[slots[None, :] >= totals[:, None]] = np.inf  # padding slots sort last
    order = np.argsort(keys, axis=1, kind="stable")[:, :k]
    picked = np.take_along_axis(owner, order, axis=1)
    valid = np.take_along_axis(slots[None, :] < totals[:, None], order, axis=1)
    flat = (np.arange(batch)[:, None] * width + np.minimum(picked, width - 1))[valid]
    return np.bincount(flat, minlength=batch * width).reshape(batch, width)


def accuracy_at_k(
    choose: Callable[[np.ndarray, np.ndarray], np.ndarray],
    correct: np.ndarray,
    mask: np.ndarray,
    counts: np.ndarray | None,
    ks: Sequence[int],
    *,
    num_trials: int = 20,
    seed: int = 0,
) -> list[AccuracyAtK]:
    """Accuracy of a selector when only k samples per problem are available.

    ``choose(mask_k, counts_k) -> int[B]`` is called on each random subset (see
    :func:`subsample_counts`; candidates not drawn are masked out, the others keep their
    position, so dense result ids stay valid for ``ids_are_dense``). Selectors that depend on
    counts (majority vote, LEVER's frequency fallback) must use ``counts_k``. The random-sample
    baseline needs no subsets: its expectation does not depend on k.
    """
    mask = np.asarray(mask, bool)
    counts = np.ones(mask.shape, np.int64) if counts is None else np.asarray(counts)
    rng = np.random.default_rng(seed)
    results = []
    for k in ks:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        accs = []
        for _ in range(num_trials):
            counts_k = subsample_counts(counts, mask, int(k), rng)
            mask_k = mask & (counts_k > 0)
            accs.append(np.mean(choice_correct(np.asarray(choose(mask_k, counts_k)), correct)))
        results.append(AccuracyAtK(int(k), float(np.mean(accs)), float(np.std(accs)), num_trials))
    return results


def binary_accuracy(
    verifier_logprob: np.ndarray, correct: np.ndarray, mask: np.ndarray, threshold: float = 0.5
) -> float:
    """LEVER's ``binary_acc``: per problem, the fraction of (distinct) candidates whose
    ``P(yes) > threshold`` agrees with the label; averaged over problems with candidates."""
    mask = np.asarray(mask, bool)
    with np.errstate(divide="ignore"):
        pred = np.asarray(verifier_logprob, np.float64) > np.log(threshold)
    agree = (pred == np.asarray(correct, bool)) & mask
    n = mask.sum(axis=1)
    rows = n > 0
    if not rows.any():
        return float("nan")
    return float(np.mean(agree.sum(axis=1)[rows] / n[rows]))


@dataclasses.dataclass(frozen=True)
class Reliability:
    """Equal-width reliability bins of P(yes) over all real candidates.

    bin_edges: float[n_bins + 1]; confidence / accuracy: float[n_bins] (NaN for empty bins);
    count: int[n_bins]; ece: expected calibration error, sum_b (count_b / total) * |acc_b - conf_b|.
    """

    bin_edges: np.ndarray
    confidence: np.ndarray
    accuracy: np.ndarray
    count: np.ndarray
    ece: float


def reliability(
    verifier_logprob: np.ndarray, correct: np.ndarray, mask: np.ndarray, n_bins: int = 10
) -> Reliability:
    """Reliability diagram data and ECE of the verifier's P(yes) against execution labels."""
    mask = np.asarray(mask, bool)
    probs = np.exp(np.asarray(verifier_logprob, np.float64))[mask]
    labels = np.asarray(correct, bool)[mask].astype(np.float64)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    which = np.clip(np.searchsorted(edges, probs, side="right") - 1, 0, n_bins - 1)
    count = np.bincount(which, minlength=n_bins)
    conf_sum = np.bincount(which, weights=probs, minlength=n_bins)
    acc_sum = np.bincount(which, weights=labels, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        conf = np.where(count > 0, conf_sum / count, np.nan)
        acc = np.where(count > 0, acc_sum / count, np.nan)
    total = count.sum()
    ece = float(np.sum(np.abs(acc_sum - conf_sum)) / total) if total else float("nan")
    return Reliability(edges, conf, acc, count, ece)
