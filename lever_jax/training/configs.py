"""The grouped, gin-bound settings of `lever-jax train` / `lever-jax eval` (t5x-style configs).

`train(...)` and `evaluate(...)` (lever_jax.training.runs) take these groups instead of dozens of
flat keyword arguments; a group left unset is built from its gin bindings (``TrainDataConfig.task
= ...`` in gin_configs/runs/train.gin), so a gin file binds each setting once under the group
that owns it:

  TrainDataConfig   what trains and what selects checkpoints (task names or executed files,
                    lengths, batch shape, feed, gold programs)
  EvalDataConfig    what `eval` scores
  TrainLoopConfig   seed, accumulation, dropout, logging / dev-evaluation periods, init weights
  CheckpointConfig  saving and selecting checkpoints (period, how many kept, the ranking metric)
  ScoringConfig     scoring candidates (dev evaluation in training, `eval`): batch size, P_LM norm
  PartitionConfig   the device mesh and its logical-axis rules

`MOVED` maps every binding these groups replaced to its new name: gin_checks turns a binding of
an old name into one line, "train.train_task moved: bind TrainDataConfig.task instead".
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Optional

import gin

from lever_jax.data.errors import UserError
from lever_jax.training import partitioning

_MODULE = "lever_jax.training.configs"


def _inputs_length(task_feature_lengths: Optional[Mapping[str, int]], inputs_length: Optional[int],
                   owner: str) -> int:
    if inputs_length is not None:
        return int(inputs_length)
    if task_feature_lengths and "inputs" in task_feature_lengths:
        return int(task_feature_lengths["inputs"])
    raise UserError(f"set TASK_FEATURE_LENGTHS = {{'inputs': L, 'targets': 1}} (task file) or {owner}.inputs_length")


def check_batching(batching: str, owner: str) -> None:
    """`batching` is one of lever_jax.inputs.packing.BATCHING_MODES, else one UserError."""
    from lever_jax.inputs.packing import BATCHING_MODES

    if batching not in BATCHING_MODES:
        raise UserError(f"{owner}.batching must be one of {', '.join(BATCHING_MODES)}, got {batching!r}")


@gin.configurable(module=_MODULE)
@dataclasses.dataclass(frozen=True)
class TrainDataConfig:
    """Training and dev data. ``task`` / ``file``: a registered task name or an executed file (one
    of them); ``dev_task`` / ``dev_file`` select checkpoints (neither: a seeded ``dev_fraction``
    slice of the training problems). ``data_dir``: where task names are looked up first (default:
    gin ``discover_specs.data_dir`` / ``$LEVER_JAX_DATA_DIR``, then the bundled pools).
    ``batching``: 'packed' | 'bucketed' | 'padded' (gin_configs/runs/train.gin explains them);
    ``pipeline``: 'numpy' | 'seqio'; ``add_gold`` / ``gold_mode``: LEVER's gold programs."""

    task: Optional[str] = None
    file: Optional[str] = None
    dev_task: Optional[str] = None
    dev_file: Optional[str] = None
    dev_fraction: float = 0.1
    task_feature_lengths: Optional[Mapping[str, int]] = None
    inputs_length: Optional[int] = None
    problems_per_batch: int = 1
    candidates_per_problem: int = 5
    batching: str = "packed"
    pipeline: str = "numpy"
    add_gold: bool = False
    gold_mode: str = "execute"
    max_problems: Optional[int] = None
    max_dev_problems: Optional[int] = None
    data_dir: Optional[str] = None

    @property
    def length(self) -> int:
        """Tokens per candidate (``inputs_length``, else TASK_FEATURE_LENGTHS['inputs'])."""
        return _inputs_length(self.task_feature_lengths, self.inputs_length, "TrainDataConfig")


@gin.configurable(module=_MODULE)
@dataclasses.dataclass(frozen=True)
class EvalDataConfig:
    """What `lever-jax eval` scores: a task name or an executed file (one of them), the lengths,
    at most ``max_problems`` problems, and how scoring chunks are cut (``batching`` other than
    'padded': length-sorted chunks cut to their longest row)."""

    task: Optional[str] = None
    file: Optional[str] = None
    task_feature_lengths: Optional[Mapping[str, int]] = None
    inputs_length: Optional[int] = None
    max_problems: Optional[int] = None
    data_dir: Optional[str] = None
    batching: str = "packed"

    @property
    def length(self) -> int:
        """Tokens per candidate (``inputs_length``, else TASK_FEATURE_LENGTHS['inputs'])."""
        return _inputs_length(self.task_feature_lengths, self.inputs_length, "EvalDataConfig")


