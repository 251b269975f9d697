"""T5 network, LEVER verifier head, loss properties, presets and gin model files."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn
from hypothesis import given, settings, strategies as st

from lever_jax.models import configs
from lever_jax.models.configs import LossConfig, t5_config
from lever_jax.models.layers import relative_position_buckets
from lever_jax.models.t5 import T5Transformer
from lever_jax.models.base import VocabularyIds
from lever_jax.models.verifier import EncoderDecoderVerifier, verifier_loss

ROOT = Path(__file__).resolve().parents[1]
# One layer per stack keeps compiles short; the HF parity tests cover deeper stacks.
CFG = t5_config("tiny", vocab_size=512, no_token_id=4, yes_token_id=5, dropout_rate=0.0,
                num_encoder_layers=1, num_decoder_layers=1)


def random_params(model, shapes: dict, seed: int = 0, scale: float = 0.05) -> dict:
    """Deterministic numpy parameters of the right tree (no XLA compile of the initialisers)."""
    abstract = jax.eval_shape(lambda r: model.get_initial_variables(r, shapes),
                              jax.random.PRNGKey(0))
    rs = np.random.RandomState(seed)

    def fill(path, leaf):
        name = jax.tree_util.keystr(path)
        if "scale" in name:
            return jnp.ones(leaf.shape, jnp.float32)
        if "embedding" in name:  # T5 embeddings are ~N(0, 1)
            return jnp.asarray(rs.normal(0, 1.0, leaf.shape).astype(np.float32))
        return jnp.asarray(rs.normal(0, scale, leaf.shape).astype(np.float32))

    return jax.tree_util.tree_map_with_path(fill, nn.unbox(abstract)["params"])


@pytest.fixture(scope="module")
def model() -> EncoderDecoderVerifier:
    return EncoderDecoderVerifier(CFG)


@pytest.fixture(scope="module")
def params(model) -> dict:
    return random_params(model, {"encoder_input_tokens": (1, 1, 8)})


@pytest.fixture(scope="module")
def score(model):
    return jax.jit(model.score_batch)


def _tokens(seed: int, shape=(2, 3, 12)) -> np.ndarray:
    return np.random.RandomState(seed).randint(1, CFG.vocab_size, shape).astype(np.int32)


def test_initial_variables_are_logically_named_and_deterministic() -> None:
    cfg = dataclasses.replace(CFG, num_encoder_layers=1, num_decoder_layers=1)
    model = EncoderDecoderVerifier(cfg)
    init = jax.jit(lambda r: model.get_initial_variables(r, {"encoder_input_tokens": (2, 3, 8)}))
    v1, v2 = init(jax.random.PRNGKey(0)), init(jax.random.PRNGKey(0))
    leaves = jax.tree_util.tree_leaves(v1, is_leaf=lambda x: isinstance(x, nn.LogicallyPartitioned))
    assert leaves and all(isinstance(x, nn.LogicallyPartitioned) for x in leaves)
    names = {n for x in leaves for n in x.names}
    assert names == {"vocab", "embed", "joined_kv", "mlp", "relpos_buckets", "heads"}
    p1, p2 = nn.unbox(v1)["params"], nn.unbox(v2)["params"]
    for a, b in zip(jax.tree_util.tree_leaves(p1), jax.tree_util.tree_leaves(p2)):
        assert a.dtype == jnp.float32 and np.array_equal(a, b) and np.all(np.isfinite(a))
    assert p1["decoder"]["logits_dense"]["kernel"].shape == (cfg.d_model, cfg.vocab_size)
    emb = [x for x in leaves if x.value.shape == (cfg.vocab_size, cfg.d_model)][0]
    assert emb.names == ("vocab", "embed")


@pytest.mark.slow
@pytest.mark.parametrize("version", ["1.1", "1.0"])
def test_forward_shapes_and_cheap_verifier_head_match_full_logits(version: str) -> None:
    cfg = CFG if version == "1.1" else dataclasses.replace(
        CFG, feed_forward_proj="relu", tie_word_embeddings=True)
    model = EncoderDecoderVerifier(cfg)
    params = random_params(model, {"encoder_input_tokens": (1, 1, 8)}, seed=1)
    assert ("logits_dense" in params["decoder"]) == (version == "1.1")
    enc = _tokens(2, (3, 10))
    enc[1, 6:] = 0
    dec = np.zeros((3, 4), np.int32)
    dec[:, 1:] = 7
    module = T5Transformer(cfg)
    full = jax.jit(lambda p, e, d: module.apply({"params": p}, e, d))
    logits = full(params, enc, dec)
    assert logits.shape == (3, 4, cfg.vocab_size) and logits.dtype == jnp.float32
    two = jax.jit(lambda p, e: module.apply({"params": p}, e,
                                            method=T5Transformer.verifier_logits))(params, enc)
    assert two.shape == (3, 2)
    np.testing.assert_allclose(two, logits[:, 0, [cfg.no_token_id, cfg.yes_token_id]],
                               rtol=1e-5, atol=1e-5)
    # A causal decoder: later decoder tokens do not change the first step.
    dec2 = dec.copy()
    dec2[:, 2:] = 9
    logits2 = full(params, enc, dec2)
    np.testing.assert_allclose(logits2[:, :2], logits[:, :2], rtol=1e-5, atol=1e-5)
    assert not np.allclose(logits2[:, 2:], logits[:, 2:])


def test_score_is_log_p_yes_and_padding_invariant(model, params, score) -> None:
    tok = _tokens(3)
    tok[0, 1, 7:] = 0
    s = np.asarray(score(params, {"encoder_input_tokens": tok}))
    assert s.shape == (2, 3) and s.dtype == np.float32 and np.all(s < 0)
    logits = np.asarray(jax.jit(model.verifier_logits)(params, {"encoder_input_tokens": tok}))
    ref = logits[..., 1] - np.logaddexp(logits[..., 0], logits[..., 1])
    np.testing.assert_allclose(s, ref, rtol=1e-5, atol=1e-6)
    # Changing other candidates does not change a candidate's score.
    tok2 = tok.copy()
    tok2[0, 0] = _tokens(9, (12,))
    tok2[1] = _tokens(10, (3, 12))
    s2 = np.asarray(score(params, {"encoder_input_tokens": tok2}))
    np.testing.assert_allclose(s2[0, 1:], s[0, 1:], rtol=1e-5, atol=1e-6)
    # Extra trailing padding does not change any score.
    padded = np.concatenate([tok, np.zeros((2, 3, 6), np.int32)], axis=-1)
    s3 = np.asarray(jax.jit(model.score_batch)(params, {"encoder_input_tokens": padded}))
    np.testing.assert_allclose(s3, s, rtol=1e-5, atol=1e-5)
    # The padding really is ignored: content after the pad differs from a truncated input.
    assert not np.allclose(s[0, 1], s[0, 0])


def test_bf16_compute_keeps_float32_params_and_outputs(params, score) -> None:
    model16 = EncoderDecoderVerifier(dataclasses.replace(CFG, dtype="bfloat16"))
    tok = _tokens(4)
    s16 = np.asarray(jax.jit(model16.score_batch)(params, {"encoder_input_tokens": tok}))
    s32 = np.asarray(score(params, {"encoder_input_tokens": tok}))
    assert s16.dtype == np.float32
    np.testing.assert_allclose(s16, s32, atol=0.05)


def test_bf16_compute_trains_under_jit_with_gradients_near_float32s(model, params) -> None:
    """The backward pass in bfloat16 compiles and runs on this backend (XLA:CPU has no bf16 x bf16
    -> f32 dot outside its library fusions) and stays near float32's gradients."""
    model16 = EncoderDecoderVerifier(dataclasses.replace(CFG, dtype="bfloat16"))
    tok = {"encoder_input_tokens": _tokens(4, (2, 3, 64))}
    grad = lambda m: jax.jit(jax.grad(lambda p: m.score_batch(p, tok).sum()))(params)
    g16, g32 = grad(model16), grad(model)
    for a, b in zip(jax.tree_util.tree_leaves(g16), jax.tree_util.tree_leaves(g32)):
        assert a.dtype == jnp.float32 and np.isfinite(np.asarray(a)).all()
        np.testing.assert_allclose(a, b, atol=0.05 * float(np.abs(np.asarray(b)).max()) + 1e-6)


