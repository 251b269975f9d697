"""Shared Flax building blocks whose parameters and activations carry logical axis names.

Parameter axes: 'vocab', 'embed', 'mlp', 'joined_kv' (heads x head_dim, flattened), 'heads',
'relpos_buckets', 'positions', 'token_types', 'classes'. Activation axes: 'batch', 'length',
'embed', 'heads', 'kv', 'mlp', 'vocab'. partitioning.py maps them onto the ('data', 'model')
mesh. Kernels are 2-D (flax 0.12.8's DenseGeneral fails with 3-D logical names) and reshaped.
Parameters are float32; computation runs in `dtype` (bfloat16 for mixed precision) with
softmax and normalisation statistics in float32.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn

Array = jax.Array
Initializer = Callable[..., Array]
NEG_INF = -1e9  # additive mask value (float32); exp underflows to exactly 0 after max-subtraction

constrain = nn.with_logical_constraint


def logical_param(module: nn.Module, name: str, init: Initializer, shape: Sequence[int],
                  axes: Sequence[Optional[str]]) -> Array:
    """A float32 parameter annotated with logical axis names."""
    return module.param(name, nn.with_logical_partitioning(init, tuple(axes)), tuple(shape),
                        jnp.float32)


@jax.custom_vjp
def dense_matmul(x: Array, kernel: Array) -> Array:
    """``x [..., in] @ kernel [in, out]``, accumulated and returned in float32.

    The value and gradients of ``jnp.matmul(..., preferred_element_type=float32)``; the custom
    backward only chooses the layout of the kernel gradient ``sum_t x_t g_t^T``. XLA:CPU's dot
    kernels (YNNPACK) take the left operand with the contracted token axis minor, so one of x and
    g is transposed. Autodiff's form transposed g, which XLA fused with g's producer (activation
    backward, dropout mask) into a strided loop: a T5-small training step on this CPU spent ~5 s of
    thread time in those loops (BENCHMARKS.md, "Round 4 (issue 23 item 2)"). Here the narrower of x
    and g is transposed."""
    return jnp.matmul(x, kernel, preferred_element_type=jnp.float32)


def _dense_matmul_fwd(x: Array, kernel: Array) -> tuple[Array, tuple[Array, Array]]:
    return dense_matmul(x, kernel), (x, kernel)


def _dense_matmul_bwd(res: tuple[Array, Array], g: Array) -> tuple[Array, Array]:
    x, kernel = res
    # float32 operands, as autodiff's mixed-dtype dots promote them (XLA:CPU runs no bf16 x bf16 -> f32
    # dot outside its YNNPACK fusions); a no-op in float32
    f32 = jnp.float32
    g, xf, kf = g.astype(f32), x.astype(f32), kernel.astype(f32)
    dx = jax.lax.dot_general(g, kf, (((g.ndim - 1,), (1,)), ((), ())))
    lead = tuple(range(x.ndim - 1))  # every token axis is contracted
    if x.shape[-1] > g.shape[-1]:  # transpose g: sum_t g_t x_t^T, then the small [out, in] result
        dk = jax.lax.dot_general(g, xf, ((lead, lead), ((), ()))).T
    else:
        dk = jax.lax.dot_general(xf, g, ((lead, lead), ((), ())))
    return dx.astype(x.dtype), dk.astype(kernel.dtype)


dense_matmul.defvjp(_dense_matmul_fwd, _dense_matmul_bwd)


class Dense(nn.Module):
    """y = x @ kernel (+ bias) with a 2-D kernel named by `kernel_axes` (in, out)."""

    features: int
    kernel_axes: tuple[Optional[str], Optional[str]]
    use_bias: bool = False
    dtype: Any = jnp.float32
    kernel_init: Initializer = nn.initializers.lecun_normal()

    @nn.compact
    def __call__(self, x: Array, columns: Optional[Sequence[int]] = None) -> Array:
        """`columns`: compute only these output features (e.g. two verifier logits)."""
        kernel = logical_param(self, "kernel", self.kernel_init, (x.shape[-1], self.features),
                               self.kernel_axes)
        if columns is not None:
            kernel = kernel[:, jnp.asarray(columns)]
        # float32 accumulation, then the compute dtype: with bfloat16 the CPU's bf16 dot kernels
        # (avx512_bf16) are only taken for a float32 result (BENCHMARKS.md "Round 3 (issue 23 item 2)")
        y = dense_matmul(x.astype(self.dtype), kernel.astype(self.dtype)).astype(self.dtype)
        if self.use_bias:
            bias = logical_param(self, "bias", nn.initializers.zeros, (self.features,),
                                 (self.kernel_axes[1],))
            if columns is not None:
                bias = bias[jnp.asarray(columns)]
            y = y + bias.astype(self.dtype)
        return y


class Embed(nn.Module):
    """Token embedding table [num_embeddings, features]; `attend` gives tied output logits."""

    num_embeddings: int
    features: int
    axes: tuple[str, str] = ("vocab", "embed")
    dtype: Any = jnp.float32
    embedding_init: Initializer = nn.initializers.normal(stddev=1.0)

    def setup(self) -> None:
        self.embedding = logical_param(self, "embedding", self.embedding_init,
                                       (self.num_embeddings, self.features), self.axes)

    def __call__(self, ids: Array) -> Array:
        return jnp.take(self.embedding, ids, axis=0).astype(self.dtype)

    def attend(self, x: Array, rows: Optional[Sequence[int]] = None) -> Array:
        """x @ table.T, optionally over a few `rows` only (cheap verifier logits)."""
        table = self.embedding if rows is None else self.embedding[jnp.asarray(rows)]
        return jnp.matmul(x.astype(self.dtype), table.astype(self.dtype).T)


class RMSNorm(nn.Module):
    """T5 layer norm: x / rms(x) * scale, no mean subtraction and no bias."""

    epsilon: float = 1e-6
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x: Array) -> Array:
        scale = logical_param(self, "scale", nn.initializers.ones, (x.shape[-1],), ("embed",))
        x32 = x.astype(jnp.float32)
        var = jnp.mean(jnp.square(x32), axis=-1, keepdims=True)
        return (x32 * jax.lax.rsqrt(var + self.epsilon) * scale).astype(self.dtype)


class LayerNorm(nn.Module):
    """BERT layer norm with scale and bias, statistics in float32."""

    epsilon: float = 1e-12
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x: Array) -> Array:
        d = x.shape[-1]
        scale = logical_param(self, "scale", nn.initializers.ones, (d,), ("embed",))
        bias = logical_param(self, "bias", nn.initializers.zeros, (d,), ("embed",))
        x32 = x.astype(jnp.float32)
        mean = jnp.mean(x32, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x32 - mean), axis=-1, keepdims=True)
        y = (x32 - mean) * jax.lax.rsqrt(var + self.epsilon) * scale + bias
        return y.astype(self.dtype)


DROPOUT_IMPLS = ("hash", "jax")


def _fmix32(x: Array) -> Array:
    """MurmurHash3's 32-bit finaliser (a bijection on uint32 with full avalanche)."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


