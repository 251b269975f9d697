"""Selection baselines and CodeT's dual execution agreement."""
from __future__ import annotations

import math

import numpy as np
import pytest

from lever_jax.rerank import methods, statistics, scoring

# Three problems, five candidate slots. Result ids are dense per row (as problems_to_arrays
# produces); the last row is all padding.
MASK = np.array([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]], bool)
IDS = np.array([[0, 1, 1, 2, -1], [0, 1, 0, 2, 1], [-1] * 5], np.int32)
CORRECT = np.array([[0, 1, 1, 0, 0], [1, 0, 1, 0, 0], [0] * 5], bool)
COUNTS = np.array([[5, 1, 1, 1, 0], [1, 2, 1, 1, 1], [0] * 5], np.int32)
GEN = np.array([[-3.0, -1.0, -2.0, -1.0, np.nan], [-9.0, -2.0, -3.0, -4.0, -5.0], [np.nan] * 5], np.float32)
TOKENS = np.array([[3, 1, 4, 2, 0], [9, 1, 1, 1, 1], [0] * 5], np.int32)
VER = np.log(np.array([[0.2, 0.9, 0.3, 0.9, 0.5], [0.8, 0.1, 0.7, 0.2, 0.1], [0.5] * 5], np.float32))
GREEDY = np.array([[0, 0, 1, 0, 0], [0, 0, 0, 0, 0], [0] * 5], bool)


def test_simple_selectors():
    assert methods.first_sample(MASK).tolist() == [0, 0, -1]
    assert methods.greedy(GREEDY, MASK).tolist() == [2, -1, -1]
    # ties (-1.0 at 1 and 3) go to the lowest index
    assert methods.max_gen_logprob(GEN, MASK).tolist() == [1, 1, -1]
    # per-token means: [-1, -1, -0.5, -0.5] -> 2; [-1, -2, -3, -4, -5] -> 0
    assert methods.max_normalized_gen_logprob(GEN, TOKENS, MASK).tolist() == [2, 0, -1]
    assert methods.most_frequent_program(COUNTS, MASK).tolist() == [0, 1, -1]
    assert methods.oracle(CORRECT, MASK).tolist() == [1, 0, -1]
    assert methods.verifier_only(VER, MASK).tolist() == [1, 0, -1]
    no_correct = CORRECT.copy()
    no_correct[0] = False
    assert methods.oracle(no_correct, MASK).tolist() == [0, 0, -1]


def test_majority_vote_counts_and_ties():
    # row 0 unweighted: group {1, 2} has 2 votes; weighted: group {0} has 5
    assert methods.majority_vote(IDS, MASK).tolist() == [1, 0, -1]
    assert methods.majority_vote(IDS, MASK, COUNTS).tolist() == [0, 1, -1]
    # arbitrary (non-dense, negative, huge) ids work too; a tie goes to the group seen first
    ids = np.array([[2**31 - 1, -7, -7, 2**31 - 1, 5]], np.int32)
    assert methods.majority_vote(ids, np.ones((1, 5), bool)).tolist() == [0]
    assert methods.majority_vote(ids, np.array([[0, 1, 1, 1, 1]], bool)).tolist() == [1]


def test_majority_vote_matches_rerank_on_frequency_scores():
    # majority vote == LEVER summing over log(count / total) with the verifier switched off
    rng = np.random.default_rng(1)
    ids = rng.integers(0, 4, size=(50, 9)).astype(np.int32)
    mask = rng.random((50, 9)) < 0.8
    counts = rng.integers(1, 4, size=(50, 9))
    dense = np.asarray(scoring.dense_group_ids(ids, mask))
    freq = np.asarray(scoring.frequency_logprob(counts, mask))
    lever = methods.lever(freq, np.zeros_like(freq), dense, mask, verifier_coef=0.0)
    np.testing.assert_array_equal(lever, methods.majority_vote(ids, mask, counts))


def test_lever_variants_and_gen_logprob_fallback():
    gen = methods.lever_gen_logprob(GEN, TOKENS, COUNTS, MASK)
    # row 0 has a NaN only on padding: kept; the all-padding row falls back harmlessly
    np.testing.assert_array_equal(gen[0, :4], GEN[0, :4])
    np.testing.assert_array_equal(gen[1], GEN[1])
    no_lp = np.full_like(GEN, np.nan)
    fallback = methods.lever_gen_logprob(no_lp, TOKENS, COUNTS, MASK)
    np.testing.assert_allclose(fallback[0, :4], np.log(np.array([5, 1, 1, 1]) / 8), rtol=1e-6)
    normalized = methods.lever_gen_logprob(GEN, TOKENS, COUNTS, MASK, normalize=True)
    np.testing.assert_allclose(normalized[0, :4], [-1.0, -1.0, -0.5, -0.5])

    for aggregate in (True, False):
        expected = scoring.rerank_reference(gen, VER, IDS, MASK, aggregate=aggregate).choice
        got = methods.lever(gen, VER, IDS, MASK, aggregate=aggregate)
        np.testing.assert_array_equal(got, expected)
    expected = scoring.rerank_reference(gen, VER, IDS, MASK, voting=True, gate_threshold=0.5).choice
    np.testing.assert_array_equal(methods.lever_voting(gen, VER, IDS, MASK), expected)
    # row 0: candidates 1 (-1 + log .9) and 3 tie on score; summing prefers group {1, 2}
    assert methods.lever(gen, VER, IDS, MASK, aggregate=False)[0] == 1
    assert methods.lever(gen, VER, IDS, MASK)[0] == 1


