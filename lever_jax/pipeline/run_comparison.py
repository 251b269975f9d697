"""Several `lever-jax run` directories compared side by side (``lever-jax compare``).

- :func:`runs_table`: one markdown row per finished run from its DIR/metrics.json -- LEVER
  (summing) accuracy with its 95% CI, the paired gain over majority vote with its CI, verifier-only
  accuracy, the verifier's binary accuracy and ECE, and the train + score time the run recorded.
- :func:`folds_table`: runs stopped early (a fine-tune variant measured on 2 of 5 folds) compared
  on the folds every one of them finished, from the per-fold held-out scores
  (DIR/folds/**/fold<k>/scores.npy) and the kept checkpoints' dev metrics (fold.json), paired
  over the same problems; the pool comes from the first run's run_config.json (its executed file
  under DIR/executed is reused; nothing is executed). On a finished run it reproduces metrics.json.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from lever_jax.data.arrays import CandidateArrays, problems_to_arrays
from lever_jax.data.errors import UserError
from lever_jax.data.folds import assign_folds
from lever_jax.rerank import statistics, table

if TYPE_CHECKING:  # the run's config and pool are imported by the fold comparison only
    # (`compare runs` reads JSON alone)
    from lever_jax.pipeline.run import RunConfig

RUNS_HEADER = ("| run | LEVER (summing) [95% CI] | gain over majority vote [paired 95% CI] | verifier only | "
               "binary acc | ECE | train + score (s) |",
               "|---|---:|---:|---:|---:|---:|---:|")
FOLDS_HEADER = ("| run | LEVER (summing) | − majority vote [paired 95% CI] | − first run [paired 95% CI] | "
                "verifier only | binary acc | dev loss / dev binary acc (fold mean) |",
                "|---|---:|---:|---:|---:|---:|---:|")


def check_labels(runs: Sequence[Path], labels: Sequence[str] | None) -> list[str]:
    """The row labels: ``labels`` (one per run) or the directory names."""
    labels = list(labels or [Path(r).name for r in runs])
    if len(labels) != len(runs):
        raise UserError("--labels needs one label per run directory")
    return labels


def run_row(label: str, doc: Mapping[str, Any]) -> str:
    """The :func:`runs_table` row of one run's metrics.json document."""
    methods, ver = doc["methods"], doc["verifier"]
    head = "lever_no_agg" if doc.get("ablation") == "no_agg" else "lever"
    m, g = methods[head], ver[f"{head}_minus_majority_vote"]
    only = methods.get("verifier_only", {}).get("accuracy", float("nan"))
    seconds = doc.get("timings_s", {}).get("train_score_s", float("nan"))
    return (f"| {label} | {100 * m['accuracy']:.1f} [{100 * m['ci_low']:.1f}, {100 * m['ci_high']:.1f}] | "
            f"{100 * g['gain']:+.1f} [{100 * g['ci_low']:+.1f}, {100 * g['ci_high']:+.1f}] | "
            f"{100 * only:.1f} | {100 * ver['binary_acc']:.1f} | {ver['ece']:.3f} | {seconds:.0f} |")


def runs_table(runs: Sequence[Path], labels: Sequence[str] | None = None) -> list[str]:
    """The markdown lines comparing finished runs (every DIR/metrics.json read before any row)."""
    labels = check_labels(runs, labels)
    docs = []
    for run in runs:
        path = Path(run) / "metrics.json"
        try:
            docs.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError) as err:
            raise UserError(f"{path}: not a finished run's metrics ({type(err).__name__}: {err})") from err
    return [*RUNS_HEADER, *(run_row(label, doc) for label, doc in zip(labels, docs))]


def read_run_config(run: Path) -> RunConfig:
    """The :class:`RunConfig` a run recorded in DIR/run_config.json."""
    from lever_jax.pipeline.run import RunConfig

    path = run / "run_config.json"
    try:
        return RunConfig(**json.loads(path.read_text(encoding="utf-8"))["run"])
    except (OSError, KeyError, TypeError, ValueError) as err:  # JSONDecodeError is a ValueError
        raise UserError(f"{path}: not a run's config ({type(err).__name__}: {err})") from err


def fold_scores(run: Path, num_folds: int) -> dict[int, tuple[np.ndarray, dict]]:
    """(held-out log P(yes), fold.json) of every finished fold of ``run`` (one trained config per
    directory; fold.json carries the kept checkpoint's dev metrics)."""
    out: dict[int, tuple[np.ndarray, dict]] = {}
    for fold in range(num_folds):
        hits = sorted(run.glob(f"folds/**/fold{fold}/scores.npy"))
        if len(hits) > 1:
            raise UserError(f"{run}: several trained configs have fold {fold} ({hits[0].parent.parent}, "
                            f"{hits[1].parent.parent}); pass a run directory with one")
        if hits:
            meta = hits[0].parent / "fold.json"
            dev = json.loads(meta.read_text(encoding="utf-8")) if meta.exists() else {}
            out[fold] = (np.load(hits[0]), dev)
    return out


