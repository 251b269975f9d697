"""The ``lever-jax`` console script: a thin dispatcher over the subcommand modules in ``lever_jax.cli``."""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

# (subcommand, module, one-line help). Modules are imported only when their command runs.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("rerank", "lever_jax.cli.rerank", "rerank an executed file and print the baseline table"),
    ("demo", "lever_jax.cli.demo", "baseline tables of the bundled GSM8k pools (no verifier; seconds)"),
    ("execute", "lever_jax.cli.execute", "execute candidates in the sandbox (cached)"),
    ("prepare", "lever_jax.cli.prepare", "build derived data once (e.g. Spider SQLite databases)"),
    ("verify-gold", "lever_jax.cli.verify_gold", "execute gold programs as candidates (sanity check)"),
    ("prompts", "lever_jax.cli.prompts", "write LEVER few-shot prompts for sampling new pools"),
    ("inputs", "lever_jax.cli.inputs", "write every candidate's verifier input string and label (JSONL)"),
    ("import", "lever_jax.cli.import_samples", "convert LEVER / OpenAI / vLLM outputs to samples files"),
    ("train", "lever_jax.cli.train", "train a verifier from gin files (T5X-style)"),
    ("eval", "lever_jax.cli.eval", "score candidates with a trained verifier and write JSON scores"),
    ("run", "lever_jax.cli.run", "end to end: execute, cross-fit the verifier, rerank, report"),
)


def _available_commands() -> list[tuple[str, str, str]]:
    found = []
    for name, module, help_text in COMMANDS:
        if importlib.util.find_spec(module) is not None:
            found.append((name, module, help_text))
    return found


def build_parser(selected: str | None = None) -> argparse.ArgumentParser:
    """Parser with every available subcommand; only ``selected`` has its full arguments loaded."""
    parser = argparse.ArgumentParser(prog="lever-jax", description="LEVER verifier reranking in JAX/Flax")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module, help_text in _available_commands():
        if name == selected:
            importlib.import_module(module).register(sub)
        else:
            sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    selected = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(selected)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0 if args.command is None else 2
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
