"""The sandbox's zygotes: one forked copy of the worker per task module, which imports that module
once and then forks one supervised child per task (``Worker.run_task``), so heavy modules (sympy)
slow down only their own tasks' forks. The worker process (``sandbox_worker``) routes each task to
its module's zygote and starts a fresh one when a zygote retires or dies."""
from __future__ import annotations

import gc
import importlib
import os
import traceback
from typing import TYPE_CHECKING, Any

from lever_jax.execution import isolation, sandbox_paths
from lever_jax.execution.sandbox_wire import encode_message, read_message, write_all

if TYPE_CHECKING:  # sandbox_worker imports this module
    from lever_jax.execution.sandbox_worker import Worker


class Zygote:
    """A forked copy of the router that has imported one task module (and froze its heap).

    Children forked from it start with the module loaded; keeping heavy modules (sympy) out of
    the light zygotes keeps every other fork cheap.
    """

    def __init__(self, worker: Worker, module: str, close_fds: list[int]):
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        own_ns = worker.protections.get("pid_namespace") and isolation.next_child_in_new_pid_namespace(worker.pid_ns_fd)
        self.pid = os.fork()
        if self.pid and own_ns:
            isolation.restore_pid_namespace(worker.pid_ns_fd)
        if self.pid == 0:  # pragma: no cover - zygote process
            code = 0
            try:
                for fd in close_fds + [req_w, rep_r]:
                    os.close(fd)
                worker.setup_zygote()
                isolation.die_with_parent()
                try:
                    importlib.import_module(module)
                except Exception:  # noqa: BLE001 - reported per task by Worker.resolve
                    pass
                if worker.relocation is not None:
                    # From here on the zygote imports nothing; its children's later imports and
                    # file look-ups happen in the view: point the interpreter at where the view
                    # shows it (once here, not in every child: that costs a copy of every module)
                    sandbox_paths.relocate(*worker.relocation)
                gc.collect()
                gc.freeze()  # children's GC then leaves the inherited heap alone (fewer COW copies)
                write_all(rep_w, encode_message({"ready": True}))
                while True:
                    msg = read_message(req_r)
                    if msg is None:
                        break
                    reply = worker.run_task(msg)
                    if worker.broken:
                        reply["zygote_retired"] = True
                    write_all(rep_w, encode_message(reply))
                    if worker.broken:  # a clean-up failed: a fresh zygote takes over from the next task
                        break
            except BaseException:  # noqa: BLE001
                traceback.print_exc()
                code = 1
            finally:
                try:
                    worker.shutdown()
                finally:
                    os._exit(code)
        os.close(req_r)
        os.close(rep_w)
        self.req, self.rep = req_w, rep_r
        self.ready = False

    def wait_ready(self) -> bool:
        """Block until the zygote has imported its module (it says so once, before its first
        task): a preloaded zygote is then warm, not importing beside the first tasks."""
        if not self.ready:  # None: the zygote died (its pipe closed) before it was ready
            self.ready = bool((read_message(self.rep) or {}).get("ready"))
        return self.ready

    def run(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        try:
            if not self.wait_ready():
                return None
            write_all(self.req, encode_message(msg))
            return read_message(self.rep)
        except (BrokenPipeError, ConnectionResetError):
            return None

    def close(self) -> None:
        for fd in (self.req, self.rep):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
