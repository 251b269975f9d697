"""Token lengths of a pool's verifier segments (MiniLM WordPiece, with [CLS]/[SEP]), against the
fine-tuned verifier's caps: how much of each segment FinetuneConfig's lengths cut.

    python scripts/segment_lengths.py [--pool gsm8k_code002] [--question_len 96] [--program_len 128]
        [--result_len 16] [--max_problems N]

One line per segment (distinct texts, as the state cache encodes them): median / p90 / p99 / max
tokens and the share longer than the cap; programs with and without comments.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np

from lever_jax.inputs import get_vocabulary
from lever_jax.pipeline.encoder_features import encoder_program_text, result_text
from lever_jax.pipeline import RunConfig, load_pool


def describe(name: str, lengths: np.ndarray, cap: int) -> str:
    p50, p90, p99 = np.percentile(lengths, [50, 90, 99])
    return (f"{name}: {len(lengths)} distinct texts, tokens median {p50:.0f} p90 {p90:.0f} p99 {p99:.0f} "
            f"max {lengths.max()}; longer than {cap}: {100 * np.mean(lengths > cap):.1f}%")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pool", default="gsm8k_code002")
    parser.add_argument("--question_len", type=int, default=96)
    parser.add_argument("--program_len", type=int, default=128)
    parser.add_argument("--result_len", type=int, default=16)
    parser.add_argument("--max_problems", type=int, default=None)
    args = parser.parse_args(argv)
    with TemporaryDirectory() as tmp:  # bundled executed file: nothing is executed or written
        problems = load_pool(RunConfig(pool=args.pool, execute=False, max_problems=args.max_problems), Path(tmp))
    tok = get_vocabulary("minilm")

    def lengths(texts: set[str] | list[str]) -> np.ndarray:
        return np.array([len(ids) + 2 for ids in tok.encode_batch(sorted(texts))])

    cands = [(p, c) for p in problems for c in p.candidates]
    print(describe("question", lengths([p.question for p in problems]), args.question_len))
    print(describe("program, comments stripped", lengths({encoder_program_text(p, c, True) for p, c in cands}),
                   args.program_len))
    print(describe("program, as sampled", lengths({encoder_program_text(p, c, False) for p, c in cands}),
                   args.program_len))
    print(describe("execution result", lengths({result_text(c) for _, c in cands}), args.result_len))
    return 0


if __name__ == "__main__":
    sys.exit(main())
