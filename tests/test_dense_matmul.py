"""`layers.dense_matmul`: the value and both gradients of a plain float32-accumulated matmul,
whichever operand its backward transposes, in float32 and (within rounding) in bfloat16."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn
from hypothesis import given, settings, strategies as st

from lever_jax.models.layers import Dense, dense_matmul


def reference(x: jax.Array, kernel: jax.Array) -> jax.Array:
    return jnp.matmul(x, kernel, preferred_element_type=jnp.float32)


def value_and_grads(fn, x: jax.Array, kernel: jax.Array, weights: jax.Array):
    loss = lambda a, b: jnp.sum(fn(a, b) * weights)  # a cotangent that differs per output element
    return fn(x, kernel), jax.grad(loss, argnums=(0, 1))(x, kernel)


@settings(max_examples=25, deadline=None)
@given(lead=st.lists(st.integers(1, 5), min_size=1, max_size=3), width_in=st.integers(1, 9),
       width_out=st.integers(1, 9), seed=st.integers(0, 2**16))
def test_value_and_gradients_equal_autodiffs_in_float32(lead, width_in, width_out, seed) -> None:
    rng = np.random.default_rng(seed)
    x = jnp.asarray(rng.normal(size=(*lead, width_in)), jnp.float32)
    kernel = jnp.asarray(rng.normal(size=(width_in, width_out)), jnp.float32)
    weights = jnp.asarray(rng.normal(size=(*lead, width_out)), jnp.float32)
    got, (dx, dk) = jax.jit(lambda a, b, w: value_and_grads(dense_matmul, a, b, w))(x, kernel, weights)
    want, (want_dx, want_dk) = value_and_grads(reference, x, kernel, weights)
    assert got.dtype == jnp.float32 and dx.shape == x.shape and dk.shape == kernel.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dk, want_dk, rtol=1e-5, atol=1e-5)


def test_bfloat16_gradients_keep_the_input_dtypes_and_round_like_bfloat16() -> None:
    rng = np.random.default_rng(0)
    x32 = jnp.asarray(rng.normal(size=(3, 16, 24)), jnp.float32)
    for width_out in (8, 40):  # narrower and wider than the input: both transposes
        k32 = jnp.asarray(rng.normal(size=(24, width_out)), jnp.float32)
        weights = jnp.asarray(rng.normal(size=(3, 16, width_out)), jnp.float32)
        x, kernel = x32.astype(jnp.bfloat16), k32.astype(jnp.bfloat16)
        _, (dx, dk) = value_and_grads(dense_matmul, x, kernel, weights)
        as32 = lambda a: a.astype(jnp.float32)
        _, (want_dx, want_dk) = value_and_grads(reference, as32(x), as32(kernel), weights)
        assert dx.dtype == dk.dtype == jnp.bfloat16
        # computed in float32 from the bfloat16 operands, then rounded to bfloat16 (8-bit mantissa)
        for got, want in ((dx, want_dx), (dk, want_dk)):
            np.testing.assert_allclose(as32(got), want, rtol=1e-2, atol=1e-2 * float(jnp.abs(want).max()))


def test_dense_layer_gradients_match_a_plain_matmul_layer() -> None:
    """The module path: Dense (bias, a column subset) under jit and grad."""
    rng = np.random.default_rng(1)
    x = jnp.asarray(rng.normal(size=(2, 7, 12)), jnp.float32)
    for features, columns in ((5, None), (20, None), (6, [4, 1])):
        layer = Dense(features, ("embed", "mlp"), use_bias=True)
        params = nn.unbox(layer.init(jax.random.PRNGKey(0), x))
        params = jax.tree_util.tree_map(lambda p: p + 0.1, params)  # a non-zero bias

        def plain(p, a):
            kernel, bias = p["params"]["kernel"], p["params"]["bias"]
            if columns is not None:
                kernel, bias = kernel[:, jnp.asarray(columns)], bias[jnp.asarray(columns)]
            return jnp.sum(jnp.sin(reference(a, kernel) + bias))

        ours = lambda p, a: jnp.sum(jnp.sin(layer.apply(p, a, columns)))
        got = jax.jit(jax.grad(ours, argnums=(0, 1)))(params, x)
        want = jax.grad(plain, argnums=(0, 1))(params, x)
        for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
