"""`lever-jax demo`: baseline tables of the bundled GSM8k pools, in seconds.

No verifier is trained here; `make demo` runs the full end-to-end `lever-jax run`.
"""
from __future__ import annotations

import argparse

from lever_jax.cli import rerank
from lever_jax.data.bundled import bundled_path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("demo", help=__doc__.splitlines()[0], description=__doc__)
    p.add_argument("--out", default="results/demo", help="directory for scores.json / metrics.json")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    status = 0
    for pool in ("code002", "other_llms"):
        print()
        status |= rerank.main(
            argparse.Namespace(
                input=str(bundled_path("gsm8k_pool", f"{pool}.executed.jsonl.gz")),
                output=f"{args.out}/{pool}.scores.json",
                metrics=f"{args.out}/{pool}.metrics.json",
                verifier_scores=None,
                normalize_gen=False,
                no_gen_prob=False,
                bootstrap=10_000,
            )
        )
    return status
