"""A fine-tuned MiniLM verifier that reads question + program + execution result, within a CPU budget.

`RunConfig.verifier = 'finetune'` (gin_configs/runs/finetune_minilm.gin). Per candidate, LEVER's
verifier reads ``question | program | result``; here:

1. **Frozen lower layers, cached once.** The pretrained all-MiniLM-L6-v2's bottom
   `frozen_layers` layers encode every distinct question, program (comments stripped, tail kept)
   and execution result once, as separate segments (``[CLS] ... [SEP]`` each, own positions),
   in length-bucketed batches (lever_jax.inputs.packing.bucket). The hidden states (float16,
   ragged) are cached under DIR/finetune_cache/ and shared by every fold and run
   (lever_jax.pipeline.finetune_states).
2. **Fine-tuned top layers + head, packed.** The top ``6 - frozen_layers`` pretrained layers (and a
   head) are trained per fold on the concatenated cached states of question, program and
   result. Packing without padding FLOPs: a problem's candidates share one copy of its question
   in a row (*prefix sharing*); question tokens attend to the question only, each candidate's
   program/result tokens attend to the question and to their own candidate (block-diagonal
   otherwise), so a candidate's output does not depend on what else shares its row
   (tests/test_finetune.py). Several problems' groups are packed into rows of `row_len` tokens
   (first-fit-decreasing). Mean-pooled question, program and result vectors feed
   lever_jax.pipeline.head's head input (text [q, p, r, q*p, q*r, p*r] and/or the hand-crafted
   candidate features) and MLP. Loss: LEVER's (models.verifier.verifier_loss).
3. Folds, dev-loss checkpoint selection, resumption and scoring are the cross-fitting loop's
   (lever_jax.pipeline.crossfit: this trainer is a StepTrainer, like HeadTrainer); the run builds
   it per pool in lever_jax.pipeline.verifiers.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import linen as nn

from lever_jax.pipeline import gsm8k_features
from lever_jax.models.configs import LossConfig, encoder_config
from lever_jax.models.encoder import EncoderLayer
from lever_jax.models.layers import NEG_INF, segment_mean
from lever_jax.models.verifier import verifier_loss
from lever_jax.pipeline.finetune_states import PoolStates
from lever_jax.pipeline.head import HeadConfig, HeadMLP, head_input

TOTAL_LAYERS = 6  # all-MiniLM-L6-v2


@dataclasses.dataclass(frozen=True)
class FinetuneConfig:
    """Fine-tuned MiniLM verifier settings (gin-configurable; see finetune_minilm.gin)."""

    frozen_layers: int = 5  # bottom layers cached once; the other 6 - frozen_layers are trained
    question_len: int = 96
    program_len: int = 128
    result_len: int = 16
    strip_comments: bool = True
    row_len: int = 512  # packed row length (tokens)
    max_candidates_per_row: int = 16
    max_groups_per_row: int = 4
    steps: int = 200
    problems_per_step: int = 8
    candidates_per_step: int = 4
    learning_rate: float = 1e-4  # top layers
    head_learning_rate: float = 1e-3
    weight_decay: float = 0.01
    warmup_steps: int = 20
    eval_every: int = 100
    dropout: float = 0.1
    hidden: int = 256
    use_text: bool = True
    use_candidate_features: bool = False
    use_program: bool = True
    use_result: bool = True
    # Boosting (not LEVER's method): add the features-only head's cross-fitted log-odds to the
    # yes-logit, so the text tower learns the residual (lever_jax.pipeline.features_offset).
    offset_features_head: bool = False
    offset_inner_folds: int = 5
    # Spider / WikiTQ (not LEVER's input): the database schema after the question, in the question
    # segment (its head is kept, so a long schema is cut, never the question).
    schema_in_question: bool = False
    positive_weight: float = 1.0
    negative_weight: float = 1.0
    encode_batch_size: int = 32
    score_rows: int = 16  # packed rows per scoring / dev-evaluation call
    seed: int = 333

    def cache_key(self, part: str, max_len: int, keep: str) -> str:
        """What a cached segment's states depend on besides its text: the frozen depth and that
        segment's own length and side (changing result_len re-encodes the results only)."""
        return f"L{self.frozen_layers}|{part}|{max_len}|{keep}"

    def training_key(self) -> dict[str, Any]:
        """The settings that name a fold directory (the offset and schema options only when on, so
        fold directories written before they existed keep their names)."""
        doc = dataclasses.asdict(self)
        if not self.offset_features_head:
            doc.pop("offset_features_head")
            doc.pop("offset_inner_folds")
        if not self.schema_in_question:
            doc.pop("schema_in_question")
        return doc

    def head_config(self) -> HeadConfig:
        return HeadConfig(hidden=self.hidden, dropout=self.dropout, use_program=self.use_program,
                          use_result=self.use_result, use_text=self.use_text,
                          use_candidate_features=self.use_candidate_features)


