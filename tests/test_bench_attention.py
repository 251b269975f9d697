"""scripts/bench_attention.py: the per-part timing runs at tiny sizes on both sides, and its FLOP
counts are a layer's (MiniLM: q, k, v, out projections + the two MLP matmuls; scores + weighted sum)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))


def test_flops_are_one_layers_forward_and_backward() -> None:
    from bench_attention import SHAPES, flops

    rows, length, d = 2, 64, 384
    work = flops(SHAPES["minilm"], rows, length)
    assert work["dense"] == 3 * 2 * rows * length * (4 * d * d + 2 * d * 1536)
    assert work["attention"] == 3 * 2 * 2 * rows * 12 * length * length * 32


def test_tiny_run_times_every_part_on_both_sides(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from bench_attention import main

    res = main(["--model", "t5", "--rows", "1", "--length", "32", "--repeat", "1",
                "--json", str(tmp_path / "a.json")])
    assert sorted(res["results"]) == [f"{dt}/{part}" for dt in ("bfloat16", "float32")
                                      for part in ("attention", "attention_chunked", "dense")]
    assert all(r[side]["ms"] > 0 for r in res["results"].values() for side in ("ours", "pytorch"))
    assert (tmp_path / "a.json").is_file()


def test_chunked_attention_prototype_has_the_reference_gradients() -> None:
    """The prototype recomputes the softmax block by block in its backward: same output and
    gradients as plain attention (float32, a padding bias over the keys)."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from bench_attention import chunked_attention

    key = jax.random.PRNGKey(0)
    q, k, v = (jax.random.normal(jax.random.fold_in(key, i), (2, 64, 3, 8)) for i in range(3))
    bias = jnp.where(jnp.arange(64) < 50, 0.0, -1e9)[None, None, None, :]

    def plain(q, k, v):
        w = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k) + bias, axis=-1)
        return jnp.einsum("bhqk,bkhd->bqhd", w, v)

    loss = lambda f: lambda q, k, v: jnp.sum(jnp.sin(f(q, k, v)))
    want = jax.grad(loss(plain), argnums=(0, 1, 2))(q, k, v)
    got = jax.grad(loss(chunked_attention(bias, 16)), argnums=(0, 1, 2))(q, k, v)
    np.testing.assert_allclose(chunked_attention(bias, 16)(q, k, v), plain(q, k, v), rtol=1e-5, atol=1e-5)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
