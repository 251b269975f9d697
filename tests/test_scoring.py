"""The jitted LEVER scorer against its loop reference (hypothesis properties) and edge cases."""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from lever_jax.rerank import scoring

B, N = 6, 8  # one padded shape for all property tests: no recompilation per example
PROPS = settings(max_examples=50, deadline=None, derandomize=True)
TIE = scoring.DEFAULT_TIE_RTOL

# Small, exactly representable values force exact ties in candidate scores and in group sums.
TIED_GEN = st.sampled_from([0.0, -0.5, -1.0, -2.0, -3.0])
TIED_VER = st.sampled_from([0.0, -0.25, -1.0, -2.0, -math.inf])
FREE = st.floats(-40.0, 0.0, width=32)


@st.composite
def pools(draw):
    """Random [B, N] pools: arbitrary int32 ids, padding with garbage, ties, -inf, edge layouts."""
    layout = draw(st.sampled_from(["random", "random", "one_group", "singletons"]))
    if layout == "one_group":
        labels = np.zeros((B, N), np.int64)
    elif layout == "singletons":
        labels = np.broadcast_to(np.arange(N), (B, N)).copy()
    else:
        groups = draw(st.integers(1, N))
        labels = draw(arrays(np.int64, (B, N), elements=st.integers(0, groups - 1)))
    values = draw(
        st.lists(st.integers(-(2**31), 2**31 - 1), min_size=N, max_size=N, unique=True)
    )
    ids = np.asarray(values, np.int64)[labels].astype(np.int32)
    tied = draw(st.booleans())
    gen = draw(arrays(np.float32, (B, N), elements=TIED_GEN if tied else FREE))
    ver = draw(arrays(np.float32, (B, N), elements=TIED_VER if tied else FREE))
    mask = draw(arrays(np.bool_, (B, N)))
    if draw(st.booleans()):
        mask[draw(st.integers(0, B - 1))] = False  # an all-padding row
    # garbage on padding must be ignored
    gen[~mask] = np.nan
    ver[~mask] = np.inf
    ids[~mask] = draw(st.integers(-(2**31), 2**31 - 1))
    return gen, ver, ids, mask


def _assert_scores_close(actual, expected):
    actual = np.asarray(actual, np.float64)
    both_neg_inf = np.isneginf(actual) & np.isneginf(expected)
    np.testing.assert_array_equal(np.isneginf(actual), np.isneginf(expected))
    np.testing.assert_allclose(
        np.where(both_neg_inf, 0.0, actual), np.where(both_neg_inf, 0.0, expected), rtol=1e-5, atol=2e-5
    )


def _first_members(ids, mask, row):
    """{position of first member: member positions} for each group of ``row``."""
    groups: dict[int, list[int]] = {}
    firsts: dict[int, int] = {}
    for n in range(ids.shape[1]):
        if mask[row, n]:
            key = int(ids[row, n])
            firsts.setdefault(key, n)
            groups.setdefault(firsts[key], []).append(n)
    return groups


def _assert_choice(out, ref, ids, mask, tie_rtol=TIE):
    """Choice agrees with the reference, allowing only float-rounding-ambiguous near-ties."""
    choice = np.asarray(out.choice)
    group = np.asarray(out.group_scores, np.float64)
    for b in range(B):
        if not mask[b].any():
            assert choice[b] == -1 == ref.choice[b]
            continue
        # internal consistency: the first unmasked index within tolerance of the jitted max
        best = group[b][mask[b]].max()
        slack = tie_rtol * max(1.0, abs(best)) if math.isfinite(best) else 0.0
        expected_first = min(n for n in range(N) if mask[b, n] and group[b, n] >= best - slack)
        assert choice[b] == expected_first
        # against the float64 reference: groups clearly tied must go to the first one; groups
        # within float32 rounding of the tolerance edge may go either way
        firsts = _first_members(ids, mask, b)
        ref_best = max(ref.group_scores[b, f] for f in firsts)
        if not math.isfinite(ref_best):
            assert choice[b] == ref.choice[b] == min(firsts)
            continue
        scale = max(1.0, abs(ref_best))
        surely = [f for f in firsts if ref.group_scores[b, f] >= ref_best - (tie_rtol * scale - 5e-6 * scale)]
        maybe = [f for f in firsts if ref.group_scores[b, f] >= ref_best - (tie_rtol * scale + 5e-6 * scale)]
        assert choice[b] in maybe and choice[b] <= min(surely), (b, choice[b], ref.choice[b])
        if surely == maybe:
            assert choice[b] == ref.choice[b]


