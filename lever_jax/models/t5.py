"""T5 (v1.0 and v1.1) encoder-decoder in flax.linen, with LEVER's one-step verifier logits.

Parameter tree (hf_import.py maps HF names onto it):
  token_embedder/embedding                 [vocab, d_model]        ('vocab', 'embed')
  encoder/relpos_bias/rel_embedding        [buckets, heads]        ('relpos_buckets', 'heads')
  encoder/layers_{i}/pre_attention_layer_norm/scale, attention/{query,key,value,out}/kernel,
                     pre_mlp_layer_norm/scale, mlp/{wi_0,wi_1 | wi, wo}/kernel
  encoder/encoder_norm/scale
  decoder/relpos_bias/rel_embedding
  decoder/layers_{i}/pre_self_attention_layer_norm, self_attention, pre_cross_attention_layer_norm,
                     encoder_decoder_attention, pre_mlp_layer_norm, mlp
  decoder/decoder_norm/scale
  decoder/logits_dense/kernel              [d_model, vocab]        ('embed', 'vocab') (untied only)
Token id 0 is padding in encoder inputs (T5 convention) and the decoder start token.
"""
from __future__ import annotations

from typing import Optional, Sequence

import jax
import jax.numpy as jnp
from flax import linen as nn

from lever_jax.models.configs import T5Config
from lever_jax.models.layers import (Dense, Dropout, Embed, MultiHeadAttention,
                                     RelativePositionBias, RMSNorm, activation_fn, causal_bias, constrain, padding_bias,
                                     segment_bias)

Array = jax.Array
EMBED_AXES = ("batch", "length", "embed")


def _inits(cfg: T5Config):
    """T5X-style variance-scaling inits (the q init absorbs the missing 1/sqrt(d_kv))."""
    fan_in = lambda scale: nn.initializers.variance_scaling(scale, "fan_in", "truncated_normal")
    q_init = fan_in(1.0 / cfg.d_kv)
    return q_init, fan_in(1.0), fan_in(1.0)


class T5MLP(nn.Module):
    """Feed-forward block: act(x W_0) [* (x W_1)] W_o (gated for v1.1)."""

    config: T5Config

    @nn.compact
    def __call__(self, x: Array, deterministic: bool) -> Array:
        cfg = self.config
        # HF: "gated-gelu" uses the tanh approximation (gelu_new); plain "gelu" the exact erf.
        act = activation_fn("gelu_new" if cfg.feed_forward_proj == "gated-gelu" else cfg.activation)
        dense = lambda name: Dense(cfg.d_ff, ("embed", "mlp"), dtype=cfg.compute_dtype,
                                   kernel_init=_inits(cfg)[1], name=name)
        if cfg.is_gated:
            h = act(dense("wi_0")(x)) * dense("wi_1")(x)
        else:
            h = act(dense("wi")(x))
        h = constrain(h, ("batch", "length", "mlp"))
        h = Dropout(cfg.dropout_rate, cfg.dropout_impl)(h, deterministic=deterministic)
        return Dense(cfg.d_model, ("mlp", "embed"), dtype=cfg.compute_dtype,
                     kernel_init=_inits(cfg)[1], name="wo")(h)


# Cross-attention from at most this many decoder positions folds the key/value kernels into the
# query side (cheaper than projecting every encoder position while q_len << heads*head_dim);
# packed verifier rows decode one position per packed segment.
FOLD_MAX_QUERIES = 64


def _attention(cfg: T5Config, name: str, fold_max_queries: int = 1) -> MultiHeadAttention:
    q_init, kv_init, out_init = _inits(cfg)
    return MultiHeadAttention(num_heads=cfg.num_heads, head_dim=cfg.d_kv, out_features=cfg.d_model,
                              dtype=cfg.compute_dtype, dropout_rate=cfg.dropout_rate,
                              dropout_impl=cfg.dropout_impl,
                              fold_single_query=cfg.fold_single_query_attention,
                              fold_max_queries=fold_max_queries,
                              q_init=q_init, kv_init=kv_init,
                              out_init=out_init, name=name)


class EncoderLayer(nn.Module):
    config: T5Config

    @nn.compact
    def __call__(self, x: Array, biases: Sequence[Array], deterministic: bool) -> Array:
        cfg = self.config
        norm = lambda name: RMSNorm(cfg.layer_norm_epsilon, cfg.compute_dtype, name=name)
        drop = Dropout(cfg.dropout_rate, cfg.dropout_impl)
        h = norm("pre_attention_layer_norm")(x)
        h = _attention(cfg, "attention")(h, h, biases, deterministic)
        x = x + drop(h, deterministic=deterministic)
        h = T5MLP(cfg, name="mlp")(norm("pre_mlp_layer_norm")(x), deterministic)
        x = x + drop(h, deterministic=deterministic)
        return constrain(x, EMBED_AXES)


