"""Run CodeT's generated test cases against every HumanEval pool program (for the CodeT baseline).

    python scripts/run_codet_tests.py [--workers 2] [--timeout 5] [--cache-dir DIR]

Reads lever_jax/data/bundled/humaneval_pool/{codegen16b.samples,codet_test_cases}.jsonl.gz, runs
each distinct program with the problem's CodeT tests as its test list (MBPP test runner, in the
sandbox; a program that times out fails all its tests) and writes
``codet_test_results.jsonl.gz``: per problem ``{"problem_id", "num_tests", "passed": [str]}``
where ``passed[i]`` is a '0'/'1' string over the tests for candidate ``i`` of the samples file.
Also prints CodeT's dual-agreement accuracy computed from it (a check; the baseline itself lives
in lever_jax/rerank/methods.py) when the executed pool is present.
"""
from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import math
import sys
from typing import Any

from lever_jax.data import Problem, bundled_path, jsonl


def load_tests() -> dict[str, list[str]]:
    with gzip.open(bundled_path("humaneval_pool", "codet_test_cases.jsonl.gz"), "rt", encoding="utf-8") as fh:
        return {row["problem_id"]: row["tests"] for row in map(json.loads, fh)}


def as_test_problems(pool: list[Problem], tests: dict[str, list[str]]) -> list[Problem]:
    out = []
    for p in pool:
        if not tests[p.problem_id]:
            continue
        ctx = {"test_list": tests[p.problem_id], "test_setup_code": "", "challenge_test_list": [],
               "entry_point": p.context["entry_point"]}
        out.append(Problem(p.problem_id, "mbpp", p.question, ctx, None,
                           tuple(dataclasses.replace(c, execution=None) for c in p.candidates)))
    return out


def dual_agreement(results: dict[str, list[str]], executed: list[Problem], sqrt_programs: bool) -> float:
    """Expected accuracy of CodeT's choice: clusters of programs passing the same test set, score
    (sqrt)|programs| x |tests passed|; a random program of the best cluster (ties averaged)."""
    total = 0.0
    for p in executed:
        passed = results.get(p.problem_id)
        if not passed:  # no tests: CodeT degenerates to a random sample
            n = sum(c.count for c in p.candidates)
            total += sum(c.count for c in p.candidates if c.execution.correct) / n
            continue
        clusters: dict[str, list[int]] = {}
        for c, bits in zip(p.candidates, passed):
            entry = clusters.setdefault(bits, [0, 0])
            entry[0] += c.count
            entry[1] += c.count * c.execution.correct
        scores = {b: (math.sqrt(v[0]) if sqrt_programs else v[0]) * b.count("1") for b, v in clusters.items()}
        best = max(scores.values())
        top = [clusters[b] for b, s in scores.items() if s == best]
        total += sum(v[1] / v[0] for v in top) / len(top)
    return 100.0 * total / len(executed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--stats-only", action="store_true", help="only recompute the accuracy from the results file")
    args = parser.parse_args(argv)
    out_path = bundled_path("humaneval_pool", "codet_test_results.jsonl.gz")
    pool = list(jsonl.read_problems(bundled_path("humaneval_pool", "codegen16b.samples.jsonl.gz")))
    if not args.stats_only:
        from lever_jax.execution import ExecutionCache, Limits, Sandbox, execute_problems, get_executor

        tests = load_tests()
        problems = as_test_problems(pool, tests)
        limits = Limits.for_timeout(args.timeout)
        cache = ExecutionCache(args.cache_dir) if args.cache_dir else None
        rows: list[dict[str, Any]] = []
        try:
            with Sandbox(workers=args.workers, limits=limits) as sandbox:
                for p in execute_problems(problems, get_executor("mbpp"), sandbox, cache, progress=False):
                    n = len(p.context["test_list"])
                    bits = []
                    for c in p.candidates:
                        per_test = (c.execution.details or {}).get("tests") or []
                        flags = [bool(t.get("passed")) for t in per_test] if len(per_test) == n else [False] * n
                        bits.append("".join("1" if f else "0" for f in flags))
                    rows.append({"problem_id": p.problem_id, "num_tests": n, "passed": bits})
        finally:
            if cache is not None:
                cache.close()
        jsonl.write_json_lines(out_path, rows)
    with gzip.open(out_path, "rt", encoding="utf-8") as fh:
        results = {row["problem_id"]: row["passed"] for row in map(json.loads, fh)}
    executed_path = bundled_path("humaneval_pool", "codegen16b.executed.jsonl.gz")
    if executed_path.exists():
        executed = list(jsonl.read_problems(executed_path, require_execution=True))
        codet = {"codet_sqrt_programs_x_tests": dual_agreement(results, executed, True),
                 "codet_programs_x_tests": dual_agreement(results, executed, False),
                 "problems_with_tests": len(results)}
        print(json.dumps(codet))
        stats_path = bundled_path("humaneval_pool", "stats.json")
        stats = json.loads(stats_path.read_text(encoding="utf-8")) if stats_path.exists() else {}
        stats["codet"] = codet
        jsonl.write_json(stats_path, stats)
        print("now re-run scripts/build_humaneval_pool.py to refresh DATA_CARD.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