@PROPS
@given(pools(), st.sampled_from([(1.0, 1.0), (0.5, 2.0), (0.0, 1.0), (1.0, 0.0)]))
def test_rerank_matches_reference_both_layouts(pool, coefs):
    gen, ver, ids, mask = pool
    gen_coef, verifier_coef = coefs
    kw = dict(gen_coef=gen_coef, verifier_coef=verifier_coef)
    ref = scoring.rerank_reference(gen, ver, ids, mask, **kw)
    dense = scoring.dense_group_ids(ids, mask)
    np.testing.assert_array_equal(np.asarray(dense), scoring.dense_group_ids_reference(ids, mask))
    for out in (
        scoring.rerank(gen, ver, ids, mask, **kw),
        scoring.rerank(gen, ver, dense, mask, ids_are_dense=True, **kw),
    ):
        _assert_scores_close(out.candidate_scores, ref.candidate_scores)
        _assert_scores_close(out.group_scores, ref.group_scores)
        _assert_choice(out, ref, ids, mask)
        assert out.choice.dtype == jnp.int32


@PROPS
@given(pools())
def test_no_aggregation_is_argmax_with_lowest_index_ties(pool):
    gen, ver, ids, mask = pool
    ref = scoring.rerank_reference(gen, ver, ids, mask, aggregate=False)
    out = scoring.rerank(gen, ver, ids, mask, aggregate=False)
    _assert_scores_close(out.candidate_scores, ref.candidate_scores)
    np.testing.assert_array_equal(np.asarray(out.group_scores), np.asarray(out.candidate_scores))
    scores = np.where(mask, np.asarray(out.candidate_scores), -np.inf)
    for b in range(B):
        if not mask[b].any():
            assert out.choice[b] == -1
            continue
        expected = min(n for n in range(N) if mask[b, n] and scores[b, n] == scores[b][mask[b]].max())
        assert out.choice[b] == expected
        if np.isfinite(ref.candidate_scores[b][mask[b]]).any():
            top2 = np.sort(ref.candidate_scores[b][mask[b]])[-2:]
            if top2.size < 2 or top2[1] - top2[0] > 1e-5 or top2[1] == top2[0]:
                assert out.choice[b] == ref.choice[b]


@PROPS
@given(pools(), st.sampled_from([0.5, 0.3, 0.9]))
def test_voting_matches_reference(pool, threshold):
    gen, ver, ids, mask = pool
    ref = scoring.rerank_reference(gen, ver, ids, mask, voting=True, gate_threshold=threshold)
    dense = scoring.dense_group_ids(ids, mask)
    for out in (
        scoring.rerank_voting(gen, ver, ids, mask, threshold=threshold),
        scoring.rerank_voting(gen, ver, dense, mask, threshold=threshold, ids_are_dense=True),
    ):
        _assert_scores_close(out.candidate_scores, ref.candidate_scores)
        _assert_scores_close(out.group_scores, ref.group_scores)
        _assert_choice(out, ref, ids, mask)


@PROPS
@given(pools(), st.randoms(use_true_random=False))
def test_invariant_to_relabelling_result_ids(pool, rnd):
    gen, ver, ids, mask = pool
    distinct = sorted(set(ids.ravel().tolist()))
    fresh = rnd.sample(range(-(2**31), 2**31 - 1), len(distinct))
    relabel = dict(zip(distinct, fresh))
    ids2 = np.vectorize(relabel.__getitem__, otypes=[np.int32])(ids)
    a = scoring.rerank(gen, ver, ids, mask)
    b = scoring.rerank(gen, ver, ids2, mask)
    np.testing.assert_array_equal(np.asarray(a.choice), np.asarray(b.choice))
    np.testing.assert_array_equal(np.asarray(a.group_scores), np.asarray(b.group_scores))
    d1 = scoring.dense_group_ids(ids, mask)
    d2 = scoring.dense_group_ids(ids2, mask)
    np.testing.assert_array_equal(np.asarray(d1), np.asarray(d2))
    # the segment path also needs no first-appearance order: any ids in [0, N) will do
    perm = np.asarray(rnd.sample(range(N), N), np.int32)
    shuffled = np.where(mask, perm[np.clip(np.asarray(d1), 0, N - 1)], -1)
    c = scoring.rerank(gen, ver, shuffled, mask, ids_are_dense=True)
    np.testing.assert_array_equal(np.asarray(a.choice), np.asarray(c.choice))
    _assert_scores_close(c.group_scores, np.asarray(a.group_scores, np.float64))


