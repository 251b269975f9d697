"""The verifier trainer: train state, jitted sharded train step and scoring, for any model of the
`lever_jax.models.base.VerifierModel` contract (the host loop: lever_jax.training.loop).

- `TrainState` (step, params, opt_state, rng) is one pytree, sharded by the partitioner's logical
  rules (params from their logical axes, optimizer moments like their parameter, scalars
  replicated); batches are sharded on 'data' along the problem axis.
- `make_optimizer`: optax AdamW (LEVER: weight decay 0.1) on a linear warm-up then linear decay
  schedule (HF `get_linear_schedule_with_warmup`), after global-norm clipping (1.0).
- Gradient accumulation scans over `accum_steps` micro-batches inside the jitted step ('bucketed'
  batches: one jitted call per micro-batch, each cut to its own width, then the update). Micro-batch
  losses are LEVER's per-problem means; the step accumulates *sums* over problems and divides by
  the batch's number of valid problems, so accumulating is exactly the gradient of the whole
  batch's loss (tested), not a mean of micro-batch means.
- Randomness: the params come from `PRNGKey(seed)`; dropout at step s uses
  `fold_in(state.rng, s)` (and `fold_in(., m)` for micro-batch m), so resuming at step s
  replays the same dropout masks.
- `Trainer.train_step` / `Trainer.score` are `jax.jit` with NamedSharding in/out shardings,
  traced and run under `jax.set_mesh(mesh)` + `nn.logical_axis_rules(rules)`.
- `batching` (lever_jax.inputs.packing.BATCHING_MODES) says what a host batch holds: 'padded'
  and 'bucketed' are LEVER's [P, K, W] blocks (W = inputs_length, or the batch's longest rounded
  up; 'bucketed' with accum_steps > 1: [a, P / a, K, W] and each micro-batch's own width,
  `packing.bucketed_train_batch`), 'packed' the micro-batched packed rows of
  `packing.packed_train_batch` (leading axis = micro-batch, sharded on 'data' along the rows);
  the packed step scatters per-segment logits back to [P, K] and takes the same LEVER loss
  (tests/test_trainer_packing.py). Scoring (`score_tokens`) sorts candidates by length and pads
  each chunk to its own longest (rounded) unless batching is 'padded'.
"""
from __future__ import annotations

import dataclasses
import functools
import logging
from typing import Any, Mapping, Optional

import flax
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import linen as nn
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from lever_jax.inputs.packing import BATCHING_MODES, round_up, sequence_lengths
from lever_jax.models.base import VerifierModel
from lever_jax.training import partitioning

log = logging.getLogger(__name__)
Batch = Mapping[str, Any]


@flax.struct.dataclass
class TrainState:
    """Everything a step changes. `rng` is the base dropout key (fixed; folded with the step)."""

    step: jax.Array
    params: Any
    opt_state: Any
    rng: jax.Array


@dataclasses.dataclass(frozen=True)
class OptimizerConfig:
    """AdamW + linear warm-up/decay + clipping (defaults: LEVER's released configs, torch AdamW)."""

    learning_rate: float = 5e-5
    warmup_steps: int = 100
    decay_steps: Optional[int] = None  # schedule horizon; None = the run's train steps
    end_learning_rate: float = 0.0
    weight_decay: float = 0.1
    clip_norm: Optional[float] = 1.0
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8
    decay_vectors: bool = True  # decay 1-D params too (torch AdamW over model.parameters())


def make_schedule(cfg: OptimizerConfig, train_steps: int) -> optax.Schedule:
    """0 -> lr linearly over `warmup_steps`, then lr -> end_learning_rate at `decay_steps`."""
    horizon = cfg.decay_steps or train_steps
    warmup = max(0, min(cfg.warmup_steps, horizon))
    decay = optax.linear_schedule(cfg.learning_rate, cfg.end_learning_rate, max(horizon - warmup, 1))
    if warmup == 0:
        return decay
    return optax.join_schedules([optax.linear_schedule(0.0, cfg.learning_rate, warmup), decay],
                                [warmup])


