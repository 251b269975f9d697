"""``lever-jax prompts``: write LEVER-style few-shot prompts, one JSON object per problem.

    lever-jax prompts --dataset gsm8k --split test > prompts.jsonl
    lever-jax prompts --dataset mbpp --split test --output prompts.jsonl.gz --limit 10

Each line: ``{"problem_id", "dataset", "prompt", "stop"}``. Sample completions with any LLM server,
save them as ``{"problem_id", "response": <completion response>}`` lines and convert them with
``lever-jax import --format openai`` -- or sample them directly: ``lever-jax sample --input``.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
from typing import Any

NAME = "prompts"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(NAME, help="write LEVER few-shot prompts for sampling new pools",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", required=True, choices=("gsm8k", "mbpp", "humaneval", "spider", "wikitq"))
    p.add_argument("--split", required=True)
    p.add_argument("--variant", default=None, help="dataset variant, e.g. 'sanitized' for MBPP")
    p.add_argument("--output", default="-", help="output JSONL (.gz ok); '-' = stdout (default)")
    p.add_argument("--limit", type=int, default=None, help="only the first N problems")
    add_prompt_options(p)
    p.set_defaults(func=main)


def add_prompt_options(p: argparse.ArgumentParser) -> None:
    """The prompt-format flags (shared with ``lever-jax sample --dataset``)."""
    p.add_argument("--add-assertion-n", type=int, default=1, help="MBPP: test calls shown per task (LEVER: 1)")
    p.add_argument("--show-assertions", action="store_true",
                   help="MBPP: show full asserts (with expected values) instead of calls only")


def prompt_options(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword options of :func:`lever_jax.data.prompts.prompt_records` from the flags above."""
    if args.dataset == "mbpp":
        return {"add_assertion_n": args.add_assertion_n, "test_input_only": not args.show_assertions}
    return {}


def main(args: argparse.Namespace) -> int:
    from lever_jax.cli.checks import check_positive, check_split
    from lever_jax.data import jsonl, prompts
    from lever_jax.data.datasets import load_problems
    from lever_jax.cli.checks import user_error

    check_split(args.dataset, args.split)
    check_positive("--limit", args.limit)
    problems = load_problems(args.dataset, args.split, args.variant)
    if args.limit is not None:
        problems = problems[: args.limit]
    try:
        records = prompts.prompt_records(problems, **prompt_options(args))
        if args.output == "-":
            for record in records:
                sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
        else:
            n = jsonl.write_json_lines(args.output, records)
            print(f"wrote {n} prompts to {args.output}", file=sys.stderr)
    except NotImplementedError as err:
        raise user_error(str(err), where="--dataset") from None
    return 0