def _group_sum(gen, ver, ids, mask, dense):
    group = scoring.rerank(gen, ver, ids, mask, ids_are_dense=dense).group_scores
    return jnp.sum(jnp.where(jnp.isfinite(group), group, 0.0))


_GRAD_GROUP_SUM = jax.jit(jax.grad(_group_sum, argnums=(0, 1)), static_argnums=4)


@PROPS
@given(pools(), st.booleans())
def test_gradients_are_finite_and_correct(pool, dense_layout):
    gen, ver, ids, mask = pool
    gen = np.where(mask, gen, 0.0).astype(np.float32)  # NaN padding tested elsewhere
    layout_ids = np.asarray(scoring.dense_group_ids(ids, mask)) if dense_layout else ids

    grad_gen, grad_ver = _GRAD_GROUP_SUM(gen, ver, layout_ids, mask, dense_layout)
    assert np.isfinite(np.asarray(grad_gen)).all() and np.isfinite(np.asarray(grad_ver)).all()
    # d/ds_j of sum_i group_i = |group(j)| * softmax weight of j inside its group
    ref = scoring.rerank_reference(gen, ver, ids, mask)
    expected = np.zeros((B, N))
    for b in range(B):
        for members in _first_members(ids, mask, b).values():
            lse = ref.group_scores[b, members[0]]
            if math.isfinite(lse):
                for j in members:
                    expected[b, j] = len(members) * math.exp(ref.candidate_scores[b, j] - lse)
    np.testing.assert_allclose(np.asarray(grad_gen), expected, atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(np.asarray(grad_ver), expected, atol=1e-4, rtol=1e-4)


# ----------------------------------------------------------------------------------------------
# Edge cases and helpers


def test_lever_example_summing_beats_single_best():
    # candidate 0 is the single best, but candidates 1 and 2 agree and together outweigh it
    gen = np.log(np.array([[0.4, 0.3, 0.3]], np.float32))
    ver = np.zeros_like(gen)
    ids = np.array([[7, 9, 9]], np.int32)
    mask = np.ones_like(ids, bool)
    assert int(scoring.rerank(gen, ver, ids, mask).choice[0]) == 1
    assert int(scoring.rerank(gen, ver, ids, mask, aggregate=False).choice[0]) == 0
    out = scoring.rerank(gen, ver, ids, mask)
    np.testing.assert_allclose(np.asarray(out.group_scores[0]), np.log([0.4, 0.6, 0.6]), rtol=1e-6)


@pytest.mark.parametrize("dense", [False, True])
def test_exact_group_ties_go_to_the_group_appearing_first(dense):
    mask = np.ones((3, 5), bool)
    gen = np.array(
        [
            [-2.0, -1.0, -1.0, -2.0, -np.inf],  # {0, 2, 4} = {-2, -1, -inf} vs {1, 3} = {-1, -2}
            [-1.0, -1.0, 0.0, 0.0, -1.0],  # singletons: 2 and 3 tie
            [-1.0, -1.0, -2.0, -2.0, -9.0],  # {0, 3} = {-1, -2} < {1, 2, 4} = {-1, -2, -9}
        ],
        np.float32,
    )
    ver = np.zeros_like(gen)
    ids = np.array([[5, 6, 5, 6, 5], [1, 2, 3, 4, 5], [6, 5, 5, 6, 5]], np.int32)
    if dense:
        ids = np.asarray(scoring.dense_group_ids(ids, mask))
    out = scoring.rerank(gen, ver, ids, mask, ids_are_dense=dense)
    assert out.choice.tolist() == [0, 2, 1]
    assert float(out.group_scores[0, 0]) == pytest.approx(float(out.group_scores[0, 1]), abs=1e-6)
    # a real (if small) difference of 2.4e-4 nats is not a tie
    assert float(out.group_scores[2, 1]) - float(out.group_scores[2, 0]) > 1e-4


@pytest.mark.parametrize("dense", [False, True])
def test_far_below_groups_use_the_exact_fallback(dense):
    # group {1, 2} sits 200 nats below the row's best: the row-shifted fast path would underflow
    gen = np.array([[0.0, -200.0, -201.0, -300.0, 0.0]], np.float32)
    ver = np.zeros_like(gen)
    ids = np.array([[0, 1, 1, 2, 3]], np.int32)
    mask = np.array([[True, True, True, True, False]])
    out = scoring.rerank(gen, ver, ids, mask, ids_are_dense=dense)
    expected = [0.0, -200 + math.log1p(math.exp(-1)), -200 + math.log1p(math.exp(-1)), -300.0, -np.inf]
    np.testing.assert_allclose(np.asarray(out.group_scores[0]), expected, rtol=1e-6)
    grad = jax.grad(
        lambda g: jnp.sum(
            jnp.where(mask, scoring.rerank(g, ver, ids, mask, ids_are_dense=dense).group_scores, 0.0)
        )
    )(jnp.asarray(gen))
    w = 1 / (1 + math.exp(-1))
    np.testing.assert_allclose(np.asarray(grad[0]), [1.0, 2 * w, 2 * (1 - w), 1.0, 0.0], rtol=1e-5)


def test_all_padding_nan_and_minus_inf_rows():
    gen = np.array([[0.0, 0.0], [np.nan, -1.0], [-1.0, -2.0], [-1.0, -1.0]], np.float32)
    ver = np.array([[0.0, 0.0], [0.0, 0.0], [-np.inf, -np.inf], [-np.inf, -1.0]], np.float32)
    ids = np.array([[1, 2], [1, 2], [1, 2], [1, 2]], np.int32)
    mask = np.array([[False, False], [True, True], [True, True], [True, True]])
    for dense in (False, True):
        out = scoring.rerank(gen, ver, ids - 1, mask, ids_are_dense=dense)
        # all padding -> -1; NaN score -> -1; all -inf -> first candidate (LEVER's argmax)
        assert out.choice.tolist() == [-1, -1, 0, 1]
        assert np.isneginf(np.asarray(out.group_scores[0])).all()


def test_gate_threshold_and_voting_semantics():
    gen = np.log(np.array([[0.5, 0.2, 0.2, 0.1]], np.float32))
    ver = np.log(np.array([[0.1, 0.9, 0.8, 0.6]], np.float32))
    ids = np.array([[0, 1, 1, 2]], np.int32)
    mask = np.ones_like(ids, bool)
    # voting: candidate 0 is gated (P(yes) = 0.1 < 0.5); group {1, 2} has mass 0.4 > 0.1
    assert int(scoring.rerank_voting(gen, ver, ids, mask).choice[0]) == 1
    # gated candidates keep membership: the best group {0 (gated), 2} answers with candidate 0
    gen2 = np.log(np.array([[0.5, 0.2, 0.3, 0.1]], np.float32))
    ids2 = np.array([[1, 2, 1, 3]], np.int32)
    assert int(scoring.rerank_voting(gen2, ver, ids2, mask).choice[0]) == 0
    # no candidate passes -> every group -inf -> the first candidate, as LEVER's float32 -1e10 does
    out = scoring.rerank_voting(gen, ver, ids, mask, threshold=0.95)
    assert int(out.choice[0]) == 0 and np.isneginf(np.asarray(out.group_scores)).all()
    # summing with a gate: same gating, scores include log P(yes)
    out = scoring.rerank(gen, ver, ids, mask, gate_threshold=0.7)
    ref = scoring.rerank_reference(gen, ver, ids, mask, gate_threshold=0.7)
    np.testing.assert_allclose(np.asarray(out.group_scores), ref.group_scores, rtol=1e-6)
    assert int(out.choice[0]) == int(ref.choice[0]) == 1


def test_unbatched_vmap_and_nested_jit():
    rng = np.random.default_rng(0)
    gen = rng.normal(size=(3, 4, 5)).astype(np.float32)
    ver = -rng.random((3, 4, 5)).astype(np.float32)
    ids = rng.integers(0, 3, size=(3, 4, 5)).astype(np.int32)
    mask = rng.random((3, 4, 5)) < 0.8
    loop = [scoring.rerank(gen[k], ver[k], ids[k], mask[k]) for k in range(3)]
    vm = jax.vmap(lambda g, v, i, m: scoring.rerank(g, v, i, m))(gen, ver, ids, mask)
    for k in range(3):
        np.testing.assert_array_equal(np.asarray(vm.choice[k]), np.asarray(loop[k].choice))
        np.testing.assert_allclose(np.asarray(vm.group_scores[k]), np.asarray(loop[k].group_scores))
    one = scoring.rerank(gen[0, 1], ver[0, 1], ids[0, 1], mask[0, 1])
    assert one.choice.shape == () and int(one.choice) == int(loop[0].choice[1])
    nested = jax.jit(lambda g: scoring.rerank(g, ver[0], ids[0], mask[0], gen_coef=0.5).choice)(gen[0])
    ref = scoring.rerank_reference(gen[0], ver[0], ids[0], mask[0], gen_coef=0.5)
    np.testing.assert_array_equal(np.asarray(nested), ref.choice)
    with pytest.raises(ValueError, match="shape"):
        scoring.rerank(gen[0], ver[0, :2], ids[0], mask[0])


def test_dense_group_ids_examples():
    ids = np.array([[40, -3, 40, 7, -3, 99], [5, 5, 5, 5, 5, 5]], np.int32)
    mask = np.array([[True, True, True, True, True, False], [False, True, True, False, True, True]])
    expected = [[0, 1, 0, 2, 1, -1], [-1, 0, 0, -1, 0, 0]]
    assert np.asarray(scoring.dense_group_ids(ids, mask)).tolist() == expected
    assert scoring.dense_group_ids_reference(ids, mask).tolist() == expected
    assert np.asarray(scoring.dense_group_ids(ids[0], mask[0])).tolist() == expected[0]


def test_normalize_and_frequency_helpers():
    gen = np.array([[-6.0, -4.0, np.nan]], np.float32)
    tokens = np.array([[3, 0, 2]], np.int32)
    norm = np.asarray(scoring.normalize_gen_logprob(gen, tokens, "mean"))
    assert norm[0, 0] == -2.0 and np.isnan(norm[0, 1]) and np.isnan(norm[0, 2])
    np.testing.assert_array_equal(np.asarray(scoring.normalize_gen_logprob(gen, tokens, "sum")), gen)
    with pytest.raises(ValueError, match="mode"):
        scoring.normalize_gen_logprob(gen, tokens, "max")
    counts = np.array([[3, 1, 0, 9], [0, 0, 0, 0]], np.int32)
    mask = np.array([[True, True, True, False], [False, False, False, False]])
    freq = np.asarray(scoring.frequency_logprob(counts, mask))
    np.testing.assert_allclose(freq[0, :2], np.log([0.75, 0.25]), rtol=1e-6)
    assert np.isneginf(freq[0, 2]) and freq[0, 3] == 0.0 and (freq[1] == 0.0).all()


def test_dense_group_ids_hash_table_collisions_and_extremes():
    rng = np.random.default_rng(7)
    cases = [
        np.arange(64, dtype=np.int32)[None] * (1 << 25),  # 64 distinct ids, many probe collisions
        np.array([[2**31 - 1, -(2**31), 0, -1, 2**31 - 1, -(2**31), 0, -1]], np.int32),
        rng.integers(-(2**31), 2**31 - 1, size=(50, 33), dtype=np.int64).astype(np.int32) % 5,
        rng.integers(-(2**31), 2**31 - 1, size=(20, 40), dtype=np.int64).astype(np.int32),
    ]
    for ids in cases:
        mask = rng.random(ids.shape) < 0.85
        np.testing.assert_array_equal(np.asarray(scoring.dense_group_ids(ids, mask)),
                                      scoring.dense_group_ids_reference(ids, mask))
    one = np.array([3, 3, 9], np.int32)
    assert np.asarray(scoring.dense_group_ids(one, np.ones(3, bool))).tolist() == [0, 0, 1]
