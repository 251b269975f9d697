"""lever_jax.pipeline.crossfit: the one fold loop. A killed run resumes without retraining a finished
fold (and an interrupted fold continues from its checkpoint, to the uninterrupted scores), and every
FoldVerifier of `lever-jax run` (features head, fine-tune, boosted fine-tune, gin-trained model)
satisfies the protocol through that loop."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lever_jax.data.folds import assign_folds, fold_rows
from lever_jax.pipeline.crossfit import (CrossFit, FoldResult, FoldVerifier, GinVerifier, StepTrainer, StepVerifier,
                                         cross_fit)
from lever_jax.pipeline.encoder_features import PoolFeatures
from lever_jax.pipeline.head import HeadConfig, HeadTrainer

ROOT = Path(__file__).resolve().parents[1]
NUM_FOLDS = 2


class _Kill(Exception):
    """Stands in for the process being killed."""


class _Recording:
    """A FoldVerifier proxy that records which folds it was asked to train."""

    def __init__(self, inner: FoldVerifier) -> None:
        self.inner = inner
        self.folds: list[int] = []

    def fit_and_score(self, fold: int, rows, fold_dir: Path) -> FoldResult:
        self.folds.append(fold)
        return self.inner.fit_and_score(fold, rows, fold_dir)


class _DyingTrainer:
    """A StepTrainer proxy that records each training call's (fold, start step) and dies when asked
    to train fold ``fold`` from step ``at``."""

    def __init__(self, inner: HeadTrainer, fold: int = -1, at: int = -1) -> None:
        self.inner, self.fold, self.at = inner, fold, at
        self.starts: list[tuple[int, int]] = []

    @property
    def config(self) -> HeadConfig:
        return self.inner.config

    def init_state(self):
        return self.inner.init_state()

    def train(self, state, rows, fold, start, stop, on_step=None):
        self.starts.append((fold, start))
        if (fold, start) == (self.fold, self.at):
            raise _Kill()
        return self.inner.train(state, rows, fold, start, stop, on_step)

    def eval_metrics(self, params, rows):
        return self.inner.eval_metrics(params, rows)

    def score(self, params, rows):
        return self.inner.score(params, rows)


def _head_trainer(problems: int = 12, width: int = 4, steps: int = 6) -> HeadTrainer:
    rng = np.random.default_rng(0)
    d = 8
    feats = PoolFeatures(rng.normal(size=(problems, d)).astype(np.float32),
                         rng.normal(size=(problems, width, d)).astype(np.float32),
                         rng.normal(size=(problems, width, d)).astype(np.float32))
    mask = np.ones((problems, width), bool)
    mask[::3, width - 1] = False  # some problems have fewer candidates
    labels = rng.random((problems, width)) < 0.4
    config = HeadConfig(hidden=16, dropout=0.1, steps=steps, eval_every=2, problems_per_step=4,
                        candidates_per_step=width, warmup_steps=1)
    return HeadTrainer(config, feats, labels, mask)


def _rows_of(problems: int, seed: int = 0):
    folds = assign_folds([f"p{i:02d}" for i in range(problems)], NUM_FOLDS, 0)
    return lambda fold: fold_rows(folds, fold, 0.2, seed)


def _check_loop_output(fit: CrossFit, mask: np.ndarray, root: Path, problems: int) -> None:
    """Every real candidate scored once (log P(yes) <= 0), padding -inf; each fold's files written."""
    assert fit.scores.shape == mask.shape and fit.scores.dtype == np.float32
    assert np.isfinite(fit.scores[mask]).all() and (fit.scores[mask] <= 0).all()
    assert np.isneginf(fit.scores[~mask]).all()
    assert len(fit.fold_seconds) == NUM_FOLDS
    held = []
    for fold in range(NUM_FOLDS):
        info = json.loads((root / f"fold{fold}" / "fold.json").read_text())
        assert info["fold"] == fold and info["train"] + info["dev"] + info["held_out"] == problems
        scores = np.load(root / f"fold{fold}" / "scores.npy")
        assert scores.shape == (info["held_out"], mask.shape[1])
        held.append(info["held_out"])
    assert sum(held) == problems


