"""A small verifier head trained on cached frozen-encoder features (the end-to-end run's verifier).

Input per candidate: the question vector q, the program vector p and the execution-result vector
r (lever_jax.pipeline.encoder_features), combined as [q, p, r, q*p, q*r, p*r] (`use_text`), and/or the
hand-crafted candidate features c (lever_jax.pipeline.gsm8k_features, `use_candidate_features`), with
the ablated segments zeroed (`use_program` / `use_result`), then an MLP -> (no, yes) logits. Trained with LEVER's loss
(lever_jax.models.verifier.verifier_loss: class-weighted CE averaged per problem, then over
problems), AdamW + linear warm-up/decay + global-norm clipping, on batches of problems with up to
`candidates_per_step` candidates sampled per problem. Deterministic: batch s of fold f uses
numpy Generator([seed, f, s]); dropout keys fold_in(seed, s) -- so a resumed fold is exact.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import linen as nn

from lever_jax.pipeline import gsm8k_features
from lever_jax.pipeline.encoder_features import PoolFeatures
from lever_jax.models.configs import LossConfig
from lever_jax.models.verifier import verifier_loss


@dataclasses.dataclass(frozen=True)
class HeadConfig:
    """The small per-fold verifier head on frozen features (gin-configurable; see demo.gin)."""

    hidden: int = 256
    dropout: float = 0.1
    steps: int = 1500
    problems_per_step: int = 32
    candidates_per_step: int = 16
    learning_rate: float = 1e-3
    weight_decay: float = 0.1
    warmup_steps: int = 100
    eval_every: int = 250
    use_program: bool = True
    use_result: bool = True
    use_text: bool = True  # the frozen encoder's segment vectors
    use_candidate_features: bool = False  # hand-crafted program / execution features (GSM8k)
    positive_weight: float = 1.0
    negative_weight: float = 1.0
    seed: int = 333


class HeadMLP(nn.Module):
    hidden: int
    dropout: float

    @nn.compact
    def __call__(self, x: jax.Array, deterministic: bool) -> jax.Array:
        x = nn.LayerNorm()(x)
        x = nn.gelu(nn.Dense(self.hidden)(x))
        x = nn.Dropout(self.dropout)(x, deterministic=deterministic)
        x = nn.gelu(nn.Dense(self.hidden)(x))
        x = nn.Dropout(self.dropout)(x, deterministic=deterministic)
        return nn.Dense(2)(x)


def combine(q: jax.Array, p: jax.Array, r: jax.Array, use_program: bool, use_result: bool) -> jax.Array:
    """[..., D] segment vectors -> [..., 6D] head input (ablated segments zeroed)."""
    q = jnp.broadcast_to(q, p.shape)
    p = p if use_program else jnp.zeros_like(p)
    r = r if use_result else jnp.zeros_like(r)
    return jnp.concatenate([q, p, r, q * p, q * r, p * r], axis=-1)


def head_input(config: HeadConfig, q: jax.Array, p: jax.Array, r: jax.Array, c: jax.Array) -> jax.Array:
    """The head's input per candidate: text vectors and/or candidate features (ablations applied)."""
    parts = []
    if config.use_text:
        parts.append(combine(q, p, r, config.use_program, config.use_result))
    if config.use_candidate_features:
        parts.append(c * jnp.asarray(gsm8k_features.ablation_mask(config.use_program, config.use_result)))
    if not parts:
        raise ValueError("HeadConfig: use_text and use_candidate_features are both False (no input)")
    return jnp.concatenate(parts, axis=-1)