def keep_mask(key: Array, shape: Sequence[int], keep_prob: float, impl: str = "hash") -> Array:
    """Bernoulli(keep_prob) bool mask of `shape` for dropout.

    "jax": `jax.random.bernoulli` (threefry by default: ~40 integer ops per draw, and XLA:CPU
    materialises the bits; it was the largest non-matmul cost of a T5 training step on CPU).
    "hash": a counter-based generator, two keyed MurmurHash3 finaliser rounds of the element's
    flat index (seeds drawn from `key` with jax.random), compared with keep_prob * 2**32.
    Elementwise on an iota, so XLA fuses it into the consumer and the backward pass; ~10x
    cheaper on CPU. Statistical quality is ample for dropout masks (independent keys per call
    and step; indices wrap after 2**32 elements per call).
    """
    if impl == "jax":
        return jax.random.bernoulli(key, keep_prob, tuple(shape))
    if impl != "hash":
        raise ValueError(f"dropout impl must be one of {DROPOUT_IMPLS}, got {impl!r}")
    shape = tuple(int(d) for d in shape)
    seed = jax.random.bits(key, (2,), jnp.uint32)
    index = jnp.zeros(shape, jnp.uint32)
    stride = 1
    for dim in reversed(range(len(shape))):
        index = index + jax.lax.broadcasted_iota(jnp.uint32, shape, dim) * jnp.uint32(stride % 2**32)
        stride *= shape[dim]
    bits = _fmix32(_fmix32(index ^ seed[0]) + seed[1])
    threshold = min(int(round(keep_prob * 2.0**32)), 2**32 - 1)
    return bits < jnp.uint32(threshold)


