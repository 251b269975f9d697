"""The counter-based dropout masks (layers.keep_mask / layers.Dropout, dropout_impl='hash')."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lever_jax.models import layers


@pytest.mark.parametrize("keep_prob", [0.9, 0.5, 0.1])
def test_keep_rate_and_independence(keep_prob):
    key = jax.random.PRNGKey(0)
    mask = np.asarray(layers.keep_mask(key, (64, 6, 128), keep_prob))
    n = mask.size
    assert mask.dtype == bool
    # within 5 standard deviations of a Bernoulli(keep_prob) mean
    assert abs(mask.mean() - keep_prob) < 5 * np.sqrt(keep_prob * (1 - keep_prob) / n)
    # neighbouring elements are not correlated (the index hash mixes adjacent counters)
    flat = mask.reshape(-1).astype(np.float64)
    corr = np.corrcoef(flat[:-1], flat[1:])[0, 1]
    assert abs(corr) < 0.02
    # rows are not copies of each other (the index covers every dimension)
    assert not np.array_equal(mask[0], mask[1]) and not np.array_equal(mask[:, 0], mask[:, 1])


def test_deterministic_per_key_and_different_across_keys():
    a = layers.keep_mask(jax.random.PRNGKey(1), (32, 32), 0.5)
    b = layers.keep_mask(jax.random.PRNGKey(1), (32, 32), 0.5)
    c = layers.keep_mask(jax.random.PRNGKey(2), (32, 32), 0.5)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    # the two keys' masks agree on about half of the elements (independent draws)
    assert 0.4 < float(jnp.mean(a == c)) < 0.6


def test_dropout_module_matches_inverted_dropout_and_jax_impl_is_available():
    x = jnp.ones((16, 256))
    for impl in ("hash", "jax"):
        module = layers.Dropout(0.25, impl)
        y = module.apply({}, x, False, rngs={"dropout": jax.random.PRNGKey(3)})
        values = np.unique(np.asarray(y))
        assert len(values) == 2 and values[0] == 0.0 and values[1] == pytest.approx(1 / 0.75, rel=1e-6)
        assert abs(float(y.mean()) - 1.0) < 0.05  # expectation preserved
        assert np.array_equal(module.apply({}, x, True), x)  # deterministic: identity
    with pytest.raises(ValueError, match="dropout impl"):
        layers.keep_mask(jax.random.PRNGKey(0), (4,), 0.5, impl="threefry")
