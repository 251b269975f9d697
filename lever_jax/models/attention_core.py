"""The attention core, softmax(q k^T + biases) v, one block of queries at a time (CPU speed).

XLA:CPU runs plain attention as whole-tensor passes over [batch, heads, q_len, k_len] logits:
at L = 512 those tensors are tens of MB and the softmax and its backward go through memory
(`scripts/bench_attention.py`: 31 GFLOP/s at MiniLM's shape against 96 for PyTorch's fused
kernel). :func:`blocked_attention` computes the same function over blocks of ``chunk`` queries
(``lax.map``) and its custom backward recomputes each block's softmax (``lax.scan``) instead of
saving it, so every [batch, heads, chunk, k_len] block stays in cache: 2.1x the plain core's
forward + backward at MiniLM's shape, 1.5x at T5's. Dropout on the weights uses
``layers.keep_mask``'s "hash" masks computed for each block's own elements, so the masks, the
outputs and the gradients equal the plain path's (tests/test_attention_core.py). Biases get
their gradients (T5's learned relative-position bias trains through it).
"""
from __future__ import annotations

import functools
from typing import Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array


def hash_keep(seeds: Array, full_shape: Sequence[int], keep_prob: float, q_start: Array, q_len: int) -> Array:
    """``layers.keep_mask(..., impl="hash")`` restricted to queries [q_start, q_start + q_len) of a
    [batch, heads, q, k] mask: the same bits for the same elements (their flat index in the whole)."""
    b, h, _, k = (int(d) for d in full_shape)
    shape = (b, h, q_len, k)
    strides = np.cumprod((1,) + tuple(int(d) for d in full_shape[::-1]))[:-1][::-1]
    index = jnp.zeros(shape, jnp.uint32)
    for dim in range(4):
        pos = jax.lax.broadcasted_iota(jnp.uint32, shape, dim)
        if dim == 2:
            pos = pos + q_start.astype(jnp.uint32)
        index = index + pos * jnp.uint32(int(strides[dim]) % 2**32)
    from lever_jax.models.layers import _fmix32

    bits = _fmix32(_fmix32(index ^ seeds[0]) + seeds[1])
    return bits < jnp.uint32(min(int(round(keep_prob * 2.0**32)), 2**32 - 1))


def _block(x: Array, start: Array, chunk: int, axis: int) -> Array:
    """Queries [start, start + chunk) of ``x`` along ``axis`` (a broadcast axis of size 1 as is)."""
    if x.shape[axis] == 1:
        return x
    return jax.lax.dynamic_slice_in_dim(x, start, chunk, axis)


def _reduce_to(g: Array, shape: Sequence[int]) -> Array:
    """Sum ``g`` over the axes a bias of ``shape`` was broadcast along (its size-1 axes)."""
    axes = tuple(i for i, (n, m) in enumerate(zip(shape, g.shape)) if n == 1 and m != 1)
    return jnp.sum(g, axis=axes, keepdims=True) if axes else g


@functools.partial(jax.custom_vjp, nondiff_argnums=(5, 6))
def blocked_attention(q: Array, k: Array, v: Array, biases: tuple[Array, ...], seeds: Optional[Array],
                      chunk: int, keep_prob: float) -> Array:
    """q [b, q_len, h, d], k / v [b, k_len, h, d] (compute dtype), ``biases`` float32, each
    broadcastable to [b, h, q_len, k_len]; ``seeds`` uint32[2] (dropout on) or None; ``q_len``
    divisible by ``chunk``. Returns [b, q_len, h, d]."""
    return _forward(q, k, v, biases, seeds, chunk, keep_prob)[0]


def _weights(qc: Array, kt: Array, biases: tuple[Array, ...], start: Array, chunk: int) -> Array:
    logits = jnp.einsum("bhqd,bhkd->bhqk", qc, kt, preferred_element_type=jnp.float32)
    for bias in biases:
        logits = logits + _block(bias, start, chunk, 2)
    return jax.nn.softmax(logits, axis=-1)


