"""Evaluate a trained LEVER verifier from gin files (t5x-style entry point).

    python -m lever_jax.training.evaluate --gin_file gin_configs/runs/smoke.gin \\
        --gin_bindings "MODEL_DIR='/tmp/smoke'"
    lever-jax eval ...   (same flags)

Writes MODEL_DIR/eval/<task>.scores.json and <task>.metrics.json (or `evaluate.output_dir`).
The run itself is `lever_jax.training.runs.evaluate` (gin name `evaluate`); see lever_jax/training/runs.py.
"""
from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence


def build_parser() -> argparse.ArgumentParser:
    from lever_jax.training.launch import add_flags

    return add_flags(argparse.ArgumentParser(prog="python -m lever_jax.training.evaluate", description=__doc__,
                                             formatter_class=argparse.RawDescriptionHelpFormatter))


def main(argv: Optional[Sequence[str]] = None) -> int:
    from lever_jax.training.launch import run_evaluate

    return run_evaluate(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
