"""Checkpointer: exact round trip of state + data position + RNG, latest/best preservation."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lever_jax.training import partitioning
from lever_jax.training.checkpoints import Checkpointer, abstract_like


def _state(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {"params": {"w": jnp.asarray(rng.normal(size=(4, 3)), jnp.float32),
                       "b": jnp.asarray(rng.normal(size=(3,)), jnp.float32)},
            "step": jnp.int32(seed), "rng": jax.random.PRNGKey(seed)}


def test_round_trip_is_exact_with_shardings(tmp_path):
    mesh = partitioning.make_mesh()
    rep = partitioning.replicated(mesh)
    state = _state(7)
    with Checkpointer(tmp_path) as ckpt:
        ckpt.save(5, state, {"step": 5, "seed": 333, "rng": np.asarray(state["rng"]).tolist()})
    with Checkpointer(tmp_path) as ckpt:
        assert ckpt.latest_step() == 5
        shardings = jax.tree.map(lambda _: rep, state)
        restored, data = ckpt.restore(None, abstract_like(state, shardings))
    assert data == {"step": 5, "seed": 333, "rng": np.asarray(state["rng"]).tolist()}
    for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(restored)):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert restored["params"]["w"].sharding == rep


def test_keeps_latest_and_best(tmp_path):
    state = _state(0)
    ckpt = Checkpointer(tmp_path, keep_latest=2, keep_best=1, best_metric="acc")
    for step, acc in [(10, 0.5), (20, 0.9), (30, 0.1), (40, None), (50, 0.2)]:
        ckpt.save(step, state, {"step": step}, None if acc is None else {"acc": acc, "loss": 1.0})
    ckpt.close()
    ckpt = Checkpointer(tmp_path, keep_latest=2, keep_best=1, best_metric="acc")
    assert ckpt.all_steps() == [20, 40, 50]  # best (20) + the two latest
    assert ckpt.best_step() == 20 and ckpt.latest_step() == 50
    assert ckpt.metrics(20) == {"acc": 0.9, "loss": 1.0}
    assert ckpt.restore_data(40) == {"step": 40}
    ckpt.close()
    # A read-only reader (evaluation) finds the same best step and deletes nothing.
    with Checkpointer(tmp_path, best_metric="acc", read_only=True) as reader:
        assert reader.best_step() == 20 and reader.all_steps() == [20, 40, 50]


def test_missing_checkpoint_and_bad_options(tmp_path):
    with Checkpointer(tmp_path) as ckpt:
        assert ckpt.latest_step() is None
        with pytest.raises(FileNotFoundError):
            ckpt.restore(None, abstract_like(_state(0)))
    with pytest.raises(ValueError):
        Checkpointer(tmp_path, keep_latest=0)
