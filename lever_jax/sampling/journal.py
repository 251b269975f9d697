"""The sampling journal: one line per finished problem, appended and fsynced, so a killed run
resumes where it stopped and never asks the model again for a problem it finished.

Each line: ``{"format", "key", "problem_id", "samples": [completion...], "greedy": completion|null,
"seconds", "tokens", "finished_unix"}`` where ``key`` is :func:`lever_jax.sampling.settings.journal_key`
(model digest + prompt + stops + settings) and ``seconds`` the problem's latency from submission
(problems overlap: a run's wall time is the span of ``finished_unix``, not the sum of ``seconds``).
A run reuses only lines with its own key, so one journal may hold several models' or settings' runs
side by side. A line cut short by a kill (the last one) is ignored and its problem sampled again;
any other unreadable line is an error naming it.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Iterator, Mapping

from lever_jax.data.jsonl import DataFileError
from lever_jax.sampling.backends import Completion
from lever_jax.sampling.settings import JOURNAL_FORMAT


class Entry(dict):
    """One journal line (a dict with typed accessors)."""

    @property
    def samples(self) -> list[Completion]:
        return [Completion.from_json(s) for s in self["samples"]]

    @property
    def greedy(self) -> Completion | None:
        return None if self.get("greedy") is None else Completion.from_json(self["greedy"])


def _lines(path: Path) -> Iterator[tuple[int, str, bool]]:
    with open(path, "r", encoding="utf-8", errors="strict") as handle:
        lines = handle.read().split("\n")
    complete = lines[:-1]  # text after the last newline is a line the writer did not finish
    for i, line in enumerate(complete, start=1):
        yield i, line, False
    if lines[-1]:
        yield len(lines), lines[-1], True


class Journal:
    """Append-only journal at ``path`` (created on first write). Thread-safe appends."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._entries: dict[str, Entry] = {}
        self.torn_lines = 0
        if self.path.exists():
            self._load()

    def _load(self) -> None:
        for lineno, line, unterminated in _lines(self.path):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                if obj.get("format") != JOURNAL_FORMAT or not isinstance(obj.get("key"), str):
                    raise ValueError("not a sampling journal line")
            except (ValueError, AttributeError) as err:
                if unterminated:
                    self.torn_lines += 1  # killed mid-write: that problem is sampled again
                    continue
                raise DataFileError(self.path, lineno, None, f"unreadable sampling journal line ({err})") from None
            self._entries[obj["key"]] = Entry(obj)
        if self.torn_lines:
            self._truncate_torn_tail()

    def _truncate_torn_tail(self) -> None:
        data = self.path.read_bytes()
        keep = data[: data.rfind(b"\n") + 1]
        with open(self.path, "r+b") as handle:
            handle.truncate(len(keep))

    def get(self, key: str) -> Entry | None:
        return self._entries.get(key)

    def __len__(self) -> int:
        return len(self._entries)

    def append(self, key: str, problem_id: str, samples: list[Completion], greedy: Completion | None,
               extra: Mapping[str, Any]) -> Entry:
        entry = Entry({"format": JOURNAL_FORMAT, "key": key, "problem_id": problem_id,
                       "samples": [s.to_json() for s in samples],
                       "greedy": None if greedy is None else greedy.to_json(), **extra})
        line = json.dumps(entry, ensure_ascii=True, separators=(",", ":")) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
            self._entries[key] = entry
        return entry