# --------------------------------------------------------------------------- 2 packed rows
@dataclasses.dataclass(frozen=True)
class Rows:
    """Packed rows of cached states with prefix-shared questions (see the module docstring)."""

    states: np.ndarray  # float16 [R, L, H]
    group: np.ndarray  # int32 [R, L]: 1.. problem group within the row (0 = padding)
    cand: np.ndarray  # int32 [R, L]: 1.. candidate within the row, 0 for question tokens
    part: np.ndarray  # int32 [R, L]: 1 question, 2 program, 3 result, 0 padding
    cand_group: np.ndarray  # int32 [R, C]: group of candidate c + 1 (0 = none)
    seq_row: np.ndarray  # int32 [N]
    seq_cand: np.ndarray  # int32 [N]: 1-based candidate within its row
    seq_slot: np.ndarray  # int32 [N]: flat p * K + k in the [P, K] batch (P * K = padding)


def _groups(pieces: list[tuple[int, int]], q_len: int, row_len: int, max_cands: int) -> list[list[int]]:
    """Split one problem's candidates (piece lengths) into groups that fit a row with the question."""
    groups: list[list[int]] = []
    used = row_len
    for i, (plen, rlen) in enumerate(pieces):
        if used + plen + rlen > row_len or len(groups[-1]) >= max_cands:
            groups.append([])
            used = q_len
        groups[-1].append(i)
        used += plen + rlen
    return groups


def _first_fit(groups: Sequence[tuple[int, int, Sequence[int]]], cfg: FinetuneConfig) -> list[list[int]]:
    """First-fit-decreasing of (length, problem, candidates) groups into rows of ``cfg.row_len``
    tokens, at most ``max_groups_per_row`` groups and ``max_candidates_per_row`` candidates each;
    returns each row's group indices."""
    rows: list[list[int]] = []
    room: list[int] = []
    n_cands: list[int] = []
    for gi in sorted(range(len(groups)), key=lambda gi: -groups[gi][0]):
        length, _, g = groups[gi]
        for r in range(len(rows)):
            if (room[r] >= length and len(rows[r]) < cfg.max_groups_per_row
                    and n_cands[r] + len(g) <= cfg.max_candidates_per_row):
                break
        else:
            rows.append([]), room.append(cfg.row_len), n_cands.append(0)
            r = len(rows) - 1
        rows[r].append(gi)
        room[r] -= length
        n_cands[r] += len(g)
    return rows