@gin.configurable(module=_MODULE)
@dataclasses.dataclass(frozen=True)
class TrainLoopConfig:
    """The host loop: ``seed`` (params, data order, dropout), ``accum_steps`` micro-batches per
    step, ``dropout``, a metrics line every ``log_every`` steps, a dev evaluation every
    ``eval_every`` steps (None: every checkpoint period), a progress bar, and ``init_params``
    (pretrained weights; overrides the model file's PRETRAINED)."""

    seed: int = 333
    accum_steps: int = 1
    dropout: bool = True
    log_every: int = 10
    eval_every: Optional[int] = None
    progress_bar: bool = True
    init_params: Optional[str] = None


@gin.configurable(module=_MODULE)
@dataclasses.dataclass(frozen=True)
class CheckpointConfig:
    """Checkpoints: saved every ``every`` steps and at every dev evaluation; the ``keep_latest``
    newest and the ``keep_best`` best by ``best_metric`` (a dev metric) are kept; `eval` restores
    the best by the same metric. ``async_save``: orbax writes in the background."""

    every: int = 1000
    keep_latest: int = 2
    keep_best: int = 1
    best_metric: str = "summing_agg_rerank_acc"
    async_save: bool = False


@gin.configurable(module=_MODULE)
@dataclasses.dataclass(frozen=True)
class ScoringConfig:
    """Scoring candidates (dev evaluation and `eval`): ``batch_size`` candidates per chunk (a
    multiple of the mesh's 'data' size) and the P_LM normalisation (None: LEVER's per dataset)."""

    batch_size: int = 32
    gen_normalize: Optional[str] = None


@gin.configurable(module=_MODULE)
@dataclasses.dataclass(frozen=True)
class PartitionConfig:
    """The ('data', 'model') mesh over all devices and the logical-axis rules of ``strategy``
    ('data' | 'model' | 'fsdp': lever_jax.training.partitioning.RULES)."""

    strategy: str = "data"
    model_parallel: int = 1

    def mesh_and_rules(self) -> tuple[Any, Any]:
        """(mesh, rules) for the Trainer."""
        return (partitioning.make_mesh(data=-1, model=self.model_parallel),
                partitioning.logical_axis_rules(self.strategy))


def _moves(old: str, new: str, names: str) -> dict[str, str]:
    """``{old.a: new.b}`` for 'a' / 'a:b' entries of ``names``."""
    pairs = (n.split(":") if ":" in n else (n, n) for n in names.split())
    return {f"{old}.{a}": f"{new}.{b}" for a, b in pairs}


# Old flat bindings -> the group field that replaced them (gin_checks reports a binding of one).
MOVED: dict[str, str] = {
    **_moves("train", "TrainDataConfig", "train_task:task train_file:file dev_task dev_file dev_fraction "
             "task_feature_lengths inputs_length problems_per_batch candidates_per_problem batching pipeline "
             "add_gold gold_mode max_train_problems:max_problems max_eval_problems:max_dev_problems data_dir"),
    **_moves("train", "TrainLoopConfig", "seed accum_steps dropout log_every eval_every progress_bar init_params"),
    **_moves("train", "CheckpointConfig", "checkpoint_every:every keep_checkpoints:keep_latest keep_best "
             "best_metric async_checkpoints:async_save"),
    **_moves("train", "ScoringConfig", "eval_batch_size:batch_size gen_normalize"),
    **_moves("evaluate", "EvalDataConfig", "eval_task:task eval_file:file task_feature_lengths inputs_length "
             "max_eval_problems:max_problems data_dir batching"),
    **_moves("evaluate", "CheckpointConfig", "best_metric"),
    **_moves("evaluate", "ScoringConfig", "eval_batch_size:batch_size gen_normalize"),
    **_moves("make_partitioning", "PartitionConfig", "strategy model_parallel"),
}
