"""Accuracy, bootstrap CIs, accuracy-vs-k, LEVER's binary accuracy and calibration."""
from __future__ import annotations

import math

import numpy as np
import pytest

from lever_jax.rerank import methods, statistics

CORRECT = np.array([[1, 0, 0], [0, 0, 1], [0, 0, 0]], bool)


def test_choice_correct_and_accuracy():
    choice = np.array([0, 1, -1])
    assert statistics.choice_correct(choice, CORRECT).tolist() == [1.0, 0.0, 0.0]
    assert statistics.accuracy(np.array([0, 2, 0]), CORRECT) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="shape"):
        statistics.choice_correct(np.array([0, 1]), CORRECT)
    with pytest.raises(ValueError, match="range"):
        statistics.choice_correct(np.array([0, 3, 0]), CORRECT)


def test_bootstrap_ci_is_deterministic_and_sane():
    rng = np.random.default_rng(0)
    values = (rng.random(500) < 0.7).astype(float)
    a = statistics.bootstrap_ci(values, n_resamples=2000, seed=3)
    b = statistics.bootstrap_ci(values, n_resamples=2000, seed=3, max_chunk_elements=7_000)
    assert a == b  # chunking does not change the draws
    assert a.low < a.mean < a.high
    # normal approximation of the binomial CI: +- 1.96 * sqrt(p (1 - p) / n)
    half = 1.96 * math.sqrt(a.mean * (1 - a.mean) / values.size)
    assert a.high - a.low == pytest.approx(2 * half, rel=0.15)
    assert statistics.bootstrap_ci(np.ones(10)).low == 1.0
    assert "[" in str(a)
    with pytest.raises(ValueError, match="NaN"):
        statistics.bootstrap_ci(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="at least one"):
        statistics.bootstrap_ci(np.array([]))


def test_subsample_counts_expands_duplicates():
    counts = np.array([[3, 1, 0], [1, 1, 1], [2, 0, 0]])
    mask = np.array([[1, 1, 1], [1, 1, 1], [1, 0, 0]], bool)
    rng = np.random.default_rng(0)
    draws = np.stack([statistics.subsample_counts(counts, mask, 2, rng) for _ in range(4000)])
    assert (draws.sum(axis=2) == 2).all()  # k samples per row (row 2 has exactly 2)
    assert (draws <= counts).all()
    # row 0: 4 samples (3 of candidate 0); P(candidate 1 drawn among 2) = 1 - C(3,2)/C(4,2) = 0.5
    assert np.mean(draws[:, 0, 1] > 0) == pytest.approx(0.5, abs=0.03)
    assert np.mean(draws[:, 0, 0]) == pytest.approx(1.5, abs=0.03)
    # k larger than the pool keeps every sample
    np.testing.assert_array_equal(statistics.subsample_counts(counts, mask, 10, rng), counts)


def test_accuracy_at_k_oracle_is_pass_at_k():
    # 10 samples, 3 correct: oracle@k = pass@k = 1 - C(7, k) / C(10, k)
    correct = np.zeros((1, 10), bool)
    correct[0, [2, 5, 7]] = True
    mask = np.ones((1, 10), bool)
    ks = [1, 2, 5, 10]
    res = statistics.accuracy_at_k(
        lambda m, c: methods.oracle(correct, m), correct, mask, None, ks, num_trials=1000, seed=1
    )
    for r in res:
        expected = 1 - math.comb(7, r.k) / math.comb(10, r.k)
        assert r.mean == pytest.approx(expected, abs=0.05), r
    assert res[-1].std == 0.0
    again = statistics.accuracy_at_k(
        lambda m, c: methods.oracle(correct, m), correct, mask, None, [2], num_trials=50, seed=1
    )
    first = statistics.accuracy_at_k(
        lambda m, c: methods.oracle(correct, m), correct, mask, None, [2], num_trials=50, seed=1
    )
    assert again == first
    with pytest.raises(ValueError, match="k must"):
        statistics.accuracy_at_k(lambda m, c: m.argmax(1), correct, mask, None, [0])


def test_accuracy_at_k_passes_subset_counts_to_the_selector():
    # candidate 0 (wrong) has 1 sample, candidate 1 (right) has 9: majority vote at k=10 is right
    correct = np.array([[0, 1]], bool)
    mask = np.ones((1, 2), bool)
    counts = np.array([[1, 9]])
    ids = np.array([[0, 1]], np.int32)
    seen = []

    def vote(m, c):
        seen.append(c.copy())
        return methods.majority_vote(ids, m, c)

    res = statistics.accuracy_at_k(vote, correct, mask, counts, [1, 10], num_trials=400, seed=0)
    assert res[0].mean == pytest.approx(0.9, abs=0.05)
    assert res[1].mean == 1.0
    assert all(c.sum() in (1, 10) for c in seen)


def test_binary_accuracy_is_per_problem_then_averaged():
    ver = np.log(np.array([[0.9, 0.2, 0.6, 0.5], [0.1, 0.5, 0.5, 0.5]]))
    correct = np.array([[1, 0, 0, 0], [0, 0, 0, 0]], bool)
    mask = np.array([[1, 1, 1, 1], [1, 0, 0, 0]], bool)
    # row 0: 0.9>.5 ok, 0.2 ok, 0.6 wrong, 0.5 (not > .5) ok -> 3/4; row 1: 1/1
    assert statistics.binary_accuracy(ver, correct, mask) == pytest.approx((0.75 + 1.0) / 2)
    assert math.isnan(statistics.binary_accuracy(ver, correct, np.zeros_like(mask)))


def test_reliability_and_ece():
    probs = np.array([[0.05, 0.15, 0.95, 0.85], [0.92, 0.12, 0.55, 0.01]])  # no bin edges
    correct = np.array([[0, 0, 1, 1], [0, 1, 1, 0]], bool)
    mask = np.array([[1, 1, 1, 1], [1, 1, 1, 0]], bool)
    rel = statistics.reliability(np.log(probs), correct, mask, n_bins=10)
    assert rel.count.sum() == 7 and rel.count[0] == 1 and rel.count[1] == 2 and rel.count[9] == 2
    assert rel.confidence[1] == pytest.approx(0.135) and rel.accuracy[1] == 0.5
    assert np.isnan(rel.accuracy[3])
    expected = (abs(0 - 0.05) + abs(1 - 0.15 - 0.12) + abs(1 - 0.55) + abs(1 - 0.85) + abs(1 - 1.87)) / 7
    assert rel.ece == pytest.approx(expected)
    perfect = statistics.reliability(np.log(np.array([[1.0, 1.0]])), np.array([[1, 1]], bool), np.ones((1, 2), bool))
    assert perfect.ece == 0.0 and perfect.count[-1] == 2
