"""`lever-jax compare`: several `lever-jax run` directories side by side (lever_jax.pipeline.run_comparison).

    lever-jax compare runs results/demo results/cf_only ... [--labels a b ...]
    lever-jax compare folds results/finetune_minilm results/ft_2layers ... [--labels a b ...]
        [--sum-logits LABEL=DIR_A+DIR_B] [--bootstrap N]

`runs` prints one markdown row per finished run (DIR/metrics.json): LEVER (summing) accuracy with
its 95% CI, the paired gain over majority vote, verifier-only accuracy, binary accuracy, ECE and
the train + score time. `folds` compares runs on the folds every one of them finished (runs
stopped early count): LEVER accuracy, its paired gain over majority vote and over the *first* run
(95% bootstrap CIs over the same problems), verifier-only and binary accuracy, and the kept
checkpoints' dev loss / dev binary accuracy; `--sum-logits` adds a late-fusion row (two runs'
log-odds summed, nothing fitted). Nothing is executed or trained.
"""
from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("compare", help=__doc__.splitlines()[0], description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    which = p.add_subparsers(dest="what", metavar="{runs,folds}", required=True)
    runs = which.add_parser("runs", help="finished runs, one row each (DIR/metrics.json)")
    runs.add_argument("runs", nargs="+", type=Path, help="run directories (each with metrics.json)")
    runs.add_argument("--labels", nargs="*", default=None, help="row labels (default: directory names)")
    runs.set_defaults(func=main_runs)
    folds = which.add_parser("folds", help="runs on the folds all of them finished, paired")
    folds.add_argument("runs", nargs="+", type=Path, help="run directories (DIR/run_config.json, DIR/folds)")
    folds.add_argument("--labels", nargs="*", default=None, help="row labels (default: directory names)")
    folds.add_argument("--sum-logits", action="append", default=[], metavar="LABEL=DIR_A+DIR_B",
                       help="late fusion of two of the runs: log-odds summed")
    folds.add_argument("--bootstrap", type=int, default=10_000, help="bootstrap resamples for the CIs")
    folds.set_defaults(func=main_folds)


def main_runs(args: argparse.Namespace) -> int:
    from lever_jax.pipeline.run_comparison import runs_table

    print("\n".join(runs_table(args.runs, args.labels)))
    return 0


def main_folds(args: argparse.Namespace) -> int:
    from lever_jax.cli.checks import check_positive
    from lever_jax.pipeline.run_comparison import folds_table

    check_positive("--bootstrap", args.bootstrap, allow_none=False)
    print("\n".join(folds_table(args.runs, args.labels, args.sum_logits, args.bootstrap)))
    return 0
