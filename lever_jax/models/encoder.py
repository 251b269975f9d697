"""BERT/RoBERTa-style encoder with a 2-class (no, yes) head, in flax.linen.

Post-LayerNorm transformer with learned absolute positions, token types, biases and GELU, as in
HF `BertModel` (and `RobertaModel` via `EncoderConfig.position_ids_from_padding`). Parameter tree
(hf_import.py maps HF names onto it):
  embeddings/{word_embeddings, position_embeddings, token_type_embeddings}/embedding,
  embeddings/layer_norm/{scale,bias}
  layers_{i}/attention/{query,key,value,out}/{kernel,bias}, layers_{i}/attention_norm,
  layers_{i}/intermediate/{kernel,bias}, layers_{i}/output/{kernel,bias}, layers_{i}/output_norm
  pooler/{kernel,bias} (only with head_hidden), classifier/{kernel,bias}
"""
from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp
from flax import linen as nn

from lever_jax.models.configs import EncoderConfig
from lever_jax.models.layers import (Dense, Dropout, Embed, LayerNorm, MultiHeadAttention, activation_fn,
                                     constrain, padding_bias, segment_bias, segment_first, segment_mean)

Array = jax.Array
EMBED_AXES = ("batch", "length", "embed")
_init = nn.initializers.normal(stddev=0.02)  # BERT's initializer_range


class Embeddings(nn.Module):
    config: EncoderConfig

    @nn.compact
    def __call__(self, tokens: Array, token_type_ids: Optional[Array], mask: Array,
                 deterministic: bool, positions: Optional[Array] = None) -> Array:
        """`positions` [B, L] (packing: each segment restarts at 0) overrides the default."""
        cfg = self.config
        embed = lambda n, axes, name: Embed(n, cfg.hidden_size, axes, jnp.float32, _init,
                                            name=name)
        if positions is not None:
            positions = positions + (cfg.pad_token_id + 1 if cfg.position_ids_from_padding else 0)
        elif cfg.position_ids_from_padding:  # RoBERTa: pad -> pad_id, tokens -> pad_id + 1, ...
            m = mask.astype(jnp.int32)
            positions = jnp.cumsum(m, axis=-1) * m + cfg.pad_token_id
        else:
            positions = jnp.broadcast_to(jnp.arange(tokens.shape[-1]), tokens.shape)
        if token_type_ids is None:
            token_type_ids = jnp.zeros_like(tokens)
        x = (embed(cfg.vocab_size, ("vocab", "embed"), "word_embeddings")(tokens)
             + embed(cfg.max_position_embeddings, ("positions", "embed"),
                     "position_embeddings")(positions)
             + embed(cfg.type_vocab_size, ("token_types", "embed"),
                     "token_type_embeddings")(token_type_ids))
        x = LayerNorm(cfg.layer_norm_eps, cfg.compute_dtype, name="layer_norm")(x)
        x = Dropout(cfg.dropout_rate, cfg.dropout_impl)(x, deterministic=deterministic)
        return constrain(x, EMBED_AXES)


class EncoderLayer(nn.Module):
    config: EncoderConfig

    @nn.compact
    def __call__(self, x: Array, mask_bias: Array, deterministic: bool) -> Array:
        cfg = self.config
        dt = cfg.compute_dtype
        drop = Dropout(cfg.dropout_rate, cfg.dropout_impl)
        h = MultiHeadAttention(num_heads=cfg.num_heads, head_dim=cfg.hidden_size // cfg.num_heads,
                               out_features=cfg.hidden_size, dtype=dt,
                               dropout_rate=cfg.dropout_rate, dropout_impl=cfg.dropout_impl,
                               use_bias=True, scale_logits=True,
                               q_init=_init, kv_init=_init, out_init=_init,
                               name="attention")(x, x, (mask_bias,), deterministic)
        x = LayerNorm(cfg.layer_norm_eps, dt, name="attention_norm")(
            x + drop(h, deterministic=deterministic))
        h = Dense(cfg.intermediate_size, ("embed", "mlp"), True, dt, _init, name="intermediate")(x)
        h = constrain(activation_fn(cfg.hidden_act)(h), ("batch", "length", "mlp"))
        h = Dense(cfg.hidden_size, ("mlp", "embed"), True, dt, _init, name="output")(h)
        x = LayerNorm(cfg.layer_norm_eps, dt, name="output_norm")(
            x + drop(h, deterministic=deterministic))
        return constrain(x, EMBED_AXES)


