"""`lever-jax train`: train (or resume) a verifier from gin files; see lever_jax/training/runs.py."""
from __future__ import annotations

import argparse

NAME = "train"


def register(subparsers: argparse._SubParsersAction) -> None:
    from lever_jax.training.launch import add_flags

    p = subparsers.add_parser(NAME, help="train a LEVER verifier from gin files (resumes from MODEL_DIR)")
    add_flags(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from lever_jax.training.launch import run_train

    return run_train(args)
