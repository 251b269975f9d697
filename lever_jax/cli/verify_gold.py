"""``lever-jax verify-gold``: execute every gold program as a candidate (a sanity check).

    lever-jax verify-gold --dataset mbpp --split test
    lever-jax verify-gold --dataset humaneval --split test --show-failures
    lever-jax verify-gold --dataset spider --split dev          # needs the prepared databases

Prints ``{"problems": N, "executed": E, "correct": C}`` (problems with a gold program; E = gold
programs that ran to completion, status ok; C = those judged correct) and, with
``--show-failures``, the ids, statuses and errors of the others. ``--output`` also writes the
executed gold pool. Runs in the sandbox; no execution cache unless ``--cache-dir`` is given.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Iterator

NAME = "verify-gold"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(NAME, help="execute gold programs as candidates (sanity check)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", required=True, choices=("mbpp", "humaneval", "spider", "wikitq", "gsm8k"))
    p.add_argument("--split", required=True)
    p.add_argument("--variant", default=None, help="dataset variant, e.g. 'sanitized' for MBPP")
    p.add_argument("--limit", type=int, default=None, help="only the first N problems")
    p.add_argument("--workers", type=int, default=None, help="sandbox workers (default: one per core)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per program (default 10)")
    p.add_argument("--memory-mb", type=int, default=1024)
    p.add_argument("--cache-dir", default=None, help="use (and fill) this execution cache")
    p.add_argument("--output", default=None, help="also write the executed gold pool here")
    p.add_argument("--show-failures", action="store_true", help="list problems whose gold is not correct")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from lever_jax.data import jsonl
    from lever_jax.data.datasets import gold_program, load_problems
    from lever_jax.data.schema import Candidate, Problem
    from lever_jax.execution.base import Limits
    from lever_jax.execution.registry import get_executor
    from lever_jax.execution.runner import execute_problems
    from lever_jax.execution.sandbox import Sandbox
    from lever_jax.cli.checks import check_positive, check_split

    check_split(args.dataset, args.split)
    check_positive("--limit", args.limit)
    check_positive("--workers", args.workers)
    check_positive("--timeout", args.timeout, allow_none=False)
    check_positive("--memory-mb", args.memory_mb, allow_none=False)
    problems = load_problems(args.dataset, args.split, args.variant)
    if args.limit is not None:
        problems = problems[: args.limit]
    with_gold: list[Problem] = []
    for problem in problems:
        program = gold_program(args.dataset, problem)
        if program is not None:
            with_gold.append(problem.replace(candidates=(Candidate(program=program, source="gold"),)))
    summary: dict[str, Any] = {"problems": len(with_gold), "executed": 0, "correct": 0}
    failures: list[dict[str, Any]] = []
    executor = get_executor(args.dataset)
    limits = Limits.for_timeout(args.timeout, memory_mb=args.memory_mb)
    cache = None
    if args.cache_dir:
        from lever_jax.execution.cache import ExecutionCache

        cache = ExecutionCache(args.cache_dir)

    def tally(executed: Any) -> Iterator[Problem]:
        for problem in executed:
            ex = problem.candidates[0].execution
            summary["executed"] += ex.status == "ok"
            summary["correct"] += ex.correct
            if not ex.correct:
                failures.append({"problem_id": problem.problem_id, "status": ex.status,
                                 "error": (ex.error or ex.result_text)[:300]})
            yield problem

    try:
        with Sandbox(workers=args.workers, limits=limits) as sandbox:
            stream = tally(execute_problems(with_gold, executor, sandbox, cache, progress=False))
            if args.output:
                jsonl.write_problems(args.output, stream)
            else:
                for _ in stream:
                    pass
    finally:
        if cache is not None:
            cache.close()
    if args.show_failures:
        summary["failures"] = failures
    print(json.dumps(summary, indent=1 if args.show_failures else None))
    if summary["problems"] == 0:
        print(f"note: {args.dataset} has no gold programs", file=sys.stderr)
    return 0
