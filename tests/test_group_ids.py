"""dense_group_ids against its loop reference on layouts that drive each of its paths.

The hash round, the compact block of collided rows (when at most ``max(8, B // 8)`` rows collide),
the whole-batch rounds (when more do), and the popcount rank over one or several 32-bit words.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lever_jax.rerank import group_ids, scoring

B, N = 64, 40  # one shape for the properties (no recompilation per example); 128 hash slots
BITS = (2 * N - 1).bit_length()
PROPS = settings(max_examples=40, deadline=None, derandomize=True)
KINDS = ("collide", "equal", "distinct", "few", "extreme")


def _home(ids: np.ndarray, bits: int) -> np.ndarray:
    """Round 0's slot, computed as dense_group_ids does."""
    return (ids.astype(np.uint32) * np.uint32(group_ids._HASH_MULTIPLIER)) >> np.uint32(32 - bits)


def _same_slot_ids(count: int, bits: int, seed: int) -> np.ndarray:
    """``count`` distinct int32 ids that all hash to one slot: every one collides in round 0."""
    rng = np.random.default_rng(seed)
    pool = np.unique(rng.integers(-(2**31), 2**31 - 1, size=count << (bits + 2), dtype=np.int64)).astype(np.int32)
    homes = _home(pool, bits)
    target = np.bincount(homes).argmax()
    return rng.permutation(pool[homes == target])[:count]


def _row(kind: str, width: int, rng: np.random.Generator, bits: int) -> np.ndarray:
    if kind == "collide":
        values = _same_slot_ids(width, bits, int(rng.integers(1 << 30)))
        labels = rng.integers(0, max(2, int(rng.integers(2, width + 2))), size=width)
        labels[:2] = [0, 1][:width]  # at least two ids in the slot (one when width == 1)
        return values[labels % len(values)]
    if kind == "equal":
        return np.full(width, rng.integers(-(2**31), 2**31 - 1), np.int32)
    if kind == "distinct":
        return rng.permutation(np.unique(rng.integers(-(2**31), 2**31 - 1, size=4 * width)))[:width].astype(np.int32)
    if kind == "few":
        values = rng.integers(-(2**31), 2**31 - 1, size=3)
        return values[rng.integers(0, 3, size=width)].astype(np.int32)
    extremes = np.array([2**31 - 1, -(2**31), 0, -1, 1], np.int32)
    return extremes[rng.integers(0, 5, size=width)]


def _check(ids: np.ndarray, mask: np.ndarray) -> None:
    np.testing.assert_array_equal(np.asarray(scoring.dense_group_ids(ids, mask)),
                                  scoring.dense_group_ids_reference(ids, mask))


@pytest.mark.slow
@PROPS
@given(st.integers(0, B), st.sampled_from(KINDS), st.integers(0, 2**32 - 1), st.floats(0.0, 1.0))
def test_dense_group_ids_matches_reference_collided_rows(num_collided, other_kind, seed, pad_rate):
    """``num_collided`` rows whose ids all share a hash slot (0..8: the compact block, more: the
    whole-batch rounds), the other rows of one kind; random padding with garbage ids."""
    rng = np.random.default_rng(seed)
    kinds = ["collide"] * num_collided + [other_kind] * (B - num_collided)
    ids = np.stack([_row(k, N, rng, BITS) for k in rng.permutation(kinds)])
    mask = rng.random((B, N)) >= pad_rate
    mask[rng.integers(0, B)] = False  # an all-padding row
    ids[~mask] = rng.integers(-(2**31), 2**31 - 1, size=int((~mask).sum()))
    _check(ids, mask)


def test_collided_rows_take_the_compact_block_and_the_batch_path():
    """The layouts above do reach both paths: round 0 leaves <= 8 rows or > 8 rows unresolved."""
    rng = np.random.default_rng(3)
    for num_collided in (1, 8, 9, B):
        ids = np.stack([_row("collide" if b < num_collided else "equal", N, rng, BITS) for b in range(B)])
        homes = _home(ids, BITS)
        collided = [len(set(ids[b])) > len(set(homes[b])) for b in range(B)]
        assert sum(collided) == num_collided
        _check(ids, np.ones((B, N), bool))


@pytest.mark.slow
def test_dense_group_ids_widths_and_shapes():
    """Rank words: one (N <= 32), several with the select chain, more than 8 (gather); tables of
    int8 (N <= 127), int16 and int32 positions; 1-D input; an empty batch; a single candidate."""
    rng = np.random.default_rng(5)
    for batch, width in ((5, 1), (7, 32), (9, 33), (20, 100), (3, 127), (3, 128), (12, 300)):
        bits = (2 * width - 1).bit_length()
        for kind in KINDS:
            ids = np.stack([_row(kind, width, rng, bits) for _ in range(batch)])
            _check(ids, rng.random((batch, width)) < 0.8)
    for kind in ("few", "distinct", "extreme"):
        ids = _row(kind, 40_000, rng, 17)[None]
        _check(ids, rng.random(ids.shape) < 0.9)
    row = np.array([7, 7, -2, 7, 3], np.int32)
    assert np.asarray(scoring.dense_group_ids(row, np.array([0, 1, 1, 1, 1], bool))).tolist() == [-1, 0, 1, 0, 2]
    assert np.asarray(scoring.dense_group_ids(np.zeros((0, 4), np.int32), np.zeros((0, 4), bool))).shape == (0, 4)
