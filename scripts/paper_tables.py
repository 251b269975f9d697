"""LEVER's tables on every bundled pool from one command: the same as `lever-jax tables` (its
--help lists the flags; lever_jax/cli/tables.py), kept for the commands written in docs.

    python scripts/paper_tables.py [--out results/paper_tables] [--pools a,b] [--sections ...] [--quick]
"""
from __future__ import annotations

import sys

from lever_jax.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["tables", *sys.argv[1:]]))
