"""Train a LEVER verifier from gin files (t5x-style entry point).

    python -m lever_jax.training.train --gin_file gin_configs/runs/smoke.gin \\
        --gin_bindings "MODEL_DIR='/tmp/smoke'"
    python -m lever_jax.training.train --gin_file gin_configs/models/t5_small.gin \\
        --gin_file gin_configs/tasks/gsm8k_pool.gin --gin_file gin_configs/runs/train.gin \\
        --gin_bindings "MODEL_DIR='/tmp/verifier'" --gin_bindings TRAIN_STEPS=1000
    lever-jax train ...   (same flags)

The run itself is `lever_jax.training.runs.train` (gin name `train`); see lever_jax/training/runs.py.
"""
from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence


def build_parser() -> argparse.ArgumentParser:
    from lever_jax.training.launch import add_flags

    return add_flags(argparse.ArgumentParser(prog="python -m lever_jax.training.train", description=__doc__,
                                             formatter_class=argparse.RawDescriptionHelpFormatter))


def main(argv: Optional[Sequence[str]] = None) -> int:
    from lever_jax.training.launch import run_train

    return run_train(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
