"""Preemption: SIGTERM / SIGINT end a training run cleanly at the next step boundary.

A spot / preemptible TPU VM gets SIGTERM (t5x saves a checkpoint then, and so do we); Ctrl-C
sends SIGINT. :class:`PreemptionGuard` turns the first such signal into a request that the
training loop polls after every step (``requested(step)``): the loop then saves a checkpoint at
the current step, waits for orbax to finish writing it, and returns; ``lever-jax train`` exits 0
with a message, and the next run resumes from that step exactly. A second signal while saving
is not swallowed: the handler is restored after the first, so it kills the process as before.

Multi-process runs must stop at the same step (every process takes part in the save): when
``jax.process_count() > 1`` the request is OR-ed over processes every step (one tiny
all-gather), so a signal delivered to any one process stops all of them together.
"""
from __future__ import annotations

import logging
import signal
import threading
from types import FrameType
from typing import Any, Optional

import jax
import numpy as np

log = logging.getLogger(__name__)
SIGNALS = (signal.SIGTERM, signal.SIGINT)


class PreemptionGuard:
    """Context manager installing the handlers (main thread only; elsewhere it does nothing)."""

    def __init__(self) -> None:
        self.signal_name: Optional[str] = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> "PreemptionGuard":
        if threading.current_thread() is threading.main_thread():
            for sig in SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def _handle(self, signum: int, frame: Optional[FrameType]) -> None:
        self.signal_name = signal.Signals(signum).name
        signal.signal(signum, self._previous.get(signum, signal.SIG_DFL))  # a second one acts as before
        log.warning("%s received: saving a checkpoint after the current step, then exiting",
                    self.signal_name)

    def requested(self, step: int) -> bool:
        """Whether to stop after ``step`` (agreed by all processes)."""
        local = self.signal_name is not None
        if jax.process_count() == 1:
            return local
        from jax.experimental import multihost_utils

        flags = multihost_utils.process_allgather(np.asarray([local], dtype=np.int32))
        if np.any(flags) and self.signal_name is None:
            self.signal_name = "a signal to another process"
        return bool(np.any(flags))
