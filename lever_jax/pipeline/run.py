"""The end-to-end LEVER run (`lever-jax run`): execute -> k-fold verifier -> rerank -> report.

Steps, each resumable (a re-run redoes nothing that is already on disk):
1. execute the pool's samples in the sandbox (lever_jax.pipeline.pools, lever_jax.execution; cached by
   the execution cache, and the executed file under DIR/executed/ is reused as is), or read a
   bundled executed file;
2. assign problems to `num_folds` folds (seeded permutation; DIR/folds.json): the verifier that
   scores a problem never trained on it (cross-fitting);
3. train the configured verifier per fold (lever_jax.pipeline.verifiers: the frozen-MiniLM features
   head by default) in the one cross-fitting loop (lever_jax.pipeline.crossfit), checkpoints under
   DIR/folds/<settings>/fold{i}/ (the best by held-out dev loss is kept; a finished fold writes
   scores.npy and is never retrained; an interrupted one resumes from its latest step);
4. score every candidate and rerank with the jitted scorer: the method table, computed once
   (lever_jax.rerank.report / scoring);
5. write DIR/scores.json, DIR/metrics.json, DIR/per_problem.json, DIR/report.md and the PNG plots
   (lever_jax.rerank.run_report, lever_jax.rerank.plots).
"""
from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any, Optional, Sequence

import gin
import numpy as np

from lever_jax.data import paths
from lever_jax.data.arrays import CandidateArrays, problems_to_arrays
from lever_jax.data.jsonl import write_json
from lever_jax.data.schema import Problem
from lever_jax.pipeline import protocol as protocols
from lever_jax.pipeline import verifiers
from lever_jax.pipeline.config_checks import check_run_config
from lever_jax.pipeline.encoder_features import FeatureConfig
from lever_jax.pipeline.finetune import FinetuneConfig
from lever_jax.pipeline.head import HeadConfig
from lever_jax.pipeline.pools import POOLS, codet_per_problem, load_pool, training_view
from lever_jax.pipeline.run_keys import log, pool_name, train_name
from lever_jax.pipeline.training_data import TrainingView
from lever_jax.rerank import plots, pool_rows, report, run_report, statistics

# The verifiers' settings keep the gin module names they have always had (gin files and the
# operative config written to DIR/config.gin name them so).
gin.external_configurable(FeatureConfig, module="lever_jax.pipeline.encoder_features")
gin.external_configurable(HeadConfig, module="lever_jax.pipeline.head")
gin.external_configurable(FinetuneConfig, module="lever_jax.pipeline.finetune")

ABLATIONS = ("none", "no_exec", "no_program", "no_gen_prob", "no_agg")
VERIFIERS = ("head", "trained", "finetune")
Table = dict[str, report.MethodResult]  # method key -> row, display order


