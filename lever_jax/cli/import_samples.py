"""``lever-jax import``: convert LEVER verification files or OpenAI / vLLM outputs to samples files.

    lever-jax import --format lever --dataset mbpp --input mbpp_codex_verification_dev.jsonl --output mbpp_dev.jsonl.gz
    lever-jax import --format openai --dataset gsm8k --split test --input completions.jsonl --output samples.jsonl.gz

``--format lever``: problems come from the file itself (its ``metadata``); ``--recorded-execution``
also keeps LEVER's recorded execution results (an executed file). ``--format openai``: one line per
request ``{"problem_id", "response": {...}}`` (see lever_jax/data/importers/completions.py); the
problems are loaded from the bundled ``--dataset``/``--split``. Prints a JSON summary.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

NAME = "import"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(NAME, help="convert LEVER / OpenAI / vLLM outputs to samples files",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--format", required=True, choices=("lever", "openai", "vllm"),
                   help="'vllm' is an alias of 'openai' (the same reader handles both layouts)")
    p.add_argument("--dataset", choices=("gsm8k", "mbpp", "humaneval", "spider", "wikitq"),
                   help="required for openai; lever infers it from the file name when omitted")
    p.add_argument("--split", default=None, help="dataset split (openai: required; lever: from the file name)")
    p.add_argument("--variant", default=None, help="dataset variant for openai (e.g. 'sanitized')")
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True, help="samples JSONL (.gz ok), written atomically")
    p.add_argument("--source", default=None, help="candidate source tag (default: derived from the file name)")
    p.add_argument("--stop", action="append", default=None,
                   help="openai: stop sequence (repeatable; default: the dataset's LEVER stops)")
    p.add_argument("--recorded-execution", action="store_true",
                   help="lever: keep the file's recorded exec_result/exec_match as execution")
    p.add_argument("--merge-duplicates", action="store_true",
                   help="lever: merge identical program texts into one candidate with a count (LEVER keeps each)")
    p.set_defaults(func=main)


def _gsm8k_ids() -> dict[str, str]:
    from lever_jax.data.datasets import load_problems

    return {p.question: p.problem_id for split in ("train", "test") for p in load_problems("gsm8k", split)}


def main(args: argparse.Namespace) -> int:
    from lever_jax.data import jsonl
    from lever_jax.data.importers import completions, lever

    if args.format == "lever":
        dataset = args.dataset or lever.infer_dataset_split(args.input)[0]
        ids = _gsm8k_ids() if dataset == "gsm8k" else None
        problems = lever.import_lever(args.input, dataset, args.split, args.recorded_execution, args.source, ids,
                                      merge_duplicates=args.merge_duplicates)
    else:
        if not args.dataset or not args.split:
            raise SystemExit("lever-jax import --format openai needs --dataset and --split")
        from lever_jax.data.datasets import load_problems

        base = load_problems(args.dataset, args.split, args.variant)
        problems = completions.import_completions(args.input, base, args.stop,
                                                  args.source or completions.default_source(args.input))
    stats = {"problems": 0, "candidates": 0, "samples": 0, "with_logprobs": 0}

    def counted(items):
        for p in items:
            stats["problems"] += 1
            stats["candidates"] += len(p.candidates)
            stats["samples"] += sum(c.count for c in p.candidates)
            stats["with_logprobs"] += sum(c.gen_logprob is not None for c in p.candidates)
            yield p

    try:
        jsonl.write_problems(args.output, counted(problems))
    except jsonl.DataFileError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(stats))
    return 0
