"""Measurements behind the end-to-end run's settings (docs/bench/e2e.md).

    python scripts/bench_e2e.py [--problems 150] [--lengths 128 256 384] [--layers 6] [--batch 32]

Prints (1) WordPiece token lengths of LEVER's serialized GSM8k verifier inputs
(`question | program | final locals`) and of their segments on the first N problems of the
executed code002 pool (the bundled recorded file when no executed file is given), and (2) the
jitted frozen-MiniLM forward throughput (mean-pooled, batch B, random tokens) at each length.
Record `uptime` with the numbers: the machine is shared.
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys
import time

import numpy as np

from lever_jax.inputs import serialize
from lever_jax.data import bundled_path, read_problems
from lever_jax.pipeline.encoder_features import FeatureConfig, FrozenEncoder, encoder_program_text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--executed", default=str(bundled_path("gsm8k_pool", "code002.executed.jsonl.gz")))
    ap.add_argument("--problems", type=int, default=150)
    ap.add_argument("--lengths", type=int, nargs="*", default=[128, 256, 384])
    ap.add_argument("--layers", type=int, nargs="*", default=[6])
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    print("load average:", os.getloadavg())
    probs = list(itertools.islice(read_problems(args.executed, require_execution=True), args.problems))
    enc = FrozenEncoder(FeatureConfig(num_layers=max(args.layers), batch_size=args.batch))
    tok = enc.tokenizer
    pct = lambda xs: "p50 %d / p90 %d / p99 %d" % tuple(np.percentile(xs, [50, 90, 99]))  # noqa: E731
    full = [len(x) for x in tok.encode_batch([serialize.serialize(p, c) for p in probs for c in p.candidates])]
    print(f"{len(full)} inputs: full LEVER input {pct(full)}; "
          f"> 128: {np.mean(np.array(full) > 128):.0%}, > 256: {np.mean(np.array(full) > 256):.0%}, "
          f"> 512: {np.mean(np.array(full) > 512):.0%}")
    print("question", pct([len(x) for x in tok.encode_batch([p.question for p in probs])]))
    print("program", pct([len(x) for x in tok.encode_batch([c.program for p in probs for c in p.candidates])]))
    print("program without comments", pct([len(x) for x in tok.encode_batch(
        [encoder_program_text(p, c, True) for p in probs for c in p.candidates])]))
    print("result", pct([len(x) for x in tok.encode_batch(
        [c.execution.result_text for p in probs for c in p.candidates])]))
    for layers in args.layers:
        e = FrozenEncoder(FeatureConfig(num_layers=layers, batch_size=args.batch))
        for length in args.lengths:
            tokens = np.random.default_rng(0).integers(1000, 2000, (args.batch, length)).astype(np.int32)
            e._pooled(e.params, tokens).block_until_ready()
            t0 = time.time()
            for _ in range(3):
                e._pooled(e.params, tokens).block_until_ready()
            dt = (time.time() - t0) / 3
            print(f"layers {layers} L={length} batch {args.batch}: {args.batch / dt:.1f} sequences/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