def test_remat_gives_same_scores(params, score) -> None:
    tok = _tokens(6)
    m = EncoderDecoderVerifier(dataclasses.replace(CFG, remat=True))
    np.testing.assert_allclose(jax.jit(m.score_batch)(params, {"encoder_input_tokens": tok}),
                               score(params, {"encoder_input_tokens": tok}), rtol=1e-6, atol=1e-6)


def test_dropout_only_with_rng(params) -> None:
    """Training (dropout_rng given) is stochastic per rng; scoring is deterministic.
    (AdamW training steps on this model run in tests/test_partitioning.py.)"""
    m = EncoderDecoderVerifier(dataclasses.replace(CFG, dropout_rate=0.3))
    batch = {"encoder_input_tokens": _tokens(5, (2, 4, 12)),
             "labels": np.array([[1, 0, 0, 1], [0, 1, 0, 0]]),
             "candidate_mask": np.array([[1, 1, 1, 1], [1, 1, 1, 0]], bool)}
    loss = jax.jit(lambda p, r: m.loss_fn(p, batch, r)[0])
    # rbg keys: dropout masks from threefry take ~4x longer to compile on CPU.
    key = lambda i: jax.random.key(i, impl="rbg")
    a, b = float(loss(params, key(0))), float(loss(params, key(1)))
    assert a != b and float(loss(params, key(0))) == a
    det = jax.jit(lambda p: m.loss_fn(p, batch, None))
    (l1, aux), (l2, _) = det(params), det(params)
    assert float(l1) == float(l2) and np.isfinite(float(l1))
    assert float(aux["num_problems"]) == 2 and float(aux["num_candidates"]) == 7