def test_random_expected():
    got = methods.random_expected(CORRECT, MASK, COUNTS)
    np.testing.assert_allclose(got[:2], [2 / 8, 2 / 6])
    assert math.isnan(got[2])
    np.testing.assert_allclose(methods.random_expected(CORRECT, MASK)[:2], [2 / 4, 2 / 5])


def _codet_loop(passes, weight="sqrt", sample_counts=None, test_counts=None):
    """Independent dict-based port of CodeT's agreement: returns ({case_set: [samples]}, scores)."""
    sets: dict[tuple[int, ...], list[int]] = {}
    for s, row in enumerate(passes):
        case_set = tuple(int(t) for t in np.flatnonzero(row))
        if case_set:
            sets.setdefault(case_set, []).append(s)
    scores = {}
    for case_set, members in sets.items():
        size = sum(1 if sample_counts is None else sample_counts[m] for m in members)
        tests = sum(1 if test_counts is None else test_counts[t] for t in case_set)
        scores[case_set] = (math.sqrt(size) if weight == "sqrt" else size) * tests
    return sets, scores


@pytest.mark.parametrize("weight", ["sqrt", "linear"])
def test_codet_matches_dict_port_on_random_matrices(weight):
    rng = np.random.default_rng(7)
    for _ in range(40):
        num_samples, num_tests = rng.integers(1, 12), rng.integers(1, 6)
        # few distinct behaviours so that consensus sets have several members
        behaviours = rng.random((rng.integers(1, 5), num_tests)) < 0.5
        passes = behaviours[rng.integers(0, len(behaviours), size=num_samples)]
        scounts = rng.integers(1, 4, size=num_samples)
        tcounts = rng.integers(1, 3, size=num_tests)
        out = methods.codet_dual_agreement(
            passes, sample_counts=scounts, test_counts=tcounts, sample_weight=weight
        )
        sets, scores = _codet_loop(passes, weight, scounts, tcounts)
        if not sets:
            assert out.choice == -1 and not out.top_mask.any() and (out.group_ids == -1).all()
            continue
        best = max(scores.values())
        # the best set whose first member comes first
        expected = min(members[0] for cs, members in sets.items() if scores[cs] == best)
        assert out.choice == expected
        top = sorted(m for cs, members in sets.items() if scores[cs] == best for m in members)
        assert np.flatnonzero(out.top_mask).tolist() == top
        for cs, members in sets.items():
            assert len({int(out.group_ids[m]) for m in members}) == 1
            np.testing.assert_allclose(out.scores[members], scores[cs])


def test_codet_sqrt_vs_linear_and_expected_accuracy():
    # A: samples 0-3 pass test 0 only (4 samples x 1 test); B: sample 4 passes tests 0-2 (1 x 3)
    passes = np.array([[1, 0, 0]] * 4 + [[1, 1, 1]] + [[0, 0, 0]], bool)
    correct = np.array([0, 0, 0, 1, 1, 1], bool)
    sq = methods.codet_dual_agreement(passes)  # sqrt: A = 2, B = 3 -> B
    lin = methods.codet_dual_agreement(passes, sample_weight="linear")  # A = 4, B = 3 -> A
    assert sq.choice == 4 and lin.choice == 0
    assert sq.group_ids.tolist() == [0, 0, 0, 0, 1, -1]
    assert methods.codet_expected_accuracy(sq, correct) == 1.0
    assert methods.codet_expected_accuracy(lin, correct) == 0.25
    # batched with padding and a problem where nothing passes -> random-sample fallback
    batch = np.stack([passes, np.zeros_like(passes)])
    mask = np.array([[1, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0]], bool)
    out = methods.codet_dual_agreement(batch, mask)
    assert out.choice.tolist() == [4, -1]
    acc = methods.codet_expected_accuracy(out, np.stack([correct, correct]), mask)
    np.testing.assert_allclose(acc, [1.0, 0.0])
    # test_mask removes a test: B then passes 2 tests -> sqrt score 2 ties with A -> A first
    tied = methods.codet_dual_agreement(passes, test_mask=np.array([1, 1, 0], bool))
    assert tied.choice == 0 and tied.top_mask[:5].all()
    assert methods.codet_expected_accuracy(tied, correct) == pytest.approx(2 / 5)
    with pytest.raises(ValueError, match="sample_weight"):
        methods.codet_dual_agreement(passes, sample_weight="log")
    with pytest.raises(ValueError, match="shape"):
        methods.codet_dual_agreement(passes, np.ones(3, bool))


def test_selectors_feed_metrics():
    choice = methods.oracle(CORRECT, MASK)
    assert statistics.accuracy(choice, CORRECT) == pytest.approx(2 / 3)
