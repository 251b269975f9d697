"""Progress bars that stay readable in a CI log: tqdm on a terminal, periodic one-line logs elsewhere.

tqdm redraws its bar with carriage returns; written to a file or a CI log that becomes one
ever-growing line (``lever-jax execute`` over a pool leaves hundreds of redraws on one line).
:func:`progress_bar` returns a real tqdm bar when its stream is a terminal and otherwise a :class:`LogProgress`, which
prints a complete line (``execute gsm8k: 1200/5000 prog (24%), 35.1 prog/s, eta 1m48s, cached=3``)
at most every ``LEVER_JAX_PROGRESS_INTERVAL`` seconds (default 30) and once at the end. Both take
tqdm's arguments and offer the methods the project uses (``update``, ``set_postfix``,
``set_description``, ``close``, use as a context manager).

``LEVER_JAX_PROGRESS=tqdm|log|off`` forces one kind (e.g. ``log`` in a terminal, ``off`` in tests).
"""
from __future__ import annotations

import os
import sys
import time
from typing import IO, Any

MODE_ENV = "LEVER_JAX_PROGRESS"
INTERVAL_ENV = "LEVER_JAX_PROGRESS_INTERVAL"
DEFAULT_INTERVAL_S = 30.0


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class LogProgress:
    """A tqdm stand-in that logs complete lines, at most one per ``interval`` seconds."""

    def __init__(self, total: float | None = None, initial: float = 0, desc: str | None = None,
                 unit: str = "it", file: IO[str] | None = None, interval: float | None = None,
                 disable: bool = False, **_ignored: Any) -> None:
        self.total, self.n, self.desc, self.unit = total, initial, desc, unit
        self.file = file
        self.disable = disable
        if interval is None:
            interval = float(os.environ.get(INTERVAL_ENV, DEFAULT_INTERVAL_S))
        self.interval = interval
        self._start_n = initial
        self._start = self._last = time.monotonic()
        self._postfix = ""
        self._closed = False
        self._emitted_n: float | None = None

    def line(self) -> str:
        """The progress line as it would be printed now."""
        elapsed = max(time.monotonic() - self._start, 1e-9)
        rate = (self.n - self._start_n) / elapsed
        done = f"{self.n:g}"
        if self.total:
            done += f"/{self.total:g} {self.unit} ({100 * self.n / self.total:.0f}%)"
        else:
            done += f" {self.unit}"
        parts = [f"{self.desc}: {done}" if self.desc else done, f"{rate:.3g} {self.unit}/s",
                 f"elapsed {_duration(elapsed)}"]
        if self.total and rate > 0 and self.n < self.total:
            parts.append(f"eta {_duration((self.total - self.n) / rate)}")
        if self._postfix:
            parts.append(self._postfix)
        return ", ".join(parts)

    def _emit(self) -> None:
        stream = self.file if self.file is not None else sys.stderr
        print(self.line(), file=stream, flush=True)
        self._last = time.monotonic()
        self._emitted_n = self.n

    def update(self, n: float = 1) -> None:
        if self.disable:
            return
        self.n += n
        if time.monotonic() - self._last >= self.interval:
            self._emit()

    def set_postfix(self, ordered_dict: dict[str, Any] | None = None, refresh: bool = True,
                    **kwargs: Any) -> None:
        items = {**(ordered_dict or {}), **kwargs}
        self._postfix = ", ".join(f"{k}={v}" for k, v in items.items())

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        self.desc = desc

    def refresh(self) -> None:
        if not self.disable:
            self._emit()

    def close(self) -> None:
        if self._closed or self.disable:
            self._closed = True
            return
        self._closed = True
        if self._emitted_n != self.n:  # the final line, unless the last one already says it
            self._emit()

    def __enter__(self) -> "LogProgress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def progress_bar(total: float | None = None, *, disable: bool = False, file: IO[str] | None = None,
                 **kwargs: Any) -> Any:
    """A tqdm bar on a terminal, a :class:`LogProgress` otherwise (see the module doc).

    Takes tqdm's keyword arguments (``total``, ``initial``, ``desc``, ``unit``, ``smoothing``, ...);
    ``file`` defaults to stderr."""
    stream = file if file is not None else sys.stderr
    mode = os.environ.get(MODE_ENV, "").strip().lower()
    if mode == "off":
        disable = True
    if mode == "tqdm" or (mode != "log" and not disable and _is_tty(stream)):
        from tqdm import tqdm

        return tqdm(total=total, disable=disable, file=stream, **kwargs)
    return LogProgress(total=total, disable=disable, file=stream, **kwargs)


def _is_tty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
