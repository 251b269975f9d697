"""Statistics of the pools `lever-jax sample` made (lever_jax/data/bundled/qwen05b_pools): per executed
pool the problems, samples, distinct programs, the greedy decode's and a sample's pass@1, the oracle,
the share of candidates that execute without error, and, where the sampling journal is at hand, the
tokens generated and the summed per-problem wall seconds. Writes stats.json beside the pools (the data
card quotes it).

    python scripts/qwen_pool_stats.py [--journals DIR] [--out lever_jax/data/bundled/qwen05b_pools/stats.json]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Optional

from lever_jax.data.bundled import bundled_path
from lever_jax.data.jsonl import iter_json_lines, read_problems, write_json
from lever_jax.data.schema import Problem

POOL_DIR = bundled_path("qwen05b_pools")


def pool_stats(problems: list[Problem]) -> dict[str, Any]:
    """Pass rates of one executed pool (percent of problems; a sample's pass@1 weights by ``count``)."""
    samples = sum(c.count for p in problems for c in p.candidates)
    correct_samples = sum(c.count for p in problems for c in p.candidates if c.execution.correct)
    error_free = sum(c.count for p in problems for c in p.candidates if c.execution.status == "ok")
    greedy = [p.greedy for p in problems if p.greedy is not None]
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in {
        "problems": len(problems),
        "samples": samples,
        "samples_per_problem": samples / len(problems),
        "distinct_programs": sum(len(p.candidates) for p in problems),
        "greedy_pass_at_1": 100 * sum(bool(g.execution and g.execution.correct) for g in greedy) / len(problems),
        "sample_pass_at_1": 100 * correct_samples / samples,
        "oracle": 100 * sum(any(c.execution.correct for c in p.candidates) for p in problems) / len(problems),
        "error_free_samples": 100 * error_free / samples,
    }.items()}


def journal_stats(path: Path) -> Optional[dict[str, Any]]:
    """Tokens and summed per-problem wall seconds from a sampling journal, if it is there."""
    if not path.is_file():
        return None
    records = [obj for _, obj in iter_json_lines(path)]
    seconds = sum(r.get("seconds", 0.0) for r in records)
    tokens = sum(r.get("tokens", 0) for r in records)
    return {"problems": len(records), "tokens": tokens, "wall_seconds": round(seconds, 1),
            "tokens_per_second": round(tokens / seconds, 2) if seconds else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--journals", type=Path, default=POOL_DIR, help="folder holding the *.journal.jsonl files")
    ap.add_argument("--out", type=Path, default=POOL_DIR / "stats.json")
    args = ap.parse_args()
    stats: dict[str, Any] = json.loads(args.out.read_text()) if args.out.is_file() else {}
    for executed in sorted(POOL_DIR.glob("*.executed.jsonl.gz")):
        name = executed.name.split(".")[0]
        entry = pool_stats(list(read_problems(executed, require_execution=True)))
        sampling = journal_stats(args.journals / f"{name}.samples.jsonl.gz.journal.jsonl")
        entry["sampling"] = sampling or stats.get(name, {}).get("sampling")  # kept once the journal is gone
        stats[name] = entry
        print(name, json.dumps(entry))
    write_json(args.out, stats)


if __name__ == "__main__":
    main()
