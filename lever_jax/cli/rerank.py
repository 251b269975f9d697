"""`lever-jax rerank`: rerank an executed file (optionally with verifier scores) and report.

Without verifier scores it prints the baselines (random, first sample, greedy, gen-prob,
majority vote, oracle); with ``--verifier-scores`` (a scores JSON written by `lever-jax eval`)
it adds verifier-only and the LEVER rows.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from lever_jax.rerank import report
from lever_jax.data.arrays import CandidateArrays, problems_to_arrays
from lever_jax.data.jsonl import DataFileError, read_problems, write_json


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("rerank", help=__doc__.splitlines()[0], description=__doc__)
    p.add_argument("--input", required=True, help="executed JSONL(.gz) file (data contract)")
    p.add_argument("--output", help="write per-candidate scores + choices here (JSON)")
    p.add_argument("--metrics", help="write method -> accuracy/CI here (JSON)")
    p.add_argument("--verifier-scores", help="scores JSON with verifier_logprob per candidate")
    p.add_argument("--normalize-gen", action="store_true", help="per-token mean gen log-prob (LEVER GSM8k)")
    p.add_argument("--no-gen-prob", action="store_true", help="ablation: ignore P_LM in LEVER's score")
    p.add_argument("--bootstrap", type=int, default=10_000, help="bootstrap resamples for the CI")
    p.set_defaults(func=main)


def load_verifier_logprob(path: str | Path, arrays: CandidateArrays) -> np.ndarray:
    """Read verifier log-probs from a scores JSON, aligned to ``arrays`` by problem id and index."""
    with open(path, encoding="utf-8") as handle:
        doc = json.load(handle)
    by_problem = {p["problem_id"]: p for p in doc.get("problems", [])}
    out = np.full(arrays.shape, -np.inf, np.float32)
    for row, problem_id in enumerate(arrays.problem_ids):
        if problem_id not in by_problem:
            raise DataFileError(path, None, "problems", f"no verifier scores for problem {problem_id!r}")
        for cand in by_problem[problem_id]["candidates"]:
            value = cand.get("verifier_logprob")
            col = int(cand["index"])
            if col < arrays.shape[1]:
                out[row, col] = -np.inf if value is None else float(value)
    missing = arrays.mask & np.isneginf(out)
    if missing.any():
        row, col = map(int, np.argwhere(missing)[0])
        raise DataFileError(path, None, "verifier_logprob",
                            f"missing for {int(missing.sum())} candidates (first: {arrays.problem_ids[row]!r} #{col})")
    return out


def main(args: argparse.Namespace) -> int:
    try:
        problems = list(read_problems(args.input, require_execution=True))
        if not problems:
            raise DataFileError(args.input, None, None, "no problems in the file (empty?)")
        arrays = problems_to_arrays(problems)
        verifier = load_verifier_logprob(args.verifier_scores, arrays) if args.verifier_scores else None
    except DataFileError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    table = report.method_table(
        arrays, verifier, n_resamples=args.bootstrap, normalize_gen=args.normalize_gen,
        use_gen_prob=not args.no_gen_prob,
    )
    rows, width = arrays.shape
    title = (f"{args.input}: {rows} problems, {arrays.counts.sum() / max(rows, 1):.1f} samples "
             f"({arrays.mask.sum() / max(rows, 1):.1f} distinct programs) per problem")
    from lever_jax.execution import wikitq_match

    both = wikitq_match.has_both_checkers(problems)
    print(report.format_table(table, title=title + (" -- WikiTQ correctness: LEVER's relaxed check" if both else "")))
    if both:  # WikiTQ: the paper's number uses LEVER's checker; the official evaluator's is reported too
        official = problems_to_arrays(wikitq_match.relabel(problems, "official"))
        print(report.format_table(
            report.method_table(official, verifier, n_resamples=args.bootstrap, normalize_gen=args.normalize_gen,
                                use_gen_prob=not args.no_gen_prob),
            title=title + " -- WikiTQ correctness: official evaluator"))
    if args.output:
        write_json(args.output, report.scores_json(arrays, table, verifier, normalize_gen=args.normalize_gen))
    if args.metrics:
        write_json(args.metrics, report.metrics_json(table))
    return 0
