"""``lever-jax prepare {spider,wikitq,all} [--out DIR] [--force]``: build the SQL databases once.

Spider: rebuild the SQLite files from the bundled SpiderMan schema.sql + CSV archives
(:mod:`lever_jax.data.spider_db`, ~4 s for all 157 databases). WikiTQ: unpack SQUALL's SQLite
tables. Both go under ``--out`` (default: ``$LEVER_JAX_DB_DIR`` or the cache, see
:func:`lever_jax.data.spider_db.default_db_root`) and are skipped when already prepared. The
executors call the same functions on first use, so this command is optional. Prints a JSON
summary.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from lever_jax.data.spider_db import ARCHIVES, default_db_root, prepare_spider

NAME = "prepare"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(NAME, help="build derived data once (Spider SQLite databases, WikiTQ tables)")
    p.add_argument("target", choices=("spider", "wikitq", "all"), help="what to prepare")
    p.add_argument("--out", type=Path, default=None, help="database root (default: $LEVER_JAX_DB_DIR or the cache)")
    p.add_argument("--force", action="store_true", help="rebuild even when already prepared")
    p.add_argument("--dev-only", action="store_true", help="Spider: build only the 20 dev databases")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    root = args.out or default_db_root()
    summary: dict[str, object] = {"root": str(root)}
    if args.target in ("spider", "all"):
        start = time.monotonic()
        archives = ARCHIVES[:1] if args.dev_only else ARCHIVES
        built = prepare_spider(root, archives=archives, force=args.force)
        summary["spider"] = {"databases_built": len(built), "seconds": round(time.monotonic() - start, 2),
                             "tables_without_csv": {db: [t for t, n in counts.items() if n < 0]
                                                    for db, counts in built.items() if any(n < 0 for n in counts.values())}}
    if args.target in ("wikitq", "all"):
        from lever_jax.data.datasets.wikitq import prepare_wikitq

        start = time.monotonic()
        summary["wikitq"] = {"tables_written": prepare_wikitq(root, force=args.force), "seconds": round(time.monotonic() - start, 2)}
    print(json.dumps(summary, indent=1))
    return 0