@pytest.mark.slow
def test_a_killed_run_resumes_without_retraining_a_finished_fold(tmp_path) -> None:
    trainer = _head_trainer()
    rows_of = _rows_of(12)
    whole = cross_fit(StepVerifier(trainer, progress=False), NUM_FOLDS, rows_of, tmp_path / "whole", trainer.mask)

    dying = _DyingTrainer(trainer, fold=1, at=2)  # fold 0 finishes; fold 1 dies after its step-2 checkpoint
    with pytest.raises(_Kill):
        cross_fit(StepVerifier(dying, progress=False), NUM_FOLDS, rows_of, tmp_path / "killed", trainer.mask)
    assert (tmp_path / "killed" / "fold0" / "scores.npy").exists()
    assert not (tmp_path / "killed" / "fold1" / "scores.npy").exists()

    again = _DyingTrainer(trainer)
    recording = _Recording(StepVerifier(again, progress=False))
    resumed = cross_fit(recording, NUM_FOLDS, rows_of, tmp_path / "killed", trainer.mask)
    assert recording.folds == [1]  # the finished fold is read back, never retrained
    assert again.starts == [(1, 2), (1, 4)]  # the interrupted fold continues from its latest checkpoint
    np.testing.assert_allclose(resumed.scores, whole.scores, rtol=1e-6, atol=1e-6)
    for fold in range(NUM_FOLDS):
        a, b = (json.loads((tmp_path / d / f"fold{fold}" / "fold.json").read_text()) for d in ("whole", "killed"))
        assert a["best_step"] == b["best_step"] and a["dev_loss"] == pytest.approx(b["dev_loss"], rel=1e-6)

    recording = _Recording(StepVerifier(trainer, progress=False))
    third = cross_fit(recording, NUM_FOLDS, rows_of, tmp_path / "killed", trainer.mask)
    assert recording.folds == [] and np.array_equal(third.scores, resumed.scores)


def test_a_verifier_that_scores_the_wrong_rows_is_refused(tmp_path) -> None:
    class _Short:
        def fit_and_score(self, fold, rows, fold_dir):
            return FoldResult(np.zeros((len(rows["heldout"]) + 1, 3), np.float32), {})

    with pytest.raises(ValueError, match="fold 0: the verifier scored"):
        cross_fit(_Short(), NUM_FOLDS, _rows_of(6), tmp_path, np.ones((6, 3), bool))
    assert not (tmp_path / "fold0" / "scores.npy").exists()


def _finetune_verifier(offset: bool) -> tuple[FoldVerifier, np.ndarray, int]:
    import dataclasses

    from lever_jax.pipeline import features_offset
    from lever_jax.pipeline.finetune import FinetuneConfig, FinetuneTrainer
    from tests.test_finetune import _pool

    problems = 12
    pool, labels, mask = _pool(seed=3, problems=problems, width=5)
    config = FinetuneConfig(frozen_layers=5, row_len=128, max_candidates_per_row=6, max_groups_per_row=3,
                            dropout=0.0, steps=2, eval_every=1, warmup_steps=1, offset_features_head=offset)
    trainer = FinetuneTrainer(config, pool, labels, mask)
    assert isinstance(trainer, StepTrainer)
    verifier: FoldVerifier = StepVerifier(trainer, progress=False)
    if offset:
        cand = np.random.default_rng(1).normal(size=(*labels.shape, 20)).astype(np.float32)
        head = dataclasses.replace(HeadConfig(), hidden=8, steps=3, problems_per_step=4, warmup_steps=1)
        verifier = features_offset.OffsetVerifier(
            verifier, features_offset.features_head_trainer(head, cand, labels, mask), inner_folds=2)
    return verifier, mask, problems


def _gin_verifier() -> tuple[FoldVerifier, np.ndarray, int]:
    from lever_jax.data.arrays import problems_to_arrays
    from lever_jax.data.bundled import bundled_path
    from lever_jax.data.jsonl import read_problems
    from lever_jax.training.launch import parse_gin_files

    problems = []
    for p in read_problems(bundled_path("gsm8k_pool", "code002.executed.jsonl.gz"), require_execution=True):
        problems.append(p)
        if len(problems) == 8:
            break
    problems.sort(key=lambda p: p.problem_id)
    arrays = problems_to_arrays(problems)
    parse_gin_files([str(ROOT / "gin_configs/runs/demo_t5.gin")],
                    ["TRAIN_STEPS = 2", "EVAL_PERIOD = 2", "CHECKPOINT_PERIOD = 2", "BATCH_SIZE = 2",
                     "TASK_FEATURE_LENGTHS = {'inputs': 32, 'targets': 1}"])
    return GinVerifier(problems, arrays.shape[1], progress=False), arrays.mask, len(problems)


