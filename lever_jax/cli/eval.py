"""`lever-jax eval`: score an eval task with a trained verifier; JSON scores + metrics."""
from __future__ import annotations

import argparse

NAME = "eval"


def register(subparsers: argparse._SubParsersAction) -> None:
    from lever_jax.training.launch import add_flags

    p = subparsers.add_parser(NAME, help="evaluate a trained verifier from gin files (JSON scores)")
    add_flags(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from lever_jax.training.launch import run_evaluate

    return run_evaluate(args)