class Dropout(nn.Module):
    """Inverted dropout like `nn.Dropout` (rng collection 'dropout'), with `keep_mask`'s `impl`."""

    rate: float
    impl: str = "hash"

    @nn.compact
    def __call__(self, x: Array, deterministic: bool) -> Array:
        if deterministic or self.rate == 0.0:
            return x
        if self.rate >= 1.0:
            return jnp.zeros_like(x)
        keep_prob = 1.0 - self.rate
        keep = keep_mask(self.make_rng("dropout"), x.shape, keep_prob, self.impl)
        return jax.lax.select(keep, x / jnp.asarray(keep_prob, x.dtype), jnp.zeros_like(x))


def activation_fn(name: str) -> Callable[[Array], Array]:
    """gelu (exact erf), gelu_new (tanh approximation, HF T5 v1.1 'gated-gelu'), relu."""
    if name == "gelu":
        return lambda x: jax.nn.gelu(x, approximate=False)
    if name in ("gelu_new", "gelu_tanh"):
        return lambda x: jax.nn.gelu(x, approximate=True)
    if name == "relu":
        return jax.nn.relu
    raise ValueError(f"unknown activation {name!r}")


class DenseKernel(nn.Module):
    """Just the kernel of a `Dense` (same parameter path '<name>/kernel', shape and init)."""

    features: int
    kernel_axes: tuple[Optional[str], Optional[str]]
    kernel_init: Initializer = nn.initializers.lecun_normal()

    @nn.compact
    def __call__(self, in_features: int) -> Array:
        return logical_param(self, "kernel", self.kernel_init, (in_features, self.features),
                             self.kernel_axes)


