"""LEVER's tables on every bundled pool from one command (lever_jax.pipeline.paper_tables):
main table, ablations, accuracy vs training problems, accuracy vs samples, transfer between LLMs,
each with paired 95% CIs and a per-row 'comparable to the paper?' column.

    python scripts/paper_tables.py [--out results/paper_tables] [--pools a,b] [--gin_file F]
        [--gin_bindings B] [--sections ablations,sizes,transfer] [--quick]

Writes OUT/paper_tables.md and OUT/paper_tables.json; the runs live under OUT/runs/ and share
OUT/shared/ (execution, features, trained folds), so a re-run is cheap.
"""
from __future__ import annotations

import sys

from lever_jax.data.errors import UserError
from lever_jax.pipeline import paper_tables

if __name__ == "__main__":
    try:
        sys.exit(paper_tables.main())
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
