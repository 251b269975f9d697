"""Benchmark the jitted LEVER scorer (lever_jax.scoring.rerank) on CPU.

Compares, on random pools with realistic group sizes (3-10 result groups per row, skewed sizes,
~10% padding):
  * the jitted scorer, dense ids (segment path) and arbitrary int32 ids (N x N path);
  * one fused jitted pass over the same inputs (argmax of gen + verifier, reading ids and mask):
    the memory-bound floor;
  * the numpy reference (lever_jax.scoring.rerank_reference, plain loops, float64);
  * a literal Python port of LEVER's per-problem loop (aggregate_exec_results: greedy list of
    groups per problem, logsumexp per group).
Compile time is reported separately; steady-state times are medians of --repeats runs with
block_until_ready. Slow references run on a subset of rows and are scaled linearly (stated).

    nice .venv/bin/python scripts/bench_scoring.py [--sizes 1319x50,10000x100] [--repeats 11]
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import time
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from lever_jax import scoring


def make_pool(batch: int, width: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Random pool: per row 3-10 groups with Dirichlet(0.7) sizes, dense + arbitrary ids."""
    rng = np.random.default_rng(seed)
    num_groups = rng.integers(3, 11, size=batch)
    lengths = np.where(rng.random(batch) < 0.3, rng.integers(width // 2, width + 1, size=batch), width)
    mask = np.arange(width)[None, :] < lengths[:, None]
    raw = np.empty((batch, width), np.int64)
    for b in range(batch):
        probs = rng.dirichlet(np.full(num_groups[b], 0.7))
        raw[b] = rng.choice(num_groups[b], size=width, p=probs)
    arbitrary = rng.integers(-(2**31), 2**31 - 1, size=(batch, 16), dtype=np.int64)
    arbitrary_ids = np.take_along_axis(arbitrary, raw, axis=1).astype(np.int32)
    arbitrary_ids[~mask] = -1
    dense = scoring.dense_group_ids_reference(arbitrary_ids, mask)
    gen = -rng.uniform(2.0, 60.0, size=(batch, width)).astype(np.float32)
    logits = rng.normal(0.0, 2.0, size=(batch, width))
    ver = (-np.logaddexp(0.0, -logits)).astype(np.float32)  # log sigmoid
    return {"gen": gen, "ver": ver, "arbitrary_ids": arbitrary_ids, "dense_ids": dense, "mask": mask}


def lever_python_loop(gen: np.ndarray, ver: np.ndarray, ids: np.ndarray, mask: np.ndarray) -> list[int]:
    """Literal port of LEVER's aggregate_exec_results ('summing', coefs 1.0), one problem at a time."""
    choices = []
    for b in range(gen.shape[0]):
        n = int(mask[b].sum())
        programs = [{"exec_result": int(ids[b, i])} for i in range(n)]
        rerank_log_probs = ver[b, :n]
        gen_log_probs = gen[b, :n]
        gated = (np.exp(rerank_log_probs) < 0.0).astype(np.float32)
        final_log_probs = gated * -1e10 + rerank_log_probs + 1.0 * gen_log_probs
        idx_groups: list[list[int]] = []
        for i, program in enumerate(programs):
            if not idx_groups:
                idx_groups.append([i])
                continue
            same = -1
            for gi in range(len(idx_groups)):
                if program["exec_result"] == programs[idx_groups[gi][0]]["exec_result"]:
                    same = gi
                    idx_groups[gi].append(i)
                    break
            if same == -1:
                idx_groups.append([i])
        group_log_probs = []
        for group in idx_groups:
            vals = final_log_probs[group]
            top = vals.max()
            group_log_probs.append(top + np.log(np.exp(vals - top).sum()))
        choices.append(idx_groups[int(np.argmax(np.stack(group_log_probs)))][0])
    return choices


def timed(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@jax.jit
def fused_pass(gen: jax.Array, ver: jax.Array, ids: jax.Array, mask: jax.Array) -> jax.Array:
    """The floor: one elementwise + argmax pass reading the same four inputs."""
    return jnp.argmax(jnp.where(mask & (ids >= 0), gen + ver, -jnp.inf), axis=-1)


@jax.jit
def fused_max(gen: jax.Array, ver: jax.Array, ids: jax.Array, mask: jax.Array) -> jax.Array:
    """A cheaper floor: the same pass with a plain max reduction (argmax is a variadic reduce)."""
    return jnp.max(jnp.where(mask & (ids >= 0), gen + ver, -jnp.inf), axis=-1)


def bench(batch: int, width: int, repeats: int, ref_rows: int) -> list[str]:
    pool = make_pool(batch, width)
    dev = {k: jax.device_put(v) for k, v in pool.items()}
    bytes_in = sum(pool[k].nbytes for k in ("gen", "ver", "dense_ids", "mask"))
    lines = [f"### B={batch:,} x N={width}", ""]
    rows: list[tuple[str, float, float | None]] = []

    def jit_case(name: str, fn: Callable[[], object]) -> float:
        start = time.perf_counter()
        jax.block_until_ready(fn())
        first = time.perf_counter() - start
        steady = timed(fn, repeats)
        rows.append((name, steady, max(first - steady, 0.0)))
        return steady

    g, v, m = dev["gen"], dev["ver"], dev["mask"]
    t_fused = jit_case("fused pass (argmax gen+ver)", lambda: fused_pass(g, v, dev["dense_ids"], m))
    t_floor = jit_case("fused pass (max gen+ver, no argmax)", lambda: fused_max(g, v, dev["dense_ids"], m))
    t_dense = jit_case(
        "rerank, dense ids (segment path)",
        lambda: scoring.rerank(g, v, dev["dense_ids"], m, ids_are_dense=True),
    )
    t_arb = jit_case(
        "rerank, arbitrary ids (N x N path)", lambda: scoring.rerank(g, v, dev["arbitrary_ids"], m)
    )
    t_dgi = jit_case(
        "dense_group_ids + rerank dense",
        lambda: scoring.rerank(
            g, v, scoring.dense_group_ids(dev["arbitrary_ids"], m), m, ids_are_dense=True
        ),
    )
    jit_case("rerank, aggregate=False", lambda: scoring.rerank(g, v, dev["dense_ids"], m, aggregate=False))

    # correctness cross-check against the LEVER loop on the reference subset
    sub = slice(0, min(ref_rows, batch))
    sub_arrays = [pool[k][sub] for k in ("gen", "ver", "arbitrary_ids", "mask")]
    start = time.perf_counter()
    loop_choice = lever_python_loop(*sub_arrays)
    t_loop = (time.perf_counter() - start) * batch / len(loop_choice)
    start = time.perf_counter()
    ref = scoring.rerank_reference(*sub_arrays, tie_rtol=0.0)
    t_ref = (time.perf_counter() - start) * batch / len(loop_choice)
    jit_choice = np.asarray(scoring.rerank(g, v, dev["dense_ids"], m, ids_are_dense=True).choice)
    agree_loop = float(np.mean(jit_choice[sub] == np.asarray(loop_choice)))
    agree_ref = float(np.mean(jit_choice[sub] == ref.choice))
    scaled = "" if ref_rows >= batch else f" (timed on {ref_rows:,} rows, scaled x{batch / ref_rows:.1f})"
    rows.append((f"numpy reference{scaled}", t_ref, None))
    rows.append((f"LEVER Python loop{scaled}", t_loop, None))

    lines += ["| method | steady time (ms) | compile (ms) | GB/s in |", "|---|---:|---:|---:|"]
    for name, t, comp in rows:
        gbs = bytes_in / t / 1e9
        comp_s = "-" if comp is None else f"{comp * 1e3:.0f}"
        lines.append(f"| {name} | {t * 1e3:.2f} | {comp_s} | {gbs:.2f} |")
    lines += [
        "",
        f"- inputs: {bytes_in / 1e6:.1f} MB (gen f32, verifier f32, ids i32, mask bool)",
        f"- dense path vs LEVER Python loop: **{t_loop / t_dense:,.0f}x** faster;"
        f" vs numpy reference: {t_ref / t_dense:,.0f}x",
        f"- dense path vs fused pass: **{t_dense / t_fused:.2f}x** the fused time;"
        f" N x N path: {t_arb / t_fused:.2f}x; dense_group_ids + dense: {t_dgi / t_fused:.2f}x;"
        f" dense path vs the max-only pass: {t_dense / t_floor:.2f}x",
        f"- agreement of choices with the LEVER loop / numpy reference (tie_rtol=0) on the"
        f" subset: {agree_loop:.4f} / {agree_ref:.4f}",
        "",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1319x50,10000x100")
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--ref-rows", type=int, default=2000, help="rows timed for the slow references")
    args = parser.parse_args()
    out = [
        f"jax {jax.__version__}, backend {jax.default_backend()}, {os.cpu_count()} CPUs"
        f" ({platform.processor() or platform.machine()}), median of {args.repeats}",
        "",
    ]
    for size in args.sizes.split(","):
        batch, width = (int(x) for x in size.lower().split("x"))
        out += bench(batch, width, args.repeats, args.ref_rows)
    print("\n".join(out))


if __name__ == "__main__":
    main()