# ------------------------------------------------------------------------------------ loss

def _np_problem_loss(logits, labels, wpos=1.0, wneg=1.0):
    logp = logits - np.logaddexp(logits[:, :1], logits[:, 1:2])
    ce = -logp[np.arange(len(labels)), labels]
    w = np.where(labels == 1, wpos, wneg)
    return np.sum(w * ce) / np.sum(w)


def test_loss_low_for_separating_logits_high_for_wrong() -> None:
    labels = np.array([[1, 0, 1]])
    mask = np.ones((1, 3), bool)
    good = np.stack([np.where(labels == 1, -10.0, 10.0), np.where(labels == 1, 10.0, -10.0)], -1)
    loss, aux = verifier_loss(jnp.asarray(good), labels, mask)
    assert float(loss) < 1e-6 and float(aux["binary_acc"]) == 1.0
    loss_bad, aux_bad = verifier_loss(jnp.asarray(-good), labels, mask)
    assert float(loss_bad) > 10 and float(aux_bad["binary_acc"]) == 0.0


def test_loss_class_weighting_matches_torch_weighted_mean() -> None:
    rs = np.random.RandomState(0)
    logits = rs.normal(size=(1, 5, 2)).astype(np.float32)
    labels = np.array([[1, 0, 0, 0, 1]])
    mask = np.ones((1, 5), bool)
    cfg = LossConfig(positive_weight=3.0, negative_weight=0.5)
    loss, _ = verifier_loss(jnp.asarray(logits), labels, mask, cfg)
    np.testing.assert_allclose(float(loss), _np_problem_loss(logits[0], labels[0], 3.0, 0.5),
                               rtol=1e-5)
    plain, _ = verifier_loss(jnp.asarray(logits), labels, mask)
    assert abs(float(loss) - float(plain)) > 1e-3  # weighting matters


def test_loss_averages_per_problem_then_over_problems() -> None:
    # Problem 0: 10 candidates each with loss a; problem 1: 2 candidates each with loss b.
    logits = np.zeros((2, 10, 2), np.float32)
    logits[0, :, 1] = 2.0   # label 1 -> small loss a
    logits[1, :, 1] = -3.0  # label 1 -> large loss b
    labels = np.ones((2, 10), np.int32)
    mask = np.zeros((2, 10), bool)
    mask[0, :] = True
    mask[1, :2] = True
    a = np.log1p(np.exp(-2.0))
    b = np.log1p(np.exp(3.0))
    loss, aux = verifier_loss(jnp.asarray(logits), labels, mask)
    np.testing.assert_allclose(float(loss), (a + b) / 2, rtol=1e-5)
    assert abs(float(loss) - (10 * a + 2 * b) / 12) > 0.5
    assert float(aux["num_problems"]) == 2 and float(aux["num_candidates"]) == 12