def _forward(q, k, v, biases, seeds, chunk, keep_prob):
    qt, kt, vt = (x.transpose(0, 2, 1, 3) for x in (q, k, v))  # [b, h, l, d]
    full = (qt.shape[0], qt.shape[1], qt.shape[2], kt.shape[2])

    def one(start: Array) -> Array:
        qc = jax.lax.dynamic_slice_in_dim(qt, start, chunk, 2)
        w = _weights(qc, kt, biases, start, chunk)
        if seeds is not None:
            w = jnp.where(hash_keep(seeds, full, keep_prob, start, chunk), w / keep_prob, 0.0)
        return jnp.einsum("bhqk,bhkd->bhqd", w.astype(qt.dtype), vt)

    starts = jnp.arange(0, qt.shape[2], chunk)
    out = jax.lax.map(one, starts)  # [n, b, h, chunk, d]
    out = out.transpose(1, 2, 0, 3, 4).reshape(qt.shape)
    return out.transpose(0, 2, 1, 3), (qt, kt, vt, biases, seeds)


def _backward(chunk, keep_prob, res, g):
    qt, kt, vt, biases, seeds = res
    gt = g.transpose(0, 2, 1, 3)
    full = (qt.shape[0], qt.shape[1], qt.shape[2], kt.shape[2])

    def step(carry, start):
        dk, dv, dshared = carry
        qc, gc = (jax.lax.dynamic_slice_in_dim(x, start, chunk, 2) for x in (qt, gt))
        w = _weights(qc, kt, biases, start, chunk)
        dw = jnp.einsum("bhqd,bhkd->bhqk", gc, vt, preferred_element_type=jnp.float32)
        used = w
        if seeds is not None:
            keep = hash_keep(seeds, full, keep_prob, start, chunk)
            used = jnp.where(keep, w / keep_prob, 0.0)
            dw = jnp.where(keep, dw / keep_prob, 0.0)
        dv = dv + jnp.einsum("bhqk,bhqd->bhkd", used.astype(gc.dtype), gc, preferred_element_type=jnp.float32)
        ds = w * (dw - jnp.sum(dw * w, axis=-1, keepdims=True))
        dsc = ds.astype(qc.dtype)
        dk = dk + jnp.einsum("bhqk,bhqd->bhkd", dsc, qc, preferred_element_type=jnp.float32)
        dq = jnp.einsum("bhqk,bhkd->bhqd", dsc, kt)
        # a bias with a query axis gets its block's rows; one broadcast over queries sums them
        per_block = tuple(_reduce_to(ds, b.shape) if b.shape[2] != 1 else None for b in biases)
        dshared = tuple(None if d is None else d + _reduce_to(ds, b.shape)
                        for d, b in zip(dshared, biases))
        return (dk, dv, dshared), (dq, per_block)

    zeros = tuple(jnp.zeros(b.shape, jnp.float32) if b.shape[2] == 1 else None for b in biases)
    init = (jnp.zeros(kt.shape, jnp.float32), jnp.zeros(vt.shape, jnp.float32), zeros)
    (dk, dv, dshared), (dq, blocks) = jax.lax.scan(step, init, jnp.arange(0, qt.shape[2], chunk))

    def unblock(x):  # [n, b, h, chunk, ...] -> [b, h, n * chunk, ...]
        return jnp.moveaxis(x, 0, 2).reshape(x.shape[1:3] + (-1,) + x.shape[4:])

    dbiases = tuple(shared.astype(b.dtype) if shared is not None else unblock(blk).astype(b.dtype)
                    for b, shared, blk in zip(biases, dshared, blocks))
    back = lambda x, like: unblock(x).transpose(0, 2, 1, 3).astype(like.dtype) if x.ndim == 5 \
        else x.transpose(0, 2, 1, 3).astype(like.dtype)
    dseeds = None if seeds is None else np.zeros(seeds.shape, jax.dtypes.float0)
    return back(dq, qt), back(dk, kt), back(dv, vt), dbiases, dseeds


blocked_attention.defvjp(lambda q, k, v, biases, seeds, chunk, keep_prob:
                         _forward(q, k, v, biases, seeds, chunk, keep_prob), _backward)


def applies(q_len: int, chunk: int) -> bool:
    """Whether the blocked core serves a call with ``q_len`` queries (several whole blocks)."""
    return chunk > 0 and q_len > chunk and q_len % chunk == 0
