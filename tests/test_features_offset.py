"""lever_jax.pipeline.features_offset + FinetuneConfig.offset_features_head: no training problem's offset
comes from a head that saw it, the offset shifts the fine-tuned verifier's log-odds exactly, and the
boosted verifier runs (and resumes) through `lever-jax run`."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lever_jax.pipeline.features_offset import cached_fold_offsets, fold_offsets, log_odds
from lever_jax.pipeline.finetune import FinetuneTrainer

from tests.test_finetune import _random_params, _trainer

ROOT = Path(__file__).resolve().parents[1]


class _RecordingHead:
    """Stands in for HeadTrainer: head h scores every candidate log_sigmoid(h + 1); records its training rows."""

    def __init__(self, problems: int, width: int) -> None:
        self.config = type("C", (), {"seed": 333, "steps": 3})()
        self.mask = np.ones((problems, width), bool)
        self.trained: list[set[int]] = []

    def init_state(self):
        return (None, None)

    def train(self, state, rows, fold, start, stop):
        self.trained.append(set(int(r) for r in rows))
        return (len(self.trained) - 1, None)

    def score(self, head, rows):
        return np.full((len(rows), self.mask.shape[1]), -np.log1p(np.exp(-float(head + 1))), np.float32)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(12, 60), fold=st.integers(0, 4), inner=st.integers(2, 6))
def test_no_training_problem_is_offset_by_a_head_that_saw_it(n: int, fold: int, inner: int) -> None:
    rs = np.random.default_rng(n + fold)
    order = rs.permutation(n)
    rows = {"heldout": order[:n // 5], "dev": order[n // 5:n // 5 + 2], "train": order[n // 5 + 2:]}
    head = _RecordingHead(n, 3)
    out = fold_offsets(head, rows, fold, inner)
    assert len(head.trained) == inner + 1
    which = np.rint(out[:, 0]).astype(int) - 1  # the head that scored the row (-1: none)
    train = set(rows["train"].tolist())
    for r in rows["train"]:
        assert int(r) not in head.trained[which[r]] and head.trained[which[r]] < train
    for r in np.concatenate([rows["dev"], rows["heldout"]]):
        assert which[r] == 0 and head.trained[0] == train  # dev / held-out: the head trained on all of train
    assert set().union(*head.trained[1:]) == train  # every training problem trains some inner head


@given(st.floats(-15, 15))
def test_log_odds_inverts_log_sigmoid(x: float) -> None:
    np.testing.assert_allclose(log_odds(-np.log1p(np.exp(-x))), x, atol=1e-4)


def test_offsets_are_saved_once_and_reused(tmp_path) -> None:
    head = _RecordingHead(10, 2)
    rows = {"heldout": np.arange(2), "dev": np.arange(2, 3), "train": np.arange(3, 10)}
    first = cached_fold_offsets(tmp_path / "f" / "offsets.npy", head, rows, 0, 3)
    again = cached_fold_offsets(tmp_path / "f" / "offsets.npy", head, rows, 0, 3)
    assert len(head.trained) == 4 and np.array_equal(first, again)
    assert [p.name for p in (tmp_path / "f").iterdir()] == ["offsets.npy"]


@pytest.mark.slow
def test_offset_shifts_the_verifiers_log_odds_exactly() -> None:
    plain = _trainer()
    boosted = FinetuneTrainer(dataclasses.replace(plain.config, offset_features_head=True), plain.pool,
                              plain.labels, plain.mask)
    offset = np.random.default_rng(0).normal(0, 2, plain.labels.shape).astype(np.float32)
    boosted.set_offset(offset)
    params = _random_params(plain)
    rows = np.arange(plain.labels.shape[0])
    before, after = plain.score(params, rows), boosted.score(params, rows)
    m = plain.mask
    np.testing.assert_allclose(log_odds(after[m]), log_odds(before[m]) + offset[m], atol=2e-3)
    with pytest.raises(ValueError, match="offset shape"):
        boosted.set_offset(offset[:1])


def test_offset_options_do_not_rename_existing_fold_directories() -> None:
    from lever_jax.pipeline.finetune import FinetuneConfig

    off = FinetuneConfig()
    assert off.training_key() == {k: v for k, v in dataclasses.asdict(off).items()
                                  if k not in ("offset_features_head", "offset_inner_folds", "schema_in_question")}
    on = dataclasses.replace(off, offset_features_head=True)
    assert on.training_key()["offset_features_head"] is True


@pytest.mark.slow
@pytest.mark.usefixtures("minilm_weights")
def test_boosted_finetune_through_lever_jax_run_and_resume(tmp_path) -> None:
    """finetune_minilm.gin + offset_features_head on 12 problems: offsets per fold, metrics, and a second
    run resumes every fold (same scores)."""
    from lever_jax.cli import run as run_cmd

    args = ["--gin_file", str(ROOT / "gin_configs/runs/finetune_minilm.gin"), "--max_problems", "12",
            "--no-progress", "--out", str(tmp_path / "run")]
    for b in ("RunConfig.execute = False", "RunConfig.bootstrap = 100", "RunConfig.num_folds = 2",
              "FinetuneConfig.steps = 2", "FinetuneConfig.eval_every = 2", "FinetuneConfig.warmup_steps = 1",
              "FinetuneConfig.offset_features_head = True", "FinetuneConfig.offset_inner_folds = 2",
              "HeadConfig.steps = 5", "HeadConfig.warmup_steps = 1"):
        args += ["--gin_bindings", b]
    assert run_cmd.cli(args) == 0
    first = json.loads((tmp_path / "run" / "scores.json").read_text())
    offsets = sorted((tmp_path / "run" / "folds").glob("ft-*/fold*/offsets.npy"))
    assert len(offsets) == 2 and all(np.abs(np.load(p)).sum() > 0 for p in offsets)
    assert run_cmd.cli(args) == 0  # resumes: every fold's scores exist
    assert json.loads((tmp_path / "run" / "scores.json").read_text()) == first


def test_offset_on_a_non_gsm8k_pool_is_one_clear_error(tmp_path) -> None:
    import os
    import subprocess
    import sys

    args = ["run", "--gin_file", "gin_configs/runs/finetune_minilm.gin", "--max_problems", "4", "--no-progress",
            "--out", str(tmp_path / "run")]
    for b in ("RunConfig.pool = 'humaneval_codegen16b'", "RunConfig.execute = False",
              "FinetuneConfig.offset_features_head = True"):
        args += ["--gin_bindings", b]
    env = {k: v for k, v in os.environ.items() if k != "LEVER_JAX_DEBUG"}
    proc = subprocess.run([sys.executable, "-m", "lever_jax.cli", *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("lever-jax: error: ") and "offset_features_head" in last and "GSM8k" in last
