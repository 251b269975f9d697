"""`lever-jax train`'s feeds (TrainDataConfig.batching = 'packed' | 'bucketed' | 'padded'): through the
trainer's real step, packed and bucketed batches give LEVER's loss and gradients exactly as the
padded [P, K, L] block does (one step, with and without gradient accumulation, T5 and encoder),
a short run gives the same losses, scoring does not depend on the feed, packed and bucketed
batches shard over the mesh's 'data' axis (2 fake devices, subprocess), and the gin switch
round-trips. 'bucketed' with gradient accumulation runs each micro-batch at its own width."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import gin
import jax
import numpy as np
import pytest

from lever_jax.data.errors import UserError
from lever_jax.inputs.batching import ProblemExamples
from lever_jax.inputs.feeds import TrainBatcher
from lever_jax.inputs.packing import (BATCHING_MODES, bucketed_train_batch, packed_train_batch,
                                     sequence_lengths)
from lever_jax.inputs.tokenizers import get_vocabulary
from lever_jax.models.configs import encoder_config, t5_config
from lever_jax.models.verifier import EncoderClassifierVerifier, EncoderDecoderVerifier
from lever_jax.training import partitioning
from lever_jax.training.trainer import OptimizerConfig, Trainer
from tests.micro_train import with_devices

ROOT = Path(__file__).resolve().parents[1]
LENGTH = 48


def _problems(seed: int = 0, n: int = 6) -> list[ProblemExamples]:
    """Ragged problems: 1-7 candidates of 4-LENGTH byte ids each, mixed labels."""
    rs = np.random.RandomState(seed)
    out = []
    for i in range(n):
        k = int(rs.randint(1, 8))
        toks = [[int(t) for t in rs.randint(3, 259, int(rs.randint(4, LENGTH + 1)))] for _ in range(k)]
        labels = rs.randint(0, 2, k).astype(np.int32)
        out.append(ProblemExamples(i, toks, labels, np.zeros(k, np.float32), np.arange(k, dtype=np.int32),
                                   np.full(k, 5, np.int32)))
    return out


def _model(kind: str):
    tok = get_vocabulary("byte")
    if kind == "t5":
        return EncoderDecoderVerifier(t5_config("tiny", dropout_rate=0.0, vocab_size=tok.vocab_size,
                                                no_token_id=tok.no_id, yes_token_id=tok.yes_id))
    return EncoderClassifierVerifier(encoder_config("tiny", num_layers=2, dropout_rate=0.0,
                                                    vocab_size=tok.vocab_size, pad_token_id=tok.pad_id))


def _setup(kind: str, batching: str, accum: int, problems_per_batch: int = 4, steps: int = 10):
    model = _model(kind)
    mesh, rules = partitioning.make_mesh(), partitioning.logical_axis_rules("data")
    trainer = Trainer(model, OptimizerConfig(learning_rate=1e-3, warmup_steps=0), steps, mesh, rules,
                      LENGTH, accum_steps=accum, dropout=False, batching=batching)
    batcher = TrainBatcher(_problems(), get_vocabulary("byte"), LENGTH, problems_per_batch, 5, seed=1,
                           tokens_key=model.tokens_key, batching=batching, accum_steps=accum,
                           bucket_multiple=8)
    return trainer, batcher


def _assert_trees_close(got, want) -> None:
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        a, b = np.asarray(a), np.asarray(b)
        scale = float(np.abs(b).max())  # float32 summation order differs: relative to the leaf
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4 * scale + 1e-9)


# Both models, both step paths (accum 1: one micro-batch; accum 2: the scan, or a call per micro-batch
# for 'bucketed'), both alternative feeds. STEP: a batch whose two micro-batches differ in width.
STEP = 3
@pytest.mark.slow
@pytest.mark.parametrize("kind,accum", [("t5", 2), ("encoder", 1)])
def test_train_step_loss_and_grads_match_padded(kind: str, accum: int) -> None:
    results = {}
    for batching in BATCHING_MODES:
        trainer, batcher = _setup(kind, batching, accum)
        state = trainer.init_state(0)
        host = batcher.host_batch(STEP)
        if batching == "packed":  # really packed: fewer rows than candidates, and rows reused
            assert host["packed_tokens"].shape[0] * host["packed_tokens"].shape[1] < host["candidate_mask"].sum()
        if batching == "bucketed" and accum > 1:  # each micro-batch cut to its own width
            assert len(set(host["micro_widths"])) == accum and max(host["micro_widths"]) <= LENGTH
        elif batching == "bucketed":
            assert host[trainer.model.tokens_key].shape[-1] <= LENGTH
        results[batching] = jax.device_get(trainer.loss_and_grads(state, host))
    (want_m, want_g) = results["padded"]
    assert float(want_m["loss"]) > 0 and float(want_m["num_candidates"]) > 4
    for batching in ("packed", "bucketed"):
        got_m, got_g = results[batching]
        for key in ("num_problems", "num_candidates", "num_positives"):
            assert float(got_m[key]) == float(want_m[key])
        np.testing.assert_allclose(got_m["loss"], want_m["loss"], rtol=1e-5, atol=1e-6)
        _assert_trees_close(got_g, want_g)


def test_packed_batch_is_smaller_than_padded() -> None:
    _, batcher = _setup("t5", "packed", 1)
    host = batcher.host_batch(0)
    real = int((host["segment_ids"] > 0).sum())
    padded_slots = int(host["candidate_mask"].sum()) * LENGTH
    assert host["packed_tokens"].size < padded_slots and real == int((host["packed_tokens"] > 0).sum())


@pytest.mark.slow
@pytest.mark.parametrize("batching,accum", [("packed", 1), ("bucketed", 2)])
def test_short_run_matches_padded(batching: str, accum: int) -> None:
    kind = "encoder"  # T5's feeds run in test_packed_and_bucketed_batches_shard_on_data_axis
    losses = {}
    for batching in ("padded", batching):
        trainer, batcher = _setup(kind, batching, accum, problems_per_batch=2, steps=6)
        state = trainer.init_state(3)
        run = []
        for step in range(6):
            state, metrics = trainer.train_step(state, batcher.host_batch(step))
            run.append(float(metrics["loss"]))
        losses[batching] = run
    assert len(set(np.round(losses["padded"], 4))) > 1  # it trains: the losses move
    np.testing.assert_allclose(losses[batching], losses["padded"], rtol=2e-4, atol=2e-5)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["t5", "encoder"])
def test_bucketed_scoring_matches_padded(kind: str) -> None:
    scores = {}
    tokens = np.zeros((11, LENGTH), np.int32)
    rs = np.random.RandomState(4)
    for i in range(len(tokens)):
        n = int(rs.randint(3, LENGTH + 1))
        tokens[i, :n] = rs.randint(3, 259, n)
    for batching in ("padded", "packed"):
        trainer, _ = _setup(kind, batching, 1)
        trainer.score_width_multiple = 16  # chunks of widths 48, 32, 16 (not all the full 48)
        scores[batching] = trainer.score_tokens(trainer.init_state(0).params, tokens, 4)
    np.testing.assert_allclose(scores["packed"], scores["padded"], rtol=1e-5, atol=1e-5)


def _ragged_block(seed: int, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A global [8, 3, length] block of ragged candidates (about 1 in 5 masked off) and labels."""
    rs = np.random.RandomState(seed)
    tokens = np.zeros((8, 3, length), np.int32)
    mask = rs.rand(8, 3) > 0.2
    for idx in zip(*np.nonzero(mask)):
        tokens[idx][: rs.randint(2, length + 1)] = 7
    return tokens, mask, rs.randint(0, 2, (8, 3)).astype(np.int32)


