"""Benchmark: where a verifier layer's training time goes on this CPU -- the attention core vs the
dense projections, ours (XLA) vs PyTorch (what HF's models call), in one run.

Per layer of the packed trainer's micro-batch (``--rows`` rows of ``--length`` tokens, MiniLM:
12 heads x 32, d 384, d_ff 1536; T5 v1.1-small: 6 heads x 64, d 512, gated d_ff 1024), forward +
backward, median of ``--repeat`` calls after a warm-up:

- ``attention``: scores, softmax (masked by an additive bias), weighted sum -- our einsums as in
  lever_jax.models.layers.MultiHeadAttention -- vs ``torch.nn.functional.scaled_dot_product_attention``
  (the fused CPU kernel HF's BERT / T5 attention reaches on PyTorch >= 2.1; T5 passes its bias as
  the mask);
- ``dense``: the layer's q/k/v/out projections and MLP as matmuls (our Dense: float32 accumulation)
  vs torch matmuls;

each in float32 and in bfloat16 (ours: compute dtype; PyTorch: CPU autocast). Prints ms per call
and GFLOP/s, and the ratio PyTorch / ours per part (> 1: ours faster). ``attention_chunked`` (ours
only) is a prototype of the measured next lever, not used by the models: the same attention with a
custom VJP over blocks of ``--chunk`` queries that recomputes each block's softmax in the backward,
so every [rows, heads, chunk, length] block stays in cache (no dropout, no gradient for the bias:
what the models would need before it can replace their attention).

    .venv/bin/python scripts/bench_attention.py --model minilm --json docs/bench/attention_minilm.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Callable

SHAPES = {"minilm": dict(heads=12, head_dim=32, d=384, mlp=[(384, 1536), (1536, 384)]),
          "t5": dict(heads=6, head_dim=64, d=512, mlp=[(512, 1024), (512, 1024), (1024, 512)])}


def _median_ms(fn: Callable[[], None], repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def jax_parts(shape: dict, rows: int, length: int, dtype: str, chunk: int = 32) -> dict[str, Callable[[], None]]:
    import jax
    import jax.numpy as jnp

    dt = jnp.dtype(dtype)
    h, hd = shape["heads"], shape["head_dim"]
    q, k, v = (jnp.full((rows, length, h, hd), 0.01, dt) for _ in range(3))
    bias = jnp.zeros((rows, 1, 1, length), jnp.float32)

    def attention(q, k, v):
        logits = jnp.einsum("bqhd,bkhd->bhqk", q, k, preferred_element_type=jnp.float32) + bias
        weights = jax.nn.softmax(logits, axis=-1).astype(dt)
        return jnp.einsum("bhqk,bkhd->bqhd", weights, v)

    kernels = [jnp.full(io, 0.01, jnp.float32) for io in _projections(shape)]
    inputs = [jnp.full((rows * length, i), 0.01, jnp.float32) for i, _ in _projections(shape)]

    def dense(ws, xs):  # each projection as our Dense computes it
        outs = [jnp.matmul(x.astype(dt), w.astype(dt), preferred_element_type=jnp.float32).astype(dt)
                for w, x in zip(ws, xs)]
        return sum(jnp.sum(o.astype(jnp.float32)) for o in outs)

    att = jax.jit(jax.grad(lambda q, k, v: jnp.sum(attention(q, k, v).astype(jnp.float32)), argnums=(0, 1, 2)))
    blocked = chunked_attention(bias, chunk)
    chk = jax.jit(jax.grad(lambda q, k, v: jnp.sum(blocked(q, k, v).astype(jnp.float32)), argnums=(0, 1, 2)))
    den = jax.jit(jax.grad(dense, argnums=(0, 1)))
    return {"attention": lambda: jax.block_until_ready(att(q, k, v)),
            "attention_chunked": lambda: jax.block_until_ready(chk(q, k, v)),
            "dense": lambda: jax.block_until_ready(den(kernels, inputs))}


def chunked_attention(bias, chunk: int) -> Callable:
    """softmax(q k^T + bias) v over [b, l, h, d] inputs, its backward recomputing the softmax one
    block of ``chunk`` queries at a time (a prototype: no dropout, ``bias`` gets no gradient)."""
    import jax
    import jax.numpy as jnp

    def heads_first(x):  # [b, l, h, d] -> [b, h, l, d]
        return x.transpose(0, 2, 1, 3)

    def blocks(x):  # [b, h, l, d] -> [l / chunk, b, h, chunk, d]
        b, h, l, d = x.shape
        return x.reshape(b, h, l // chunk, chunk, d).transpose(2, 0, 1, 3, 4)

    def unblock(x):
        n, b, h, c, d = x.shape
        return x.transpose(1, 2, 0, 3, 4).reshape(b, h, n * c, d)

    def weights(qc, kt):
        logits = jnp.einsum("bhqd,bhkd->bhqk", qc, kt, preferred_element_type=jnp.float32) + bias
        return jax.nn.softmax(logits, axis=-1)

    @jax.custom_vjp
    def attend(q, k, v):
        return forward(q, k, v)[0]

    def forward(q, k, v):
        qt, kt, vt = heads_first(q), heads_first(k), heads_first(v)
        out = jax.lax.map(lambda qc: jnp.einsum("bhqk,bhkd->bhqd", weights(qc, kt).astype(qc.dtype), vt), blocks(qt))
        return heads_first(unblock(out)), (qt, kt, vt)

    def backward(res, g):
        qt, kt, vt = res

        def step(carry, xs):
            dk, dv = carry
            qc, gc = xs
            w = weights(qc, kt)
            dv = dv + jnp.einsum("bhqk,bhqd->bhkd", w.astype(gc.dtype), gc)
            dw = jnp.einsum("bhqd,bhkd->bhqk", gc, vt, preferred_element_type=jnp.float32)
            ds = (w * (dw - jnp.sum(dw * w, axis=-1, keepdims=True))).astype(qc.dtype)
            return (dk + jnp.einsum("bhqk,bhqd->bhkd", ds, qc), dv), jnp.einsum("bhqk,bhkd->bhqd", ds, kt)

        zeros = (jnp.zeros_like(kt), jnp.zeros_like(vt))
        (dk, dv), dq = jax.lax.scan(step, zeros, (blocks(qt), blocks(heads_first(g))))
        return heads_first(unblock(dq)), heads_first(dk), heads_first(dv)

    attend.defvjp(forward, backward)
    return attend


def _projections(shape: dict) -> list[tuple[int, int]]:
    """(in, out) of a layer's q, k, v, out projections and MLP matmuls."""
    d, joined = shape["d"], shape["heads"] * shape["head_dim"]
    return [(d, joined)] * 3 + [(joined, d)] + list(shape["mlp"])


