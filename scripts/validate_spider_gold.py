"""Execute Spider's gold queries on the rebuilt SQLite databases and count what works.

    python scripts/validate_spider_gold.py [--db-dir DIR] [--out docs/bench/spider_gold.json]

For dev (official SQL), dev in SpiderMan's corrected SQL, and train (SpiderMan SQL): how many
gold queries execute, how many return a non-empty result, and how many match themselves under
the test-suite execution match (the gold-as-candidate check). Also how many official dev queries
give the same result as SpiderMan's corrected version. Gold SQL is trusted, so it runs
in-process through :func:`lever_jax.execution.sql.run_sql_task` (same code path as the sandbox).
Prints a JSON summary and lists every failing dev query.
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

from lever_jax.data.datasets import spider
from lever_jax.data import write_json
from lever_jax.data.spider_db import default_db_root, prepare_spider, spider_db_path
from lever_jax.execution.sql import run_sql_task


def check(problems, root: Path, gold_of=None, timeout_s: float = 30.0) -> dict:
    stats = collections.Counter()
    failures = []
    mismatches = []
    by_db = collections.defaultdict(collections.Counter)
    for i, p in enumerate(problems):
        db_id = p.context["db_id"]
        gold = p.gold if gold_of is None else gold_of[i].gold
        out = run_sql_task({"dataset": "spider", "db_path": str(spider_db_path(db_id, root)), "sql": p.gold,
                            "gold_sql": gold, "timeout_s": timeout_s})
        stats["problems"] += 1
        by_db[db_id]["problems"] += 1
        if out["status"] == "ok":
            stats["executed"] += 1
            stats["non_empty"] += int(out["num_rows"] > 0)
            by_db[db_id]["empty"] += int(out["num_rows"] == 0)
        else:
            failures.append({"id": p.problem_id, "db_id": db_id, "sql": p.gold, "error": out.get("error")})
        stats["correct"] += int(bool(out.get("correct")))
        if out["status"] == "ok" and not out.get("correct"):
            mismatches.append({"id": p.problem_id, "db_id": db_id, "sql": p.gold, "gold": gold})
    empty_dbs = {db: c["empty"] for db, c in sorted(by_db.items()) if c["empty"]}
    return {**stats, "failures": failures, "mismatches": mismatches, "empty_results_by_db": empty_dbs}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db-dir", type=Path, default=None, help="database root (default: LEVER_JAX_DB_DIR / cache)")
    parser.add_argument("--out", type=Path, default=None, help="also write the full JSON report here")
    parser.add_argument("--skip-train", action="store_true")
    args = parser.parse_args()
    root = args.db_dir or default_db_root()
    prepare_spider(root)
    dev = spider.load_problems("dev")
    dev_sm = spider.load_problems("dev", "spiderman")
    # SpiderMan lists dev by database; align its queries with dev.json by (db_id, question).
    by_key = {(p.context["db_id"], p.question): p for p in dev_sm}
    dev_sm_aligned = [by_key[(p.context["db_id"], p.question)] for p in dev]
    report = {
        "dev_official": check(dev, root),
        "dev_spiderman": check(dev_sm, root),
        # official dev SQL as the candidate, SpiderMan's corrected SQL as the gold
        "dev_official_vs_spiderman": check(dev, root, gold_of=dev_sm_aligned),
    }
    if not args.skip_train:
        report["train_spiderman"] = check(spider.load_problems("train"), root)
    summary = {k: {m: v[m] for m in ("problems", "executed", "non_empty", "correct") if m in v} for k, v in report.items()}
    print(json.dumps(summary, indent=1))
    for f in report["dev_official"]["failures"]:
        print(f"FAIL {f['id']} [{f['db_id']}] {f['error']} :: {f['sql']}", file=sys.stderr)
    if args.out:
        write_json(args.out, {"summary": summary, **report})
    return 0


if __name__ == "__main__":
    sys.exit(main())