class DecoderLayer(nn.Module):
    config: T5Config

    @nn.compact
    def __call__(self, y: Array, encoded: Array, self_biases: Sequence[Array],
                 cross_biases: Sequence[Array], deterministic: bool) -> Array:
        cfg = self.config
        norm = lambda name: RMSNorm(cfg.layer_norm_epsilon, cfg.compute_dtype, name=name)
        drop = Dropout(cfg.dropout_rate, cfg.dropout_impl)
        h = norm("pre_self_attention_layer_norm")(y)
        h = _attention(cfg, "self_attention")(h, h, self_biases, deterministic)
        y = y + drop(h, deterministic=deterministic)
        h = norm("pre_cross_attention_layer_norm")(y)
        h = _attention(cfg, "encoder_decoder_attention", FOLD_MAX_QUERIES)(h, encoded, cross_biases, deterministic)
        y = y + drop(h, deterministic=deterministic)
        h = T5MLP(cfg, name="mlp")(norm("pre_mlp_layer_norm")(y), deterministic)
        y = y + drop(h, deterministic=deterministic)
        return constrain(y, EMBED_AXES)


def _maybe_remat(cls, cfg: T5Config, deterministic_argnum: int):
    # static_argnums counts `self` as 0.
    return nn.remat(cls, static_argnums=(deterministic_argnum,)) if cfg.remat else cls


class T5Encoder(nn.Module):
    config: T5Config
    embedder: nn.Module

    @nn.compact
    def __call__(self, tokens: Array, deterministic: bool, segment_ids: Optional[Array] = None,
                 positions: Optional[Array] = None) -> Array:
        """Packed rows: `segment_ids` / `positions` [B, L] give block-diagonal attention and
        relative positions within each segment."""
        cfg = self.config
        drop = Dropout(cfg.dropout_rate, cfg.dropout_impl)
        x = drop(self.embedder(tokens), deterministic=deterministic)
        x = constrain(x, EMBED_AXES)
        length = tokens.shape[-1]
        relpos = RelativePositionBias(cfg.relative_attention_num_buckets,
                                      cfg.relative_attention_max_distance, cfg.num_heads,
                                      bidirectional=True, name="relpos_bias")
        if segment_ids is None:
            biases = (relpos(length, length), padding_bias(tokens > 0))
        else:
            biases = (relpos(length, length, q_positions=positions, k_positions=positions),
                      segment_bias(segment_ids, segment_ids))
        layer = _maybe_remat(EncoderLayer, cfg, 3)
        for i in range(cfg.num_encoder_layers):
            x = layer(cfg, name=f"layers_{i}")(x, biases, deterministic)
        x = RMSNorm(cfg.layer_norm_epsilon, cfg.compute_dtype, name="encoder_norm")(x)
        return drop(x, deterministic=deterministic)


class T5Decoder(nn.Module):
    """Decoder stack; returns final-normed hidden states (logits are taken by the parent)."""

    config: T5Config
    embedder: nn.Module

    def setup(self) -> None:
        cfg = self.config
        self.relpos_bias = RelativePositionBias(cfg.relative_attention_num_buckets,
                                                cfg.relative_attention_max_distance,
                                                cfg.num_heads, bidirectional=False)
        layer = _maybe_remat(DecoderLayer, cfg, 5)
        self.layers = [layer(cfg, name=f"layers_{i}") for i in range(cfg.num_decoder_layers)]
        self.decoder_norm = RMSNorm(cfg.layer_norm_epsilon, cfg.compute_dtype)
        self.dropout = Dropout(cfg.dropout_rate, cfg.dropout_impl)
        if not cfg.tie_word_embeddings:
            self.logits_dense = Dense(cfg.vocab_size, ("embed", "vocab"), dtype=cfg.compute_dtype,
                                      kernel_init=nn.initializers.variance_scaling(
                                          1.0, "fan_in", "truncated_normal"))

    def __call__(self, encoded: Array, encoder_mask: Array, decoder_input_tokens: Array,
                 deterministic: bool, encoder_segment_ids: Optional[Array] = None) -> Array:
        """`encoder_segment_ids` (packed rows): decoder position s is the first decoding step
        of packed segment s + 1 alone: it attends to itself only and, across, to the encoder
        tokens of its segment."""
        y = self.dropout(self.embedder(decoder_input_tokens), deterministic=deterministic)
        y = constrain(y, EMBED_AXES)
        t = decoder_input_tokens.shape[-1]
        if encoder_segment_ids is None:
            self_biases = (self.relpos_bias(t, t), causal_bias(t))
            cross_biases = (padding_bias(encoder_mask),)
        else:
            b = decoder_input_tokens.shape[0]
            dec_segments = jnp.broadcast_to(jnp.arange(1, t + 1, dtype=jnp.int32), (b, t))
            zeros = jnp.zeros((b, t), jnp.int32)  # every segment's decoder step is position 0
            self_biases = (self.relpos_bias(t, t, q_positions=zeros, k_positions=zeros),
                           segment_bias(dec_segments, dec_segments))
            cross_biases = (segment_bias(dec_segments, encoder_segment_ids),)
        for layer in self.layers:
            y = layer(y, encoded, self_biases, cross_biases, deterministic)
        y = self.decoder_norm(y)
        return self.dropout(y, deterministic=deterministic)

    def logits(self, hidden: Array, token_ids: Optional[Sequence[int]] = None) -> Array:
        """float32 output logits over the vocabulary, or over `token_ids` only."""
        cfg = self.config
        if cfg.scales_logits:
            hidden = hidden * jnp.asarray(cfg.d_model ** -0.5, hidden.dtype)
        if cfg.tie_word_embeddings:
            out = self.embedder.attend(hidden, token_ids)
        else:
            out = self.logits_dense(hidden, token_ids)
        return out.astype(jnp.float32)


