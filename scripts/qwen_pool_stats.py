"""Statistics of the pools `lever-jax sample` made (lever_jax/data/bundled/qwen05b_pools): per executed
pool the problems, samples, distinct programs, the greedy decode's and a sample's pass@1, the oracle,
the share of candidates that execute without error, ML and ML+EP with the real log-probs against
their count fallback (P_LM = count / total; paired bootstrap CI) and, where the sampling journal is
at hand, the tokens generated and the sampling times (:func:`journal_stats`). Writes stats.json beside the pools (the data
card quotes it).

    python scripts/qwen_pool_stats.py [--journals DIR] [--out lever_jax/data/bundled/qwen05b_pools/stats.json]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Optional

import numpy as np

from lever_jax.data import (Problem, bundled_path, iter_json_lines, problems_to_arrays, read_problems,
                            write_json)
from lever_jax.rerank import methods, statistics

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


def logprobs_vs_counts(problems: list[Problem]) -> dict[str, Any]:
    """ML and ML+EP accuracy (%) with the pool's log-probs and with the count fallback, and their
    paired difference with a 95% bootstrap CI over problems."""
    a = problems_to_arrays(sorted(problems, key=lambda p: p.problem_id))
    total = np.maximum(a.counts.sum(axis=1, keepdims=True), 1)
    count_lp = np.where(a.mask, np.log(np.maximum(a.counts, 1) / total), -np.inf)
    rows = np.arange(a.shape[0])
    out = {}
    for name, choose in (("max_gen_prob", lambda lp: methods.max_gen_logprob(lp, a.mask)),
                         ("ml_ep", lambda lp: methods.ml_ep(lp, a.errored, a.mask))):
        picked, picked_by_count = choose(a.gen_logprob), choose(count_lp)
        real = a.correct[rows, picked].astype(np.float64)
        fallback = a.correct[rows, picked_by_count].astype(np.float64)
        ci = statistics.bootstrap_ci(real - fallback, n_resamples=10_000)
        out[name] = {"log_probs": round(100 * real.mean(), 2), "count_fallback": round(100 * fallback.mean(), 2),
                     "difference": [round(100 * x, 2) for x in (ci.mean, ci.low, ci.high)],
                     "chose_differently": round(100 * float((picked != picked_by_count).mean()), 2)}
    return out


IDLE_GAP_S = 600.0  # a longer gap between two finished problems: the sampler was not running


def journal_stats(path: Path) -> Optional[dict[str, Any]]:
    """Tokens and times from a sampling journal, if it is there. ``latency_seconds_sum`` adds up each
    problem's time from submission to completion; problems overlap (up to 2 x ``--parallel`` in
    flight), so it exceeds the wall time. ``wall_seconds`` (journals with ``finished_unix``): the
    time between consecutive finished problems, gaps over IDLE_GAP_S (the sampler stopped) left out."""
    if not path.is_file():
        return None
    records = [obj for _, obj in iter_json_lines(path)]
    tokens = sum(r.get("tokens", 0) for r in records)
    out: dict[str, Any] = {"problems": len(records), "tokens": tokens,
                           "latency_seconds_sum": round(sum(r.get("seconds", 0.0) for r in records), 1)}
    finished = sorted(r["finished_unix"] for r in records if "finished_unix" in r)
    if len(finished) == len(records) and records:
        gaps = np.diff(finished)
        wall = float(records[0].get("seconds", 0.0) + gaps[gaps <= IDLE_GAP_S].sum())
        out.update(wall_seconds=round(wall, 1), tokens_per_second=round(tokens / wall, 2) if wall else None,
                   problems_per_minute=round(60 * len(records) / wall, 2) if wall else None)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--journals", type=Path, default=POOL_DIR, help="folder holding the *.journal.jsonl files")
    ap.add_argument("--out", type=Path, default=POOL_DIR / "stats.json")
    args = ap.parse_args()
    stats: dict[str, Any] = json.loads(args.out.read_text()) if args.out.is_file() else {}
    for executed in sorted(POOL_DIR.glob("*.executed.jsonl.gz")):
        name = executed.name.split(".")[0]
        problems = list(read_problems(executed, require_execution=True))
        entry = {**pool_stats(problems), "logprobs_vs_counts": logprobs_vs_counts(problems)}
        sampling = journal_stats(args.journals / f"{name}.samples.jsonl.gz.journal.jsonl")
        entry["sampling"] = sampling or stats.get(name, {}).get("sampling")  # kept once the journal is gone
        stats[name] = entry
        print(name, json.dumps(entry))
    write_json(args.out, stats)


if __name__ == "__main__":
    main()