def torch_parts(shape: dict, rows: int, length: int, dtype: str, threads: int) -> dict[str, Callable[[], None]]:
    import torch

    torch.set_num_threads(threads or os.cpu_count() or 1)
    h, hd = shape["heads"], shape["head_dim"]
    auto = dict(device_type="cpu", dtype=torch.bfloat16, enabled=dtype == "bfloat16")
    q, k, v = (torch.full((rows, h, length, hd), 0.01, requires_grad=True) for _ in range(3))
    mask = torch.zeros((rows, 1, 1, length))
    ws = [torch.full(io, 0.01, requires_grad=True) for io in _projections(shape)]
    xs = [torch.full((rows * length, i), 0.01, requires_grad=True) for i, _ in _projections(shape)]

    def attention() -> None:
        with torch.autocast(**auto):
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        out.float().sum().backward()

    def dense() -> None:
        with torch.autocast(**auto):
            total = sum((x @ w).float().sum() for w, x in zip(ws, xs))
        total.backward()

    return {"attention": attention, "dense": dense}


def flops(shape: dict, rows: int, length: int) -> dict[str, float]:
    """Forward + backward FLOPs (3x the forward's matmuls) of each part."""
    attention = 2 * 2 * rows * shape["heads"] * length * length * shape["head_dim"]
    dense = 2 * rows * length * sum(i * o for i, o in _projections(shape))
    return {"attention": 3.0 * attention, "attention_chunked": 3.0 * attention, "dense": 3.0 * dense}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=sorted(SHAPES), default="minilm")
    ap.add_argument("--rows", type=int, default=5, help="packed rows per micro-batch (one GSM8k problem: 5)")
    ap.add_argument("--length", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--torch_threads", type=int, default=0)
    ap.add_argument("--chunk", type=int, default=32, help="queries per block of attention_chunked")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    shape, work = SHAPES[args.model], flops(SHAPES[args.model], args.rows, args.length)
    res: dict = {"config": vars(args), "load_avg_start": os.getloadavg(), "results": {}}
    for dtype in ("float32", "bfloat16"):
        ours, theirs = jax_parts(shape, args.rows, args.length, dtype, min(args.chunk, args.length)), \
            torch_parts(shape, args.rows, args.length, dtype, args.torch_threads)
        for part in ("attention", "attention_chunked", "dense"):
            theirs_part = theirs["attention" if part == "attention_chunked" else part]
            ms = {"ours": _median_ms(ours[part], args.repeat), "pytorch": _median_ms(theirs_part, args.repeat)}
            row = {side: {"ms": t, "gflops": work[part] / t / 1e6} for side, t in ms.items()}
            row["pytorch_over_ours"] = ms["pytorch"] / ms["ours"]
            res["results"][f"{dtype}/{part}"] = row
            print(f"{args.model} {dtype:8s} {part:9s}: ours {ms['ours']:7.1f} ms ({row['ours']['gflops']:5.1f} "
                  f"GFLOP/s), PyTorch {ms['pytorch']:7.1f} ms ({row['pytorch']['gflops']:5.1f} GFLOP/s): "
                  f"PyTorch/ours {row['pytorch_over_ours']:.2f}x", flush=True)
    res["load_avg_end"] = os.getloadavg()
    print(f"load average {res['load_avg_start']} -> {res['load_avg_end']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(res, handle, indent=1)
    return res


if __name__ == "__main__":
    main()