class HeadTrainer:
    """Train / score the head on any rows of a pool's features (a crossfit.StepTrainer, as FinetuneTrainer)."""

    def __init__(self, config: HeadConfig, features: PoolFeatures, labels: np.ndarray, mask: np.ndarray) -> None:
        self.config = config
        self.f = features
        if config.use_candidate_features and features.candidate is None:
            raise ValueError("HeadConfig.use_candidate_features needs PoolFeatures.candidate "
                             "(lever_jax.pipeline.gsm8k_features.pool_candidate_features)")
        width = gsm8k_features.NUM_FEATURES
        self._cand = features.candidate if features.candidate is not None else \
            np.zeros((*labels.shape, width), np.float32)
        self.labels = labels.astype(np.int32)
        self.mask = mask.astype(bool)
        self.module = HeadMLP(config.hidden, config.dropout)
        self.loss_config = LossConfig(config.positive_weight, config.negative_weight)
        dim = features.question.shape[-1]
        schedule = optax.join_schedules(
            [optax.linear_schedule(0.0, config.learning_rate, max(config.warmup_steps, 1)),
             optax.linear_schedule(config.learning_rate, 0.0, max(config.steps - config.warmup_steps, 1))],
            [max(config.warmup_steps, 1)])
        self.tx = optax.chain(optax.clip_by_global_norm(1.0),
                              optax.adamw(schedule, weight_decay=config.weight_decay))
        self._dim = dim
        cfg = config

        def logits(params, q, p, r, c, rng):
            x = head_input(cfg, q[:, None, :], p, r, c)
            rngs = None if rng is None else {"dropout": rng}
            return self.module.apply({"params": params}, x, rng is None, rngs=rngs)

        def train_step(state, q, p, r, c, y, m, rng):
            params, opt = state

            def loss(params):
                return verifier_loss(logits(params, q, p, r, c, rng), y, m, self.loss_config)

            (value, aux), grads = jax.value_and_grad(loss, has_aux=True)(params)
            updates, opt = self.tx.update(grads, opt, params)
            return (optax.apply_updates(params, updates), opt), aux

        self._train_step = jax.jit(train_step)
        self._score = jax.jit(lambda params, q, p, r, c: jax.nn.log_softmax(logits(params, q, p, r, c, None))[..., 1])
        self._eval_loss = jax.jit(lambda params, q, p, r, c, y, m: verifier_loss(
            logits(params, q, p, r, c, None), y, m, self.loss_config)[1])

    def init_state(self) -> Any:
        d = self._dim
        x = head_input(self.config, jnp.zeros((1, 1, d)), jnp.zeros((1, 1, d)), jnp.zeros((1, 1, d)),
                       jnp.zeros((1, 1, self._cand.shape[-1])))
        params = self.module.init(jax.random.PRNGKey(self.config.seed), x, True)["params"]
        return (params, self.tx.init(params))

    def batch(self, rows: np.ndarray, fold: int, step: int) -> tuple[np.ndarray, ...]:
        """Problems and candidate subsets for training step ``step`` (deterministic)."""
        cfg = self.config
        rng = np.random.default_rng([cfg.seed, fold, step])
        pick = rng.choice(rows, size=min(cfg.problems_per_step, len(rows)), replace=False)
        k = cfg.candidates_per_step
        cols = np.zeros((len(pick), k), np.int64)
        valid = np.zeros((len(pick), k), bool)
        for i, row in enumerate(pick):
            real = np.flatnonzero(self.mask[row])
            chosen = rng.permutation(real)[:k]
            cols[i, :len(chosen)] = chosen
            valid[i, :len(chosen)] = True
        pad = cfg.problems_per_step - len(pick)
        if pad:
            pick = np.concatenate([pick, np.repeat(pick[:1], pad)])
            cols = np.concatenate([cols, np.zeros((pad, k), np.int64)])
            valid = np.concatenate([valid, np.zeros((pad, k), bool)])
        rr = pick[:, None]
        return (self.f.question[pick], self.f.program[rr, cols], self.f.result[rr, cols],
                self._cand[rr, cols], self.labels[rr, cols], valid)

    def train(self, state: Any, rows: np.ndarray, fold: int, start: int, stop: int,
              on_step: Optional[Callable[[int, dict], None]] = None) -> Any:
        key = jax.random.PRNGKey(self.config.seed)
        for step in range(start, stop):
            q, p, r, c, y, m = self.batch(rows, fold, step)
            state, aux = self._train_step(state, q, p, r, c, y, m, jax.random.fold_in(key, step))
            if on_step is not None:
                on_step(step + 1, aux)
        return state

    def score(self, params: Any, rows: np.ndarray, chunk: int = 256) -> np.ndarray:
        """log P(yes) float32 [len(rows), N] (padding candidates get a value too)."""
        out = []
        for start in range(0, len(rows), chunk):
            sel = rows[start:start + chunk]
            out.append(np.asarray(self._score(params, self.f.question[sel], self.f.program[sel],
                                              self.f.result[sel], self._cand[sel])))
        width = self.mask.shape[1]
        return np.concatenate(out) if out else np.zeros((0, width), np.float32)

    def eval_metrics(self, params: Any, rows: np.ndarray) -> dict[str, float]:
        aux = self._eval_loss(params, self.f.question[rows], self.f.program[rows], self.f.result[rows],
                              self._cand[rows], self.labels[rows], self.mask[rows])
        return {k: float(v) for k, v in aux.items()}
