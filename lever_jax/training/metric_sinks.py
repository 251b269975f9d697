"""Training metric sinks: MODEL_DIR/metrics.jsonl, TensorBoard event files, log lines.

`metrics.jsonl` holds one JSON object per logged step (step, loss, learning_rate, examples/s,
... and the eval metrics, prefixed `eval/`, on evaluated steps). On resume from step s the file
is first cut back to the records with step <= s (rewritten atomically), so a killed-and-resumed
run ends with exactly the lines of an uninterrupted one. TensorBoard scalars go to
MODEL_DIR/tensorboard/ via tensorboardX (purge_step drops events past the resumed step).
Only process 0 writes (multi-host).

Log lines (logger ``lever_jax.training``, INFO; complete lines, readable in a CI log):
:func:`log_evaluation` (``step 120: eval summing_agg_rerank_acc=0.7083 ...``),
:func:`log_checkpoint` (``step 120: checkpoint saved to DIR (summing_agg_rerank_acc=0.7083)``) and
:func:`log_written` (``eval wrote A, B``). The progress bar itself is
:func:`lever_jax.data.progress.progress_bar`.
"""
from __future__ import annotations

import json
import logging
import math
import os
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np

from lever_jax.data.jsonl import write_json_lines

METRICS_FILE = "metrics.jsonl"
TENSORBOARD_SUBDIR = "tensorboard"
LOGGER = logging.getLogger("lever_jax.training")
# metrics shown first in an evaluation line (the rest follow alphabetically)
HEADLINE_METRICS = ("summing_agg_rerank_acc", "rerank_acc", "majority_vote_acc", "oracle_acc")


def to_python(value: Any) -> Any:
    """JSON-able python scalars (NaN/inf become None: JSON has no such numbers)."""
    if isinstance(value, Mapping):
        return {str(k): to_python(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_python(v) for v in value]
    if hasattr(value, "shape") and np.ndim(value) == 0:
        value = np.asarray(value).item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def read_metrics(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The records of a metrics.jsonl file (a torn last line from a kill is skipped)."""
    records = []
    path = Path(path)
    if not path.exists():
        return records
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                break  # the process died mid-write; everything after is unreliable
    return records


class MetricsWriter:
    """Appends step records to metrics.jsonl and TensorBoard; `resume_step` truncates both."""

    def __init__(self, model_dir: str | os.PathLike, resume_step: Optional[int] = None,
                 enabled: bool = True, tensorboard: bool = True) -> None:
        self.enabled = enabled
        self.path = Path(model_dir) / METRICS_FILE
        self._tb = None
        if not enabled:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        records = read_metrics(self.path)
        keep = [r for r in records if resume_step is not None and r.get("step", 0) <= resume_step]
        if len(keep) != len(records) or (self.path.exists() and resume_step is None):
            write_json_lines(self.path, keep)
        if tensorboard:
            from tensorboardX import SummaryWriter

            self._tb = SummaryWriter(logdir=str(Path(model_dir) / TENSORBOARD_SUBDIR),
                                     purge_step=None if resume_step is None else resume_step + 1,
                                     flush_secs=30)
        self._handle = open(self.path, "a", encoding="utf-8")

    def write(self, step: int, metrics: Mapping[str, Any]) -> dict[str, Any]:
        """Log one record (flushed and fsynced, so a kill loses at most the line in flight)."""
        record = {"step": int(step), **{k: to_python(v) for k, v in metrics.items()}}
        if not self.enabled:
            return record
        self._handle.write(json.dumps(record, sort_keys=False, separators=(",", ":")) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())
        if self._tb is not None:
            for key, value in record.items():
                if key != "step" and isinstance(value, (int, float)) and not isinstance(value, bool):
                    self._tb.add_scalar(key, value, global_step=int(step))
        return record

    def close(self) -> None:
        if not self.enabled:
            return
        self._handle.close()
        if self._tb is not None:
            self._tb.close()


def _format_metrics(metrics: Mapping[str, Any], first: Optional[str] = None, limit: int = 8) -> str:
    numbers = {k: v for k, v in to_python(dict(metrics)).items()
               if isinstance(v, (int, float)) and not isinstance(v, bool)}
    order = [k for k in (first, *HEADLINE_METRICS) if k in numbers]
    order += sorted(k for k in numbers if k not in order and not k.startswith("num_") and k != "seconds")
    shown = [f"{k}={numbers[k]:.4g}" for k in dict.fromkeys(order)][:limit]
    return " ".join(shown)


def log_evaluation(step: int, metrics: Mapping[str, Any], best_metric: Optional[str] = None,
                   seconds: Optional[float] = None, logger: logging.Logger = LOGGER) -> str:
    """Log one evaluation with its step (``best_metric`` first); returns the line."""
    extra = []
    if "num_problems" in metrics:
        extra.append(f"{int(to_python(metrics['num_problems']))} problems")
    if seconds is not None:
        extra.append(f"{seconds:.1f}s")
    line = f"step {int(step)}: eval {_format_metrics(metrics, best_metric)}"
    line += f" ({', '.join(extra)})" if extra else ""
    logger.info("%s", line)
    return line


def log_checkpoint(step: int, directory: str | os.PathLike, metrics: Optional[Mapping[str, Any]] = None,
                   best_metric: Optional[str] = None, logger: logging.Logger = LOGGER) -> str:
    """Log a saved checkpoint with its step and where it is (``metrics``: the value it is ranked by)."""
    line = f"step {int(step)}: checkpoint saved to {Path(directory) / str(int(step))}"
    if metrics is not None and best_metric and best_metric in metrics:
        line += f" ({best_metric}={float(to_python(metrics[best_metric])):.4g})"
    logger.info("%s", line)
    return line


def log_written(what: str, *paths: str | os.PathLike, logger: logging.Logger = LOGGER) -> str:
    """Log the files a step wrote (``eval wrote DIR/task.scores.json, DIR/task.metrics.json``)."""
    line = f"{what} wrote {', '.join(str(Path(p)) for p in paths)}"
    logger.info("%s", line)
    return line
