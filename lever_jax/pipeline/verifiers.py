"""The verifier of a `lever-jax run` (``RunConfig.verifier``), cross-fitted by the one loop
(lever_jax.pipeline.crossfit.cross_fit):

- 'head': the frozen MiniLM encodes question / program / result once (lever_jax.pipeline.encoder_features,
  cached under DIR/features), optionally with the hand-crafted candidate features
  (lever_jax.pipeline.gsm8k_features), and a small head (lever_jax.pipeline.head) is trained per fold;
- 'finetune': the top MiniLM layers over cached lower layers (lever_jax.pipeline.finetune), optionally
  boosted over the features head (lever_jax.pipeline.features_offset);
- 'trained': the gin-configured model (MODEL, ``train.*`` and the groups of lever_jax.training.configs) trained per fold by lever_jax.training.runs.

Each fold directory lives under a directory named by the settings that change training, so a
changed config never resumes a stale fold.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import gin
import numpy as np

from lever_jax.data.errors import UserError
from lever_jax.pipeline import gsm8k_features
from lever_jax.pipeline.crossfit import FoldRows, FoldVerifier, GinVerifier, StepVerifier, cross_fit
from lever_jax.pipeline.encoder_features import FeatureConfig, pool_features
from lever_jax.pipeline.finetune import FinetuneConfig
from lever_jax.pipeline.head import HeadConfig, HeadTrainer
from lever_jax.pipeline.pools import run_datasets
from lever_jax.pipeline.run_keys import fold_key, folds_root, options_key, sha
from lever_jax.pipeline.training_data import TrainingView

if TYPE_CHECKING:
    from lever_jax.pipeline.run import RunConfig


@dataclasses.dataclass(frozen=True)
class Plan:
    """A verifier ready for the loop: what trains, where its folds live, which rows each fold uses."""

    verifier: FoldVerifier
    root: Path  # fold f lives in root/fold{f}
    rows_of: Callable[[int], FoldRows]
    fold_timings: bool = False  # metrics.json's timings_s lists each fold's seconds (the fine-tune's do)


def with_ablation(cfg: RunConfig, head: HeadConfig, finetune: FinetuneConfig) -> tuple[HeadConfig, FinetuneConfig]:
    """LEVER's input ablations on the features head and the fine-tune (the gin-trained verifier's
    are gin bindings, :func:`_trained_plan`)."""
    if cfg.ablation == "no_exec":
        return dataclasses.replace(head, use_result=False), dataclasses.replace(finetune, use_result=False)
    if cfg.ablation == "no_program":
        return dataclasses.replace(head, use_program=False), dataclasses.replace(finetune, use_program=False)
    return head, finetune


def check_gsm8k_features(cfg: RunConfig, head: HeadConfig, finetune: FinetuneConfig) -> None:
    """The hand-crafted candidate features (lever_jax.pipeline.gsm8k_features) exist for GSM8k only:
    asked for on another dataset, one UserError before anything is executed or encoded."""
    if cfg.verifier == "head" and head.use_candidate_features:
        setting, fix = "HeadConfig.use_candidate_features", "HeadConfig.use_candidate_features = False"
    elif cfg.verifier == "finetune" and (finetune.use_candidate_features or finetune.offset_features_head):
        setting, fix = "FinetuneConfig.use_candidate_features / offset_features_head", "both False"
    else:
        return
    others = sorted(run_datasets(cfg) - {"gsm8k"})
    if others:
        raise UserError(f"{setting}: the hand-crafted candidate features are GSM8k's and this run's problems are "
                        f"{', '.join(others)}; set {fix} for other datasets")


def cross_fitted_scores(cfg: RunConfig, view: TrainingView, features: FeatureConfig, head: HeadConfig,
                        finetune: FinetuneConfig, out: Path, timings: dict[str, float]) -> np.ndarray:
    """log P(yes) [view rows, view width] of the configured verifier, every row scored by the fold
    that held it out (-inf on padding); the time taken goes into ``timings``."""
    if cfg.verifier == "head":
        plan = _head_plan(cfg, view, features, head, out, timings)
    elif cfg.verifier == "finetune":
        plan = _finetune_plan(cfg, view, finetune, head, out, timings)
    else:
        plan = _trained_plan(cfg, view, out)
    t = time.time()
    fit = cross_fit(plan.verifier, cfg.num_folds, plan.rows_of, plan.root, view.arrays.mask)
    if plan.fold_timings:
        timings.update({f"fold{fold}_s": s for fold, s in enumerate(fit.fold_seconds)})
    timings["train_score_s"] = time.time() - t
    return fit.scores


def _head_plan(cfg: RunConfig, view: TrainingView, features: FeatureConfig, head: HeadConfig, out: Path,
               timings: dict[str, float]) -> Plan:
    """Frozen-encoder features (+ candidate features) and a small head per fold."""
    problems, arrays = view.problems, view.arrays
    t = time.time()
    feats = pool_features(problems, arrays.shape[1], features, cfg.features_dir or out / "features",
                          progress=cfg.progress)
    if head.use_candidate_features:  # GSM8k only (check_gsm8k_features)
        feats = dataclasses.replace(feats, candidate=gsm8k_features.pool_candidate_features(
            problems, arrays.shape[1]))
    timings["features_s"] = time.time() - t
    trainer = HeadTrainer(head, feats, arrays.correct, arrays.mask)
    train_key = sha({"features": dataclasses.asdict(features), "head": dataclasses.asdict(head)} | fold_key(cfg, view.gold_rows))
    return Plan(StepVerifier(trainer, cfg.progress), folds_root(cfg, out) / train_key,
                lambda fold: view.resolved_rows(fold, cfg.dev_fraction, head.seed))


def _finetune_plan(cfg: RunConfig, view: TrainingView, config: FinetuneConfig, head: HeadConfig, out: Path,
                   timings: dict[str, float]) -> Plan:
    """Cache the frozen layers (shared by every fold and run), then fine-tune per fold; with
    ``offset_features_head``, each fold is boosted over the features-only head ``head``. With the
    training-data options the fold directories go under FOLDS/options-<sha>/ (the fine-tune's own
    key does not name them)."""
    from lever_jax.pipeline import features_offset
    from lever_jax.pipeline.finetune import FinetuneTrainer
    from lever_jax.pipeline.finetune_states import pool_states

    problems, arrays = view.problems, view.arrays
    base = folds_root(cfg, out)
    if options_key(cfg, view.gold_rows):
        base = base / f"options-{sha(options_key(cfg, view.gold_rows))}"
    t = time.time()
    states = pool_states(problems, arrays.shape[1], config, Path(cfg.features_dir or out / "finetune_cache"),
                         progress=cfg.progress)
    need_cand = config.use_candidate_features or config.offset_features_head
    cand = gsm8k_features.pool_candidate_features(problems, arrays.shape[1]) if need_cand else None
    timings["frozen_layers_s"] = time.time() - t
    trainer = FinetuneTrainer(config, states, arrays.correct, arrays.mask,
                              cand if config.use_candidate_features else None)
    key_doc = {"finetune": config.training_key(), "folds": cfg.num_folds, "fold_seed": cfg.fold_seed,
               "max_problems": cfg.max_problems, "pool": cfg.pool, "execute": cfg.execute}
    verifier: FoldVerifier = StepVerifier(trainer, cfg.progress)
    if config.offset_features_head:
        key_doc["offset_head"] = dataclasses.asdict(head)
        verifier = features_offset.OffsetVerifier(
            StepVerifier(trainer, cfg.progress),
            features_offset.features_head_trainer(head, cand, arrays.correct, arrays.mask), config.offset_inner_folds)
    train_key = "ft-" + hashlib.sha256(json.dumps(key_doc, sort_keys=True).encode()).hexdigest()[:12]
    return Plan(verifier, base / train_key, lambda fold: view.resolved_rows(fold, cfg.dev_fraction, config.seed),
                fold_timings=True)


def _trained_plan(cfg: RunConfig, view: TrainingView, out: Path) -> Plan:
    """The gin-configured verifier trained end to end per fold; the dev slice of each fold is
    seeded by RunConfig.fold_seed."""
    if cfg.ablation in ("no_exec", "no_program"):  # LEVER's input ablations: the serialized input
        with gin.unlock_config():
            gin.bind_parameter("serialize_options.include_execution", cfg.ablation != "no_exec")
            gin.bind_parameter("serialize_options.include_program", cfg.ablation != "no_program")
    if view.gold_rows:  # the run's gold rows are LEVER's gold positives: train must not add them again
        with gin.unlock_config():
            gin.bind_parameter("TrainDataConfig.add_gold", False)
    # the bindings that shape training (model, train.*, serialize_options.*), not the run's own settings
    training_gin = [line for line in gin.config_str().splitlines()
                    if not any(name in line for name in ("RunConfig.", "FeatureConfig.", "HeadConfig."))]
    train_key = sha({"gin": training_gin} | fold_key(cfg, view.gold_rows))
    return Plan(GinVerifier(view.problems, view.arrays.shape[1], cfg.progress), folds_root(cfg, out) / train_key,
                lambda fold: view.resolved_rows(fold, cfg.dev_fraction, cfg.fold_seed))