@pytest.mark.parametrize("kind", [
    "head", pytest.param("finetune", marks=pytest.mark.slow), pytest.param("finetune_offset", marks=pytest.mark.slow),
    pytest.param("trained", marks=pytest.mark.slow)])
def test_every_fold_verifier_satisfies_the_protocol_through_the_loop(kind: str, tmp_path, monkeypatch,
                                                                     request) -> None:
    import gin

    if kind.startswith("finetune"):
        request.getfixturevalue("minilm_weights")  # the fine-tune's top layers start from MiniLM's

    monkeypatch.chdir(ROOT)  # gin files include each other by repository-relative paths
    try:
        if kind == "head":
            trainer = _head_trainer(steps=2)
            verifier, mask, problems = StepVerifier(trainer, progress=False), trainer.mask, 12
            assert isinstance(trainer, StepTrainer)
        elif kind == "trained":
            verifier, mask, problems = _gin_verifier()
        else:
            verifier, mask, problems = _finetune_verifier(offset=kind == "finetune_offset")
        assert isinstance(verifier, FoldVerifier)
        recording = _Recording(verifier)
        fit = cross_fit(recording, NUM_FOLDS, _rows_of(problems), tmp_path, mask)
        assert recording.folds == list(range(NUM_FOLDS))
        _check_loop_output(fit, mask, tmp_path, problems)
        if kind == "finetune_offset":
            assert all((tmp_path / f"fold{f}" / "offsets.npy").exists() for f in range(NUM_FOLDS))
        if kind == "trained":
            assert (tmp_path / "fold0" / "eval" / "heldout.scores.json").exists()
        recording = _Recording(verifier)
        again = cross_fit(recording, NUM_FOLDS, _rows_of(problems), tmp_path, mask)
        assert recording.folds == [] and np.array_equal(again.scores, fit.scores)
    finally:
        gin.clear_config()


def test_folds_without_problems_are_skipped_and_a_fold_without_training_problems_is_one_line(tmp_path) -> None:
    """Fewer problems than folds: the empty folds train nothing. A fold that scores problems with no
    problem left to train on (one problem; two, whose other one is the dev slice) is a UserError
    before any fold trains (it used to be an IndexError inside the trainer)."""
    from lever_jax.data.errors import UserError

    class _Constant:
        def __init__(self) -> None:
            self.folds: list[int] = []

        def fit_and_score(self, fold, rows, fold_dir):
            self.folds.append(fold)
            return FoldResult(np.full((len(rows["heldout"]), 2), -0.5, np.float32), {})

    def rows_of(problems: int, num_folds: int, dev_fraction: float):
        folds = assign_folds([f"p{i}" for i in range(problems)], num_folds, 0)
        return lambda fold: fold_rows(folds, fold, dev_fraction, 0)

    verifier = _Constant()
    fit = cross_fit(verifier, 5, rows_of(3, 5, 0.2), tmp_path / "three", np.ones((3, 2), bool))
    assert len(verifier.folds) == 3 and len(fit.fold_seconds) == 5 and (fit.scores == -0.5).all()
    assert sorted(p.name for p in (tmp_path / "three").iterdir()) == [f"fold{f}" for f in sorted(verifier.folds)]
    for problems, dev_fraction, why in ((1, 0.2, "there is no other problem"),
                                        (2, 0.2, r"its 1 other problem\(s\) all pick its checkpoint")):
        verifier = _Constant()
        with pytest.raises(UserError, match=rf"cross-fitting: fold \d has no problem to train on "
                                            rf"\({problems} problem\(s\) in 5 folds; {why}"):
            cross_fit(verifier, 5, rows_of(problems, 5, dev_fraction), tmp_path / "few", np.ones((problems, 2), bool))
        assert verifier.folds == [] and not (tmp_path / "few").exists()
    fit = cross_fit(_Constant(), 5, rows_of(2, 5, 0.0), tmp_path / "two", np.ones((2, 2), bool))
    assert (fit.scores == -0.5).all()  # no dev slice: each trains on the other
