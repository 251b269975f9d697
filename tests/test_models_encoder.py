"""BERT/RoBERTa-style encoder classifier, its verifier API, MiniLM import and gin files."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn

from lever_jax.models import hf_import
from lever_jax.models.configs import encoder_config
from lever_jax.models.encoder import EncoderClassifier
from lever_jax.models.base import VocabularyIds
from lever_jax.models.verifier import EncoderClassifierVerifier

ROOT = Path(__file__).resolve().parents[1]
CFG = encoder_config("tiny", num_layers=1, dropout_rate=0.0)


def random_params(model, shapes: dict, seed: int = 0, scale: float = 0.1) -> dict:
    """Deterministic numpy parameters (LayerNorm scale 1, bias 0) without compiling inits."""
    abstract = jax.eval_shape(lambda r: model.get_initial_variables(r, shapes),
                              jax.random.PRNGKey(0))
    rs = np.random.RandomState(seed)

    def fill(path, leaf):
        name = jax.tree_util.keystr(path)
        if "norm" in name:
            value = np.ones if "scale" in name else np.zeros
            return jnp.asarray(value(leaf.shape, np.float32))
        return jnp.asarray(rs.normal(0, scale, leaf.shape).astype(np.float32))

    return jax.tree_util.tree_map_with_path(fill, nn.unbox(abstract)["params"])


def _tokens(seed: int, shape, low: int = 2) -> np.ndarray:
    return np.random.RandomState(seed).randint(low, CFG.vocab_size, shape).astype(np.int32)


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_forward_shapes_padding_and_token_types(pooling: str) -> None:
    cfg = dataclasses.replace(CFG, pooling=pooling)
    model = EncoderClassifierVerifier(cfg)
    params = random_params(model, {"input_tokens": (1, 1, 8)})
    assert set(params) == {"embeddings", "layers_0", "classifier"}
    fwd = jax.jit(lambda p, t, tt: EncoderClassifier(cfg).apply({"params": p}, t, tt))
    tok = _tokens(1, (3, 10))
    tok[1, 6:] = 0
    logits = np.asarray(fwd(params, tok, None))
    assert logits.shape == (3, 2) and logits.dtype == np.float32
    padded = np.concatenate([tok, np.zeros((3, 5), np.int32)], axis=1)
    np.testing.assert_allclose(fwd(params, padded, None), logits, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fwd(params, tok, np.zeros_like(tok)), logits, rtol=1e-6, atol=1e-6)
    types = np.zeros_like(tok)
    types[:, 3:] = 1
    assert not np.allclose(fwd(params, tok, types), logits)


def test_roberta_positions_ignore_padding() -> None:
    cfg = encoder_config("tiny", num_layers=1, dropout_rate=0.0, pad_token_id=1,
                         position_ids_from_padding=True, type_vocab_size=1, head_hidden=True)
    model = EncoderClassifierVerifier(cfg)
    params = random_params(model, {"input_tokens": (1, 1, 8)})
    assert "pooler" in params
    tok = _tokens(2, (1, 2, 9))
    tok[0, 0, 5:] = 1
    score = jax.jit(model.score_batch)
    s = np.asarray(score(params, {"input_tokens": tok}))
    padded = np.concatenate([tok, np.ones((1, 2, 4), np.int32)], axis=-1)
    np.testing.assert_allclose(score(params, {"input_tokens": padded}), s, rtol=1e-5, atol=1e-5)


def test_verifier_scores_loss_and_training() -> None:
    import optax

    model = EncoderClassifierVerifier(dataclasses.replace(CFG, dropout_rate=0.1))
    params = random_params(model, {"input_tokens": (1, 1, 8)})
    tok = _tokens(3, (2, 3, 12))
    tok[0, 2, 4:] = 0
    batch = {"input_tokens": tok, "labels": np.array([[1, 0, 0], [0, 1, 1]], np.int32),
             "candidate_mask": np.array([[1, 1, 1], [1, 1, 0]], bool)}
    s = np.asarray(jax.jit(model.score_batch)(params, batch))
    assert s.shape == (2, 3) and np.all(s < 0)
    tx = optax.adamw(1e-2, weight_decay=0.1)

    @jax.jit
    def step(p, o, rng):
        (loss, aux), g = jax.value_and_grad(model.loss_fn, has_aux=True)(p, batch, rng)
        u, o = tx.update(g, o, p)
        return optax.apply_updates(p, u), o, loss

    p, o = params, tx.init(params)
    losses = []
    for i in range(6):
        p, o, loss = step(p, o, jax.random.key(i, impl="rbg"))  # fast-compiling dropout
        losses.append(float(loss))
    assert all(np.isfinite(losses)) and losses[-1] < losses[0]


# ----------------------------------------------------------------------------------- MiniLM

@pytest.fixture(scope="module")
def minilm(minilm_weights):
    path = minilm_weights
    cfg, params = hf_import.load_minilm(dropout_rate=0.0)
    return path, cfg, params


def test_minilm_import_covers_all_encoder_tensors(minilm) -> None:
    from safetensors.numpy import load_file

    path, cfg, params = minilm
    assert (cfg.hidden_size, cfg.num_layers, cfg.num_heads, cfg.pooling) == (384, 6, 12, "mean")
    tensors = load_file(str(path / "model.safetensors"))
    encoder_sizes = sum(v.size for k, v in tensors.items()
                        if not k.startswith("pooler.") and k != "embeddings.position_ids")
    ours = sum(np.size(x) for x in jax.tree_util.tree_leaves(params))
    assert ours == encoder_sizes == 22_565_376  # all-MiniLM-L6-v2 (22.7M with its pooler)
    model = EncoderClassifierVerifier(cfg, pretrained="minilm")
    init = random_params(model, {"input_tokens": (1, 1, 8)})
    merged = model.load_pretrained(init)
    assert np.array_equal(merged["layers_3"]["output"]["kernel"],
                          tensors["encoder.layer.3.output.dense.weight"].T)
    assert np.array_equal(merged["classifier"]["kernel"], init["classifier"]["kernel"])
    with pytest.raises(hf_import.CheckpointError, match="shape"):
        EncoderClassifierVerifier(dataclasses.replace(cfg, hidden_size=768, num_heads=12),
                                  pretrained="minilm").load_pretrained(
            random_params(EncoderClassifierVerifier(dataclasses.replace(
                cfg, hidden_size=768, num_heads=12)), {"input_tokens": (1, 1, 4)}))


def test_minilm_sentence_embeddings_are_semantic(minilm) -> None:
    from tokenizers import Tokenizer

    path, cfg, params = minilm
    tok = Tokenizer.from_file(str(path / "tokenizer.json"))
    tok.no_truncation()
    sentences = ["A man is playing a guitar.", "Someone plays a musical instrument.",
                 "The stock market fell sharply today."]
    enc = [tok.encode(s).ids for s in sentences]
    length = max(map(len, enc))
    ids = np.zeros((3, length), np.int32)
    for i, e in enumerate(enc):
        ids[i, :len(e)] = e
    hidden = np.asarray(jax.jit(lambda p, t: EncoderClassifier(cfg).apply(
        {"params": p}, t, method=EncoderClassifier.encode))(params, ids))
    mask = (ids != 0)[..., None]
    emb = (hidden * mask).sum(1) / mask.sum(1)
    emb /= np.linalg.norm(emb, axis=-1, keepdims=True)
    sim = emb @ emb.T
    assert sim[0, 1] > 0.4 and sim[0, 1] > sim[0, 2] + 0.3, sim


def test_bert_import_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(hf_import.CheckpointError, match="config.json"):
        hf_import.load_bert(tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(hf_import.CheckpointError, match="invalid JSON"):
        hf_import.load_bert(tmp_path)


@pytest.mark.parametrize("name,pretrained,count", [
    ("minilm", "minilm", 22_565_376 + 770),
    ("encoder_tiny", None, None),
    ("roberta_large", None, None),
])
def test_gin_encoder_files(name: str, pretrained, count) -> None:
    import gin

    gin.clear_config()
    try:
        gin.parse_config_files_and_bindings([str(ROOT / f"gin_configs/models/{name}.gin")], [])
        model = gin.query_parameter("%MODEL").scoped_configurable_fn()
        if model.config.vocab_size is None:  # taken from the vocabulary (VerifierModel.for_vocabulary)
            model = model.for_vocabulary(VocabularyIds("spm", 8000, 0))
    finally:
        gin.clear_config()
    assert isinstance(model, EncoderClassifierVerifier) and model.pretrained == pretrained
    if count is not None:
        abstract = jax.eval_shape(
            lambda r: model.get_initial_variables(r, {"input_tokens": (1, 1, 4)}),
            jax.random.PRNGKey(0))
        assert sum(int(np.prod(x.shape)) for x in
                   jax.tree_util.tree_leaves(nn.unbox(abstract))) == count
