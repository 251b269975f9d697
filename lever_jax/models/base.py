"""The one verifier contract (t5x's BaseModel for LEVER): what the Trainer, `lever-jax train` /
`eval` and the cross-fitting loop call on a model, whatever its architecture.

`VerifierModel` declares LEVER's loss (padded and packed), scoring, initial variables, fitting
to a vocabulary (`for_vocabulary`), a one-line description and loading pretrained weights
(`load_pretrained`). Architectures (lever_jax.models.verifier: the T5 encoder-decoder and the
BERT/RoBERTa/MiniLM encoder classifier) implement the abstract methods; everything shared --
the [P, K, L] layout, the packed scatter back to [P, K], the loss -- lives here once.

Batches are laid out per problem: [P problems, K candidates, L tokens] under `tokens_key`, plus
'labels' [P, K] int32 (1 = yes / correct) and 'candidate_mask' [P, K] bool. `params` is the flax
'params' collection (boxed LogicallyPartitioned leaves are unboxed on the fly). All functions are
pure and jit/grad friendly.
"""
from __future__ import annotations

import abc
import dataclasses
import logging
import math
from typing import Any, ClassVar, Mapping, Optional, Protocol, Sequence

import jax
import jax.numpy as jnp
from flax import linen as nn

from lever_jax.data.errors import UserError
from lever_jax.models.configs import LossConfig

Array = jax.Array
Batch = Mapping[str, Array]
Params = Any
Variables = Any
log = logging.getLogger(__name__)


class Vocabulary(Protocol):
    """What `for_vocabulary` reads of a vocabulary (lever_jax.inputs.tokenizers.TextTokenizer)."""

    spec: str
    pad_id: int

    @property
    def vocab_size(self) -> int: ...


@dataclasses.dataclass(frozen=True)
class VocabularyIds:
    """The ids a verifier takes from its vocabulary: size, padding and the T5 no/yes answer ids."""

    spec: str
    vocab_size: int
    pad_id: int
    no_id: Optional[int] = None
    yes_id: Optional[int] = None

    @classmethod
    def of(cls, vocab: Vocabulary) -> "VocabularyIds":
        """The ids of a tokenizer (or another VocabularyIds)."""
        return cls(str(vocab.spec), int(vocab.vocab_size), int(vocab.pad_id),
                   getattr(vocab, "no_id", None), getattr(vocab, "yes_id", None))


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


