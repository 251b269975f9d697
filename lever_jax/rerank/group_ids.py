"""Arbitrary int32 result ids -> dense per-row group ids (jax + numpy only).

:func:`dense_group_ids` renumbers each row's ids ``0..G-1`` by first appearance, the layout the
scorer's dense path (``lever_jax.rerank.scoring.rerank(..., ids_are_dense=True)``) reads. It is
re-exported by ``lever_jax.rerank.scoring``; this module imports only jax and numpy.

How (XLA:CPU costs measured in BENCHMARKS.md; sorts and ``N x N`` comparisons were slower):

1. One hash round over every candidate: a per-row table of ``>= 2N`` slots, every candidate
   claims slot ``hash(id)`` with a scatter-min of its position; a candidate whose slot's owner
   holds its own id is resolved and that owner is the id's first appearance (all members of an
   id claim the same slots, so they resolve together). With few distinct ids per row most rows
   are done after this round.
2. The rows left unresolved (hash collisions) are gathered into a block of at most ``B // 8``
   rows (at least 8) and finished there with further rounds of linear probing (``while_loop``);
   when more rows are left than fit, the rounds run over the whole batch instead (``lax.cond``).
   Every round resolves at least one id per claimed slot, so the loop ends. The tables hold
   positions in the narrowest int type (int8 up to N = 127).
3. ``first appearance -> rank`` counts the first appearances before each one: 32-bit words of
   first-appearance flags and ``population_count`` (one fused pass; ``cumsum`` is slower here).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["dense_group_ids", "dense_group_ids_reference"]

_HASH_MULTIPLIER = 2654435761  # Knuth's multiplicative hash (odd, close to 2**32 / golden ratio)
_COMPACT_DIVISOR = 8  # unresolved rows after round 0 are finished in a block of B // 8 rows
_COMPACT_MIN_ROWS = 8


def _table_dtype(width: int) -> jnp.dtype:
    """Narrowest int type holding positions ``0..width`` (``width`` marks an empty slot): a
    smaller table is cheaper to fill and to scatter into (int8: ~2 ms less at 10,000 x 100)."""
    for dtype in (jnp.int8, jnp.int16):
        if width <= jnp.iinfo(dtype).max:
            return dtype
    return jnp.int32


def _probe_round(
    ids: jax.Array, home: jax.Array, todo: jax.Array, first: jax.Array, table: jax.Array,
    step: jax.Array | int, size: int,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """One hash-table round: unresolved candidates claim slot ``home + step`` (scatter-min of
    positions); those whose slot owner holds their id take it as first appearance.
    Returns the updated ``(table, first, todo)``."""
    batch, width = ids.shape
    total = table.shape[0]
    pos = jnp.arange(width, dtype=jnp.int32)
    base = (jnp.arange(batch, dtype=jnp.int32) * size)[:, None]
    slot = jnp.where(todo, base + ((home + step) & (size - 1)), total)  # resolved: dropped
    claims = jnp.broadcast_to(pos, ids.shape).reshape(-1).astype(table.dtype)
    table = table.at[slot.reshape(-1)].min(claims, mode="drop")
    owner = table.at[jnp.minimum(slot, total - 1).reshape(-1)].get(mode="promise_in_bounds")
    owner = owner.reshape(batch, width).astype(jnp.int32)
    owner_id = jnp.take_along_axis(ids, jnp.clip(owner, 0, width - 1), axis=1, mode="promise_in_bounds")
    won = todo & (owner_id == ids)
    return table, jnp.where(won, owner, first), todo & ~won


def _probe_until_done(ids: jax.Array, home: jax.Array, todo: jax.Array, first: jax.Array, size: int) -> jax.Array:
    """Rounds 1, 2, ... (linear probing in a fresh table) until no candidate is unresolved."""
    def body(state):
        step, table, first, todo = state
        table, first, todo = _probe_round(ids, home, todo, first, table, step, size)
        return step + 1, table, first, todo

    table = jnp.full((ids.shape[0] * size,), ids.shape[1], _table_dtype(ids.shape[1]))
    init = (jnp.int32(1), table, first, todo)
    return jax.lax.while_loop(lambda state: jnp.any(state[3]), body, init)[2]


def _finish_unresolved(ids: jax.Array, home: jax.Array, todo: jax.Array, first: jax.Array, size: int) -> jax.Array:
    """Resolve what round 0 left: in a compact block of the unresolved rows when they fit in
    ``max(8, B // 8)`` rows (the common case: a few hash collisions), else over the whole batch."""
    batch = ids.shape[0]
    block = min(batch, max(_COMPACT_MIN_ROWS, batch // _COMPACT_DIVISOR))
    rows_left = jnp.any(todo, axis=1)

    def compact() -> jax.Array:
        (rows,) = jnp.nonzero(rows_left, size=block, fill_value=batch)  # fill rows: out of bounds

        def take(a: jax.Array) -> jax.Array:  # fill rows read zeros: todo False, never probed
            return a.at[rows].get(mode="fill", fill_value=0)

        sub = _probe_until_done(take(ids), take(home), take(todo), take(first), size)
        return first.at[rows].set(sub, mode="drop")

    return jax.lax.cond(jnp.sum(rows_left) <= block, compact,
                        lambda: _probe_until_done(ids, home, todo, first, size))


def _first_appearance_rank(first: jax.Array, is_first: jax.Array) -> jax.Array:
    """Number of first appearances before position ``first`` in each row (the dense id), from
    32-bit words of the ``is_first`` flags and ``population_count``."""
    batch, width = first.shape
    num_words = -(-width // 32)
    flags = jnp.pad(is_first, ((0, 0), (0, num_words * 32 - width))).astype(jnp.uint32)
    flags = flags.reshape(batch, num_words, 32) << jnp.arange(32, dtype=jnp.uint32)
    words = jnp.sum(flags, axis=2, dtype=jnp.uint32)  # distinct bits: the sum is an OR
    counts = jax.lax.population_count(words).astype(jnp.int32)
    before = jnp.cumsum(counts, axis=1) - counts  # first appearances in earlier words
    which = first >> 5
    if num_words <= 8:  # a short select chain fuses into the elementwise pass
        word = jnp.zeros(first.shape, jnp.uint32)
        earlier = jnp.zeros(first.shape, jnp.int32)
        for k in range(num_words):
            word = jnp.where(which == k, words[:, k:k + 1], word)
            earlier = jnp.where(which == k, before[:, k:k + 1], earlier)
    else:
        word = jnp.take_along_axis(words, which, axis=1, mode="promise_in_bounds")
        earlier = jnp.take_along_axis(before, which, axis=1, mode="promise_in_bounds")
    below = (jnp.uint32(1) << (first & 31).astype(jnp.uint32)) - jnp.uint32(1)
    return earlier + jax.lax.population_count(word & below).astype(jnp.int32)


@jax.jit
def dense_group_ids(result_ids: jax.Array, mask: jax.Array) -> jax.Array:
    """Renumber arbitrary int32 ids per row to ``0..G-1`` by first appearance; -1 on padding.

    Accepts ``[N]`` or ``[B, N]``. A hash round over all candidates, the few rows with hash
    collisions finished in a compact block, then a popcount rank (see the module docstring).
    """
    ids, mask = jnp.asarray(result_ids), jnp.asarray(mask)
    if ids.ndim not in (1, 2) or ids.shape != mask.shape:
        raise ValueError(f"expected [N] or [B, N] ids and mask of one shape, got {ids.shape} and {mask.shape}")
    squeeze = ids.ndim == 1
    ids, mask = jnp.atleast_2d(ids).astype(jnp.int32), jnp.atleast_2d(mask).astype(bool)
    batch, width = ids.shape
    bits = max(1, (2 * width - 1).bit_length())
    size = 1 << bits
    pos = jnp.broadcast_to(jnp.arange(width, dtype=jnp.int32), (batch, width))
    home = ((ids.astype(jnp.uint32) * jnp.uint32(_HASH_MULTIPLIER)) >> jnp.uint32(32 - bits)).astype(jnp.int32)
    table = jnp.full((batch * size,), width, _table_dtype(width))
    _, first, todo = _probe_round(ids, home, mask, pos, table, 0, size)
    first = _finish_unresolved(ids, home, todo, first, size)
    rank = _first_appearance_rank(first, mask & (first == pos))
    dense = jnp.where(mask, rank, -1)
    return dense[0] if squeeze else dense


def dense_group_ids_reference(result_ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Plain-loop version of :func:`dense_group_ids` for ``[B, N]`` arrays."""
    ids = np.asarray(result_ids)
    mask = np.asarray(mask, bool)
    out = np.full(ids.shape, -1, np.int32)
    for b in range(ids.shape[0]):
        seen: dict[int, int] = {}
        for n in range(ids.shape[1]):
            if mask[b, n]:
                out[b, n] = seen.setdefault(int(ids[b, n]), len(seen))
    return out