@gin.configurable
@dataclasses.dataclass(frozen=True)
class RunConfig:
    """Everything a run depends on (written to DIR/run_config.json)."""

    pool: str = "gsm8k_code002"
    input: Optional[str] = None  # your own samples or executed file (docs/data_format.md) instead of a pool
    max_problems: Optional[int] = None  # first N problems (quick runs)
    num_folds: int = 5
    fold_seed: int = 0
    dev_fraction: float = 0.1  # of each fold's training problems, for checkpoint selection
    ablation: str = "none"
    verifier: str = "head"  # 'head': frozen features + small head; 'trained': the gin model (train.*) per fold
    # (lever_jax.pipeline.crossfit.GinVerifier); 'finetune': top MiniLM layers fine-tuned on cached lower
    # layers (lever_jax.pipeline.finetune; run.finetune)
    execute: bool = True  # False: use the bundled executed file (recorded results)
    execution_workers: Optional[int] = None
    execution_timeout_s: Optional[float] = None  # None: the executor's own (GSM8k under LEVER's convention: 2 s; else 10 s)
    execution_cache_dir: Optional[str] = None  # default: $LEVER_JAX_CACHE_DIR or ~/.cache/lever_jax
    features_dir: Optional[str] = None  # default: DIR/features
    executed_dir: Optional[str] = None  # default: DIR/executed (the executed pool; shareable)
    folds_dir: Optional[str] = None  # default: DIR/folds (per-fold checkpoints + scores; shareable)
    bootstrap: int = 10_000
    progress: bool = True
    # Training-set size (the paper's figure): each fold's verifier trains on at most this many
    # problems, a seeded subset of its training rows that is nested across sizes (the 250 are among
    # the 500); the dev slice and the held-out problems (what is scored) stay the same.
    train_problems: Optional[int] = None
    # Transfer between LLMs: each fold's verifier trains (and selects its checkpoint) on this pool's
    # problems whose ids are in the training folds of the evaluated pool -- same folds by problem
    # id, so no evaluated problem is ever trained on -- and scores the evaluated pool's fold.
    train_pool: Optional[str] = None
    # 'replace' (transfer, above) or 'add': train on the evaluated pool's training problems AND this
    # pool's samples for them (more programs per question; dev slice and scored problems unchanged).
    train_pool_mode: str = "replace"
    # LEVER's train -> dev -> test protocol (lever_jax.pipeline.protocol): 'lever' trains one verifier
    # on the training split's pool (train_pool, or train_input: a samples / executed file), picks its
    # checkpoint on a dev_fraction slice of those problems and scores every evaluated problem.
    protocol: str = "crossfit"
    train_input: Optional[str] = None
    # LEVER's gold positives: each training problem's gold program (MBPP, Spider, WikiTQ; GSM8k and the
    # bundled WikiTQ-Binder / HumanEval pools have none the run uses), executed in the sandbox, trains as
    # a row of its own with that problem only; False: the paper's "- gold program" ablation.
    add_gold: bool = True


@gin.configurable
def run(out_dir: str | os.PathLike, config: RunConfig = gin.REQUIRED, features: FeatureConfig = gin.REQUIRED,
        head: HeadConfig = gin.REQUIRED, command: str = "", gin_text: str = "",
        finetune: FinetuneConfig = FinetuneConfig()) -> dict[str, Any]:
    """Run the whole pipeline into ``out_dir``; returns metrics.json's content."""
    t_start = time.time()
    check_run_config(config, POOLS, ABLATIONS, VERIFIERS)  # the whole config, before any work (UserError: exit 2)
    cfg = dataclasses.replace(config, num_folds=protocols.num_folds(config.protocol, config.num_folds))
    head, finetune = verifiers.with_ablation(cfg, head, finetune)
    verifiers.check_gsm8k_features(cfg, head, finetune)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    settings = {"run": dataclasses.asdict(cfg), "features": dataclasses.asdict(features),
                "head": dataclasses.asdict(head)}
    if cfg.verifier == "finetune":
        settings["finetune"] = dataclasses.asdict(finetune)
    write_json(out / "run_config.json", settings)
    timings: dict[str, float] = {}

    t = time.time()
    problems = sorted(load_pool(cfg, out), key=lambda p: p.problem_id)
    timings["execute_s"] = time.time() - t
    arrays = problems_to_arrays(problems)
    folds = protocols.evaluated_folds(cfg.protocol, arrays.problem_ids, cfg.num_folds, cfg.fold_seed)
    write_json(out / "folds.json", {"num_folds": cfg.num_folds, "seed": cfg.fold_seed,
                                    "folds": dict(zip(arrays.problem_ids, folds.tolist()))})
    log(f"{len(problems)} problems, {int(arrays.mask.sum())} distinct programs ({arrays.counts.sum()} samples), "
        f"{cfg.num_folds} folds")

    view = training_view(cfg, problems, arrays, folds, out)
    ver = verifiers.cross_fitted_scores(cfg, view, features, head, finetune, out, timings)
    ver = np.where(arrays.mask, ver[:len(problems), :arrays.shape[1]], -np.inf).astype(np.float32)
    doc = _write_outputs(cfg, problems, arrays, ver, view, settings, timings, t_start, command, gin_text, out)
    log(f"wrote {out}/report.md, metrics.json, scores.json, accuracy_vs_k.png, reliability.png "
        f"({timings['total_s']:.0f}s)")
    return doc