class T5Transformer(nn.Module):
    """Encoder-decoder. `__call__` gives full logits; `verifier_logits` LEVER's 2-way scores."""

    config: T5Config

    def setup(self) -> None:
        cfg = self.config
        self.token_embedder = Embed(cfg.vocab_size, cfg.d_model, dtype=cfg.compute_dtype)
        self.encoder = T5Encoder(cfg, self.token_embedder)
        self.decoder = T5Decoder(cfg, self.token_embedder)

    def encode(self, encoder_input_tokens: Array, deterministic: bool = True,
               segment_ids: Optional[Array] = None, positions: Optional[Array] = None) -> Array:
        return self.encoder(encoder_input_tokens, deterministic, segment_ids, positions)

    def decode(self, encoded: Array, encoder_input_tokens: Array, decoder_input_tokens: Array,
               deterministic: bool = True, token_ids: Optional[Sequence[int]] = None,
               encoder_segment_ids: Optional[Array] = None) -> Array:
        hidden = self.decoder(encoded, encoder_input_tokens > 0, decoder_input_tokens,
                              deterministic, encoder_segment_ids)
        return self.decoder.logits(hidden, token_ids)

    def __call__(self, encoder_input_tokens: Array, decoder_input_tokens: Array,
                 deterministic: bool = True) -> Array:
        """[B, L] x [B, T] -> float32 logits [B, T, vocab]."""
        encoded = self.encode(encoder_input_tokens, deterministic)
        logits = self.decode(encoded, encoder_input_tokens, decoder_input_tokens, deterministic)
        return constrain(logits, ("batch", "length", "vocab"))

    def verifier_logits(self, encoder_input_tokens: Array, deterministic: bool = True) -> Array:
        """[B, L] -> float32 [B, 2] logits of (no, yes) at the first decoder step.

        One decoder step from the start token, and only two output columns: no full-vocabulary
        projection and no further decoding.
        """
        cfg = self.config
        encoded = self.encode(encoder_input_tokens, deterministic)
        start = jnp.full((encoder_input_tokens.shape[0], 1), cfg.decoder_start_token_id,
                         jnp.int32)
        logits = self.decode(encoded, encoder_input_tokens, start, deterministic,
                             token_ids=(cfg.no_token_id, cfg.yes_token_id))
        return logits[:, 0, :]

    def packed_verifier_logits(self, encoder_input_tokens: Array, segment_ids: Array,
                               positions: Array, num_segments: int,
                               deterministic: bool = True) -> Array:
        """Packed rows [B, L] (lever_jax.inputs.packing) -> float32 [B, num_segments, 2]:
        `verifier_logits` of every packed segment, with one decoder position per segment."""
        cfg = self.config
        encoded = self.encode(encoder_input_tokens, deterministic, segment_ids, positions)
        start = jnp.full((encoder_input_tokens.shape[0], num_segments),
                         cfg.decoder_start_token_id, jnp.int32)
        return self.decode(encoded, encoder_input_tokens, start, deterministic,
                           token_ids=(cfg.no_token_id, cfg.yes_token_id),
                           encoder_segment_ids=segment_ids)
