"""A pool of pre-started sandbox workers running :class:`Task` s in isolated children.

    with Sandbox(workers=2, limits=Limits(timeout_s=2)) as sandbox:
        for result in sandbox.map(tasks):          # parallel, in input order, streaming
            ...

Each worker (``sandbox_worker.py``, a fresh interpreter -- never a fork of this possibly
multi-threaded process) runs one task at a time in a forked child with resource limits, its own
process group, an empty temporary directory, a dropped uid, no network and a private result pipe;
see that module for the details. A worker that dies (whatever killed it) is replaced; the task it
was running is reported as ``killed`` and the tasks queued behind it are re-run elsewhere, so one
bad program never loses the results of others. ``protections()`` says which isolation layers the
kernel granted on this machine.
"""
from __future__ import annotations

import collections
import dataclasses
import json
import os
import secrets
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Deque, Iterable, Iterator

from lever_jax.execution.base import Limits, SandboxResult, Task
from lever_jax.execution.sandbox_wire import HEADER, encode_message

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
_HELLO_TIMEOUT_S = 120.0
# Queued tasks per worker: one running, one waiting in the pipe (hides the round trip).
_DEPTH = 2
_WARNED: set[str] = set()  # refused layers already reported by this process


class SandboxError(RuntimeError):
    """The sandbox itself failed (could not start workers)."""


@dataclasses.dataclass
class _Worker:
    slot: int
    proc: subprocess.Popen
    in_fd: int
    out_fd: int
    pid: int = 0
    buffer: bytearray = dataclasses.field(default_factory=bytearray)
    outgoing: bytearray = dataclasses.field(default_factory=bytearray)
    inflight: Deque[tuple[int, Task]] = dataclasses.field(default_factory=collections.deque)
    busy_since: float = 0.0
    alive: bool = True
    modules: set[str] = dataclasses.field(default_factory=set)  # task modules it has a zygote for


def _module(function: str) -> str:
    """The module of a task function named ``"package.module:name"`` (one zygote per module)."""
    return function.partition(":")[0]


def _pick(idle: list[_Worker], task: Task) -> _Worker:
    """The worker for ``task``: the least loaded of the idle ones that already run its module's
    zygote, else the least loaded. A module's zygote (sympy's: ~0.85 s of imports) thus starts in
    a second worker only when the first is full, not in every worker for a few such tasks."""
    warm = [w for w in idle if _module(task.function) in w.modules]
    return min(warm or idle, key=lambda w: len(w.inflight))


