"""The features-only head's log-odds as a fixed offset that the fine-tuned text verifier learns a residual over.

`FinetuneConfig.offset_features_head = True` (boosting; not LEVER's method, which has one model):
per fold, the hand-crafted-features head (lever_jax.pipeline.head with `use_text=False`) is trained
on the fold's training problems, and its log-odds are added to the text verifier's yes-logit, so
the text tower is trained on what the 20 features get wrong instead of competing with them under
one head (measured: text + features in one head falls below the features alone).

A training problem's offset never comes from a head that saw that problem: an in-sample offset is
over-confident, and the residual would learn too little from it. The fold's training problems are
split into `inner_folds` groups, each scored by a head trained on the other groups; the dev slice
and the held-out fold are scored by a head trained on all of the fold's training problems. Every
head trains `HeadConfig.steps` steps and keeps its last parameters (the dev slice selects the text
verifier's checkpoint, not the heads'). :class:`OffsetVerifier` gives every fold of the cross-fitting
loop (lever_jax.pipeline.crossfit) its offsets, saved once per fold as ``fold_dir/offsets.npy``.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from lever_jax.data import paths
from lever_jax.pipeline.crossfit import FoldResult, FoldRows, StepVerifier
from lever_jax.pipeline.encoder_features import PoolFeatures
from lever_jax.pipeline.head import HeadConfig, HeadTrainer


def log_odds(logp_yes: np.ndarray) -> np.ndarray:
    """log P(yes) -> log P(yes) - log P(no), float32 (P(yes) capped below 1 so it stays finite)."""
    s = np.minimum(np.asarray(logp_yes, np.float64), -1e-7)
    return (s - np.log(-np.expm1(s))).astype(np.float32)


def features_head_trainer(head: HeadConfig, candidate_features: np.ndarray, labels: np.ndarray,
                          mask: np.ndarray) -> HeadTrainer:
    """A HeadTrainer on the candidate features alone (the text inputs are empty placeholders)."""
    b, n = labels.shape
    empty = PoolFeatures(np.zeros((b, 1), np.float32), np.zeros((b, n, 1), np.float32),
                         np.zeros((b, n, 1), np.float32), candidate_features.astype(np.float32))
    return HeadTrainer(dataclasses.replace(head, use_text=False, use_candidate_features=True), empty, labels, mask)


def _fit_and_score(trainer: HeadTrainer, train: np.ndarray, score: np.ndarray, stream: int) -> np.ndarray:
    """Train a fresh head on `train` (batches seeded by `stream`), log-odds of every candidate of `score`."""
    state = trainer.train(trainer.init_state(), train, stream, 0, trainer.config.steps)
    return log_odds(trainer.score(state[0], score))


def fold_offsets(trainer: HeadTrainer, rows: Mapping[str, np.ndarray], fold: int, inner_folds: int) -> np.ndarray:
    """[B, N] float32 log-odds for the rows of `fold` (train cross-fitted, dev + held-out from the
    all-train head); 0 elsewhere and on padding."""
    if inner_folds < 2:
        raise ValueError(f"FinetuneConfig.offset_inner_folds must be >= 2, got {inner_folds}")
    train = np.asarray(rows["train"], np.int64)
    rest = np.concatenate([np.asarray(rows["dev"], np.int64), np.asarray(rows["heldout"], np.int64)])
    out = np.zeros(trainer.mask.shape, np.float32)
    out[rest] = _fit_and_score(trainer, train, rest, stream=fold)
    group = np.random.default_rng([trainer.config.seed, fold, inner_folds]).permutation(len(train)) % inner_folds
    for j in range(inner_folds):
        inside = train[group == j]
        out[inside] = _fit_and_score(trainer, train[group != j], inside, stream=1000 * (fold + 1) + j)
    return np.where(trainer.mask, out, 0.0).astype(np.float32)


def cached_fold_offsets(path: Path, trainer: HeadTrainer, rows: Mapping[str, np.ndarray], fold: int,
                        inner_folds: int) -> np.ndarray:
    """`fold_offsets`, saved once at `path` (atomically) so a resumed fold reuses them."""
    if path.exists():
        return np.load(path)
    offsets = fold_offsets(trainer, rows, fold, inner_folds)
    with paths.staged(path) as tmp, open(tmp, "wb") as handle:
        np.save(handle, offsets)
    return offsets


@dataclasses.dataclass(frozen=True)
class OffsetVerifier:
    """FoldVerifier (lever_jax.pipeline.crossfit) of the boosted fine-tune: before a fold trains,
    its features-head offsets (``fold_dir/offsets.npy``, computed once) are set on the trainer."""

    inner: StepVerifier  # over a FinetuneTrainer (``set_offset``)
    offset_head: HeadTrainer  # the features-only head (:func:`features_head_trainer`)
    inner_folds: int

    def fit_and_score(self, fold: int, rows: FoldRows, fold_dir: Path) -> FoldResult:
        trainer: Any = self.inner.trainer
        trainer.set_offset(cached_fold_offsets(fold_dir / "offsets.npy", self.offset_head, rows, fold,
                                               self.inner_folds))
        return self.inner.fit_and_score(fold, rows, fold_dir)
