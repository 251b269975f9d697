"""``lever-jax inputs``: write the verifier's input strings, one JSON line per candidate.

    lever-jax inputs --input EXECUTED --output inputs.jsonl[.gz] [--dataset D] [--style lever|legacy]
        [--truncation right|left|left_sql] [--no-program] [--no-execution] [--include-schema]
        [--max-chars N] [--with-gold [--cache-dir D]]

Each line is ``{"problem_id", "candidate_index", "input", "target"}``: ``input`` is exactly the text
the verifier tokenises (:func:`lever_jax.inputs.serialize.serialize` with the same options the
pipelines use) and ``target`` its label (``yes`` / ``no``). ``--with-gold`` first appends the gold
programs LEVER adds in training, executed in the sandbox (their ``candidate_index`` follows the
samples'). Written atomically; a bad input file gives one ``file:line: field ...`` line and exit 2.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Iterator

from lever_jax.data.schema import DATASETS
from lever_jax.inputs.serialize import STYLES, TRUNCATIONS


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("inputs", help="write the verifier input string of every candidate (JSONL)")
    p.add_argument("--input", required=True, help="executed file (.jsonl or .jsonl.gz)")
    p.add_argument("--output", required=True, help="inputs file to write (.jsonl or .jsonl.gz)")
    p.add_argument("--dataset", choices=DATASETS, default=None,
                   help="serialise as this dataset (default: each problem's own 'dataset')")
    p.add_argument("--style", choices=STYLES, default="lever", help="'lever' (default) or the older 'legacy' strings")
    p.add_argument("--truncation", choices=TRUNCATIONS, default="right",
                   help="side --max-chars cuts from (default right, as LEVER)")
    p.add_argument("--max-chars", type=int, default=None, help="cap each input at this many characters")
    p.add_argument("--no-program", action="store_true", help="ablation: drop the program")
    p.add_argument("--no-execution", action="store_true", help="ablation: drop the execution result")
    p.add_argument("--include-schema", action="store_true", help="Spider/WikiTQ: prepend the schema")
    p.add_argument("--with-gold", action="store_true",
                   help="append LEVER's training gold programs (executed in the sandbox) before serialising")
    p.add_argument("--cache-dir", default=None, help="execution cache for --with-gold")
    p.set_defaults(func=main)


def input_records(problems: Any, options: Any, dataset: str | None = None) -> Iterator[dict[str, Any]]:
    """``{problem_id, candidate_index, input, target}`` per candidate, in file order."""
    from lever_jax.inputs.serialize import serialize, target_text

    for problem in problems:
        if dataset is not None and problem.dataset != dataset:
            problem = problem.replace(dataset=dataset)
        for index, candidate in enumerate(problem.candidates):
            yield {"problem_id": problem.problem_id, "candidate_index": index,
                   "input": serialize(problem, candidate, options), "target": target_text(candidate)}


def main(args: argparse.Namespace) -> int:
    from lever_jax.data.jsonl import DataFileError, read_problems, write_json_lines
    from lever_jax.inputs.serialize import SerializeOptions

    if args.max_chars is not None and args.max_chars < 1:
        print("error: --max-chars must be positive", file=sys.stderr)
        return 2
    from lever_jax.cli.checks import check_input_file

    check_input_file(args.input)  # an empty or blank-only file is an error, not "wrote 0 inputs"
    options = SerializeOptions(include_program=not args.no_program, include_execution=not args.no_execution,
                               include_schema=args.include_schema, max_chars=args.max_chars,
                               style=args.style, truncation=args.truncation)
    try:
        problems: Any = read_problems(args.input, require_execution=True)
        if args.with_gold:
            from lever_jax.execution.cache import ExecutionCache
            from lever_jax.inputs.feeds import append_gold

            problems = list(problems)
            with ExecutionCache(args.cache_dir) as cache:
                problems, added = append_gold(problems, args.dataset, cache=cache)
            print(f"gold programs added: {added}", file=sys.stderr)
        count = write_json_lines(args.output, input_records(problems, options, args.dataset))
    except DataFileError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {count} inputs to {args.output}", file=sys.stderr)
    return 0
