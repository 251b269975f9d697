"""``lever-jax import``: convert LEVER verification files or OpenAI / vLLM outputs to samples files.

    lever-jax import --format lever --dataset mbpp --input mbpp_codex_verification_dev.jsonl --output mbpp_dev.jsonl.gz
    lever-jax import --format openai --dataset gsm8k --split test --input completions.jsonl --output samples.jsonl.gz

``--format lever``: problems come from the file itself (its ``metadata``); ``--recorded-execution``
also keeps LEVER's recorded execution results (an executed file). ``--format openai``: one line per
request ``{"problem_id", "response": {...}}`` (see lever_jax/data/importers/completions.py); the
problems are loaded from the bundled ``--dataset``/``--split``.

What is changed, and counted (openai/vllm): ``--fences strip`` (default) keeps the first
```` ```python ```` fenced block of a reply; the text is cut at the first stop sequence:
``--stop S`` (repeatable) if given, else ``--stop-preset``: ``safe`` (default: a line's own
``"stop"``, else the few-shot record separator, GSM8k ``"\\n\\n## "``, so programs with blank lines
are kept whole), ``lever`` (the stops LEVER sampled with, GSM8k ``"\\n\\n"``) or ``none``.
Prints a JSON summary to stderr (problems, candidates, samples, log-prob availability, each
transformation's count); problems where only some candidates carry a log-prob are reported:
``lever-jax rerank`` scores those problems with count-based P_LM (docs/data_format.md).
"""
from __future__ import annotations

import argparse
import codecs
import json
import sys
from typing import Any, Iterable, Iterator

NAME = "import"
STOP_PRESETS = ("safe", "lever", "none")


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
                   help="openai: cut at this stop sequence (repeatable; overrides --stop-preset and "
                        "the lines' own \"stop\")")
    p.add_argument("--stop-preset", choices=STOP_PRESETS, default="safe",
                   help="openai: 'safe' (default) = a line's \"stop\", else the few-shot record separator "
                        "(GSM8k '\\n\\n## ': blank lines inside programs are kept); 'lever' = the stops "
                        "LEVER sampled with (GSM8k '\\n\\n'); 'none' = no cut")
    p.add_argument("--fences", choices=("strip", "keep"), default="strip",
                   help="openai: 'strip' (default) keeps the first ```-fenced block of a reply (chat "
                        "models); 'keep' leaves replies as they are")
    p.add_argument("--recorded-execution", action="store_true",
                   help="lever: keep the file's recorded exec_result/exec_match as execution")
    p.add_argument("--merge-duplicates", action="store_true",
                   help="lever: merge identical program texts into one candidate with a count (LEVER keeps each)")
    p.set_defaults(func=main)


def _gsm8k_ids() -> dict[str, str]:
    from lever_jax.data.datasets import load_problems

    return {p.question: p.problem_id for split in ("train", "test") for p in load_problems("gsm8k", split)}


def resolve_stops(preset: str, stops: list[str] | None, dataset: str) -> tuple[str, ...] | None:
    """The stop sequences to force on every line (None: per line, else the importer's safe default)."""
    if stops is not None:
        # '\n' typed in a shell arrives as backslash + n: decode escapes (ASCII stops only)
        return tuple(codecs.decode(s, "unicode_escape") if "\\" in s and s.isascii() else s for s in stops)
    if preset == "lever":
        from lever_jax.data.prompts import STOP_SEQUENCES

        return tuple(STOP_SEQUENCES[dataset])
    return () if preset == "none" else None


def _problems(args: argparse.Namespace, stats: dict[str, Any]) -> Iterator[Any]:
    from lever_jax.cli.checks import check_split
    from lever_jax.data.importers import completions, lever
    from lever_jax.cli.checks import user_error

    if args.format == "lever":
        if args.stop is not None or args.stop_preset != "safe" or args.fences != "strip":
            raise user_error("applies to --format openai/vllm only (LEVER's files hold cut programs)",
                            where="--stop/--stop-preset/--fences")
        dataset = args.dataset or lever.infer_dataset_split(args.input)[0]
        if dataset is None:
            raise user_error(f"cannot tell the dataset from the file name {args.input!r} (expected "
                            "<dataset>_..._verification_<split>.jsonl); pass --dataset", where="--dataset")
        ids = _gsm8k_ids() if dataset == "gsm8k" else None
        return lever.import_lever(args.input, dataset, args.split, args.recorded_execution, args.source, ids,
                                  merge_duplicates=args.merge_duplicates)
    if not args.dataset or not args.split:
        raise user_error(f"--format {args.format} needs --dataset and --split (the problems' source)",
                        where="--dataset/--split")
    check_split(args.dataset, args.split)
    from lever_jax.data.datasets import load_problems

    stops = resolve_stops(args.stop_preset, args.stop, args.dataset)
    stats["stops"] = list(stops) if stops is not None else (
        f"per line, else {list(completions.IMPORT_STOPS[args.dataset])}")
    base = load_problems(args.dataset, args.split, args.variant)
    return completions.import_completions(args.input, base, stops,
                                          args.source or completions.default_source(args.input),
                                          strip_fences=args.fences == "strip", stats=stats)


def count_problems(problems: Iterable[Any], stats: dict[str, Any]) -> Iterator[Any]:
    """Pass ``problems`` through, counting candidates, samples and log-prob availability."""
    for p in problems:
        have = sum(c.gen_logprob is not None for c in p.candidates)
        stats["problems"] += 1
        stats["candidates"] += len(p.candidates)
        stats["samples"] += sum(c.count for c in p.candidates)
        stats["with_logprobs"] += have
        if 0 < have < len(p.candidates):
            stats["problems_mixed_logprobs"] += 1
            stats.setdefault("first_mixed_logprobs", p.problem_id)
        elif have == 0 and p.candidates:
            stats["problems_without_logprobs"] += 1
        yield p


def main(args: argparse.Namespace) -> int:
    from lever_jax.cli.checks import check_input_file
    from lever_jax.data import jsonl

    check_input_file(args.input)
    stats: dict[str, Any] = {"problems": 0, "candidates": 0, "samples": 0, "with_logprobs": 0,
                             "problems_mixed_logprobs": 0, "problems_without_logprobs": 0}
    jsonl.write_problems(args.output, count_problems(_problems(args, stats), stats))
    stats["duplicates_merged"] = stats["samples"] - stats["candidates"]
    stats["output"] = args.output
    print(json.dumps(stats), file=sys.stderr)
    mixed = stats["problems_mixed_logprobs"]
    if mixed:
        print(f"note: {mixed} problem(s) have a log-prob for some candidates only (first: "
              f"{stats['first_mixed_logprobs']}); lever-jax rerank scores such a problem with "
              "count-based P_LM (sample counts, no generation probability)", file=sys.stderr)
    return 0