def _log_odds(logp: np.ndarray) -> np.ndarray:
    return logp - np.log(-np.expm1(np.minimum(logp, -1e-7)))


def _dev_metrics(metas: Sequence[Mapping[str, Any]]) -> str | None:
    """'dev loss / dev binary acc' averaged over the kept checkpoints, or None when one lacks them."""
    if not all("dev_loss" in m for m in metas):
        return None
    loss, acc = np.mean([m["dev_loss"] for m in metas]), np.mean([m["dev_binary_acc"] for m in metas])
    return f"{loss:.3f} / {100 * acc:.1f}"


def _fused(spec: str, ver: Mapping[str, np.ndarray], by_dir: Mapping[str, str],
           mask: np.ndarray) -> tuple[str, np.ndarray]:
    """``--sum-logits LABEL=DIR_A+DIR_B``: the two runs' P(yes) combined by summing their log-odds
    (a product-of-experts verifier; nothing is fitted)."""
    name, _, pair = spec.partition("=")
    a, _, b = pair.partition("+")
    if a not in by_dir or b not in by_dir:
        raise UserError(f"--sum-logits {spec!r}: both directories must be among the runs")
    fused = _log_odds(ver[by_dir[a]]) + _log_odds(ver[by_dir[b]])
    return name, np.where(mask, -np.logaddexp(0.0, -fused), -np.inf).astype(np.float32)


def _fold_row(label: str, sub: CandidateArrays, v: np.ndarray, first: np.ndarray | None,
              dev: str | None, bootstrap: int) -> tuple[str, np.ndarray]:
    """One :func:`folds_table` row and the run's per-problem LEVER hits (the first run's are the baseline)."""
    per = table.per_problem(sub, v, use_gen_prob=True)
    hit = {k: per[k][0] for k in ("lever", "majority_vote", "verifier_only")}
    first = hit["lever"] if first is None else first
    gain = statistics.bootstrap_ci(hit["lever"] - hit["majority_vote"], n_resamples=bootstrap)
    vs = statistics.bootstrap_ci(hit["lever"] - first, n_resamples=bootstrap)
    return (f"| {label} | {100 * hit['lever'].mean():.1f} | {100 * gain.mean:+.1f} [{100 * gain.low:+.1f}, "
            f"{100 * gain.high:+.1f}] | {100 * vs.mean:+.1f} [{100 * vs.low:+.1f}, {100 * vs.high:+.1f}] | "
            f"{100 * hit['verifier_only'].mean():.1f} | "
            f"{100 * statistics.binary_accuracy(v, sub.correct, sub.mask):.1f} | {dev or '—'} |"), first


def folds_table(runs: Sequence[Path], labels: Sequence[str] | None = None,
                sum_logits: Sequence[str] = (), bootstrap: int = 10_000) -> list[str]:
    """The lines comparing ``runs`` on the folds all of them finished (RuntimeError when there is none)."""
    from lever_jax.pipeline.pools import load_pool

    runs = [Path(r) for r in runs]
    labels = check_labels(runs, labels)
    cfg = read_run_config(runs[0])
    scores = {str(r): fold_scores(r, cfg.num_folds) for r in runs}
    arrays = problems_to_arrays(load_pool(cfg, runs[0]))
    folds = assign_folds(arrays.problem_ids, cfg.num_folds, cfg.fold_seed)
    done = sorted(set.intersection(*(set(s) for s in scores.values())))
    if not done:
        raise RuntimeError("no fold is finished in every run")
    rows = np.flatnonzero(np.isin(folds, done))
    sub = arrays.select(rows)
    ver: dict[str, np.ndarray] = {}
    dev: dict[str, str | None] = {}
    for label, run in zip(labels, runs):
        full = np.full(arrays.shape, -np.inf, np.float32)
        for fold, (s, _) in scores[str(run)].items():
            full[folds == fold] = s[:, :arrays.shape[1]]
        ver[label] = np.where(sub.mask, full[rows], -np.inf).astype(np.float32)
        dev[label] = _dev_metrics([scores[str(run)][f][1] for f in done])
    by_dir = dict(zip(map(str, runs), labels))
    for spec in sum_logits:
        name, fused = _fused(spec, ver, by_dir, sub.mask)
        ver[name] = fused
    lines = [f"folds {done} of {cfg.num_folds}: {len(rows)} problems", *FOLDS_HEADER]
    first = None
    for label, v in ver.items():
        line, first = _fold_row(label, sub, v, first, dev.get(label), bootstrap)
        lines.append(line)
    return lines
