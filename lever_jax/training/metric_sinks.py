"""Training metric sinks: MODEL_DIR/metrics.jsonl, TensorBoard event files, a tqdm bar.

`metrics.jsonl` holds one JSON object per logged step (step, loss, learning_rate, examples/s,
... and the eval metrics, prefixed `eval/`, on evaluated steps). On resume from step s the file
is first cut back to the records with step <= s (rewritten atomically), so a killed-and-resumed
run ends with exactly the lines of an uninterrupted one. TensorBoard scalars go to
MODEL_DIR/tensorboard/ via tensorboardX (purge_step drops events past the resumed step).
Only process 0 writes (multi-host).
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np

from lever_jax.data.jsonl import write_json_lines

METRICS_FILE = "metrics.jsonl"
TENSORBOARD_SUBDIR = "tensorboard"


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