class EncoderClassifier(nn.Module):
    """Encoder + pooling (CLS or masked mean) + Dense 2-way head; logits are (no, yes)."""

    config: EncoderConfig

    def setup(self) -> None:
        cfg = self.config
        self.embeddings = Embeddings(cfg)
        layer = nn.remat(EncoderLayer, static_argnums=(3,)) if cfg.remat else EncoderLayer
        self.layers = [layer(cfg, name=f"layers_{i}") for i in range(cfg.num_layers)]
        if cfg.head_hidden:
            self.pooler = Dense(cfg.hidden_size, ("embed", "mlp"), True, cfg.compute_dtype, _init)
        self.classifier = Dense(cfg.num_classes, ("embed", "classes"), True, cfg.compute_dtype,
                                _init)
        self.dropout = Dropout(cfg.dropout_rate, cfg.dropout_impl)

    def _mask(self, tokens: Array, attention_mask: Optional[Array]) -> Array:
        if attention_mask is None:
            return tokens != self.config.pad_token_id
        return attention_mask.astype(bool)

    def encode(self, input_tokens: Array, token_type_ids: Optional[Array] = None,
               attention_mask: Optional[Array] = None, deterministic: bool = True,
               segment_ids: Optional[Array] = None, positions: Optional[Array] = None) -> Array:
        """[B, L] -> last hidden states [B, L, hidden] (HF `last_hidden_state`).

        Packed rows: `segment_ids` [B, L] (1, 2, ... per packed sequence, 0 = padding) make the
        attention block-diagonal, and `positions` [B, L] restart at 0 in every segment, so each
        packed sequence gets exactly the states it would get alone in its own row.
        """
        if segment_ids is not None:
            if positions is None:
                raise ValueError("packed encoder inputs need positions with segment_ids")
            mask = segment_ids > 0
            bias = segment_bias(segment_ids, segment_ids)
        else:
            mask = self._mask(input_tokens, attention_mask)
            bias = padding_bias(mask)
        x = self.embeddings(input_tokens, token_type_ids, mask, deterministic, positions)
        for layer in self.layers:
            x = layer(x, bias, deterministic)
        return x

    def __call__(self, input_tokens: Array, token_type_ids: Optional[Array] = None,
                 attention_mask: Optional[Array] = None, deterministic: bool = True,
                 segment_ids: Optional[Array] = None, positions: Optional[Array] = None,
                 num_segments: int = 0) -> Array:
        """[B, L] -> float32 [B, 2] logits of (no, yes); packed (`segment_ids`, `positions`,
        static `num_segments` per row) -> [B, num_segments, 2], one per packed sequence."""
        cfg = self.config
        mask = self._mask(input_tokens, attention_mask)
        x = self.encode(input_tokens, token_type_ids, mask, deterministic, segment_ids, positions)
        if segment_ids is not None:
            if num_segments < 1:
                raise ValueError("packed encoder inputs need num_segments >= 1")
            pool = segment_first if cfg.pooling == "cls" else segment_mean
            pooled = pool(x, segment_ids, num_segments).astype(x.dtype)
        elif cfg.pooling == "cls":
            pooled = x[:, 0, :]
        else:
            m = mask[..., None].astype(jnp.float32)
            pooled = (jnp.sum(x.astype(jnp.float32) * m, axis=1)
                      / jnp.maximum(jnp.sum(m, axis=1), 1e-9)).astype(x.dtype)
        pooled = self.dropout(pooled, deterministic=deterministic)
        if cfg.head_hidden:
            pooled = self.dropout(jnp.tanh(self.pooler(pooled)), deterministic=deterministic)
        return self.classifier(pooled).astype(jnp.float32)
