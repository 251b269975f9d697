"""On-disk execution cache: a killed run resumes, a re-run executes nothing new.

Key: (executor ``dataset:version`` + a digest of the sandbox :class:`Limits`, sha256 of the
program, sha256 of the problem's context and gold) -- everything an execution depends on (an
``output_limit`` or a ``MemoryError`` depends on the limits, so a run with other limits recomputes). The store is one SQLite file in WAL mode
(``<dir>/executions.sqlite``): every batch is one transaction, so a killed process loses at most
its last uncommitted batch and never leaves a torn record; several processes may share it.

Only reproducible outcomes are cached (``ok``, ``error``, ``output_limit``); ``timeout``,
``memory`` and ``killed`` depend on limits and machine load and are re-run next time.

Default directory: ``$LEVER_JAX_CACHE_DIR`` or ``~/.cache/lever_jax/execution``.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterable

from lever_jax.data.schema import Execution, Problem, execution_from_dict, execution_to_dict

CACHEABLE = ("ok", "error", "output_limit")
ENV_VAR = "LEVER_JAX_CACHE_DIR"


def default_cache_dir() -> Path:
    env = os.environ.get(ENV_VAR)
    return Path(env) if env else Path.home() / ".cache" / "lever_jax" / "execution"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


VERIFIER_ONLY_CONTEXT = frozenset({"schema", "db_table_headers"})


def context_hash(problem: Problem) -> str:
    """Hash of what an execution may depend on besides the program (context and gold).

    Context keys that only the verifier reads (``VERIFIER_ONLY_CONTEXT``, e.g. Spider's schema
    string) are left out, so adding them to a dataset does not invalidate cached executions."""
    context = {k: v for k, v in problem.context.items() if k not in VERIFIER_ONLY_CONTEXT}
    blob = json.dumps({"context": context, "gold": problem.gold}, sort_keys=True, ensure_ascii=False,
                      default=repr)
    return sha256(blob)


CacheKey = tuple[str, str, str]


def executor_key(dataset: str, version: str, limits: Any = None) -> str:
    """The executor part of a cache key: ``dataset:version``, plus ``|limits:<digest>`` of the
    sandbox limits (a dataclass) when given."""
    base = f"{dataset}:{version}"
    if limits is None:
        return base
    import dataclasses

    blob = json.dumps(dataclasses.asdict(limits), sort_keys=True)
    return f"{base}|limits:{hashlib.sha256(blob.encode()).hexdigest()[:12]}"


def cache_key(executor_id: str, program: str, ctx_hash: str) -> CacheKey:
    return (executor_id, sha256(program), ctx_hash)


class ExecutionCache:
    """SQLite-backed map CacheKey -> Execution. Use as a context manager or call close()."""

    def __init__(self, directory: str | os.PathLike | None = None, commit_every: int = 512, commit_s: float = 2.0):
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / "executions.sqlite"
        self._db = sqlite3.connect(str(self.path), timeout=60.0, isolation_level=None)
        self._set_wal(deadline=time.monotonic() + 60.0)
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS executions (executor TEXT NOT NULL, program TEXT NOT NULL, "
            "context TEXT NOT NULL, execution TEXT NOT NULL, created REAL NOT NULL, "
            "PRIMARY KEY (executor, program, context)) WITHOUT ROWID"
        )
        self._pending: list[tuple[str, str, str, str, float]] = []
        self._pending_by_key: dict[CacheKey, Execution] = {}
        self._commit_every = commit_every
        self._commit_s = commit_s
        self._last_commit = time.monotonic()
        self.hits = 0
        self.misses = 0

    def _set_wal(self, deadline: float) -> None:
        """Switch to WAL. SQLite answers "database is locked" at once, without its busy handler,
        when another process opens the same new file at the same moment (Beam workers, parallel
        runs): retry until the deadline (the mode is persistent, so the other opener's switch counts)."""
        delay = 0.01
        while True:
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or time.monotonic() > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.5)

    def get(self, key: CacheKey) -> Execution | None:
        pending = self._pending_by_key.get(key)
        if pending is not None:
            self.hits += 1
            return pending
        row = self._db.execute(
            "SELECT execution FROM executions WHERE executor=? AND program=? AND context=?", key
        ).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return execution_from_dict(json.loads(row[0]))

    def put(self, key: CacheKey, execution: Execution) -> None:
        if execution.status not in CACHEABLE:
            return
        blob = json.dumps(execution_to_dict(execution), ensure_ascii=False, separators=(",", ":"))
        self._pending.append((*key, blob, time.time()))
        self._pending_by_key[key] = execution
        if len(self._pending) >= self._commit_every or time.monotonic() - self._last_commit > self._commit_s:
            self.commit()

    def put_many(self, items: Iterable[tuple[CacheKey, Execution]]) -> None:
        for key, execution in items:
            self.put(key, execution)

    def commit(self) -> None:
        if self._pending:
            with self._db:  # one transaction
                self._db.execute("BEGIN")
                self._db.executemany("INSERT OR REPLACE INTO executions VALUES (?, ?, ?, ?, ?)", self._pending)
            self._pending.clear()
            self._pending_by_key.clear()
        self._last_commit = time.monotonic()

    def __len__(self) -> int:
        self.commit()
        return int(self._db.execute("SELECT COUNT(*) FROM executions").fetchone()[0])

    def close(self) -> None:
        try:
            self.commit()
        finally:
            self._db.close()

    def __enter__(self) -> "ExecutionCache":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
