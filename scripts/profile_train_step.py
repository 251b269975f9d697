"""Where our training step's time goes on this backend: thread time per XLA operation kind.

    python scripts/profile_train_step.py [--model t5|minilm] [--dtype float32|bfloat16] [--feed packed|bucketed] [--top 12]

Builds the step of ``scripts/bench_train.py --real_lengths --hf_feed per_problem`` (LEVER's GSM8k
shape: T5 4 problems x 5 candidates as 4 micro-batches, MiniLM 8 x 5 as 8), compiles it,
then traces one step with ``jax.profiler`` (XLA:CPU's per-operation trace events switched on
with ``--xla_cpu_enable_xprof_traceme``) and sums the events' durations by operation
(``copy_bitcast_fusion.12``) and by kind (``copy_bitcast_fusion``). Durations are thread time:
operations run side by side on the cores, so the sum exceeds the step's wall time. A diagnostic
for BENCHMARKS.md, not a benchmark.
"""
from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import os
import re
import sys
import tempfile
import time

FLAG = "--xla_cpu_enable_xprof_traceme=true"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=("t5", "minilm"), default="t5")
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    parser.add_argument("--feed", choices=("packed", "bucketed"), default="packed",
                        help="the trainer's feed (bench_train.py --jax_feed)")
    parser.add_argument("--top", type=int, default=12, help="operations and kinds to list")
    args = parser.parse_args()
    if FLAG not in os.environ.get("XLA_FLAGS", ""):  # XLA reads its flags once, at backend start
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {FLAG}".strip()
    import jax

    from bench_train_real import jax_side, real_batches  # the sibling script (this folder is on the path)

    problems, accum = (4, 4) if args.model == "t5" else (8, 8)
    batches = real_batches(args.model, 2, problems, 5, 512)
    step = jax_side(args.model, batches, 512, accum, args.dtype, args.feed)
    step(0)  # compile
    step.compile_all()
    with tempfile.TemporaryDirectory() as log_dir:
        start = time.perf_counter()
        with jax.profiler.trace(log_dir, create_perfetto_trace=True):
            step(1)
        wall = time.perf_counter() - start
        path = glob.glob(f"{log_dir}/**/*perfetto_trace.json.gz", recursive=True)[0]
        with gzip.open(path) as handle:
            trace = json.load(handle)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    by_op: collections.Counter = collections.Counter()
    for event in events:
        name = event.get("name", "")
        if event.get("ph") == "X" and not name.startswith(("$", "ThunkExecutor", "SlinkyThreadPool")):
            by_op[name] += event.get("dur", 0) / 1e3
    by_kind: collections.Counter = collections.Counter()
    for name, ms in by_op.items():
        by_kind[re.sub(r"\.\d+$", "", name)] += ms
    print(f"{args.model} {args.dtype} {args.feed}: one step ({problems} problems x 5 candidates, {accum} micro-batches), "
          f"{wall:.2f} s wall incl. tracing; {sum(by_op.values()) / 1e3:.2f} s of operation thread time")
    print("\nthread time by kind (ms):")
    for kind, ms in by_kind.most_common(args.top):
        print(f"  {ms:9.1f}  {kind}")
    print("\nthread time by operation (ms, all micro-batches):")
    for name, ms in by_op.most_common(args.top):
        print(f"  {ms:9.1f}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
