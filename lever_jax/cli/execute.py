"""``lever-jax execute``: run every candidate of a samples file in the sandbox (cached).

    lever-jax execute --dataset gsm8k --input samples.jsonl.gz --output executed.jsonl.gz \\
        [--workers N] [--timeout S] [--memory-mb M] [--cache-dir D | --no-cache]
        [--executor-option KEY=VALUE ...] [--humaneval-inputs docstring|codet|hidden]

Executor options (lever_jax/execution/registry.py; default = LEVER's behaviour): GSM8k
``convention=lever|faithful_cot`` (``faithful_cot``: the bundled pools' Faithful-CoT prelude and
``ans`` / ``solution()`` readers, lever_jax/execution/python_gsm8k.py); WikiTQ
``checker=lever|official``. The default ``--timeout`` is the executor's (GSM8k under LEVER's
convention: LEVER's 2 s), else 10 s.

HumanEval: the verifier input and the grouping come from the docstring's examples (default; CodeT's
generated tests where a prompt has none) or CodeT's tests, correctness from the hidden tests
(lever_jax/execution/humaneval_inputs.py); ``hidden`` feeds the hidden tests' calls to the verifier too
(an upper bound, not what a deployed system can do).

Writes the executed file atomically (data contract, docs/data_format.md) and prints a summary
(statuses, accuracy of the candidates, programs/s) to stderr.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from lever_jax.cli.checks import check_input_file, check_positive
from lever_jax.data.schema import DATASETS


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("execute", help="execute candidates in the sandbox (cached)")
    p.add_argument("--dataset", required=True, choices=DATASETS)
    p.add_argument("--input", required=True, help="samples file (.jsonl or .jsonl.gz)")
    p.add_argument("--output", required=True, help="executed file to write (.jsonl or .jsonl.gz)")
    p.add_argument("--workers", type=int, default=None, help="sandbox workers (default: one per core)")
    p.add_argument("--timeout", type=float, default=None,
                   help="wall-clock seconds per program (default: the executor's, e.g. 2 for GSM8k as LEVER; else 10)")
    p.add_argument("--memory-mb", type=int, default=1024, help="address-space limit per program (default 1024)")
    p.add_argument("--cache-dir", default=None, help="execution cache (default $LEVER_JAX_CACHE_DIR or "
                   "~/.cache/lever_jax/execution)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--executor-option", action="append", default=[], metavar="KEY=VALUE",
                   help="executor option, repeatable (gsm8k: convention=lever|faithful_cot; wikitq, wikitq_binder: "
                        "checker=lever|official); the default is LEVER's behaviour")
    p.add_argument("--humaneval-inputs", choices=("docstring", "codet", "hidden"), default="docstring",
                   help="HumanEval: calls the verifier sees and candidates are grouped on (default docstring; "
                        "'hidden' = the hidden tests' calls, a labelled upper bound)")
    p.add_argument("--runner", choices=("local", "beam"), default="local",
                   help="local: this machine's sandbox pool (default); beam: Apache Beam (lever_jax/execution/beam.py; "
                   "--workers is then sandbox workers per Beam worker, default 1)")
    p.add_argument("--beam_options", default="", help="Beam pipeline options, one string (default: DirectRunner, "
                   "multi-processing, one worker per core), written with =, e.g. --beam_options=\"--runner=DataflowRunner --project=P ...\"")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from lever_jax.data.jsonl import DataFileError, read_problems, write_problems
    from lever_jax.execution.base import Limits
    from lever_jax.execution.cache import ExecutionCache
    from lever_jax.execution.registry import get_executor
    from lever_jax.execution.runner import RunStats, execute_problems
    from lever_jax.data.errors import UserError
    from lever_jax.execution.registry import parse_options
    from lever_jax.execution.sandbox import Sandbox

    check_positive("--timeout", args.timeout)
    check_positive("--memory-mb", args.memory_mb, allow_none=False)
    check_positive("--workers", args.workers)
    check_input_file(args.input)
    try:
        args.executor_options = parse_options(args.dataset, args.executor_option)
    except ValueError as err:
        raise UserError(f"--executor-option: {err}") from None
    executor = get_executor(args.dataset, args.executor_options)
    from lever_jax.execution.context_ids import check_context_ids

    check_context_ids(args.input, args.dataset, getattr(executor, "db_root", None))  # before any sandbox work
    limits = Limits.for_timeout(args.timeout, executor, memory_mb=args.memory_mb)
    args.timeout = limits.timeout_s  # None became the executor's own; Beam reads args
    if args.runner == "beam":
        from lever_jax.execution.beam import main_from_args

        return main_from_args(args)
    stats = RunStats()
    correct = total = 0

    def checked(problems: Any) -> Any:
        for problem in problems:
            if problem.dataset != args.dataset:
                raise DataFileError(args.input, None, "dataset",
                                    f"problem {problem.problem_id} is {problem.dataset!r}, not {args.dataset!r}")
            yield problem

    def counted(problems: Any) -> Any:
        nonlocal correct, total
        for problem in problems:
            for candidate in problem.candidates:
                total += 1
                correct += bool(candidate.execution and candidate.execution.correct)
            yield problem

    cache = None if args.no_cache else ExecutionCache(args.cache_dir)
    try:  # a DataFileError (bad line) reaches the dispatcher: one line, exit 2
        with Sandbox(workers=args.workers, limits=limits) as sandbox:
            problems = checked(read_problems(args.input))
            if args.dataset == "humaneval":
                from lever_jax.execution.humaneval_inputs import execute_like_for_like

                executed = execute_like_for_like(problems, sandbox, cache, args.humaneval_inputs,
                                                 progress=not args.no_progress, stats=stats)
            else:
                executed = execute_problems(problems, executor, sandbox, cache, progress=not args.no_progress,
                                            stats=stats)
            count = write_problems(args.output, counted(executed))
    finally:
        if cache is not None:
            cache.close()
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(stats.statuses.items()))
    print(
        f"executed {count} problems, {stats.candidates} candidates: {stats.executed} run, {stats.cached} cached, "
        f"{stats.deduplicated} duplicates; statuses: {statuses}; candidates correct {correct}/{total}; "
        f"{stats.programs_per_s:.0f} programs/s; wrote {args.output}",
        file=sys.stderr,
    )
    return 0
