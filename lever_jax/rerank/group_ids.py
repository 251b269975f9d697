"""Arbitrary int32 result ids -> dense per-row group ids (jax + numpy only).

:func:`dense_group_ids` renumbers each row's ids ``0..G-1`` by first appearance, the layout the
scorer's dense path (``lever_jax.rerank.scoring.rerank(..., ids_are_dense=True)``) reads. It is
re-exported by ``lever_jax.rerank.scoring``; this module imports only jax and numpy.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["dense_group_ids", "dense_group_ids_reference"]

_HASH_MULTIPLIER = 2654435761  # Knuth's multiplicative hash (odd, close to 2**32 / golden ratio)


@jax.jit
def dense_group_ids(result_ids: jax.Array, mask: jax.Array) -> jax.Array:
    """Renumber arbitrary int32 ids per row to ``0..G-1`` by first appearance; -1 on padding.

    A per-row hash table with linear probing, built in parallel rounds (no sort, no ``N x N``
    comparison): each round every unresolved candidate claims slot ``hash(id) + round`` of a
    table of ``>= 2N`` slots with a scatter-min of its position; a candidate whose slot is owned
    by a position holding its own id is resolved, that position being the first appearance of
    the id (all members of an id probe the same slots, so they resolve together). Rounds run
    until every candidate is resolved (usually 2-4, at most the table size). Then
    ``first appearance -> rank`` is a cumsum. Accepts ``[N]`` or ``[B, N]``. XLA:CPU sorts with
    several operands are ~20x slower than this (scripts/bench_scoring.py).
    """
    ids, mask = jnp.asarray(result_ids), jnp.asarray(mask)
    if ids.ndim not in (1, 2) or ids.shape != mask.shape:
        raise ValueError(f"expected [N] or [B, N] ids and mask of one shape, got {ids.shape} and {mask.shape}")
    squeeze = ids.ndim == 1
    ids, mask = jnp.atleast_2d(ids), jnp.atleast_2d(mask)
    mask = mask.astype(bool)
    batch, width = ids.shape
    bits = max(1, (2 * width - 1).bit_length())
    size = 1 << bits
    ids = ids.astype(jnp.int32)
    pos = jnp.broadcast_to(jnp.arange(width, dtype=jnp.int32), (batch, width))
    home = ((ids.astype(jnp.uint32) * jnp.uint32(_HASH_MULTIPLIER)) >> jnp.uint32(32 - bits)).astype(jnp.int32)
    base = (jnp.arange(batch, dtype=jnp.int32) * size)[:, None]
    total = batch * size

    def body(state):
        step, table, first, todo = state
        slot = jnp.where(todo, base + ((home + step) & (size - 1)), total)  # resolved: dropped
        table = table.at[slot.reshape(-1)].min(pos.reshape(-1), mode="drop")
        owner = table.at[jnp.minimum(slot, total - 1).reshape(-1)].get(mode="promise_in_bounds")
        owner = owner.reshape(batch, width)
        won = todo & (jnp.take_along_axis(ids, jnp.clip(owner, 0, width - 1), axis=1) == ids)
        return step + 1, table, jnp.where(won, owner, first), todo & ~won

    init = (jnp.int32(0), jnp.full((total,), width, jnp.int32), pos, mask)
    _, _, first, _ = jax.lax.while_loop(lambda state: jnp.any(state[3]), body, init)
    is_first = mask & (first == pos)
    rank = jnp.cumsum(is_first.astype(jnp.int32), axis=1) - 1
    dense = jnp.where(mask, jnp.take_along_axis(rank, first, axis=1), -1)
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