def test_packed_train_batch_hosts_agree_on_shapes_and_indices() -> None:
    tokens, mask, labels = _ragged_block(0, 20)
    parts = [packed_train_batch(tokens, mask, labels, 20, accum_steps=2, hosts=2, host=h) for h in range(2)]
    assert parts[0]["packed_tokens"].shape == parts[1]["packed_tokens"].shape
    rows = parts[0]["packed_tokens"].shape[1]
    glob_labels = np.concatenate([p["labels"] for p in parts], axis=1)  # [a, Pm, K]
    for m in range(2):  # micro-batch m holds global problems m, m+2, ... (the padded split)
        np.testing.assert_array_equal(glob_labels[m], labels[m::2])
        seg = np.concatenate([p["segment_ids"][m] for p in parts])
        for p in parts:
            for row, s, slot in zip(p["sequence_row"][m], p["sequence_segment"][m], p["sequence_slot"][m]):
                if slot == 4 * 3:
                    continue  # padding sequence
                prob, cand = divmod(int(slot), 3)
                want = sequence_lengths(tokens[m::2][prob, cand], 0)
                assert (seg[row] == s).sum() == want and 0 <= row < 2 * rows


def test_bucketed_train_batch_splits_like_the_padded_step_with_global_widths() -> None:
    tokens, mask, labels = _ragged_block(1, 40)
    tokens[5, 0, :] = 7  # a candidate of the full length: its micro-batch (5 % 2 = 1) is 40 wide
    mask[5, 0] = True
    parts = [bucketed_train_batch(tokens, mask, labels, "t", accum_steps=2, hosts=2, host=h, multiple=8)
             for h in range(2)]
    assert parts[0]["micro_widths"] == parts[1]["micro_widths"]  # every host compiles the same programs
    lengths = np.where(mask, sequence_lengths(tokens, 0), 0)
    want = tuple(min(40, -(-int(lengths[m::2].max()) // 8) * 8) for m in range(2))
    assert parts[0]["micro_widths"] == want and want[1] == 40 and want[0] < 40
    for m in range(2):  # micro-batch m holds global problems m, m+2, ... (the padded split)
        glob = np.concatenate([p["t"][m] for p in parts])
        np.testing.assert_array_equal(glob, tokens[m::2][..., :glob.shape[-1]])
        np.testing.assert_array_equal(np.concatenate([p["labels"][m] for p in parts]), labels[m::2])
        np.testing.assert_array_equal(np.concatenate([p["candidate_mask"][m] for p in parts]), mask[m::2])
        assert not tokens[m::2][..., want[m]:].any()  # cutting to the width drops padding only


def test_gin_switch_round_trips(tmp_path) -> None:
    from lever_jax.training.configs import check_batching
    from lever_jax.training.gin_checks import parse_gin_config

    files = [str(ROOT / f"gin_configs/{f}") for f in ("runs/train.gin", "models/t5_tiny.gin", "tasks/gsm8k_pool.gin")]
    base = [f"MODEL_DIR = '{tmp_path}'"]
    try:
        for bindings, want in ((base, "packed"), (base + ["TrainDataConfig.batching = 'bucketed'"], "bucketed"),
                               (base + ["TrainDataConfig.batching = 'padded'"], "padded")):
            gin.clear_config()
            parse_gin_config(files, bindings, allow_unused=("EVAL_FILE", "EVAL_MIXTURE_OR_TASK_NAME"))
            assert gin.query_parameter("TrainDataConfig.batching") == want
            text = gin.config_str()  # round trip: gin's own serialization parses back to the same value
            gin.clear_config()
            gin.parse_config(text)
            assert gin.query_parameter("TrainDataConfig.batching") == want
    finally:
        gin.clear_config()
    assert "EvalDataConfig.batching = 'packed'" in (ROOT / "gin_configs/runs/eval.gin").read_text()
    with pytest.raises(UserError, match="batching must be one of"):
        check_batching("ragged", "TrainDataConfig")  # what train() / evaluate() call before building the Trainer
    with pytest.raises(ValueError, match="batching must be one of"):
        _setup("encoder", "ragged", 1)


SHARDED = r"""
import json, jax, numpy as np
from tests.test_trainer_packing import STEP, _setup
assert jax.device_count() == 2
out = {}
for batching in ("padded", "packed", "bucketed"):
    trainer, batcher = _setup("t5", batching, 2)
    state = trainer.init_state(0)
    host = batcher.host_batch(STEP)
    batch = trainer.micro_batch(host, 0) if batching == "bucketed" else trainer.device_batch(host)
    key = "packed_tokens" if batching == "packed" else "encoder_input_tokens"
    shards = {tuple(s.data.shape) for s in batch[key].addressable_shards}
    metrics, grads = jax.device_get(trainer.loss_and_grads(state, host))
    state, _ = trainer.train_step(state, host)
    out[batching] = {"loss": float(metrics["loss"]), "shards": sorted(shards), "full": list(batch[key].shape),
                     "grad": [np.asarray(g).ravel()[:50].tolist() for g in jax.tree.leaves(grads)]}
print("RESULT" + json.dumps(out))
"""


@pytest.mark.slow
def test_packed_and_bucketed_batches_shard_on_data_axis() -> None:
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(ROOT))
    env["XLA_FLAGS"] = with_devices(2, env)
    proc = subprocess.run([sys.executable, "-c", SHARDED], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.split("RESULT", 1)[1])
    packed = out["packed"]
    assert len(packed["shards"]) == 1 and packed["shards"][0][1] * 2 == packed["full"][1]  # rows split in 2
    bucketed = out["bucketed"]  # micro-batch 0: its problems split in 2, cut to its own width
    assert len(bucketed["shards"]) == 1 and bucketed["shards"][0][0] * 2 == bucketed["full"][0]
    assert bucketed["full"][-1] < LENGTH
    for feed in (packed, bucketed):
        np.testing.assert_allclose(feed["loss"], out["padded"]["loss"], rtol=1e-5)
        for a, b in zip(feed["grad"], out["padded"]["grad"]):
            np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4 * (np.abs(b).max() + 1e-9))
