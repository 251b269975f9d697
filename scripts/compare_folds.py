"""Compare `lever-jax run` directories on the folds every one of them has finished.

    python scripts/compare_folds.py results/finetune_minilm results/ft_2layers ... [--labels a b ...]
        [--sum-logits LABEL=DIR_A+DIR_B]

For runs stopped early (a fine-tune variant measured on 2 of 5 folds): reads each run's per-fold
held-out scores (DIR/folds/**/fold<k>/scores.npy, written when a fold finishes), keeps the folds
all runs have, and prints per run LEVER (summing) accuracy, its paired gain over majority vote and
over the *first* run (95% bootstrap CIs over the same problems), verifier-only accuracy, binary
accuracy, and the kept checkpoints' dev loss / dev binary accuracy (DIR/folds/**/fold<k>/fold.json,
averaged over those folds). ``--sum-logits`` adds a late-fusion row: the two runs' P(yes)
combined by summing their log-odds (a product-of-experts verifier; nothing is fitted). The pool comes from the first run's
run_config.json (its executed file under DIR/executed is reused; nothing is executed).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from lever_jax.data.arrays import problems_to_arrays
from lever_jax.data.folds import assign_folds
from lever_jax.pipeline.pools import load_pool
from lever_jax.pipeline.run import RunConfig
from lever_jax.rerank import statistics, table


def fold_scores(run: Path, num_folds: int) -> dict[int, tuple[np.ndarray, dict]]:
    """(held-out log P(yes), fold.json) of every finished fold of ``run`` (one trained config per
    directory; fold.json carries the kept checkpoint's dev metrics)."""
    out: dict[int, tuple[np.ndarray, dict]] = {}
    for fold in range(num_folds):
        hits = sorted(run.glob(f"folds/**/fold{fold}/scores.npy"))
        if len(hits) > 1:
            raise ValueError(f"{run}: several trained configs have fold {fold} ({hits[0].parent.parent}, "
                             f"{hits[1].parent.parent}); pass a run directory with one")
        if hits:
            meta = hits[0].parent / "fold.json"
            out[fold] = (np.load(hits[0]), json.loads(meta.read_text(encoding="utf-8")) if meta.exists() else {})
    return out


def _log_odds(logp: np.ndarray) -> np.ndarray:
    return logp - np.log(-np.expm1(np.minimum(logp, -1e-7)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, help="run directories (DIR/run_config.json, DIR/folds)")
    parser.add_argument("--labels", nargs="*", default=None, help="row labels (default: directory names)")
    parser.add_argument("--sum-logits", action="append", default=[], metavar="LABEL=DIR_A+DIR_B",
                        help="late fusion of two of the runs: log-odds summed")
    parser.add_argument("--bootstrap", type=int, default=10_000)
    args = parser.parse_args(argv)
    labels = args.labels or [r.name for r in args.runs]
    if len(labels) != len(args.runs):
        parser.error("--labels needs one label per run directory")
    config_path = args.runs[0] / "run_config.json"
    try:
        cfg = RunConfig(**json.loads(config_path.read_text(encoding="utf-8"))["run"])
    except (OSError, KeyError, TypeError, ValueError) as err:  # JSONDecodeError is a ValueError
        print(f"{config_path}: not a run's config ({type(err).__name__}: {err})", file=sys.stderr)
        return 2
    try:
        scores = {str(r): fold_scores(r, cfg.num_folds) for r in args.runs}
    except (OSError, ValueError) as err:  # the ambiguous-directory message names the run
        print(f"error: {err}", file=sys.stderr)
        return 2
    arrays = problems_to_arrays(load_pool(cfg, args.runs[0]))
    folds = assign_folds(arrays.problem_ids, cfg.num_folds, cfg.fold_seed)
    done = sorted(set.intersection(*(set(s) for s in scores.values())))
    if not done:
        print("no fold is finished in every run", file=sys.stderr)
        return 1
    rows = np.flatnonzero(np.isin(folds, done))
    sub = arrays.select(rows)
    ver: dict[str, np.ndarray] = {}
    dev: dict[str, str] = {}
    for label, run in zip(labels, args.runs):
        full = np.full(arrays.shape, -np.inf, np.float32)
        for fold, (s, _) in scores[str(run)].items():
            full[folds == fold] = s[:, :arrays.shape[1]]
        ver[label] = np.where(sub.mask, full[rows], -np.inf).astype(np.float32)
        metas = [scores[str(run)][f][1] for f in done]
        if all("dev_loss" in m for m in metas):
            dev[label] = (f"{np.mean([m['dev_loss'] for m in metas]):.3f} / "
                          f"{100 * np.mean([m['dev_binary_acc'] for m in metas]):.1f}")
    by_dir = dict(zip(map(str, args.runs), labels))
    for spec in args.sum_logits:
        name, _, pair = spec.partition("=")
        a, _, b = pair.partition("+")
        if a not in by_dir or b not in by_dir:
            parser.error(f"--sum-logits {spec!r}: both directories must be among the runs")
        fused = _log_odds(ver[by_dir[a]]) + _log_odds(ver[by_dir[b]])
        ver[name] = np.where(sub.mask, -np.logaddexp(0.0, -fused), -np.inf).astype(np.float32)
    print(f"folds {done} of {cfg.num_folds}: {len(rows)} problems")
    print("| run | LEVER (summing) | − majority vote [paired 95% CI] | − first run [paired 95% CI] | "
          "verifier only | binary acc | dev loss / dev binary acc (fold mean) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    first = None
    for label, v in ver.items():
        per = table.per_problem(sub, v, use_gen_prob=True)
        hit = {k: per[k][0] for k in ("lever", "majority_vote", "verifier_only")}
        first = hit["lever"] if first is None else first
        gain = statistics.bootstrap_ci(hit["lever"] - hit["majority_vote"], n_resamples=args.bootstrap)
        vs = statistics.bootstrap_ci(hit["lever"] - first, n_resamples=args.bootstrap)
        print(f"| {label} | {100 * hit['lever'].mean():.1f} | {100 * gain.mean:+.1f} [{100 * gain.low:+.1f}, "
              f"{100 * gain.high:+.1f}] | {100 * vs.mean:+.1f} [{100 * vs.low:+.1f}, {100 * vs.high:+.1f}] | "
              f"{100 * hit['verifier_only'].mean():.1f} | "
              f"{100 * statistics.binary_accuracy(v, sub.correct, sub.mask):.1f} | {dev.get(label, '—')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
