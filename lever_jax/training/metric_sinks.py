"""Training metric sinks: MODEL_DIR/metrics.jsonl, TensorBoard event files, a tqdm bar.

`metrics.jsonl` holds one JSON object per logged step (step, loss, learning_rate, examples/s,
... and the eval metrics, prefixed `eval/`, on evaluated steps). On resume from step s the file
is first cut back to the records with step <= s (rewritten atomically), so a killed-and-resumed
run ends with exactly the lines of an uninterrupted one. TensorBoard scalars go to
MODEL_DIR/tensorboard/ via tensorboardX (purge_step drops events past the resumed step).
Only process 0 writes (multi-host).

MODEL_DIR may be a URL (``gs://bucket/run``, through lever_jax.data.paths). Objects cannot be
appended to, so the writer keeps a local copy of metrics.jsonl, appends to it, and uploads it whole
(one atomic object write) at most every ``flush_secs``, at :meth:`MetricsWriter.flush` (the trainer
calls it before every checkpoint, so a resumed run finds every record up to its step) and on close.
TensorBoard event files on a URL go through the same layer (:class:`_RemoteEventFile`).
"""
from __future__ import annotations

import io
import json
import math
import os
import shutil
import sys
import tempfile
import time
from types import ModuleType
from typing import Any, Mapping, Optional

import numpy as np

from lever_jax.data import paths
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
    records: list[dict[str, Any]] = []
    if not paths.exists(path):
        return records
    with paths.open_binary(path) as handle:
        for raw in io.TextIOWrapper(handle, encoding="utf-8"):
            line = raw.strip()
            if not line:
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                break  # the process died mid-write; everything after is unreliable
    return records


class _RemoteEventFile:
    """A TensorBoard event file at a URL: buffered, uploaded whole on every flush (tensorboardX's
    own ``gs://`` writer does the same through google-cloud-storage; this one uses our path layer)."""

    def __init__(self, path: str) -> None:
        self.path, self.buffer = path, io.BytesIO()

    def write(self, data: bytes) -> None:
        self.buffer.write(data)

    def flush(self) -> None:
        paths.write_bytes_atomic(self.path, self.buffer.getvalue())

    def close(self) -> None:
        self.flush()


class _RemoteEventFiles:
    """tensorboardX writer factory for one URL scheme (registered by :func:`_register_tensorboard`)."""

    def open(self, path: str) -> _RemoteEventFile:
        return _RemoteEventFile(path)

    def directory_check(self, path: str) -> None:
        paths.makedirs(path)  # object stores need no directories


def _tensorboardx() -> ModuleType:
    """tensorboardX, imported without torch unless torch is loaded already.

    tensorboardX imports torch when it is installed (the ``parity`` extra), only to accept torch
    tensors; this writer logs Python scalars. That import was ~3 s of CPU in every training
    process. While tensorboardX loads, ``import torch`` raises ImportError (its own fallback);
    afterwards torch imports normally."""
    if "torch" in sys.modules or "tensorboardX" in sys.modules:
        import tensorboardX

        return tensorboardX
    sys.modules["torch"] = None  # type: ignore[assignment]
    try:
        import tensorboardX
    finally:
        del sys.modules["torch"]
    return tensorboardX


def _register_tensorboard(url: str) -> None:
    _tensorboardx().record_writer.register_writer_factory(paths.scheme(url), _RemoteEventFiles())


class MetricsWriter:
    """Appends step records to metrics.jsonl and TensorBoard; `resume_step` truncates both."""

    def __init__(self, model_dir: str | os.PathLike, resume_step: Optional[int] = None,
                 enabled: bool = True, tensorboard: bool = True, flush_secs: float = 30.0) -> None:
        self.enabled = enabled
        self.path = paths.join(model_dir, METRICS_FILE)
        self._tb = None
        self._tmpdir: Optional[str] = None
        self._flush_secs, self._uploaded_at = flush_secs, time.monotonic()
        if not enabled:
            return
        records = read_metrics(self.path)
        keep = [r for r in records if resume_step is not None and r.get("step", 0) <= resume_step]
        self._local = self.path
        if paths.is_remote(self.path):
            self._tmpdir = tempfile.mkdtemp(prefix="lever_jax_metrics_")
            self._local = os.path.join(self._tmpdir, METRICS_FILE)
            write_json_lines(self._local, keep)
            if records or resume_step is None:
                self._upload()
        else:
            paths.makedirs(paths.parent(self.path))
            if len(keep) != len(records) or (paths.exists(self.path) and resume_step is None):
                write_json_lines(self.path, keep)
        if tensorboard:
            SummaryWriter = _tensorboardx().SummaryWriter  # noqa: N806 - the class

            logdir = paths.join(model_dir, TENSORBOARD_SUBDIR)
            if paths.is_remote(logdir):
                _register_tensorboard(logdir)
            self._tb = SummaryWriter(logdir=logdir,
                                     purge_step=None if resume_step is None else resume_step + 1,
                                     flush_secs=flush_secs)
        self._handle = open(self._local, "a", encoding="utf-8")

    def _upload(self) -> None:
        if self._tmpdir is not None:
            paths.copy(self._local, self.path)
            self._uploaded_at = time.monotonic()

    def write(self, step: int, metrics: Mapping[str, Any]) -> dict[str, Any]:
        """Log one record (flushed and fsynced, so a kill loses at most the line in flight;
        a remote file is uploaded when ``flush_secs`` have passed since the last upload)."""
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
        if self._tmpdir is not None and time.monotonic() - self._uploaded_at >= self._flush_secs:
            self._upload()
        return record

    def flush(self) -> None:
        """Make every record written so far durable at MODEL_DIR (a remote upload; locally a no-op)."""
        if self.enabled:
            self._upload()

    def close(self) -> None:
        if not self.enabled:
            return
        self._handle.close()
        if self._tb is not None:
            self._tb.close()
        try:
            self._upload()
        finally:
            if self._tmpdir is not None:
                shutil.rmtree(self._tmpdir, ignore_errors=True)