class VerifierModel(abc.ABC):
    """A LEVER verifier: (no, yes) logits per candidate, LEVER's loss, log P(yes) scores."""

    tokens_key: ClassVar[str] = ""
    module: nn.Module
    config: Any  # the architecture's config dataclass (T5Config, EncoderConfig)
    loss_config: LossConfig
    pretrained: Optional[str] = None  # weights `load_pretrained` reads by default

    # ------------------------------------------------------------------ architecture hooks
    @abc.abstractmethod
    def get_initial_variables(self, rng: Array, input_shapes: Mapping[str, Sequence[int]]) -> Variables:
        """Random variables {'params': ...} with nn.LogicallyPartitioned leaves (logical axes);
        `input_shapes[tokens_key]` is [P, K, L] or [B, L]. Use under jax.eval_shape to get the
        abstract tree for partitioning without allocating."""

    @abc.abstractmethod
    def _logits(self, params: Params, tokens: Array, batch: Batch, rngs: Optional[dict],
                deterministic: bool) -> Array:
        """(no, yes) logits [B, 2] of flat token rows [B, L]."""

    @abc.abstractmethod
    def _packed_logits(self, params: Params, batch: Batch, num_segments: int,
                       rngs: Optional[dict], deterministic: bool) -> Array:
        """(no, yes) logits [R, S, 2] per packed row and segment."""

    @abc.abstractmethod
    def for_vocabulary(self, vocab: Vocabulary) -> "VerifierModel":
        """The same verifier sized for `vocab` (a tokenizer or VocabularyIds). A config value left
        None is taken from the vocabulary; one that is set must agree (UserError naming the macro)."""

    @abc.abstractmethod
    def describe(self) -> str:
        """One line naming the architecture (what the model file built)."""

    @abc.abstractmethod
    def _pretrained_params(self, source: str) -> Params:
        """The parameter tree (numpy leaves) of the pretrained checkpoint `source`."""

    # ------------------------------------------------------------------ shared
    @property
    def pad_token_id(self) -> int:
        """The id padding rows carry (scoring finds each row's length with it)."""
        return int(getattr(self.config, "pad_token_id", 0) or 0)

    def _init_inputs(self, input_shapes: Mapping[str, Sequence[int]]) -> dict[str, Array]:
        if self.tokens_key not in input_shapes:
            raise KeyError(f"input_shapes needs {self.tokens_key!r}, got {sorted(input_shapes)}")
        shape = tuple(input_shapes[self.tokens_key])
        return {self.tokens_key: jnp.ones((math.prod(shape[:-1]), shape[-1]), jnp.int32)}

    def num_parameters(self, inputs_length: int = 8) -> int:
        """Number of parameters, from abstract shapes (jax.eval_shape: nothing is allocated)."""
        shapes = jax.eval_shape(lambda: self.get_initial_variables(
            jax.random.PRNGKey(0), {self.tokens_key: (1, 1, inputs_length)}))
        return int(sum(math.prod(leaf.shape) for leaf in jax.tree_util.tree_leaves(shapes)))

    def load_pretrained(self, params: Params, source: Optional[str] = None) -> Params:
        """`params` (plain arrays, e.g. a fresh init) with the weights of `source` (default: the
        model's `pretrained`) swapped in; new heads keep their init. Returns `params` unchanged
        when there is no source. Shapes must match the config (hf_import.CheckpointError)."""
        source = source or self.pretrained
        if not source:
            return params
        from lever_jax.models import hf_import

        merged = hf_import.merge_params(params, self._pretrained_params(source))
        log.info("initialised from pretrained weights: %s", source)
        return merged

    def verifier_logits(self, params: Params, batch: Batch, dropout_rng: Optional[Array] = None) -> Array:
        """float32 (no, yes) logits [P, K, 2]; dropout only when `dropout_rng` is given."""
        tokens = batch[self.tokens_key]
        if tokens.ndim != 3:
            raise ValueError(f"batch[{self.tokens_key!r}] must be [P, K, L], got {tokens.shape}")
        p, k, length = tokens.shape
        deterministic = dropout_rng is None
        rngs = None if deterministic else {"dropout": dropout_rng}
        logits = self._logits(nn.unbox(params), tokens.reshape(p * k, length), batch, rngs, deterministic)
        return logits.reshape(p, k, 2)

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
        per_segment = self._packed_logits(nn.unbox(params), batch, num_segments, rngs, deterministic)
        seq = per_segment[batch["sequence_row"], batch["sequence_segment"] - 1]  # [N, 2]
        p, k = batch["candidate_mask"].shape
        flat = jnp.zeros((p * k, 2), jnp.float32).at[batch["sequence_slot"]].set(seq, mode="drop")
        return flat.reshape(p, k, 2)

    def loss_fn(self, params: Params, batch: Batch,
                dropout_rng: Optional[Array]) -> tuple[Array, dict[str, Array]]:
        """(scalar loss, aux metrics) for LEVER's class-weighted, per-problem-averaged loss."""
        logits = self.verifier_logits(params, batch, dropout_rng)
        return verifier_loss(logits, batch["labels"], batch["candidate_mask"], self.loss_config)

    def packed_loss_fn(self, params: Params, batch: Batch, dropout_rng: Optional[Array],
                       num_segments: int) -> tuple[Array, dict[str, Array]]:
        """`loss_fn` on a packed batch: the same LEVER loss (tests/test_packing.py checks loss and
        gradients against the unpacked step)."""
        logits = self.packed_verifier_logits(params, batch, num_segments, dropout_rng)
        return verifier_loss(logits, batch["labels"], batch["candidate_mask"], self.loss_config)

    def score_batch(self, params: Params, batch: Batch) -> Array:
        """log P(yes) [P, K] float32 (2-way log-softmax; padding candidates get a value too)."""
        return jax.nn.log_softmax(self.verifier_logits(params, batch), axis=-1)[..., 1]


def fitted_vocab_size(model: VerifierModel, vocab: VocabularyIds) -> int:
    """The vocabulary size `model`'s config takes: its own (at least the vocabulary's) or the
    vocabulary's; MiniLM weights need their own WordPiece vocabulary."""
    if model.pretrained == "minilm" and vocab.spec != "minilm":
        raise UserError(f"PRETRAINED = 'minilm' needs VOCABULARY_NAME = 'minilm' (the weights' WordPiece "
                        f"vocabulary), got {vocab.spec!r}")
    config = model.config
    size = vocab.vocab_size if config.vocab_size is None else int(config.vocab_size)
    if size < vocab.vocab_size:
        raise UserError(f"the model's vocab_size {size} is smaller than vocabulary {vocab.spec!r} "
                        f"({vocab.vocab_size} ids): set VOCAB_SIZE = None in the model file")
    return size
