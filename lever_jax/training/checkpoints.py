"""Orbax checkpointing of the train state, data position and RNG.

Owned by the trainer.

One `ocp.CheckpointManager` per model directory (`MODEL_DIR/checkpoints/<step>/`), each step a
Composite of two items:
  state  the TrainState pytree (params, optimizer state, step, RNG key), `StandardSave`;
  data   a JSON dict: the input position (the batcher is a pure function of the step, so the
         step and the seed are the position), the RNG key as integers, and the run's seed.
Preservation: the `keep_latest` newest steps (what resuming needs) plus the `keep_best` steps
with the highest dev metric (`best_fn` over the eval metrics saved with the step; steps saved
without metrics are only kept while among the latest). Restoring takes an abstract tree whose
leaves are `jax.ShapeDtypeStruct(shape, dtype, sharding=...)`, so every array is read straight
into its (possibly multi-host) sharded layout.

MODEL_DIR may be a URL (``gs://bucket/run``): orbax reads and writes it through etils ``epath``
(fsspec/gcsfs) and tensorstore, both set up by :func:`lever_jax.data.paths.configure_remote`. On
GCS orbax marks a finished step with ``commit_success.txt`` instead of a rename, so a step that a
kill interrupts is never taken for the latest.
"""
from __future__ import annotations

import logging
import os
from typing import Any, Callable, Mapping, Optional

import jax
import numpy as np
import orbax.checkpoint as ocp

from lever_jax.data import paths

log = logging.getLogger(__name__)

CHECKPOINT_SUBDIR = "checkpoints"
STATE_ITEM = "state"
DATA_ITEM = "data"


def _json_number(value: Any) -> Any:
    """Plain python scalars for orbax's JSON metric/data files."""
    if isinstance(value, (np.generic, np.ndarray, jax.Array)):
        arr = np.asarray(value)
        return arr.tolist()
    return value


def abstract_like(tree: Any, shardings: Any = None) -> Any:
    """`jax.ShapeDtypeStruct` leaves (with `shardings` when given) for `StandardRestore`."""
    if shardings is None:
        return jax.tree.map(
            lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=getattr(x, "sharding", None)),
            tree)
    return jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s),
                        tree, shardings)


def checkpoint_directory(model_dir: str | os.PathLike) -> Any:
    """``MODEL_DIR/checkpoints`` as orbax wants it: an absolute :class:`Path`, or an etils
    ``epath.Path`` for a URL (``Path('gs://b')`` would become a local folder ``gs:/b``)."""
    if paths.is_remote(model_dir):
        from etils import epath

        paths.configure_remote()
        return epath.Path(paths.join(model_dir, CHECKPOINT_SUBDIR))
    return paths.local(model_dir).absolute() / CHECKPOINT_SUBDIR


class Checkpointer:
    """Periodic + best-by-metric checkpoints of (state, data position, RNG), exact resume."""

    def __init__(self, model_dir: str | os.PathLike, keep_latest: int = 2, keep_best: int = 1,
                 best_metric: Optional[str] = None, best_mode: str = "max",
                 async_save: bool = False, read_only: bool = False) -> None:
        if keep_latest < 1:
            raise ValueError("Checkpointer.keep_latest must be >= 1 (resuming needs the latest step)")
        if best_mode not in ("max", "min"):
            raise ValueError(f"best_mode must be 'max' or 'min', got {best_mode!r}")
        self.model_dir = os.fspath(model_dir)
        self.directory = checkpoint_directory(model_dir)
        self.best_metric = best_metric
        policies: list[Any] = [ocp.checkpoint_managers.LatestN(n=keep_latest)]
        best_fn: Optional[Callable[[Mapping[str, Any]], float]] = None
        if best_metric is not None and keep_best > 0:
            best_fn = self._metric_of
            policies.append(ocp.checkpoint_managers.BestN(
                get_metric_fn=best_fn, reverse=(best_mode == "min"), n=keep_best,
                keep_checkpoints_without_metrics=False))
        options = ocp.CheckpointManagerOptions(
            create=not read_only, best_fn=best_fn, best_mode=best_mode,
            preservation_policy=ocp.checkpoint_managers.AnyPreservationPolicy(policies),
            enable_async_checkpointing=async_save, cleanup_tmp_directories=not read_only,
            read_only=read_only)
        self.manager = ocp.CheckpointManager(self.directory, options=options,
                                             item_names=(STATE_ITEM, DATA_ITEM))

    def _metric_of(self, metrics: Mapping[str, Any]) -> float:
        value = metrics.get(self.best_metric) if metrics else None
        return float("-inf") if value is None else float(value)

    # ------------------------------------------------------------------ queries
    def latest_step(self) -> Optional[int]:
        return self.manager.latest_step()

    def best_step(self) -> Optional[int]:
        """The step with the best saved metric (the latest step when nothing has metrics)."""
        return self.manager.best_step()

    def all_steps(self) -> list[int]:
        return sorted(self.manager.all_steps())

    # ------------------------------------------------------------------ save / restore
    def save(self, step: int, state: Any, data: Mapping[str, Any],
             metrics: Optional[Mapping[str, Any]] = None) -> bool:
        """Save `state` and the JSON-able `data` position at `step` (metrics rank best steps)."""
        data_json = {k: _json_number(v) for k, v in data.items()}
        metrics_json = None
        if metrics is not None:
            metrics_json = {k: float(v) for k, v in metrics.items()
                            if isinstance(v, (int, float, np.generic, np.ndarray, jax.Array))
                            and np.ndim(v) == 0}
        saved = self.manager.save(
            int(step),
            args=ocp.args.Composite(**{STATE_ITEM: ocp.args.StandardSave(state),
                                       DATA_ITEM: ocp.args.JsonSave(data_json)}),
            metrics=metrics_json, force=True)
        return bool(saved)

    def restore(self, step: Optional[int], abstract_state: Any) -> tuple[Any, dict[str, Any]]:
        """(state, data) at `step` (default: latest). `abstract_state` leaves are
        `jax.ShapeDtypeStruct(..., sharding=...)` (see `abstract_like`)."""
        step = self.latest_step() if step is None else int(step)
        if step is None:
            raise FileNotFoundError(f"no checkpoint under {self.directory}")
        restored = self.manager.restore(
            step, args=ocp.args.Composite(**{STATE_ITEM: ocp.args.StandardRestore(abstract_state),
                                             DATA_ITEM: ocp.args.JsonRestore()}))
        return restored[STATE_ITEM], dict(restored[DATA_ITEM])

    def restore_data(self, step: Optional[int] = None) -> dict[str, Any]:
        """Only the JSON data item (cheap: no arrays are read)."""
        step = self.latest_step() if step is None else int(step)
        if step is None:
            raise FileNotFoundError(f"no checkpoint under {self.directory}")
        restored = self.manager.restore(step, args=ocp.args.Composite(
            **{DATA_ITEM: ocp.args.JsonRestore()}))
        return dict(restored[DATA_ITEM])

    def metrics(self, step: int) -> Optional[dict[str, Any]]:
        """Metrics saved with `step` (None when saved without)."""
        found = self.manager.metrics(int(step))
        return None if found is None else dict(found)

    def wait(self) -> None:
        self.manager.wait_until_finished()

    def close(self) -> None:
        self.manager.wait_until_finished()
        self.manager.close()

    def __enter__(self) -> "Checkpointer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