def test_loss_ignores_masked_candidates_and_empty_problems() -> None:
    rs = np.random.RandomState(1)
    logits = rs.normal(size=(3, 4, 2)).astype(np.float32)
    labels = rs.randint(0, 2, (3, 4))
    mask = np.array([[1, 1, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1]], bool)
    loss, aux = verifier_loss(jnp.asarray(logits), labels, mask)
    changed = logits.copy()
    changed[0, 2:] = 50.0
    changed[1] = -50.0
    loss2, _ = verifier_loss(jnp.asarray(changed), labels, mask)
    np.testing.assert_allclose(float(loss), float(loss2), rtol=1e-6)
    ref = (_np_problem_loss(logits[0, :2], labels[0, :2]) + _np_problem_loss(logits[2], labels[2])) / 2
    np.testing.assert_allclose(float(loss), ref, rtol=1e-5)
    assert float(aux["num_problems"]) == 2
    zero, _ = verifier_loss(jnp.asarray(logits), labels, np.zeros((3, 4), bool))
    assert float(zero) == 0.0


_jit_loss = jax.jit(verifier_loss, static_argnums=3)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(1, 5), st.integers(0, 2**31 - 1),
       st.sampled_from([0.5, 1.0, 3.0]), st.sampled_from([0.25, 1.0, 2.0]))
def test_loss_properties(p: int, k: int, seed: int, wpos: float, wneg: float) -> None:
    """p problems x k candidates embedded in a fixed [4, 5] batch (one compile per weights)."""
    rs = np.random.RandomState(seed)
    logits = rs.normal(0, 3, (4, 5, 2)).astype(np.float32)
    labels = rs.randint(0, 2, (4, 5))
    mask = np.zeros((4, 5), bool)
    mask[:p, :k] = rs.rand(p, k) < 0.8
    cfg = LossConfig(wpos, wneg)
    loss, aux = _jit_loss(logits, labels, mask, cfg)
    assert float(loss) >= 0 and np.isfinite(float(loss))
    # Permuting problems and candidates within problems does not change the loss.
    pp, pk = rs.permutation(4), rs.permutation(5)
    loss_perm, _ = _jit_loss(logits[pp][:, pk], labels[pp][:, pk], mask[pp][:, pk], cfg)
    np.testing.assert_allclose(float(loss), float(loss_perm), rtol=1e-5, atol=1e-6)
    valid = [i for i in range(4) if mask[i].any()]
    ref = np.mean([_np_problem_loss(logits[i][mask[i]], labels[i][mask[i]], wpos, wneg)
                   for i in valid]) if valid else 0.0
    np.testing.assert_allclose(float(loss), ref, rtol=1e-4, atol=1e-5)
    assert float(aux["num_problems"]) == len(valid)


# ------------------------------------------------------------------------- presets and gin

def _param_count(model, key="encoder_input_tokens") -> int:
    abstract = jax.eval_shape(lambda r: model.get_initial_variables(r, {key: (1, 1, 4)}),
                              jax.random.PRNGKey(0))
    return sum(int(np.prod(x.shape)) for x in jax.tree_util.tree_leaves(nn.unbox(abstract)))


def test_preset_param_counts_match_hf() -> None:
    # HF: t5-small 60,506,624; google/t5-v1_1-small 76,961,152.
    assert _param_count(EncoderDecoderVerifier(t5_config("small", version="1.0"))) == 60_506_624
    assert _param_count(EncoderDecoderVerifier(t5_config("small"))) == 76_961_152


