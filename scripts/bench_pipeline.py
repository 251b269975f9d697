#!/usr/bin/env python
"""Benchmark the verifier input pipelines and measure truncation.

For each task x vocabulary:
  - examples/s of the tokenised, batched pipeline: the numpy path (lever_jax.inputs.batching:
    serialise + tokenise + frame + pad + batch) and the SeqIO path (task.get_dataset -> feature
    converter -> batch -> numpy); steady state, i.e. timed from the first batch to the last
    (the SeqIO start-up - graph tracing - is reported separately);
  - the share of inputs longer than 512 and 1,024 tokens (framed: special tokens included), i.e.
    the share that the pipelines truncate at those lengths, and length percentiles;
  - with --schema on/both: the same for Spider inputs with the database schema (LEVER's ablation);
  - the share of synthetic candidates (``source`` ``synthetic:*``: gold + mutations, not LLM samples).
Runs on at most 2 cores (CPU affinity + TF thread pools). Usage:
  .venv/bin/python scripts/bench_pipeline.py [--tasks T ...] [--vocabs byte spm minilm]
      [--max_examples 2000] [--data_dir DIR] [--schema off|on|both] [--pipelines [numpy] [seqio]]
      [--json out.json]
Default tasks: every bundled pool task (no folds), plus the tasks of --data_dir / $LEVER_JAX_DATA_DIR.
``--pipelines`` with no value measures truncation only.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from itertools import islice
from pathlib import Path

if hasattr(os, "sched_setaffinity"):
    cpus = sorted(os.sched_getaffinity(0))[:2]
    os.sched_setaffinity(0, cpus)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("LEVER_JAX_NO_AUTO_REGISTER", "1")
# imported after the CPU / TensorFlow settings above
import numpy as np  # noqa: E402

from lever_jax.inputs.batching import batch_features, encode_example, frame_ids  # noqa: E402
from lever_jax.inputs import SerializeOptions  # noqa: E402
from lever_jax.inputs.examples import TaskSpec, discover_specs, iter_examples, iter_spec_problems  # noqa: E402
from lever_jax.inputs import get_vocabulary  # noqa: E402


SCHEMA_DATASETS = ("spider",)  # datasets whose inputs change with include_schema


def truncation(spec: TaskSpec, vocab: str, lengths: list[int], limit: int | None,
               options: SerializeOptions | None = None) -> dict[str, float]:
    """Framed input lengths (no cut) of the first ``limit`` examples: shares over each length, percentiles."""
    tok = get_vocabulary(vocab)
    sizes = np.array([len(frame_ids(tok.encode(ex["inputs"]), None, spec.truncation_side, tok.bos_id, tok.eos_id))
                      for ex in islice(iter_examples(spec, options), limit)])
    out = {"examples": int(sizes.size), "median_tokens": float(np.median(sizes)), "p95_tokens": float(np.percentile(sizes, 95))}
    for q in (90, 99):
        out[f"p{q}_tokens"] = float(np.percentile(sizes, q))
    out["max_tokens"] = int(sizes.max())
    for length in lengths:
        out[f"truncated_at_{length}"] = float((sizes > length).mean())
    return out


def synthetic_share(spec: TaskSpec) -> float:
    """Share of candidates whose ``source`` starts with ``synthetic:`` (gold + mutations)."""
    total = synthetic = 0
    for problem in iter_spec_problems(spec):
        for cand in problem.candidates:
            total += 1
            synthetic += str(cand.source or "").startswith("synthetic:")
    return synthetic / total if total else 0.0


def bench_numpy(spec: TaskSpec, vocab: str, length: int, batch_size: int, n: int) -> float:
    tok = get_vocabulary(vocab)
    model = "encoder" if vocab == "minilm" else "encdec"
    feats = (encode_example(ex, tok, length, spec.truncation_side, model) for ex in islice(iter_examples(spec), n))
    start, count = time.perf_counter(), 0
    for batch in batch_features(feats, batch_size):
        count += int(batch["example_mask"].sum())
    return count / (time.perf_counter() - start)


def bench_seqio(spec: TaskSpec, vocab: str, length: int, batch_size: int, n: int) -> tuple[float, float]:
    import gin
    import seqio
    import tensorflow as tf

    from lever_jax.seqio.feature_converters import feature_converter
    from tasks import lever_tasks

    tf.config.threading.set_intra_op_parallelism_threads(2)
    tf.config.threading.set_inter_op_parallelism_threads(2)
    gin.clear_config()
    with gin.unlock_config():
        gin.parse_config(f"get_vocabulary.name = '{vocab}'")
    lever_tasks.register_task(spec)
    model = "encoder" if vocab == "minilm" else "encdec"
    t0 = time.perf_counter()
    task = seqio.get_mixture_or_task(spec.name)
    ds = task.get_dataset({"inputs": length, "targets": 1}, split="validation", shuffle=False).take(n)
    lengths = {"inputs": length, "targets": 1} if model == "encdec" else {"inputs": length}
    ds = feature_converter(model)(ds, lengths).batch(batch_size)
    it = ds.as_numpy_iterator()
    first = next(it)
    t1 = time.perf_counter()
    count = 0
    for batch in it:
        count += len(batch["label"])
    t2 = time.perf_counter()
    gin.clear_config()
    del first
    return count / (t2 - t1), t1 - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="*")
    parser.add_argument("--vocabs", nargs="*", default=["byte", "spm", "minilm"])
    parser.add_argument("--pipelines", nargs="*", default=["numpy", "seqio"])
    parser.add_argument("--length", type=int, default=512)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--max_examples", type=int, default=2000, help="examples per throughput run")
    parser.add_argument("--truncation_examples", type=int, default=None, help="limit for the truncation pass (default: all)")
    parser.add_argument("--data_dir")
    parser.add_argument("--schema", choices=("off", "on", "both"), default="off",
                        help="Spider inputs without / with the database schema (truncation rows only)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--append", action="store_true",
                        help="add this run's args and rows to an existing --json file ({'runs': [...], 'rows': [...]})")
    args = parser.parse_args(argv)

    specs = {s.name: s for s in discover_specs(args.data_dir)}
    names = args.tasks or [n for n, s in specs.items() if s.fold is None]
    rows = []
    for name in names:
        spec = specs[name]
        synthetic = synthetic_share(spec)
        variants = ["default"]
        if spec.dataset in SCHEMA_DATASETS and args.schema != "off":
            variants = ["default", "schema"] if args.schema == "both" else ["schema"]
        for vocab in args.vocabs:
            for variant in variants:
                options = SerializeOptions(include_schema=True) if variant == "schema" else SerializeOptions()
                row = {"task": name, "dataset": spec.dataset, "vocab": vocab, "inputs": variant,
                       "synthetic_candidates": synthetic}
                row.update(truncation(spec, vocab, [512, 1024], args.truncation_examples, options))
                if variant == "default" and "numpy" in args.pipelines:
                    row["numpy_examples_per_s"] = bench_numpy(spec, vocab, args.length, args.batch_size, args.max_examples)
                if variant == "default" and "seqio" in args.pipelines:
                    row["seqio_examples_per_s"], row["seqio_startup_s"] = bench_seqio(spec, vocab, args.length, args.batch_size, args.max_examples)
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    header = ("| task | inputs | vocab | examples | median tokens | p90 | p95 | p99 | max | >512 | >1024 "
              "| numpy ex/s | seqio ex/s | seqio start-up s |")
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    for r in rows:
        task = r["task"] + (" (synthetic)" if r["synthetic_candidates"] > 0.5 else "")
        print(
            f"| {task} | {r['inputs']} | {r['vocab']} | {r['examples']} | {r['median_tokens']:.0f} "
            f"| {r['p90_tokens']:.0f} | {r['p95_tokens']:.0f} | {r['p99_tokens']:.0f} | {r['max_tokens']} "
            f"| {100 * r['truncated_at_512']:.1f}% | {100 * r['truncated_at_1024']:.1f}% "
            f"| {r.get('numpy_examples_per_s', float('nan')):.0f} | {r.get('seqio_examples_per_s', float('nan')):.0f} "
            f"| {r.get('seqio_startup_s', float('nan')):.1f} |"
        )
    if args.json:
        from lever_jax.data import write_json

        run = {k: str(v) for k, v in vars(args).items()}
        if args.append and args.json.exists():
            old = json.loads(args.json.read_text())
            runs = old.get("runs", [old["args"]] if "args" in old else [])
            write_json(args.json, {"runs": runs + [run], "rows": old.get("rows", []) + rows})
        else:
            write_json(args.json, {"args": run, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
