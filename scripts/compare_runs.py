"""`lever-jax run` directories side by side: the same as `lever-jax compare runs` (its --help lists
the flags; lever_jax/cli/compare.py), kept for the commands written before it.

    python scripts/compare_runs.py results/demo results/cf_only ... [--labels a b ...]
"""
from __future__ import annotations

import sys

from lever_jax.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["compare", "runs", *sys.argv[1:]]))