class Sandbox:
    """Process pool for untrusted code. Use as a context manager (or call :meth:`close`)."""

    def __init__(self, workers: int | None = None, limits: Limits = Limits(), preload: Iterable[str] = (),
                 readable: Iterable[str | os.PathLike] = (), disable: Iterable[str] = ()):
        """``readable``: host paths every task may read (``Task.readable`` adds per-task ones); with
        the private mount view (``protections()["mount_view"]``) nothing else outside the
        interpreter and this package exists for the tasks (one under /tmp is found at
        :meth:`task_path`, never in the task's own, empty /tmp). ``disable``: layers not to use even
        where the kernel grants them (``"mount_view"``, ``"pid_namespace"``, ``"ipc_namespace"``),
        to test the degraded paths or to measure what each costs. ``preload``: task functions whose
        modules' zygotes every worker starts, and has finished importing, before this returns
        (otherwise a zygote starts with the first task of its module)."""
        self.limits = limits
        self._readable = [os.path.abspath(os.fspath(r)) for r in readable]
        self._disable = sorted(set(disable))
        unknown = set(self._disable) - {"mount_view", "pid_namespace", "ipc_namespace"}
        if unknown:
            raise ValueError(f"unknown sandbox layers {sorted(unknown)}")
        self.num_workers = max(1, workers or os.cpu_count() or 1)
        self._preload = list(preload)
        # Each slot gets its own uid, unique to this Sandbox, so that a task can signal nothing
        # but its own descendants and a uid-wide kill cleans up exactly one slot.
        self._uid_base = 1_000_000 + secrets.randbelow(1_000_000) * 64
        self._selector = selectors.DefaultSelector()
        self._workers: list[_Worker] = []
        self._protections: dict[str, Any] = {}
        self._closed = False
        try:
            starting = [self._spawn(slot) for slot in range(self.num_workers)]
            for worker in starting:
                self._await_hello(worker)
                self._workers.append(worker)
            refused = self.refused_layers()
            if refused and not _WARNED.intersection(refused):
                _WARNED.update(refused)
                print(f"lever-jax: sandbox running without {', '.join(refused)} (refused by the kernel or not "
                      "root; see Sandbox.protections())", file=sys.stderr)
        except BaseException:
            for worker in starting if "starting" in locals() else []:
                self._terminate(worker)
            raise

    # -- public API -----------------------------------------------------------------------------
    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def protections(self) -> dict[str, Any]:
        """Which isolation layers are active (as reported by the first worker)."""
        return dict(self._protections)

    def refused_layers(self) -> list[str]:
        """Isolation layers the kernel (or our privileges) refused here, not counting those
        switched off with ``disable``; the sandbox runs without them and says so at start-up."""
        p = self._protections
        layers = ("network_namespace", "mount_namespace", "mount_view", "pid_namespace", "ipc_namespace",
                  "drop_privileges")
        return [name for name in layers if not p.get(name) and name not in p.get("disabled_layers", ())]

    def task_path(self, path: str | os.PathLike) -> str:
        """Where a task finds host ``path``. A task's /tmp, /var/tmp and /dev/shm are its own,
        empty ones, so what lives in the host's (a ``readable`` input, the checkout or venv
        cloned there) is shown elsewhere; everything else is where it is on the host."""
        path = os.path.abspath(os.fspath(path))
        real = os.path.realpath(path)
        for host, shown in self._protections.get("relocated", {}).items():
            if real == host or real.startswith(host + "/"):
                return shown + real[len(host):]
        return path

    def task_uids(self) -> list[int]:
        """The uids tasks run as (one per worker slot; empty when privileges are not dropped)."""
        if not self._protections.get("drop_privileges"):
            return []
        return [self._uid_base + slot for slot in range(self.num_workers)]

    def worker_pids(self) -> list[int]:
        return [w.pid for w in self._workers if w.alive]

    def run(self, task: Task) -> SandboxResult:
        return next(iter(self.map([task])))

    def map(self, tasks: Iterable[Task], ordered: bool = True) -> Iterator[SandboxResult]:
        """Run tasks in parallel; results in input order (or completion order if not ``ordered``)."""
        if not ordered:
            for _, result in self.map_indexed(tasks):
                yield result
            return
        waiting: dict[int, SandboxResult] = {}
        next_index = 0
        for index, result in self.map_indexed(tasks):
            waiting[index] = result
            while next_index in waiting:
                yield waiting.pop(next_index)
                next_index += 1

    def map_indexed(self, tasks: Iterable[Task]) -> Iterator[tuple[int, SandboxResult]]:
        """Yield ``(input_index, result)`` as results arrive (completion order)."""
        if self._closed:
            raise SandboxError("the sandbox is closed")
        source = enumerate(tasks)
        retry: Deque[tuple[int, Task]] = collections.deque()
        exhausted = False
        done: Deque[tuple[int, SandboxResult]] = collections.deque()
        try:
            while True:
                while True:
                    idle = [w for w in self._workers if w.alive and len(w.inflight) < _DEPTH]
                    if not idle:
                        break
                    if retry:
                        item = retry.popleft()
                    elif not exhausted:
                        item = next(source, None)
                        if item is None:
                            exhausted = True
                            break
                    else:
                        break
                    self._send(_pick(idle, item[1]), item)
                while done:
                    yield done.popleft()
                if exhausted and not retry and not any(w.inflight for w in self._workers):
                    return
                self._poll(done, retry)
        finally:
            # A consumer that stops early must not leave results in the pipes for the next call.
            while any(w.inflight for w in self._workers):
                self._poll(collections.deque(), collections.deque())

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for worker in self._workers:
            if worker.alive:
                try:
                    os.write(worker.in_fd, encode_message({"exit": True}))
                except OSError:
                    pass
        deadline = time.monotonic() + 10.0
        for worker in self._workers:
            try:
                worker.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            self._terminate(worker)
        self._selector.close()

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass

    # -- workers ----------------------------------------------------------------------------------
    def _spawn(self, slot: int) -> _Worker:
        config = {
            "uid": self._uid_base + slot,
            "limits": {**dataclasses.asdict(self.limits), "preload": self._preload, "readable": self._readable,
                       "disable": self._disable},
        }
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
        env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
        # -P: the directory we were started from is not on the worker's sys.path (nothing there is
        # imported, nor shown to the tasks)
        proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "lever_jax.execution.sandbox_worker", json.dumps(config)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True, start_new_session=True, env=env,
        )
        return _Worker(slot=slot, proc=proc, in_fd=proc.stdin.fileno(), out_fd=proc.stdout.fileno(),
                       modules={_module(name) for name in self._preload})

    def _await_hello(self, worker: _Worker) -> None:
        deadline = time.monotonic() + _HELLO_TIMEOUT_S
        sel = selectors.DefaultSelector()
        sel.register(worker.out_fd, selectors.EVENT_READ)
        try:
            while True:
                messages = self._read_messages(worker) if sel.select(max(0.0, deadline - time.monotonic())) else None
                if messages is None:
                    raise SandboxError(f"sandbox worker {worker.slot} failed to start (exit code {worker.proc.poll()})")
                if messages:
                    hello = messages[0]
                    worker.pid = int(hello["pid"])
                    if not self._protections:
                        self._protections = dict(hello["hello"])
                    break
        finally:
            sel.close()
        os.set_blocking(worker.in_fd, False)
        self._selector.register(worker.out_fd, selectors.EVENT_READ, worker)

    def _read_messages(self, worker: _Worker) -> list[dict[str, Any]] | None:
        """Read what is available; None on EOF (worker died)."""
        try:
            data = os.read(worker.out_fd, 1 << 20)
        except (BlockingIOError, InterruptedError):
            return []
        if not data:
            return None
        worker.buffer += data
        messages = []
        while len(worker.buffer) >= HEADER.size:
            (size,) = HEADER.unpack_from(worker.buffer)
            if len(worker.buffer) < HEADER.size + size:
                break
            messages.append(json.loads(worker.buffer[HEADER.size:HEADER.size + size]))
            del worker.buffer[:HEADER.size + size]
        return messages

    def _send(self, worker: _Worker, item: tuple[int, Task]) -> None:
        index, task = item
        if not worker.inflight:
            worker.busy_since = time.monotonic()
        worker.inflight.append(item)
        worker.modules.add(_module(task.function))
        worker.outgoing += encode_message({"id": index, "function": task.function, "payload": task.payload,
                                             "readable": {os.path.abspath(str(r)): os.path.realpath(str(r))
                                                           for r in task.readable}})
        self._flush(worker)

    def _flush(self, worker: _Worker) -> None:
        while worker.outgoing:
            try:
                sent = os.write(worker.in_fd, worker.outgoing)
            except BlockingIOError:
                break
            except BrokenPipeError:
                worker.outgoing.clear()  # the worker died; _poll notices the EOF
                break
            del worker.outgoing[:sent]

    def _poll(self, done: Deque[tuple[int, SandboxResult]], retry: Deque[tuple[int, Task]]) -> None:
        for worker in self._workers:
            if worker.outgoing:
                self._flush(worker)
        grace = 2 * self.limits.timeout_s + 30.0
        for key, _ in self._selector.select(timeout=0.5):
            worker: _Worker = key.data
            messages = self._read_messages(worker)
            if messages is None:
                self._replace(worker, done, retry, "sandbox worker died")
                continue
            for msg in messages:
                index, _task = worker.inflight.popleft()
                worker.busy_since = time.monotonic()
                done.append((index, SandboxResult(
                    status=msg["status"], value=msg.get("value"), error=msg.get("error"),
                    stdout=msg.get("stdout", ""), elapsed_s=float(msg.get("elapsed_s", 0.0)),
                )))
        now = time.monotonic()
        for worker in list(self._workers):
            if worker.inflight and now - worker.busy_since > grace:
                self._replace(worker, done, retry, f"sandbox worker unresponsive for {grace:.0f} s")

    def _replace(self, worker: _Worker, done: Deque[tuple[int, SandboxResult]], retry: Deque[tuple[int, Task]],
                 reason: str) -> None:
        """The worker died: fail its running task, re-queue the rest, start a new worker."""
        if worker.inflight:
            index, _ = worker.inflight.popleft()
            done.append((index, SandboxResult(status="killed", error=reason)))
        retry.extendleft(reversed(worker.inflight))
        worker.inflight.clear()
        self._terminate(worker)
        new = self._spawn(worker.slot)
        self._await_hello(new)
        self._workers[self._workers.index(worker)] = new

    def _terminate(self, worker: _Worker) -> None:
        worker.alive = False
        try:
            self._selector.unregister(worker.out_fd)
        except (KeyError, ValueError):
            pass
        if worker.proc.poll() is None:
            try:
                os.killpg(worker.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            worker.proc.wait()
        for stream in (worker.proc.stdin, worker.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
