"""Packing (lever_jax.inputs.packing + the models' segment ids): a packed step computes LEVER's
loss and gradients exactly as the unpacked [P, K, L] step does; bucketing covers every sequence."""
from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lever_jax.inputs.packing import bucket, first_fit_decreasing, pack, packed_batch
from lever_jax.models.configs import encoder_config, t5_config
from lever_jax.models.layers import relative_position_buckets, relative_position_buckets_dynamic
from lever_jax.models.verifier import EncoderClassifierVerifier, EncoderDecoderVerifier
from tests.test_models_encoder import random_params


def _lever_block(seed: int, vocab: int, p: int = 3, k: int = 4, length: int = 20):
    """A [P, K, L] block like LEVER's feed: ragged candidates padded to the longest, a padding
    candidate and labels."""
    rs = np.random.RandomState(seed)
    tokens = np.zeros((p, k, length), np.int32)
    mask = np.ones((p, k), bool)
    mask[1, 3] = False  # padding candidate
    mask[2, 2:] = False
    for i in range(p):
        for j in range(k):
            if mask[i, j]:
                n = rs.randint(3, length + 1)
                tokens[i, j, :n] = rs.randint(2, vocab, n)
    labels = rs.randint(0, 2, (p, k)).astype(np.int32)
    return {"labels": labels, "candidate_mask": mask}, tokens


def _check_packed_equals_unpacked(model, tokens_key, params, batch, tokens, row_len):
    unpacked = dict(batch, **{tokens_key: tokens})
    packed, segments = packed_batch(tokens, batch["candidate_mask"], row_len, num_rows=4,
                                    num_sequences=12)
    packed.update(batch)
    assert packed["packed_tokens"].shape[0] < tokens.shape[0] * tokens.shape[1]
    loss_u = jax.jit(jax.value_and_grad(lambda p: model.loss_fn(p, unpacked, None)[0]))
    loss_p = jax.jit(jax.value_and_grad(lambda p: model.packed_loss_fn(p, packed, None, segments)[0]))
    (lu, gu), (lp, gp) = loss_u(params), loss_p(params)
    np.testing.assert_allclose(lp, lu, rtol=1e-5, atol=1e-6)
    for a, b in zip(jax.tree_util.tree_leaves(gp), jax.tree_util.tree_leaves(gu)):
        scale = float(np.abs(b).max())  # float32 summation order differs: tolerance relative to the leaf
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4 * scale + 1e-8)
    assert float(lu) > 0


@pytest.mark.slow
@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_encoder_packed_loss_and_grads_match_unpacked(pooling: str) -> None:
    cfg = encoder_config("tiny", num_layers=2, dropout_rate=0.0, pooling=pooling)
    model = EncoderClassifierVerifier(cfg)
    params = random_params(model, {"input_tokens": (1, 1, 8)})
    batch, tokens = _lever_block(0, cfg.vocab_size)
    _check_packed_equals_unpacked(model, "input_tokens", params, batch, tokens, row_len=48)


@pytest.mark.slow
def test_t5_packed_loss_and_grads_match_unpacked() -> None:
    cfg = t5_config("tiny", dropout_rate=0.0, vocab_size=512, no_token_id=5, yes_token_id=6)
    model = EncoderDecoderVerifier(cfg)
    params = random_params(model, {"encoder_input_tokens": (1, 1, 8)}, scale=0.3)
    batch, tokens = _lever_block(1, cfg.vocab_size)
    _check_packed_equals_unpacked(model, "encoder_input_tokens", params, batch, tokens, row_len=48)


@pytest.mark.slow
def test_t5_packed_fold_matches_unfolded() -> None:
    cfg = t5_config("tiny", dropout_rate=0.0, vocab_size=512, no_token_id=5, yes_token_id=6)
    batch, tokens = _lever_block(2, cfg.vocab_size)
    packed, segments = packed_batch(tokens, batch["candidate_mask"], 48)
    packed.update(batch)
    out = []
    for fold in (True, False):
        model = EncoderDecoderVerifier(dataclasses.replace(cfg, fold_single_query_attention=fold))
        params = random_params(model, {"encoder_input_tokens": (1, 1, 8)}, scale=0.3)
        out.append(np.asarray(model.packed_verifier_logits(params, packed, segments)))
    np.testing.assert_allclose(out[0], out[1], rtol=1e-4, atol=1e-5)


def test_dynamic_relpos_buckets_match_static() -> None:
    for bidirectional in (True, False):
        static = relative_position_buckets(40, 300, bidirectional, 32, 128)
        rel = np.arange(300)[None, :] - np.arange(40)[:, None]
        dyn = np.asarray(relative_position_buckets_dynamic(rel, bidirectional, 32, 128))
        np.testing.assert_array_equal(dyn, static)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 32), min_size=1, max_size=40), st.integers(32, 80))
def test_pack_places_every_sequence_once_without_overlap(lengths, row_len) -> None:
    seqs = [np.full(n, i + 1, np.int32) for i, n in enumerate(lengths)]
    packed = pack(seqs, row_len, row_multiple=2)
    assert packed.tokens.shape[0] % 2 == 0
    for i, n in enumerate(lengths):
        r, o = packed.row[i], packed.offset[i]
        np.testing.assert_array_equal(packed.tokens[r, o:o + n], seqs[i])
        assert (packed.segment_ids[r, o:o + n] == packed.segment[i]).all()
        np.testing.assert_array_equal(packed.positions[r, o:o + n], np.arange(n))
    assert (packed.segment_ids > 0).sum() == sum(lengths)
    # first-fit-decreasing never uses more rows than twice the lower bound (+1)
    assert int(packed.row.max()) + 1 <= 2 * -(-sum(lengths) // row_len) + 1


def test_first_fit_decreasing_rejects_too_long_and_caps_segments() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        first_fit_decreasing([10, 70], 64)
    row, _ = first_fit_decreasing([1] * 10, 64, max_segments=3)
    assert np.bincount(row).max() == 3


def test_bucket_covers_all_with_tight_widths() -> None:
    lengths = np.random.RandomState(0).randint(1, 200, 101)
    batches = bucket(lengths, 16, multiple=8)
    seen = np.concatenate([idx for idx, _ in batches])
    assert sorted(seen.tolist()) == list(range(101))
    for idx, width in batches:
        assert width % 8 == 0 and lengths[idx].max() <= width < lengths[idx].max() + 8
