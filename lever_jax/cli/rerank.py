"""`lever-jax rerank`: rerank an executed file (optionally with verifier scores) and report.

Without verifier scores it prints the baselines (random, first sample, greedy, gen-prob, ML + EP,
majority vote, voting over error-free programs, oracle); with ``--verifier-scores`` (a scores file
written by `lever-jax eval`, `lever-jax run` or `rerank --output`) it adds verifier-only and the
LEVER rows. A scores file covering a subset of the problems reranks that subset (reported on
stderr). Method keys and the scores file format: docs/data_format.md.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from lever_jax.data.arrays import problems_to_arrays
from lever_jax.data.errors import UserError
from lever_jax.data.jsonl import DataFileError, read_problems, write_json
from lever_jax.rerank import report
from lever_jax.rerank.scores_file import read_verifier_scores


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("rerank", help=__doc__.splitlines()[0], description=__doc__)
    p.add_argument("--input", required=True, help="executed JSONL(.gz) file (data contract)")
    p.add_argument("--output", help="write per-candidate scores + choices here (scores file v2)")
    p.add_argument("--metrics", help="write method -> accuracy/CI here (JSON)")
    p.add_argument("--verifier-scores", help="scores file with verifier_logprob per candidate")
    p.add_argument("--normalize-gen", action="store_true", help="per-token mean gen log-prob (LEVER GSM8k)")
    p.add_argument("--no-gen-prob", action="store_true", help="ablation: ignore P_LM in LEVER's score")
    p.add_argument("--bootstrap", type=int, default=10_000, help="bootstrap resamples for the CI (>= 1)")
    p.set_defaults(func=main)


def _load(args: argparse.Namespace):
    """(problems, arrays, verifier or None) for the problems to rerank; DataFileError on bad input."""
    try:
        problems = list(read_problems(args.input, require_execution=True))
    except IsADirectoryError:
        raise DataFileError(args.input, None, None, "is a directory, expected an executed JSONL file") from None
    except FileNotFoundError:
        raise DataFileError(args.input, None, None, "no such file") from None
    except OSError as err:
        raise DataFileError(args.input, None, None, f"cannot read: {err.strerror or err}") from None
    if not problems:
        raise DataFileError(args.input, None, None, "no problems (empty file)")
    try:
        arrays = problems_to_arrays(problems)
    except ValueError as err:
        raise DataFileError(args.input, None, None, str(err)) from None
    if not args.verifier_scores:
        return problems, arrays, None
    verifier, covered = read_verifier_scores(args.verifier_scores, arrays, source=args.input)
    if not covered.any():
        raise DataFileError(args.verifier_scores, None, "problems",
                            f"scores none of the {arrays.num_problems} problems of {args.input}")
    if not covered.all():
        print(f"note: {args.verifier_scores} scores {int(covered.sum())} of {arrays.num_problems} problems "
              f"of {args.input}; reranking those {int(covered.sum())}", file=sys.stderr)
        rows = np.flatnonzero(covered)
        arrays, verifier = arrays.select(rows), verifier[rows]
        problems = [problems[i] for i in rows]
    return problems, arrays, verifier


def main(args: argparse.Namespace) -> int:
    if args.bootstrap < 1:
        raise UserError(f"--bootstrap must be >= 1 (resamples for the CI), got {args.bootstrap}")
    problems, arrays, verifier = _load(args)  # DataFileError (a UserError): the dispatcher prints one line, exit 2
    table = report.method_table(
        arrays, verifier, n_resamples=args.bootstrap, normalize_gen=args.normalize_gen,
        use_gen_prob=not args.no_gen_prob,
    )
    rows = arrays.num_problems
    title = (f"{args.input}: {rows} problems, {arrays.counts.sum() / rows:.1f} samples "
             f"({arrays.mask.sum() / rows:.1f} distinct programs) per problem")
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
        write_json(args.output, report.scores_json(arrays, table, verifier, normalize_gen=args.normalize_gen,
                                                   use_gen_prob=not args.no_gen_prob))
    if args.metrics:
        write_json(args.metrics, report.metrics_json(table))
    return 0