def make_optimizer(cfg: OptimizerConfig, train_steps: int) -> tuple[optax.GradientTransformation,
                                                                      optax.Schedule]:
    schedule = make_schedule(cfg, train_steps)
    mask = None if cfg.decay_vectors else (lambda p: jax.tree.map(lambda x: x.ndim > 1, p))
    parts = []
    if cfg.clip_norm is not None and cfg.clip_norm > 0:
        parts.append(optax.clip_by_global_norm(cfg.clip_norm))
    parts.append(optax.adamw(schedule, b1=cfg.b1, b2=cfg.b2, eps=cfg.eps,
                             weight_decay=cfg.weight_decay, mask=mask))
    return optax.chain(*parts), schedule


# Keys of a train batch the model reads (everything else stays on the host).
def _host_value(x: jax.Array) -> np.ndarray:
    """The whole of a (possibly multi-process, data-sharded) array on this host."""
    if jax.process_count() == 1 or x.is_fully_addressable or x.is_fully_replicated:
        return np.asarray(jax.device_get(x))
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(x, tiled=True))


def model_batch_keys(model: VerifierModel, batching: str = "padded") -> tuple[str, ...]:
    if batching == "packed":
        return PACKED_KEYS
    return (model.tokens_key, "labels", "candidate_mask")


# Keys of a packed host batch (lever_jax.inputs.packing.packed_train_batch) the model reads.
PACKED_KEYS = ("packed_tokens", "segment_ids", "positions", "sequence_row", "sequence_segment",
               "sequence_slot", "labels", "candidate_mask")
# Scoring chunks (batching != 'padded') are padded to a multiple of this many tokens.
SCORE_WIDTH_MULTIPLE = 64


# Per-problem-mean metrics of verifier_loss, and the count they are averaged over.
_PROBLEM_MEANS = ("loss", "binary_acc")
_CANDIDATE_MEANS = ("candidate_acc", "mean_p_yes")
_COUNTS = ("num_problems", "num_candidates", "num_positives")


def _zero_sums() -> dict[str, jax.Array]:
    return {k: jnp.zeros((), jnp.float32) for k in _PROBLEM_MEANS + _CANDIDATE_MEANS + _COUNTS}


def _batch_loss_and_grads(grads: Any, sums: dict) -> tuple[dict, Any]:
    """Gradient and metric sums over a batch's problems -> (loss and counts, mean gradient)."""
    n = jnp.maximum(sums["num_problems"], 1.0)
    return {"loss": sums["loss"] / n, **{k: sums[k] for k in _COUNTS}}, jax.tree.map(lambda g: g / n, grads)