def build_rows(pool: PoolStates, config: FinetuneConfig, problem_rows: Sequence[int],
               cols: Sequence[Sequence[int]], k: int, num_rows: Optional[int] = None) -> Rows:
    """Pack candidates `cols[i]` of problems `problem_rows[i]` (slot i * k + j)."""
    cfg = config
    groups = []  # (length, problem position i, [candidate positions j])
    for i, (b, cs) in enumerate(zip(problem_rows, cols)):
        q_len = pool.question.length(b)
        pieces = [(pool.program.length(pool.program_index[b, n]) if cfg.use_program else 0,
                   pool.result.length(pool.result_index[b, n]) if cfg.use_result else 0) for n in cs]
        for g in _groups(pieces, q_len, cfg.row_len, cfg.max_candidates_per_row):
            groups.append((q_len + sum(sum(pieces[j]) for j in g), i, g))
    rows = _first_fit(groups, cfg)
    n_rows = max(len(rows), 1) if num_rows is None else num_rows
    if n_rows < len(rows):
        raise ValueError(f"packing needs {len(rows)} rows, more than num_rows={n_rows}")
    length, hidden = cfg.row_len, pool.question.data.shape[1]
    out = Rows(np.zeros((n_rows, length, hidden), np.float16), *(np.zeros((n_rows, length), np.int32)
                                                                 for _ in range(3)),
               np.zeros((n_rows, cfg.max_candidates_per_row), np.int32),
               *(np.zeros(len(cols) * k, np.int32) for _ in range(2)),
               np.full(len(cols) * k, len(cols) * k, np.int32))
    seq = 0
    for r, members in enumerate(rows):
        pos, cand = 0, 0
        for gnum, gi in enumerate(members, start=1):
            _, i, g = groups[gi]
            b = problem_rows[i]

            def put(x: np.ndarray, part: int, c: int) -> None:
                nonlocal pos
                out.states[r, pos:pos + len(x)] = x
                out.group[r, pos:pos + len(x)] = gnum
                out.cand[r, pos:pos + len(x)] = c
                out.part[r, pos:pos + len(x)] = part
                pos += len(x)

            put(pool.question[b], 1, 0)
            for j in g:
                cand += 1
                n = cols[i][j]
                if cfg.use_program:
                    put(pool.program[pool.program_index[b, n]], 2, cand)
                if cfg.use_result:
                    put(pool.result[pool.result_index[b, n]], 3, cand)
                out.cand_group[r, cand - 1] = gnum
                out.seq_row[seq], out.seq_cand[seq], out.seq_slot[seq] = r, cand, i * k + j
                seq += 1
    return out


def attention_bias(group: jax.Array, cand: jax.Array) -> jax.Array:
    """[R, L] ids -> additive [R, 1, L, L]: same group, and the key is question or own candidate."""
    same = group[:, :, None] == group[:, None, :]
    own = (cand[:, None, :] == 0) | (cand[:, None, :] == cand[:, :, None])
    keep = same & own & (group[:, None, :] > 0)
    return jnp.where(keep[:, None], 0.0, NEG_INF).astype(jnp.float32)


# --------------------------------------------------------------------------- 3 model + trainer
class TopVerifier(nn.Module):
    """Top MiniLM layers over packed cached states + lever_jax.pipeline.head's head."""

    first_layer: int
    head: HeadConfig
    dropout: float
    num_candidates: int  # C per row
    num_groups: int

    @nn.compact
    def __call__(self, states, group, cand, part, cand_group, seq_row, seq_cand, feats,
                 deterministic: bool) -> jax.Array:
        cfg = encoder_config("minilm", dropout_rate=self.dropout)
        x = states.astype(jnp.float32)
        bias = attention_bias(group, cand)
        for i in range(self.first_layer, TOTAL_LAYERS):
            x = EncoderLayer(cfg, name=f"layers_{i}")(x, bias, deterministic)
        c = self.num_candidates
        q = segment_mean(x, jnp.where(part == 1, group, 0), self.num_groups)  # [R, G, H]
        p = segment_mean(x, jnp.where(part == 2, cand, 0), c)  # [R, C, H]
        r = segment_mean(x, jnp.where(part == 3, cand, 0), c)
        q_c = jnp.take_along_axis(q, jnp.maximum(cand_group - 1, 0)[..., None], axis=1)  # [R, C, H]
        pick = lambda a: a[seq_row, seq_cand - 1]  # [N, H]
        inputs = head_input(self.head, pick(q_c), pick(p), pick(r), feats)
        return HeadMLP(self.head.hidden, self.head.dropout, name="head")(inputs, deterministic)


