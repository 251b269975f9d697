"""LEVER's ablations on the end-to-end run: now one section of scripts/paper_tables.py (the one
way to make the paper's tables); this wrapper runs only the main table + the ablations.

    python scripts/ablations.py [--pools gsm8k_code002] [--out results/ablations] [--gin_file ...]
        [--gin_bindings ...] [--quick]

Rows: LEVER (full), - gold program in training (n/a where the pool has none), - execution
information, - program, - aggregation, - P_LM; written to OUT/paper_tables.md / .json.
"""
from __future__ import annotations

import sys

from lever_jax.data.errors import UserError
from lever_jax.pipeline import paper_tables

if __name__ == "__main__":
    argv = sys.argv[1:]
    if not any(a == "--pools" or a.startswith("--pools=") for a in argv):
        argv += ["--pools", "gsm8k_code002"]
    if not any(a == "--out" or a.startswith("--out=") for a in argv):
        argv += ["--out", "results/ablations"]
    try:
        sys.exit(paper_tables.main([*argv, "--sections", "ablations"], prog="scripts/ablations.py"))
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
