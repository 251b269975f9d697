"""How often WikiTQ gold answers occur in their SQUALL table, and other gold sanity checks.

    python scripts/check_wikitq_reachability.py [--db-dir DIR] [--out docs/bench/wikitq_gold.json]

Per split: (a) gold self-match -- the target strings, returned as a one-column SQL result, match
their own targets under the official denotation match; (b) every table's LEVER view
(``main_table``) can be created; (c) reachability -- every target value matches (official
``Value.match``) some cell of table ``w`` (any column, including SQUALL's ``_number``/``_parsed``
derived columns), i.e. a query that selects cells can produce the answer; and the same for the
answers that are reachable only as a row count (a number in 0..#rows), the usual "how many" case;
(d) how often the approximate canonical targets used for train/dev agree with CoreNLP's on test.
"""
from __future__ import annotations

import argparse
import collections
import json
import sqlite3
import sys
from pathlib import Path

from lever_jax.data.datasets import wikitq
from lever_jax.data import write_json
from lever_jax.data.spider_db import default_db_root
from lever_jax.execution import wikitq_match as wm
from lever_jax.execution.sql import connect_readonly, create_view


def table_values(db_path: Path) -> tuple[list, int, bool]:
    """(distinct cell values of w, row count, LEVER view ok?)."""
    conn = connect_readonly(db_path)
    try:
        cols = [r[1] for r in conn.execute("PRAGMA table_info(w)") if r[1] not in ("id", "agg")]
        cells = set()
        rows = conn.execute("SELECT * FROM w").fetchall()
        names = [d[0] for d in conn.execute("SELECT * FROM w LIMIT 0").description]
        keep = [i for i, n in enumerate(names) if n in cols]
        for row in rows:
            for i in keep:
                if row[i] is not None:
                    cells.add(wm.cell_to_string(row[i]))
        table_id = db_path.stem
        try:
            create_view(conn, wikitq.MAIN_TABLE, wikitq.SQUALL_TABLE, wikitq.lever_columns(table_id))
            conn.execute(f"SELECT * FROM {wikitq.MAIN_TABLE} LIMIT 1").fetchall()
            view_ok = True
        except (sqlite3.Error, KeyError):
            view_ok = False
        return [wm.to_value(c) for c in cells], len(rows), view_ok
    finally:
        conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    root = args.db_dir or default_db_root()
    wikitq.prepare_wikitq(root)
    cache: dict[str, tuple[list, int, bool]] = {}
    report = {}
    for split in wikitq.SPLITS:
        stats = collections.Counter()
        for p in wikitq.load_problems(split):
            table_id = p.context["table_id"]
            if table_id not in cache:
                cache[table_id] = table_values(wikitq.wikitq_db_path(table_id, root))
            values, nrows, view_ok = cache[table_id]
            canon = p.context.get("target_canon")
            targets = wm.to_value_list(p.gold, canon)
            stats["problems"] += 1
            stats["multi_value_targets"] += int(len(p.gold) > 1)
            stats["gold_self_match"] += int(wm.denotation_match([[t] for t in p.gold], p.gold, canon, p.question))
            stats["view_ok"] += int(view_ok)
            in_table = all(any(t.match(v) for v in values) for t in targets)
            stats["all_targets_in_table"] += int(in_table)
            if not in_table and len(targets) == 1 and isinstance(targets[0], wm.NumberValue) and 0 <= targets[0].amount <= nrows:
                stats["count_like_not_in_table"] += 1
        stats["reachable_cells_or_count"] = stats["all_targets_in_table"] + stats["count_like_not_in_table"]
        report[split] = dict(stats)
        report[split]["pct_in_table"] = round(100.0 * stats["all_targets_in_table"] / stats["problems"], 1)
        report[split]["pct_in_table_or_count"] = round(100.0 * stats["reachable_cells_or_count"] / stats["problems"], 1)
    # How well the approximate canonical forms (used for train/dev) agree with CoreNLP's (test).
    agree = total = 0
    for p in wikitq.load_problems("test"):
        total += 1
        corenlp = wm.to_value_list(p.gold, p.context["target_canon"])
        approx = wm.to_value_list(p.gold, [wm.approximate_canon(t) for t in p.gold])
        agree += int(len(corenlp) == len(approx) and all(type(a) is type(b) and a == b for a, b in zip(corenlp, approx)))
    report["approx_canon_agrees_with_corenlp_on_test"] = {"agree": agree, "problems": total,
                                                          "pct": round(100.0 * agree / total, 1)}
    report["tables_checked"] = len(cache)
    report["tables_view_ok"] = sum(1 for v in cache.values() if v[2])
    print(json.dumps(report, indent=1))
    if args.out:
        write_json(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
