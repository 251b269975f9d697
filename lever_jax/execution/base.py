"""Interfaces shared by the sandbox and the dataset executors.

The sandbox (``sandbox.py``) knows nothing about datasets: it runs a :class:`Task` -- the dotted
name of a function plus a JSON-serialisable payload -- inside a resource-limited child process and
returns a :class:`SandboxResult`. A :class:`DatasetExecutor` turns (problem, candidate) into a
Task and the Task's result into the data contract's :class:`Execution`. Executors register
themselves by dataset name in ``registry.py``.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Protocol

from lever_jax.data.schema import Candidate, Execution, Problem


@dataclasses.dataclass(frozen=True)
class Limits:
    """Resource limits applied to every sandboxed task."""

    timeout_s: float = 10.0  # wall clock
    cpu_s: int = 10  # RLIMIT_CPU
    memory_mb: int = 1024  # RLIMIT_AS
    file_size_mb: int = 16  # RLIMIT_FSIZE
    open_files: int = 64  # RLIMIT_NOFILE
    processes: int = 0  # extra processes a task may create (RLIMIT_NPROC where enforceable)
    output_bytes: int = 64 * 1024  # captured stdout/stderr cap

    @classmethod
    def for_timeout(cls, timeout_s: float | None, executor: Any = None, **overrides: Any) -> "Limits":
        """Limits with wall clock ``timeout_s`` (None: ``executor.default_timeout_s``, else 10 s) and
        the CPU limit rounded up from it; ``overrides`` set the other fields."""
        if timeout_s is None:
            timeout_s = float(getattr(executor, "default_timeout_s", cls.timeout_s))
        return cls(timeout_s=timeout_s, cpu_s=max(1, int(timeout_s + 0.999)), **overrides)


@dataclasses.dataclass(frozen=True)
class Task:
    """Run ``function(payload)`` in the sandbox; ``function`` is ``"package.module:name"``.

    The function must return a JSON-serialisable dict. It runs in a forked child with the
    limits applied, so anything it does (including to the interpreter) is thrown away.
    """

    function: str
    payload: Mapping[str, Any]
    # Host files / directories the task reads (e.g. its database): made visible, read-only, in the
    # sandbox's mount view for this task only, wherever they live (one in a world-writable directory
    # such as /tmp is shown elsewhere: a top-level payload value naming it is rewritten to where the
    # task finds it). Set by executors, never by the candidate.
    readable: tuple[str, ...] = ()


TIMEOUT_TEXT = "ERROR: timeout"
"""The result text (what the verifier reads) of every timeout, whichever limit fired: the wall clock
or the CPU limit fires first depending on the machine's load, so naming it made the verifier's
input, and so its training, depend on load. ``Execution.error`` keeps which limit it was. No
executor version changes with this: timeouts are never cached (execution/cache.py)."""


@dataclasses.dataclass(frozen=True)
class SandboxResult:
    """Outcome of one Task. ``status`` is one of the data contract's STATUSES."""

    status: str
    value: Mapping[str, Any] | None = None
    error: str | None = None
    stdout: str = ""
    elapsed_s: float = 0.0


class DatasetExecutor(Protocol):
    """Executes candidates of one dataset. ``version`` is part of the cache key: bump it
    whenever the produced Execution would change for the same program."""

    dataset: str
    version: str

    def make_task(self, problem: Problem, candidate: Candidate) -> Task: ...

    def to_execution(self, problem: Problem, candidate: Candidate, result: SandboxResult) -> Execution: ...