def test_relative_position_buckets_reference_values() -> None:
    b = relative_position_buckets(1, 200, True, 32, 128)[0]
    # Bidirectional: keys after the query use buckets 16..31, exact below 8, log up to 128.
    assert b[0] == 0 and b[1] == 17 and b[7] == 23 and b[8] == 24 and b[199] == 31
    c = relative_position_buckets(200, 1, False, 32, 128)[:, 0]
    assert c[0] == 0 and c[15] == 15 and c[16] == 16 and c[199] == 31
    assert np.all(relative_position_buckets(5, 5, False, 32, 128)[np.triu_indices(5, 1)] == 0)


@pytest.mark.parametrize("name,size,version", [("t5_tiny", "tiny", "1.1"), ("t5_small", "small", "1.1"),
                                               ("t5_base", "base", "1.0"), ("t5_large", "large", "1.0")])
def test_gin_model_files(name: str, size: str, version: str) -> None:
    """Each T5 model file builds the preset it names (v1.1 small; LEVER's v1.0 base/large), with
    vocabulary-dependent fields left to the vocabulary (tests/test_gin_layering.py fits them)."""
    import gin

    gin.clear_config()
    try:
        gin.parse_config_files_and_bindings([str(ROOT / f"gin_configs/models/{name}.gin")],
                                            ["ACTIVATION_DTYPE = 'bfloat16'", "VOCAB_SIZE = 32128"])
        model = gin.query_parameter("%MODEL").scoped_configurable_fn()
    finally:
        gin.clear_config()
    assert isinstance(model, EncoderDecoderVerifier)
    want = t5_config(size, version, dtype="bfloat16", vocab_size=32128, no_token_id=None, yes_token_id=None)
    assert model.config == want
    fitted = model.for_vocabulary(VocabularyIds("spm", 32128, 0, 150, 4273))
    if size in ("tiny", "small"):
        n = _param_count(fitted)
        assert n == {"tiny": 4_310_016, "small": 76_961_152}[size]
    other = model.for_vocabulary(VocabularyIds("other", 300, 0, 7, 8))  # the model file's VOCAB_SIZE stays
    assert (other.config.vocab_size, other.config.no_token_id, other.config.yes_token_id) == (32128, 7, 8)
    free = EncoderDecoderVerifier(dataclasses.replace(model.config, vocab_size=None)).for_vocabulary(
        VocabularyIds("other", 300, 0, 7, 8))
    assert free.config.vocab_size == 300 and free.describe().endswith("vocab 300")


def test_verifier_contract() -> None:
    """Both architectures implement the one abstract contract (lever_jax.models.base); a set
    model-file value that disagrees with the vocabulary is one UserError naming the macro."""
    from lever_jax.data.errors import UserError
    from lever_jax.models.base import VerifierModel
    from lever_jax.models.verifier import EncoderClassifierVerifier

    assert issubclass(EncoderDecoderVerifier, VerifierModel) and issubclass(EncoderClassifierVerifier, VerifierModel)
    with pytest.raises(TypeError):
        VerifierModel()  # abstract: an architecture must say how it computes logits, loads weights, ...
    model = EncoderDecoderVerifier(t5_config("tiny", "1.1", vocab_size=None, no_token_id=None, yes_token_id=None))
    params = {"a": np.zeros(2)}
    assert model.load_pretrained(params) is params  # no PRETRAINED, no init_params: unchanged
    with pytest.raises(UserError, match="VOCAB_SIZE = None"):
        EncoderDecoderVerifier(t5_config("tiny", "1.1", vocab_size=10, no_token_id=None, yes_token_id=None)).for_vocabulary(
            VocabularyIds("spm", 8000, 0, 5, 6))
    with pytest.raises(UserError, match="no_token_id=1"):
        EncoderDecoderVerifier(t5_config("tiny", "1.1", vocab_size=None, no_token_id=1)).for_vocabulary(
            VocabularyIds("spm", 8000, 0, 5, 6))


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="outside vocabulary"):
        t5_config("tiny", vocab_size=100)
    with pytest.raises(ValueError, match="dtype"):
        t5_config("tiny", dtype="int8")
    with pytest.raises(ValueError):
        configs.encoder_config("nope")
    with pytest.raises(ValueError):
        LossConfig(positive_weight=0)
