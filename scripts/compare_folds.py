"""`lever-jax run` directories compared on the folds all of them finished: the same as `lever-jax
compare folds` (its --help lists the flags; lever_jax/cli/compare.py), kept for the commands
written before it.

    python scripts/compare_folds.py results/finetune_minilm results/ft_2layers ... [--labels a b ...]
        [--sum-logits LABEL=DIR_A+DIR_B]
"""
from __future__ import annotations

import sys

from lever_jax.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["compare", "folds", *sys.argv[1:]]))
