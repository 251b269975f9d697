"""models/attention_core.py: the blocked attention core equals the whole-tensor one -- outputs,
gradients of q / k / v and of every bias (T5's relative-position bias trains through it), and the
dropout masks (the "hash" masks computed block by block are the whole mask's elements)."""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lever_jax.models.attention_core import applies, blocked_attention, hash_keep
from lever_jax.models.layers import MultiHeadAttention, keep_mask


def _qkv(b=2, lq=64, lk=64, h=3, d=8):
    key = jax.random.PRNGKey(0)
    return tuple(jax.random.normal(jax.random.fold_in(key, i), (b, n, h, d)) for i, n in enumerate((lq, lk, lk)))


def test_block_masks_are_the_whole_masks_rows() -> None:
    key = jax.random.PRNGKey(3)
    whole = keep_mask(key, (2, 3, 64, 48), 0.9, "hash")
    seeds = jax.random.bits(key, (2,), jnp.uint32)
    for start in (0, 16, 48):
        np.testing.assert_array_equal(hash_keep(seeds, (2, 3, 64, 48), 0.9, jnp.asarray(start), 16),
                                      whole[:, :, start:start + 16])


@pytest.mark.parametrize("dropout", [0.0, 0.2])
def test_module_blocked_equals_whole_tensor_path_with_bias_gradients(dropout: float) -> None:
    q, k, _ = _qkv()
    rel = jax.random.normal(jax.random.PRNGKey(5), (1, 3, 64, 64)) * 0.5  # learned: needs its gradient
    pad = jnp.where(jnp.arange(64) < 50, 0.0, -1e9)[None, None, None, :] * jnp.ones((2, 1, 1, 1))
    x, y = q.reshape(2, 64, 24), k.reshape(2, 64, 24)
    plain = MultiHeadAttention(num_heads=3, head_dim=8, out_features=24, dropout_rate=dropout)
    blocked = dataclasses.replace(plain, attention_chunk=16)
    params = plain.init(jax.random.PRNGKey(1), x, y, (rel, pad), True)
    rngs = {"dropout": jax.random.PRNGKey(9)}

    def loss(module):
        return lambda p, r: jnp.sum(jnp.sin(module.apply(p, x, y, (r, pad), dropout == 0.0, rngs=rngs)))

    want = jax.value_and_grad(loss(plain), argnums=(0, 1))(params, rel)
    got = jax.value_and_grad(loss(blocked), argnums=(0, 1))(params, rel)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    for g, w in zip(jax.tree.leaves(got[1]), jax.tree.leaves(want[1])):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5)


def test_bfloat16_close_and_only_whole_blocks_apply() -> None:
    q, k, v = (x.astype(jnp.bfloat16) for x in _qkv())
    bias = (jnp.zeros((2, 1, 1, 64), jnp.float32),)
    out = blocked_attention(q, k, v, bias, None, 16, 1.0)
    w = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k, preferred_element_type=jnp.float32), -1)
    ref = jnp.einsum("bhqk,bkhd->bqhd", w.astype(jnp.bfloat16), v)
    assert out.dtype == jnp.bfloat16
    np.testing.assert_allclose(out.astype(np.float32), ref.astype(np.float32), atol=3e-2)
    assert applies(64, 16) and not applies(16, 16) and not applies(40, 16) and not applies(64, 0)