class FinetuneTrainer:
    """Train / score the top layers + head per fold (a crossfit.StepTrainer, like HeadTrainer)."""

    def __init__(self, config: FinetuneConfig, pool: PoolStates, labels: np.ndarray, mask: np.ndarray,
                 cand_features: Optional[np.ndarray] = None) -> None:
        if not 0 <= config.frozen_layers <= TOTAL_LAYERS:
            raise ValueError(f"FinetuneConfig.frozen_layers must be in 0..{TOTAL_LAYERS}")
        if config.use_candidate_features and cand_features is None:
            raise ValueError("FinetuneConfig.use_candidate_features needs the candidate features")
        self.config = config
        self.pool = pool
        self.labels = labels.astype(np.int32)
        self.mask = mask.astype(bool)
        self.cand = cand_features if cand_features is not None else \
            np.zeros((*labels.shape, gsm8k_features.NUM_FEATURES), np.float32)
        self.offset = np.zeros(labels.shape, np.float32)  # yes-logit offset [B, N] (set_offset)
        self.loss_config = LossConfig(config.positive_weight, config.negative_weight)
        self.module = TopVerifier(config.frozen_layers, config.head_config(), config.dropout,
                                  config.max_candidates_per_row, config.max_groups_per_row)
        cfg = config

        def schedule(peak: float):
            return optax.join_schedules(
                [optax.linear_schedule(0.0, peak, max(cfg.warmup_steps, 1)),
                 optax.linear_schedule(peak, 0.0, max(cfg.steps - cfg.warmup_steps, 1))],
                [max(cfg.warmup_steps, 1)])

        label_fn = lambda params: {k: "head" if k == "head" else "encoder" for k in params}
        self.tx = optax.chain(optax.clip_by_global_norm(1.0), optax.multi_transform(
            {"encoder": optax.adamw(schedule(cfg.learning_rate), weight_decay=cfg.weight_decay),
             "head": optax.adamw(schedule(cfg.head_learning_rate), weight_decay=cfg.weight_decay)},
            label_fn))

        def logits(params, b, rng):
            rngs = None if rng is None else {"dropout": rng}
            out = self.module.apply({"params": params}, b["states"], b["group"], b["cand"], b["part"],
                                    b["cand_group"], b["seq_row"], b["seq_cand"], b["feats"],
                                    rng is None, rngs=rngs)
            return out.at[:, 1].add(b["offset"]) if cfg.offset_features_head else out

        def pk_logits(params, b, rng):
            p, k = b["labels"].shape
            flat = jnp.zeros((p * k, 2), jnp.float32).at[b["seq_slot"]].set(
                logits(params, b, rng).astype(jnp.float32), mode="drop")
            return flat.reshape(p, k, 2)

        def loss(params, b, rng):
            return verifier_loss(pk_logits(params, b, rng), b["labels"], b["mask"], self.loss_config)

        def train_step(state, b, rng):
            params, opt = state
            (_, aux), grads = jax.value_and_grad(loss, has_aux=True)(params, b, rng)
            updates, opt = self.tx.update(grads, opt, params)
            return (optax.apply_updates(params, updates), opt), aux

        self._loss = jax.jit(lambda params, b: loss(params, b, None))
        self._train_step = jax.jit(train_step)
        self._logits = jax.jit(lambda params, b: logits(params, b, None))

    # ----------------------------------------------------------------------- batches
    def _batch(self, problem_rows: Sequence[int], cols: Sequence[Sequence[int]], k: int,
               num_rows: Optional[int] = None) -> dict[str, np.ndarray]:
        rows = build_rows(self.pool, self.config, problem_rows, cols, k, num_rows)
        labels = np.zeros((len(cols), k), np.int32)
        mask = np.zeros((len(cols), k), bool)
        feats = np.zeros((len(rows.seq_slot), self.cand.shape[-1]), np.float32)
        for i, (b, cs) in enumerate(zip(problem_rows, cols)):
            labels[i, :len(cs)] = self.labels[b, cs]
            mask[i, :len(cs)] = True
        valid = rows.seq_slot < len(cols) * k
        pb = np.asarray(problem_rows)[rows.seq_slot[valid] // k]
        pn = np.array([cols[s // k][s % k] for s in rows.seq_slot[valid]], np.int64)
        feats[valid] = self.cand[pb, pn]
        offset = np.zeros(len(rows.seq_slot), np.float32)
        offset[valid] = self.offset[pb, pn]
        return {**dataclasses.asdict(rows), "labels": labels, "mask": mask, "feats": feats, "offset": offset}

    def set_offset(self, offset: np.ndarray) -> None:
        """The yes-logit offset [B, N] of the fold about to be trained / scored (offset_features_head)."""
        if offset.shape != self.labels.shape:
            raise ValueError(f"offset shape {offset.shape} != pool shape {self.labels.shape}")
        self.offset = offset.astype(np.float32)

    def batch(self, rows: np.ndarray, fold: int, step: int) -> dict[str, np.ndarray]:
        """Training batch of step `step` (deterministic: Generator([seed, fold, step]))."""
        cfg = self.config
        rng = np.random.default_rng([cfg.seed, fold, step])
        pick = rng.choice(rows, size=min(cfg.problems_per_step, len(rows)), replace=False)
        cols = [rng.permutation(np.flatnonzero(self.mask[b]))[:cfg.candidates_per_step] for b in pick]
        k = cfg.candidates_per_step
        b = self._batch(pick, cols, k)
        need = b["states"].shape[0]
        return self._batch(pick, cols, k, num_rows=need + 1) if need % 2 else b

    def init_state(self) -> Any:
        cfg = self.config
        b = self._batch([0], [np.flatnonzero(self.mask[0])[:1]], 1)
        params = nn.unbox(self.module.init(jax.random.PRNGKey(cfg.seed), *(b[k] for k in (
            "states", "group", "cand", "part", "cand_group", "seq_row", "seq_cand", "feats")), True)["params"])
        from lever_jax.models import hf_import

        _, loaded = hf_import.load_minilm()
        top = {k: v for k, v in loaded.items() if k.startswith("layers_") and int(k.split("_")[1]) >= cfg.frozen_layers}
        params = hf_import.merge_params(params, top)
        params = jax.tree_util.tree_map(jnp.asarray, params)
        return (params, self.tx.init(params))

    def train(self, state: Any, rows: np.ndarray, fold: int, start: int, stop: int,
              on_step: Optional[Callable[[int, dict], None]] = None) -> Any:
        key = jax.random.PRNGKey(self.config.seed)
        for step in range(start, stop):
            state, aux = self._train_step(state, self.batch(rows, fold, step), jax.random.fold_in(key, step))
            if on_step is not None:
                on_step(step + 1, aux)
        return state

    def _all_candidate_batches(self, rows: np.ndarray, per_call: int = 8):
        """Every valid candidate of `rows`, `per_call` problems at a time (fixed row counts)."""
        for start in range(0, len(rows), per_call):
            sel = rows[start:start + per_call]
            cols = [np.flatnonzero(self.mask[b]) for b in sel]
            k = self.mask.shape[1]
            b = self._batch(sel, cols, k)
            need = b["states"].shape[0]
            size = -(-need // 4) * 4
            yield sel, cols, (b if size == need else self._batch(sel, cols, k, num_rows=size))

    def score(self, params: Any, rows: np.ndarray) -> np.ndarray:
        """log P(yes) float32 [len(rows), N] (-inf where there is no candidate)."""
        out = np.full((len(rows), self.mask.shape[1]), -np.inf, np.float32)
        pos = {int(b): i for i, b in enumerate(rows)}
        for sel, cols, b in self._all_candidate_batches(rows):
            logp = np.asarray(jax.nn.log_softmax(self._logits(params, b), axis=-1)[:, 1])
            k = b["labels"].shape[1]
            for s, v in zip(b["seq_slot"], logp):
                if s < len(sel) * k:
                    out[pos[int(sel[s // k])], cols[s // k][s % k]] = v
        return out

    def eval_metrics(self, params: Any, rows: np.ndarray) -> dict[str, float]:
        """LEVER's loss and binary accuracy on every candidate of `rows` (problem-weighted)."""
        totals: dict[str, float] = {}
        n = 0.0
        for sel, _, b in self._all_candidate_batches(rows):
            aux = self._loss(params, b)[1]
            w = float(aux["num_problems"])
            for key in ("loss", "binary_acc"):
                totals[key] = totals.get(key, 0.0) + float(aux[key]) * w
            n += w
        return {k: v / max(n, 1.0) for k, v in totals.items()}