class Trainer:
    """Builds the sharded state and the jitted train / score steps for one model and mesh."""

    def __init__(self, model: VerifierModel, optimizer: OptimizerConfig, train_steps: int,
                 mesh: Mesh, rules: partitioning.Rules, inputs_length: int,
                 accum_steps: int = 1, dropout: bool = True, batching: str = "padded") -> None:
        if accum_steps < 1:
            raise ValueError("accum_steps must be >= 1")
        if batching not in BATCHING_MODES:
            raise ValueError(f"batching must be one of {', '.join(BATCHING_MODES)}, got {batching!r}")
        self.batching = batching
        self.score_width_multiple = SCORE_WIDTH_MULTIPLE
        self.model, self.mesh, self.rules = model, mesh, rules
        self.inputs_length, self.accum_steps, self.dropout = inputs_length, accum_steps, dropout
        self.tx, self.schedule = make_optimizer(optimizer, train_steps)
        self.keys = model_batch_keys(model, batching)
        shapes = {model.tokens_key: (1, 1, inputs_length)}
        self._init_vars = lambda rng: model.get_initial_variables(rng, shapes)
        with partitioning.mesh_context(mesh, rules):
            abstract_vars = jax.eval_shape(self._init_vars, jax.random.PRNGKey(0))
        # Outside the mesh context: unboxing abstract leaves there would try to constrain them.
        self.param_shardings = partitioning.get_param_shardings(abstract_vars, rules, mesh)["params"]
        self.abstract_params = nn.unbox(abstract_vars)["params"]
        opt_shardings = partitioning.get_opt_state_shardings(self.tx, self.abstract_params,
                                                             self.param_shardings, mesh)
        rep = partitioning.replicated(mesh)
        self.state_shardings = TrainState(step=rep, params=self.param_shardings,
                                          opt_state=opt_shardings, rng=rep)
        self.batch_sharding = partitioning.batch_sharding(mesh)
        # packed batches: [micro-batch, rows or problems, ...], rows sharded on 'data'
        self.train_batch_sharding = (NamedSharding(mesh, P(None, "data")) if batching == "packed"
                                     else self.batch_sharding)
        self._rep = rep
        self._train_steps: dict[int, Any] = {}  # num_segments (static; 0 = not packed) -> jitted step
        self._grad_fns: dict[int, Any] = {}
        self._score = partitioning.sharded_jit(
            lambda params, batch: self.model.score_batch(params, batch), mesh, rules,
            in_shardings=(self.param_shardings, self.batch_sharding), out_shardings=rep)

    # ------------------------------------------------------------------ state
    def _init_fn(self, key: jax.Array) -> TrainState:
        params = nn.unbox(self._init_vars(key))["params"]
        return TrainState(step=jnp.zeros((), jnp.int32), params=params,
                          opt_state=self.tx.init(params), rng=jax.random.fold_in(key, 0x5EED))

    def init_state(self, seed: int) -> TrainState:
        """A fresh sharded state: params from PRNGKey(seed), optimizer zeros, step 0 (one jitted
        init that writes every shard in place)."""
        with partitioning.mesh_context(self.mesh, self.rules):
            return jax.jit(self._init_fn, out_shardings=self.state_shardings)(jax.random.PRNGKey(seed))

    def abstract_state(self) -> TrainState:
        """ShapeDtypeStruct leaves carrying their shardings (for `Checkpointer.restore`)."""
        with partitioning.mesh_context(self.mesh, self.rules):
            shapes = jax.eval_shape(self._init_fn, jax.random.PRNGKey(0))
        return jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s),
                            shapes, self.state_shardings)

    # ------------------------------------------------------------------ train step
    def _micro_loss(self, params: Any, batch: Batch, rng: Optional[jax.Array],
                    num_segments: int = 0) -> tuple[jax.Array, dict]:
        """Sum (not mean) over valid problems of LEVER's per-problem loss, plus summed metrics
        (`num_segments` > 0: a packed micro-batch)."""
        if num_segments:
            loss, aux = self.model.packed_loss_fn(params, batch, rng, num_segments)
        else:
            loss, aux = self.model.loss_fn(params, batch, rng)
        n_prob, n_cand = aux["num_problems"], aux["num_candidates"]
        sums = {k: aux[k] * n_prob for k in _PROBLEM_MEANS}
        sums.update({k: aux[k] * n_cand for k in _CANDIDATE_MEANS})
        sums.update({k: aux[k] for k in _COUNTS})
        return loss * n_prob, sums

    def _grad_sums(self, params: Any, batch: Batch, step_rng: jax.Array,
                   num_segments: int = 0) -> tuple[Any, dict]:
        """(gradient of the summed loss, summed metrics) over the batch's micro-batches."""
        batch = {k: batch[k] for k in self.keys}
        grad_fn = jax.value_and_grad(
            lambda p, b, r: self._micro_loss(p, b, r, num_segments), has_aux=True)
        a = self.accum_steps
        if self.batching == "packed":
            if batch["labels"].shape[0] != a:
                raise ValueError(f"packed batch has {batch['labels'].shape[0]} micro-batches, "
                                 f"accum_steps={a}")
            micro = batch  # packing.packed_train_batch already split it: [a, ...]
        elif a > 1:
            num = batch["candidate_mask"].shape[0]
            if num % a:
                raise ValueError(f"{num} problems per batch not divisible by accum_steps={a}")
            micro_sharding = NamedSharding(self.mesh, P(None, "data"))

            def split(x: jax.Array) -> jax.Array:  # row i*a+m -> micro-batch m, row i
                x = x.reshape((num // a, a) + x.shape[1:]).swapaxes(0, 1)
                return jax.lax.with_sharding_constraint(x, micro_sharding)

            micro = jax.tree.map(split, batch)
        if a == 1:
            one = jax.tree.map(lambda x: x[0], batch) if self.batching == "packed" else batch
            (_, sums), grads = grad_fn(params, one, step_rng if self.dropout else None)
            return grads, sums
        zero_grads = jax.tree.map(jnp.zeros_like, params)
        zero_sums = _zero_sums()

        def body(carry, xs):
            acc_g, acc_s = carry
            m, mb = xs
            rng = jax.random.fold_in(step_rng, m) if self.dropout else None
            (_, s), g = grad_fn(params, mb, rng)
            return (jax.tree.map(jnp.add, acc_g, g), jax.tree.map(jnp.add, acc_s, s)), None

        (grads, sums), _ = jax.lax.scan(body, (zero_grads, zero_sums), (jnp.arange(a), micro))
        return grads, sums

    def _step(self, state: TrainState, batch: Batch, num_segments: int = 0) -> tuple[TrainState, dict]:
        step_rng = jax.random.fold_in(state.rng, state.step)
        grads, sums = self._grad_sums(state.params, batch, step_rng, num_segments)
        return self._finish(state, grads, sums)

    def _finish(self, state: TrainState, grads: Any, sums: dict) -> tuple[TrainState, dict]:
        """The optimizer update from gradient and metric sums over the batch's problems."""
        n_prob = jnp.maximum(sums["num_problems"], 1.0)
        n_cand = jnp.maximum(sums["num_candidates"], 1.0)
        grads = jax.tree.map(lambda g: g / n_prob, grads)
        updates, opt_state = self.tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        metrics = {k: sums[k] / n_prob for k in _PROBLEM_MEANS}
        metrics.update({k: sums[k] / n_cand for k in _CANDIDATE_MEANS})
        metrics.update({k: sums[k] for k in _COUNTS})
        metrics["grad_norm"] = optax.tree.norm(grads)
        metrics["learning_rate"] = self.schedule(state.step)
        new_state = state.replace(step=state.step + 1, params=params, opt_state=opt_state)
        return new_state, metrics

    def _num_segments(self, host_batch: Batch) -> int:
        if self.batching != "packed":
            return 0
        if "num_segments" not in host_batch:
            raise ValueError("batching='packed' needs packing.packed_train_batch batches (num_segments)")
        return int(host_batch["num_segments"])

    def _jitted_step(self, num_segments: int) -> Any:
        if num_segments not in self._train_steps:
            self._train_steps[num_segments] = partitioning.sharded_jit(
                lambda state, batch: self._step(state, batch, num_segments), self.mesh, self.rules,
                in_shardings=(self.state_shardings, self.train_batch_sharding),
                out_shardings=(self.state_shardings, self._rep), donate_argnums=(0,))
        return self._train_steps[num_segments]

    # ------------------------------------------------------------------ micro-batches of their own width
    def _accumulate(self, state: TrainState, acc: tuple[Any, dict], batch: Batch,
                    micro: jax.Array) -> tuple[Any, dict]:
        """`acc` plus micro-batch `micro`'s (gradient sums, metric sums): the scan body's work,
        with the scan's dropout key."""
        step_rng = jax.random.fold_in(state.rng, state.step)
        rng = jax.random.fold_in(step_rng, micro) if self.dropout else None
        grad_fn = jax.value_and_grad(lambda p: self._micro_loss(p, batch, rng), has_aux=True)
        (_, sums), grads = grad_fn(state.params)
        return jax.tree.map(jnp.add, acc, (grads, sums))

    @functools.cached_property
    def _micro_steps(self) -> tuple[Any, Any, Any]:
        """Jitted (zero sums, accumulate one micro-batch, optimizer update); the accumulation
        compiles once per micro-batch width."""
        acc_sh = (self.param_shardings, self._rep)
        zeros = lambda params: (jax.tree.map(jnp.zeros_like, params), _zero_sums())
        jit = lambda fn, ins, outs, donate: partitioning.sharded_jit(
            fn, self.mesh, self.rules, in_shardings=ins, out_shardings=outs, donate_argnums=donate)
        return (jit(zeros, (self.param_shardings,), acc_sh, ()),
                jit(self._accumulate, (self.state_shardings, acc_sh, self.batch_sharding, self._rep),
                    acc_sh, (1,)),
                jit(lambda state, acc: self._finish(state, *acc), (self.state_shardings, acc_sh),
                    (self.state_shardings, self._rep), (0,)))

    def _micro_sums(self, state: TrainState, host_batch: Batch) -> tuple[Any, dict]:
        """(gradient sums, metric sums) over a 'bucketed' batch's micro-batches, each cut to its
        own width (lever_jax.inputs.packing.bucketed_train_batch): one call per micro-batch."""
        widths = tuple(host_batch["micro_widths"])
        if len(widths) != self.accum_steps:
            raise ValueError(f"bucketed batch has {len(widths)} micro-batches, "
                             f"accum_steps={self.accum_steps}")
        zeros, accumulate, _ = self._micro_steps
        acc = zeros(state.params)
        for m in range(len(widths)):
            acc = accumulate(state, acc, self.micro_batch(host_batch, m), np.int32(m))
        return acc

    def micro_batch(self, host_batch: Batch, micro: int) -> dict[str, jax.Array]:
        """Micro-batch `micro` of a 'bucketed' batch, cut to its width, as global arrays sharded
        on 'data' along the problems."""
        local = {k: np.asarray(host_batch[k][micro]) for k in self.keys}
        key = self.model.tokens_key
        local[key] = local[key][..., :host_batch["micro_widths"][micro]]
        return partitioning.host_local_batch_to_global(local, self.mesh, self.batch_sharding)

    def _per_micro(self, host_batch: Batch) -> bool:
        return self.batching == "bucketed" and "micro_widths" in host_batch

    def loss_and_grads(self, state: TrainState, host_batch: Batch) -> tuple[dict, Any]:
        """(metrics, gradients) of LEVER's batch loss at `state`, as `train_step` computes them
        before the optimizer update (the same micro-batching, dropout keys and scaling); for
        tests that compare feeds."""
        if self._per_micro(host_batch):
            return _batch_loss_and_grads(*self._micro_sums(state, host_batch))
        segs = self._num_segments(host_batch)
        if segs not in self._grad_fns:
            def fn(state: TrainState, batch: Batch) -> tuple[dict, Any]:
                rng = jax.random.fold_in(state.rng, state.step)
                return _batch_loss_and_grads(*self._grad_sums(state.params, batch, rng, segs))

            self._grad_fns[segs] = partitioning.sharded_jit(
                fn, self.mesh, self.rules, in_shardings=(self.state_shardings, self.train_batch_sharding),
                out_shardings=(self._rep, self.param_shardings))
        return self._grad_fns[segs](state, self.device_batch(host_batch))

    def device_batch(self, host_batch: Batch) -> dict[str, jax.Array]:
        """This host's rows of a batch -> global arrays sharded on 'data' (model keys only)."""
        return partitioning.host_local_batch_to_global(
            {k: host_batch[k] for k in self.keys}, self.mesh, self.train_batch_sharding)

    def train_step(self, state: TrainState, host_batch: Batch) -> tuple[TrainState, dict]:
        """One optimizer update on this host's rows of the batch; metrics stay on device."""
        if self._per_micro(host_batch):
            _, _, update = self._micro_steps
            return update(state, self._micro_sums(state, host_batch))
        return self._jitted_step(self._num_segments(host_batch))(state, self.device_batch(host_batch))

    # ------------------------------------------------------------------ scoring
    def score_tokens(self, params: Any, tokens: np.ndarray, batch_size: int) -> np.ndarray:
        """log P(yes) of every row of `tokens` [N, L] (same on every host), in fixed-size chunks.

        `batch_size` must be a multiple of the mesh's 'data' size; the last chunk is padded.
        Unless batching is 'padded', rows are scored longest-first and each chunk is cut to its
        longest row rounded up to `score_width_multiple` (the scores do not depend on padding).
        """
        tokens = np.asarray(tokens, np.int32)
        n = tokens.shape[0]
        data = self.mesh.shape["data"]
        if batch_size % data:
            raise ValueError(f"eval batch size {batch_size} not divisible by data axis {data}")
        pad_id = self.model.pad_token_id
        if self.batching == "padded" or n == 0:
            order, lengths = np.arange(n), None
        else:
            lengths = sequence_lengths(tokens, pad_id)
            order = np.argsort(-lengths, kind="stable")
        out = np.zeros((n,), np.float32)
        rows = partitioning.host_batch_slice(batch_size)
        for start in range(0, n, batch_size):
            index = order[start:start + batch_size]
            chunk = tokens[index]
            if lengths is not None:
                width = min(tokens.shape[1], round_up(max(int(lengths[index].max()), 1),
                                                         self.score_width_multiple))
                chunk = chunk[:, :width]
            real = chunk.shape[0]
            if real < batch_size:
                chunk = np.concatenate([chunk, np.zeros((batch_size - real,) + chunk.shape[1:], np.int32)])
            local = {self.model.tokens_key: chunk[rows][:, None, :],
                     "candidate_mask": np.ones((rows.stop - rows.start, 1), bool)}
            batch = partitioning.host_local_batch_to_global(local, self.mesh, self.batch_sharding)
            scores = self._score(params, batch)
            out[index] = _host_value(scores)[:real, 0]
        return out