class MultiHeadAttention(nn.Module):
    """Multi-head dot-product attention with flattened 2-D q/k/v/out kernels.

    `scale_logits`: BERT divides by sqrt(head_dim); T5 does not (folded into the q init).
    `biases` are additive float32 terms broadcastable to [batch, heads, q_len, k_len]
    (relative position bias, padding and causal masks); XLA fuses them into the logits.

    With a single query position and no biases on the projections (the verifier's first decoder
    step attending to the encoder), the key and value kernels are folded into the query side:
    q.(W_k^T x_j) = (W_k q).x_j and sum_j w_j (x_j W_v) = (sum_j w_j x_j) W_v per head. Same
    function and parameters, but the [k_len, embed] x [embed, heads*head_dim] key/value
    projections of every encoder position (8 layers x 2 x 2*L*d_model*d_inner FLOPs per
    sequence, forward and backward) shrink to per-head vectors.
    """

    num_heads: int
    head_dim: int
    out_features: int
    dtype: Any = jnp.float32
    dropout_rate: float = 0.0
    dropout_impl: str = "hash"
    use_bias: bool = False
    scale_logits: bool = False
    fold_single_query: bool = True
    # fold whenever q_len <= this (packed verifier rows decode one position per segment)
    fold_max_queries: int = 1
    q_init: Initializer = nn.initializers.lecun_normal()
    kv_init: Initializer = nn.initializers.lecun_normal()
    out_init: Initializer = nn.initializers.lecun_normal()

    @nn.compact
    def __call__(self, inputs_q: Array, inputs_kv: Array, biases: Sequence[Array],
                 deterministic: bool) -> Array:
        joined = self.num_heads * self.head_dim
        dense = lambda name, init: Dense(joined, ("embed", "joined_kv"), self.use_bias,
                                         self.dtype, init, name=name)
        head_axes = ("batch", "length", "heads", "kv")

        def split(x: Array) -> Array:
            return constrain(x.reshape(x.shape[:-1] + (self.num_heads, self.head_dim)), head_axes)

        q = split(dense("query", self.q_init)(inputs_q))
        if self.scale_logits:
            q = q * jnp.asarray(1.0 / math.sqrt(self.head_dim), self.dtype)
        fold = (self.fold_single_query and inputs_q.shape[1] <= max(self.fold_max_queries, 1)
                and not self.use_bias)
        if fold:
            e = inputs_kv.shape[-1]
            kernel = lambda name: DenseKernel(joined, ("embed", "joined_kv"), self.kv_init,
                                              name=name)(e).astype(self.dtype).reshape(
                                                  e, self.num_heads, self.head_dim)
            w_k, w_v = kernel("key"), kernel("value")
            x = inputs_kv.astype(self.dtype)
            q_e = jnp.einsum("bqhd,ehd->bqhe", q, w_k)  # query mapped back to the input space
            logits = jnp.einsum("bqhe,bke->bhqk", q_e, x, preferred_element_type=jnp.float32)
        else:
            k = split(dense("key", self.kv_init)(inputs_kv))
            v = split(dense("value", self.kv_init)(inputs_kv))
            logits = jnp.einsum("bqhd,bkhd->bhqk", q, k, preferred_element_type=jnp.float32)
        for b in biases:
            logits = logits + b
        weights = jax.nn.softmax(logits, axis=-1).astype(self.dtype)
        if self.dropout_rate > 0 and not deterministic:
            weights = Dropout(self.dropout_rate, self.dropout_impl)(weights, deterministic=False)
        if fold:
            context = jnp.einsum("bhqk,bke->bqhe", weights, x)
            out = jnp.einsum("bqhe,ehd->bqhd", context, w_v)
        else:
            out = jnp.einsum("bhqk,bkhd->bqhd", weights, v)
        out = constrain(out, head_axes).reshape(out.shape[:2] + (joined,))
        return Dense(self.out_features, ("joined_kv", "embed"), self.use_bias, self.dtype,
                     self.out_init, name="out")(out)


def padding_bias(mask: Array) -> Array:
    """[batch, k_len] bool key mask -> additive [batch, 1, 1, k_len] float32 bias."""
    return jnp.where(mask[:, None, None, :], 0.0, NEG_INF).astype(jnp.float32)


def segment_bias(q_segments: Array, k_segments: Array) -> Array:
    """Packing: [batch, q_len] x [batch, k_len] int segment ids (0 = padding) -> additive
    [batch, 1, q_len, k_len] float32 bias letting a query see only keys of its own segment
    (block-diagonal attention, t5x/seqio style). Padding keys are hidden from every query."""
    same = (q_segments[:, :, None] == k_segments[:, None, :]) & (k_segments[:, None, :] > 0)
    return jnp.where(same[:, None], 0.0, NEG_INF).astype(jnp.float32)


def segment_mean(x: Array, segment_ids: Array, num_segments: int) -> Array:
    """Packing: mean of x [batch, length, d] over each segment 1..num_segments of
    `segment_ids` [batch, length] -> float32 [batch, num_segments, d] (0 for an empty segment).
    A one-hot matmul, so the backward pass is a matmul too."""
    onehot = (segment_ids[:, None, :] == jnp.arange(1, num_segments + 1)[None, :, None])
    onehot = onehot.astype(jnp.float32)
    total = jnp.einsum("bsl,bld->bsd", onehot, x.astype(jnp.float32))
    return total / jnp.maximum(onehot.sum(-1, keepdims=True), 1.0)


def segment_first(x: Array, segment_ids: Array, num_segments: int) -> Array:
    """Packing: x at the first token of each segment 1..num_segments ([CLS] pooling) ->
    [batch, num_segments, d] (zeros for an empty segment)."""
    seg = jnp.arange(1, num_segments + 1)[None, :, None]
    is_seg = segment_ids[:, None, :] == seg  # [b, s, l]
    first = is_seg & (jnp.cumsum(is_seg, axis=-1) == 1)
    return jnp.einsum("bsl,bld->bsd", first.astype(x.dtype), x)