def _write_outputs(cfg: RunConfig, problems: Sequence[Problem], arrays: CandidateArrays, ver: np.ndarray,
                   view: TrainingView, settings: dict[str, Any], timings: dict[str, float], t_start: float,
                   command: str, gin_text: str, out: Path) -> dict[str, Any]:
    """Rerank with the cross-fitted scores (the method table, once) and write every output file;
    returns metrics.json's content."""
    t = time.time()
    use_gen_prob = cfg.ablation != "no_gen_prob"
    headline = "lever_no_agg" if cfg.ablation == "no_agg" else "lever"
    table, second = _method_rows(cfg, problems, arrays, ver, use_gen_prob)
    rel = statistics.reliability(ver, arrays.correct, arrays.mask)
    codet_values = codet_per_problem(cfg, problems, arrays)
    summary = run_report.verifier_summary(table, headline, arrays, ver, rel, codet_values, cfg.bootstrap)
    total = int(arrays.counts.sum(axis=1).max())
    ks = sorted({k for k in (1, 2, 4, 5, 8, 10, 14, 20, 50, 100, total) if k <= total})
    curves = report.accuracy_curves(arrays, ver, ks, 10 if cfg.max_problems else 20, use_gen_prob=use_gen_prob)
    timings["report_s"] = time.time() - t
    timings["total_s"] = time.time() - t_start
    doc = {
        "pool": pool_name(cfg), "ablation": cfg.ablation, "problems": len(problems),
        "distinct_programs": int(arrays.mask.sum()), "samples": int(arrays.counts.sum()),
        "methods": report.metrics_json(table), "verifier": summary,
        **({"methods_second_checker": {"checker": POOLS[cfg.pool]["second_checker"][0], **report.metrics_json(second)}}
           if second else {}),
        "accuracy_at_k": curves, "timings_s": timings, "versions": run_report.versions(), "command": command,
        "training": _training_doc(cfg, view),
    }
    write_json(out / "per_problem.json", run_report.per_problem_doc(arrays, table, codet_values))
    write_json(out / "metrics.json", doc)
    write_json(out / "scores.json", report.scores_json(arrays, table, ver))
    plots.accuracy_vs_k(curves, out / "accuracy_vs_k.png", title=f"{pool_name(cfg)}: accuracy vs k")
    plots.reliability_diagram(rel, out / "reliability.png", title=f"{pool_name(cfg)}: verifier P(yes)")
    paths.write_text_atomic(out / "config.gin", gin_text or gin.operative_config_str())
    run_report.write_report(out / "report.md", doc, table, protocols.scored_by(settings["run"], doc["training"]),
                            second=second)
    return doc


def _method_rows(cfg: RunConfig, problems: Sequence[Problem], arrays: CandidateArrays, ver: np.ndarray,
                 use_gen_prob: bool) -> tuple[Table, Optional[Table]]:
    """The method table (computed once; its per-problem values feed per_problem.json) with the
    pool's extra rows, and the same choices judged by the pool's second checker (if it has one)."""
    table = report.method_table(arrays, ver, n_resamples=cfg.bootstrap, use_gen_prob=use_gen_prob)
    if cfg.ablation == "no_agg":  # the headline LEVER row is the one without aggregation
        table = {k: v for k, v in table.items() if k not in ("lever", "lever_voting")}
    # lever_count_fallback (ml_ep is in the table)
    table.update(pool_rows.extra_rows(problems, arrays, ver, cfg.bootstrap))
    checker = POOLS[cfg.pool].get("second_checker")
    second = pool_rows.second_checker(problems, arrays, table, checker[1], cfg.bootstrap) if checker else None
    return table, second


def _training_doc(cfg: RunConfig, view: TrainingView) -> dict[str, Any]:
    """metrics.json's ``training`` block: the protocol, the training pool, the training problems' rows
    and the gold rows (RunConfig.add_gold) per fold (counted with dev seed 0, as ever, for the report;
    the folds train in crossfit.cross_fit)."""
    train = [view.resolved_rows(f, cfg.dev_fraction, 0)["train"] for f in range(cfg.num_folds)]
    return {"protocol": cfg.protocol, "train_pool": train_name(cfg), "train_pool_mode": cfg.train_pool_mode,
            "train_problems": cfg.train_problems, "add_gold": cfg.add_gold,
            "train_rows_per_fold": [int((rows < view.base_rows).sum()) for rows in train],
            "gold_rows_per_fold": [int((rows >= view.base_rows).sum()) for rows in train]}