def causal_bias(length: int) -> Array:
    """Additive [1, 1, length, length] bias that hides future positions."""
    keep = np.tril(np.ones((length, length), dtype=bool))
    return jnp.asarray(np.where(keep, 0.0, NEG_INF)[None, None], jnp.float32)


def relative_position_buckets(q_len: int, k_len: int, bidirectional: bool, num_buckets: int,
                              max_distance: int, q_offset: int = 0) -> np.ndarray:
    """T5's relative position buckets [q_len, k_len] (static; HF `_relative_position_bucket`).

    Computed in numpy float32 like the reference so bucket boundaries match exactly.
    """
    context = np.arange(q_len, dtype=np.int64)[:, None] + q_offset
    memory = np.arange(k_len, dtype=np.int64)[None, :]
    rel = memory - context
    buckets = np.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        buckets += (rel > 0).astype(np.int64) * num_buckets
        rel = np.abs(rel)
    else:
        rel = -np.minimum(rel, 0)
    max_exact = num_buckets // 2
    is_small = rel < max_exact
    with np.errstate(divide="ignore"):
        large = np.log(rel.astype(np.float32) / np.float32(max_exact)) / np.float32(
            math.log(max_distance / max_exact)) * np.float32(num_buckets - max_exact)
    large = max_exact + np.where(is_small, 0, large).astype(np.int64)
    large = np.minimum(large, num_buckets - 1)
    return buckets + np.where(is_small, rel, large)


def relative_position_buckets_dynamic(rel: Array, bidirectional: bool, num_buckets: int,
                                      max_distance: int) -> Array:
    """`relative_position_buckets` of traced relative distances (memory - context), int32.

    Packing: positions restart in every segment, so the buckets come from the position arrays
    at run time. Same float32 arithmetic as the static version (tests compare them).
    """
    rel = rel.astype(jnp.int32)
    buckets = jnp.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + (rel > 0).astype(jnp.int32) * num_buckets
        rel = jnp.abs(rel)
    else:
        rel = -jnp.minimum(rel, 0)
    max_exact = num_buckets // 2
    is_small = rel < max_exact
    safe = jnp.maximum(rel, 1).astype(jnp.float32)
    large = jnp.log(safe / np.float32(max_exact)) / np.float32(
        math.log(max_distance / max_exact)) * np.float32(num_buckets - max_exact)
    large = max_exact + jnp.where(is_small, 0, large).astype(jnp.int32)
    large = jnp.minimum(large, num_buckets - 1)
    return buckets + jnp.where(is_small, rel, large)


class RelativePositionBias(nn.Module):
    """Learned per-head bias of T5's bucketed relative positions (one table per stack)."""

    num_buckets: int
    max_distance: int
    num_heads: int
    bidirectional: bool
    embedding_init: Initializer = nn.initializers.normal(stddev=0.1)

    @nn.compact
    def __call__(self, q_len: int, k_len: int, q_offset: int = 0,
                 q_positions: Optional[Array] = None, k_positions: Optional[Array] = None) -> Array:
        """[1, heads, q_len, k_len] float32; with `q_positions` [B, q_len] and `k_positions`
        [B, k_len] (packed rows) -> [B, heads, q_len, k_len] from those positions."""
        table = logical_param(self, "rel_embedding", self.embedding_init,
                              (self.num_buckets, self.num_heads), ("relpos_buckets", "heads"))
        if q_positions is not None:
            rel = k_positions[:, None, :] - q_positions[:, :, None]
            buckets = relative_position_buckets_dynamic(rel, self.bidirectional, self.num_buckets,
                                                        self.max_distance)
            values = jnp.take(table, buckets, axis=0)  # [b, q, k, heads]
            return jnp.transpose(values, (0, 3, 1, 2)).astype(jnp.float32)
        buckets = relative_position_buckets(q_len, k_len, self.bidirectional, self.num_buckets,
                                            self.max_distance, q_offset)
        values = jnp.take(table, jnp.asarray(buckets), axis=0)  # [q, k, heads]
        return jnp.transpose(values, (2, 0, 1))[None].astype(jnp.float32)
