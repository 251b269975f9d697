"""A sandbox worker process: runs each task in a fresh forked, resource-limited child.

Started by :class:`lever_jax.execution.sandbox.Sandbox` as ``python -m
lever_jax.execution.sandbox_worker CONFIG_JSON``; speaks length-prefixed JSON over its stdin/stdout
(moved to private fds at start-up; fds 0/1 become /dev/null). The worker (the "router") never runs
untrusted code. For each task module it forks a *zygote* (``sandbox_zygote``) that imports the module once (so
children get it for free through fork, and heavy modules such as sympy only slow down the forks
of their own tasks); the zygote forks one child per task and supervises it:

* the child calls ``setsid`` (its own process group, SIGKILLed on exit or timeout), closes every
  inherited fd except stdout/stderr (a capped pipe) and the private result pipe, chdirs into an
  empty temporary directory, applies rlimits (CPU, address space, file size, open files,
  processes, no core files), drops to a per-slot uid (when started as root) and sets
  ``no_new_privs`` and a parent-death signal;
* the worker lives in its own network namespace (no network at all) and mount namespace with
  fresh tmpfs over the world-writable directories (cleared after every task), when the kernel
  allows; otherwise the child blocks socket creation in Python;
* with the mount view, the child is chrooted into a tree showing only the system directories,
  the interpreter, this package and its inputs (``sandbox_paths``: never the directory we were
  started from; what lives under /tmp is shown elsewhere and the zygote's interpreter re-pointed);
* the result travels through a pipe, prefixed by a per-task random nonce -- never through stdout,
  so markers printed by a program mean nothing;
* the zygote is a child subreaper, so descendants that escaped the process group (``setsid``)
  are re-parented to it and killed (by uid, or one by one) before the next task starts.
"""
from __future__ import annotations

import importlib
import json
import os
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
from typing import Any, Callable

from lever_jax.execution import isolation, sandbox_paths
from lever_jax.execution.sandbox_wire import (MAX_RESULT_BYTES, MAX_RESULT_VALUES, encode_message, json_values,
                                             read_message, write_all)
from lever_jax.execution.sandbox_paths import Layout
from lever_jax.execution.sandbox_zygote import Zygote

RESULT_FD = 3
CHILD_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


class Worker:
    def __init__(self, config: dict[str, Any]):
        self.limits: dict[str, Any] = config["limits"]
        self.uid: int | None = config.get("uid")
        self.functions: dict[str, Callable[[Any], Any]] = {}
        self.protections: dict[str, Any] = {}
        self.base = ""
        self.view = ""
        self.pid_ns_fd = -1
        self.task_binds: list[str] = []
        self.tmp_mounted = False
        self.layout = Layout({})
        self.covered: dict[str, str] = {}  # covered world-writable directory -> where it is reachable
        self.relocation: tuple[dict[str, str], list[str]] | None = None  # applied by each zygote (view)
        self.broken = False  # a clean-up failed: the zygote exits after this task and is replaced

    # -- set-up (in the router, before any zygote is forked: namespaces are inherited) ----------
    def setup(self) -> None:
        p = self.protections
        p["die_with_parent"] = isolation.die_with_parent()
        p["subreaper"] = isolation.set_subreaper()
        root = isolation.is_root()
        p["network_namespace"] = isolation.private_network()
        p["socket_blocked_in_python"] = not p["network_namespace"]
        # Paths the tasks must be able to read: the interpreter, its libraries and our package --
        # not the directory we were started from nor the rest of sys.path (sandbox_paths).
        wanted = sandbox_paths.code_paths()
        readable = [str(r) for r in self.limits.get("readable", ())]
        private = isolation.private_tmp(keep=wanted + readable) if root else isolation.PrivateTmp({}, [])
        p["private_tmp_dirs"], p["private_tmp_kept"] = sorted(private.covered), private.kept
        p["mount_namespace"] = bool(p["private_tmp_dirs"])
        # The interpreter or this checkout under /tmp is bind-mounted back read-only into the
        # private /tmp (isolation.private_tmp); if that failed /tmp stays shared, and we say so.
        p["private_tmp"] = os.path.realpath("/tmp") in p["private_tmp_dirs"]
        if p["mount_namespace"]:
            # Let the unprivileged task import the stdlib even if it lives under /root (0700).
            p["exposed_paths"] = isolation.expose_paths(wanted)
        self.base = tempfile.mkdtemp(prefix="lever-sandbox-")
        os.chmod(self.base, 0o711)
        self._setup_view(wanted + readable)
        # Per-task inputs that live in a covered directory are bound into the view from here;
        # without a view, tasks would see this directory in their /tmp: the handles are closed.
        self.covered = isolation.bind_covered(private.covered if self.view else {}, os.path.join(self.base, "covered"))
        for fd in ([] if self.view else private.covered.values()):
            os.close(fd)
        # where a task finds what is not at its host path (Sandbox.task_path)
        p["relocated"] = self.layout.moved()
        if not self.view and p["private_tmp_kept"]:  # the task would see them in its /tmp: move them
            p["relocated"] = sandbox_paths.move_kept(p["private_tmp_kept"], p["private_tmp_dirs"],
                                                     os.path.join(self.base, "code"))
            p["private_tmp_kept"] = list(p["relocated"].values()) or p["private_tmp_kept"]
        p["drop_privileges"] = bool(root and self.uid is not None)
        p["task_uid"] = self.uid if p["drop_privileges"] else os.geteuid()
        # RLIMIT_NPROC counts processes per uid and is ignored for root: it only means
        # something once the child runs as its own slot uid.
        p["rlimit_nproc"] = p["drop_privileges"]
        p["rlimits"] = ["cpu", "as", "fsize", "nofile", "core"] + (["nproc"] if p["rlimit_nproc"] else [])
        p["process_group_kill"] = True
        if p["drop_privileges"]:
            isolation.kill_uid(self.uid)  # leftovers of a replaced worker in this slot

    def _setup_view(self, shown: list[str]) -> None:
        """The task's own mount view (showing ``shown``), PID and IPC namespaces (each reported;
        each may be refused)."""
        p = self.protections
        self.view = ""
        off = set(self.limits.get("disable", ()))
        if p["mount_namespace"] and "mount_view" not in off:
            view = tempfile.mkdtemp(prefix="lever-view-")
            layout = Layout.for_view(shown)
            if isolation.build_sandbox_view(view, layout.places, self.uid if isolation.is_root() else None):
                self.view, self.layout = view, layout
                self.relocation = layout.relocation(sandbox_paths.spellings())
            else:
                try:
                    os.rmdir(view)
                except OSError:
                    pass
        p["mount_view"] = bool(self.view)
        p["per_task_tmpfs"] = bool(self.view)
        self.pid_ns_fd = os.open("/proc/self/ns/pid", os.O_RDONLY)
        p["pid_namespace"] = p["ipc_namespace"] = p["private_proc"] = False
        p["disabled_layers"] = sorted(off)
        if "pid_namespace" in off:
            p["ipc_namespace"] = "ipc_namespace" not in off and isolation.unshare_probe(isolation.CLONE_NEWIPC)
            return
        # Probe once, as a zygote will: a child in a fresh PID namespace (its pid 1) with its own
        # mount namespace and a /proc of that PID namespace, and one task child with its own IPC one.
        if isolation.next_child_in_new_pid_namespace(self.pid_ns_fd):
            pid = os.fork()
            if pid == 0:  # pragma: no cover - probe child
                code = 1 if os.getpid() == 1 else 0
                if self.view and isolation.unshare(isolation.CLONE_NEWNS) and isolation.mount_proc(self.view + "/proc"):
                    code |= 4
                code |= 2 if isolation.unshare(isolation.CLONE_NEWIPC) else 0
                os._exit(code)
            isolation.restore_pid_namespace(self.pid_ns_fd)
            code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            p["pid_namespace"], p["ipc_namespace"], p["private_proc"] = bool(code & 1), bool(code & 2), bool(code & 4)
            p["ipc_namespace"] = p["ipc_namespace"] and "ipc_namespace" not in off
        else:
            p["ipc_namespace"] = "ipc_namespace" not in off and isolation.unshare_probe(isolation.CLONE_NEWIPC)

    def setup_zygote(self) -> None:
        """In the zygote (pid 1 of its own PID namespace when granted): its own mount namespace
        with a /proc showing that namespace only, other uids' processes (the zygote) hidden."""
        self.protections["subreaper"] = isolation.set_subreaper()
        if self.view:  # own mount namespace: its per-task mounts never meet another zygote's
            if not isolation.unshare(isolation.CLONE_NEWNS):
                raise OSError("cannot create the zygote's mount namespace")
            if self.protections.get("private_proc") and not isolation.mount_proc(self.view + "/proc"):
                raise OSError("cannot mount the zygote's /proc")
        # Children inherit this environment; each then only sets HOME and TMPDIR.
        os.environ.clear()
        os.environ.update(CHILD_ENV)

    def resolve(self, name: str) -> Callable[[Any], Any]:
        fn = self.functions.get(name)
        if fn is None:
            module, _, attr = name.partition(":")
            fn = getattr(importlib.import_module(module), attr)
            self.functions[name] = fn
        return fn

    # -- one task -----------------------------------------------------------------------------
    def run_task(self, msg: dict[str, Any]) -> dict[str, Any]:
        reply: dict[str, Any] = {"id": msg["id"], "stdout": "", "elapsed_s": 0.0, "value": None, "error": None}
        try:
            fn = self.resolve(msg["function"])
        except Exception as err:  # noqa: BLE001 - bad function name: the caller's bug, report it
            reply.update(status="error", error=f"cannot import task function {msg['function']!r}: {err!r}")
            return reply
        p = self.protections
        payload = msg["payload"]
        if self.view:
            if not self.tmp_mounted and not (
                    isolation.fresh_tmpfs(self.view + "/tmp", int(self.limits.get("tmp_mb", 64)))
                    and isolation.fresh_tmpfs(self.view + "/dev/shm", int(self.limits.get("tmp_mb", 64)))):
                self._unmount_task()
                self.broken = True
                reply.update(status="killed", error="sandbox: cannot mount the task's /tmp")
                return reply
            self.tmp_mounted = True
            tmpdir = "/tmp"
            payload = self._shown_payload(payload, self._bind_readable(msg.get("readable")))
        else:
            tmpdir = tempfile.mkdtemp(dir=self.base)
            if p["drop_privileges"]:
                os.chown(tmpdir, self.uid, self.uid)
        res_r, res_w = os.pipe()
        out_r, out_w = os.pipe()
        nonce = os.urandom(16).hex().encode()
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child never returns
            self._child(fn, payload, tmpdir, res_w, out_w, nonce)
        os.close(res_w)
        os.close(out_w)
        try:
            reply.update(self._supervise(pid, res_r, out_r, nonce, start))
        finally:
            os.close(res_r)
            os.close(out_r)
            if self.view:
                self._release_task_tmp()
            else:
                self._cleanup(tmpdir)
        return reply

    def _release_task_tmp(self) -> None:
        """After a task: a /tmp and /dev/shm it left empty are as good as new (the task cannot
        change the root-owned tmpfs roots themselves) and serve the next task; anything left in
        them, or a per-task bind, and both are unmounted (the next task gets fresh ones)."""
        try:
            clean = not self.task_binds and isolation.is_empty(self.view + "/tmp") and isolation.is_empty(self.view + "/dev/shm")
        except OSError:
            clean = False
        if not clean:
            self._unmount_task()

    def _bind_readable(self, readable: Any) -> dict[str, str]:
        """Show this task's own read-only inputs (its database) in the view, until it ends.
        ``readable``: {path as the caller spelled it: its real path}. Returns {spelling: where
        the task finds it} for the inputs not shown at the spelled path."""
        shown: dict[str, str] = {}
        if not isinstance(readable, dict):
            return shown
        for spelled, real in readable.items():
            if isinstance(spelled, str) and isinstance(real, str) and os.path.isabs(real):
                place = self.layout.place(real) or self._bind_input(real)
                if place is not None and place != spelled:
                    shown[spelled] = place
        return shown

    def _bind_input(self, real: str) -> str | None:
        """Bind host ``real`` into this task's own inputs tmpfs (isolation.TASK_INPUTS, mounted
        for the first input), from where the zygote still reaches it when it lives in a directory
        every task sees as its own, empty one (/tmp). Returns where the task finds it, or None."""
        hidden = sandbox_paths.inside(real, sandbox_paths.hidden_dirs())
        source = isolation.covered_source(real, self.covered) if hidden else real
        if source is None or not os.path.exists(source):
            return None
        inputs = self.view + isolation.TASK_INPUTS
        if not self.task_binds:
            if not isolation.fresh_tmpfs(inputs, 1, mode="0755"):
                return None
            self.task_binds.append(inputs)
        place = isolation.TASK_INPUTS + real
        return place if isolation.bind_into(self.view, source, at=place) else None

    @staticmethod
    def _shown_payload(payload: Any, shown: dict[str, str]) -> Any:
        """The task's payload with every top-level value naming one of its inputs (``Task.readable``)
        replaced by where the task finds that input."""
        if not shown or not isinstance(payload, dict):
            return payload
        return {key: shown.get(value, value) if isinstance(value, str) else value for key, value in payload.items()}

    def _unmount_task(self) -> None:
        """The per-task clean-up: detach the task's /dev/shm and /tmp (a lazy unmount cannot be
        blocked, and no program can make it raise)."""
        for target in [*self.task_binds, self.view + "/dev/shm", self.view + "/tmp"]:
            while isolation.umount(target):  # everything stacked there
                pass
        self.task_binds.clear()
        self.tmp_mounted = False

    def _child(self, fn: Callable[[Any], Any], payload: Any, tmpdir: str, res_w: int, out_w: int,
               nonce: bytes) -> None:
        # Keep local references: the program may tamper with modules and builtins.
        write, exit_, dumps, result_fd = os.write, os._exit, json.dumps, RESULT_FD
        frame: dict[str, Any]
        try:
            os.setsid()
            os.dup2(out_w, 1)
            os.dup2(out_w, 2)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(res_w, RESULT_FD)
            os.closerange(RESULT_FD + 1, 1 << 16)
            p = self.protections
            if p["ipc_namespace"] and not isolation.unshare(isolation.CLONE_NEWIPC):
                raise OSError("cannot create the IPC namespace")
            if self.view:
                os.chroot(self.view)
            os.chdir(tmpdir)
            lim = self.limits
            isolation.set_limit(resource.RLIMIT_CORE, 0)
            cpu = max(1, int(lim["cpu_s"]))
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
            isolation.set_limit(resource.RLIMIT_AS, int(lim["memory_mb"]) << 20)
            isolation.set_limit(resource.RLIMIT_FSIZE, int(lim["file_size_mb"]) << 20)
            isolation.set_limit(resource.RLIMIT_NOFILE, int(lim["open_files"]))
            if self.protections["drop_privileges"]:
                isolation.set_limit(resource.RLIMIT_NPROC, 1 + int(lim["processes"]))
                isolation.drop_privileges(self.uid)
            isolation.no_new_privs()
            isolation.die_with_parent()
            os.environ["HOME"] = os.environ["TMPDIR"] = tmpdir
            tempfile.tempdir = tmpdir
            if not self.protections["network_namespace"]:
                isolation.block_sockets()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
        except BaseException as err:  # noqa: BLE001
            frame = {"status": "error", "error": f"sandbox set-up failed: {err!r}"}
        else:
            try:
                value = fn(payload)
                frame = {"status": "ok", "value": value}
            except MemoryError:
                frame = {"status": "memory", "error": "MemoryError (address-space limit reached)"}
            except BaseException as err:  # noqa: BLE001 - SystemExit, KeyboardInterrupt, anything
                frame = {"status": "error", "error": _describe(err)}
        try:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except BaseException:  # noqa: BLE001
                    pass
            try:
                body = dumps(frame, default=repr).encode("utf-8", "surrogatepass")
            except BaseException as err:  # noqa: BLE001
                body = dumps({"status": "error", "error": f"result not serialisable: {err!r}"}).encode()
            data = memoryview(nonce + body)
            while data:
                data = data[write(result_fd, data):]
        finally:
            exit_(0)

    def _supervise(self, pid: int, res_r: int, out_r: int, nonce: bytes, start: float) -> dict[str, Any]:
        limits = self.limits
        cap = int(limits["output_bytes"])
        deadline = start + float(limits["timeout_s"])
        pidfd = os.pidfd_open(pid)
        poller = select.poll()
        for fd in (res_r, out_r, pidfd):
            poller.register(fd, select.POLLIN)
        out: list[bytes] = []
        res: list[bytes] = []
        sizes = {out_r: 0, res_r: 0}
        reason = None
        exited = False
        try:
            while not exited and reason is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    reason = "timeout"
                    break
                for fd, _event in poller.poll(remaining * 1000.0):
                    if fd == pidfd:
                        exited = True
                        continue
                    data = os.read(fd, 1 << 16)
                    if not data:
                        poller.unregister(fd)
                        continue
                    sizes[fd] += len(data)
                    if fd == out_r:
                        if sizes[out_r] - len(data) <= cap:
                            out.append(data)
                        if sizes[out_r] > cap:
                            reason = "output_limit"
                    else:
                        res.append(data)
                        if sizes[res_r] > MAX_RESULT_BYTES:
                            reason = "result_too_large"
            self._kill_group(pid)
            # Drain what is left without blocking (escaped descendants may hold the pipes open).
            for fd, chunks in ((res_r, res), (out_r, out)):
                os.set_blocking(fd, False)
                while sizes[fd] <= (MAX_RESULT_BYTES if fd == res_r else cap):
                    try:
                        data = os.read(fd, 1 << 16)
                    except BlockingIOError:
                        break
                    if not data:
                        break
                    sizes[fd] += len(data)
                    chunks.append(data)
            _, status, usage = os.wait4(pid, 0)
        finally:
            os.close(pidfd)
        elapsed = time.monotonic() - start
        self._sweep()
        stdout = b"".join(out)[:cap].decode("utf-8", "replace")
        reply: dict[str, Any] = {"stdout": stdout, "elapsed_s": elapsed}
        if sizes[out_r] > cap and reason in (None, "output_limit"):
            reply.update(status="output_limit", error=f"output exceeded {cap} bytes")
            return reply
        if reason == "timeout":
            reply.update(status="timeout", error=f"wall-clock limit of {limits['timeout_s']} s")
            return reply
        if reason == "result_too_large":
            reply.update(status="error", error=f"result larger than {MAX_RESULT_BYTES} bytes")
            return reply
        raw = b"".join(res)
        if raw.startswith(nonce):
            if json_values(raw[len(nonce):]) > MAX_RESULT_VALUES:
                reply.update(status="error", error=f"result of more than {MAX_RESULT_VALUES} values")
                return reply
            try:
                frame = json.loads(raw[len(nonce):])
            except (ValueError, RecursionError):  # not JSON, or nested deeper than we parse
                frame = None
            if isinstance(frame, dict) and frame.get("status") in ("ok", "error", "memory"):
                reply.update(status=frame["status"], value=frame.get("value"), error=frame.get("error"))
                if reply["status"] == "ok" and not isinstance(reply["value"], dict):
                    reply.update(status="error", value=None, error="task function did not return a dict")
                return reply
        cpu_used = usage.ru_utime + usage.ru_stime
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_used >= int(limits["cpu_s"])):
                reply.update(status="timeout", error=f"CPU limit of {limits['cpu_s']} s")
            else:
                reply.update(status="killed", error=f"killed by signal {signal.Signals(sig).name}")
        elif raw:
            reply.update(status="error", error="invalid result on the result channel")
        else:
            reply.update(status="error", error=f"exited with code {os.waitstatus_to_exitcode(status)} without a result")
        return reply

    @staticmethod
    def _kill_group(pid: int) -> None:
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def _sweep(self) -> None:
        """Kill and reap every remaining descendant (they were re-parented to us)."""
        for _ in range(100):
            if isolation.reap_all():
                return
            if self.protections["drop_privileges"]:
                isolation.kill_uid(self.uid)
            else:
                for child in isolation.children(os.getpid()):
                    try:
                        os.kill(child, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            time.sleep(0.001)

    def _cleanup(self, tmpdir: str) -> None:
        """Fallback clean-up (no per-task tmpfs): delete the task's directory and whatever it left
        in the private world-writable directories; iterative, so no tree depth makes it raise.
        Anything still there afterwards marks the zygote broken (it is replaced)."""
        try:
            isolation.remove_tree(tmpdir)
            # Only the tmpfs mounted in our own namespace is cleared -- never a host directory.
            keep = {os.path.realpath(self.base), os.path.realpath(self.view)} if self.view else {os.path.realpath(self.base)}
            # never descend into the interpreter / checkout bind-mounted back into the private tmpfs
            kept = self.protections.get("private_tmp_kept", ())
            for path in self.protections.get("private_tmp_dirs", ()):
                for entry in os.listdir(path):
                    full = os.path.join(path, entry)  # judged by its own path, never where a symlink points
                    if full in keep or any(k == full or k.startswith(full + "/") for k in kept):
                        continue
                    isolation.remove_tree(full)
            if os.path.lexists(tmpdir):
                self.broken = True
        except Exception:  # noqa: BLE001 - never let a program's leftovers kill the zygote mid-task
            self.broken = True

    def shutdown(self) -> None:
        self._sweep()


def _describe(err: BaseException) -> str:
    try:
        text = f"{type(err).__name__}: {err}"
    except BaseException:  # noqa: BLE001 - a hostile __str__
        text = type(err).__name__
    return text[:2000]


def main() -> int:
    config = json.loads(sys.argv[1])
    in_fd, out_fd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    worker = Worker(config)
    worker.setup()
    zygotes: dict[str, Zygote] = {}

    def zygote_for(module: str) -> Zygote:
        if module not in zygotes:
            others = [fd for z in zygotes.values() for fd in (z.req, z.rep)]
            zygotes[module] = Zygote(worker, module, [in_fd, out_fd] + others)
        return zygotes[module]

    for name in config["limits"].get("preload", ()):
        zygote_for(name.partition(":")[0])
    for zygote in zygotes.values():  # they import side by side; the hello means all are warm
        zygote.wait_ready()
    write_all(out_fd, encode_message({"hello": worker.protections, "pid": os.getpid()}))
    try:
        while True:
            msg = read_message(in_fd)
            if msg is None or msg.get("exit"):
                break
            module = str(msg.get("function", "")).partition(":")[0]
            reply = zygote_for(module).run(msg)
            if reply is not None and reply.pop("zygote_retired", False):
                zygotes.pop(module).close()  # it could not clean up after this task; the next gets a fresh one
            if reply is None:  # the zygote died (it never runs untrusted code: a bug or OOM)
                zygotes.pop(module).close()
                reply = {"id": msg["id"], "status": "killed", "error": "sandbox zygote died", "value": None,
                         "stdout": "", "elapsed_s": 0.0}
            write_all(out_fd, encode_message(reply))
    except BrokenPipeError:
        pass
    finally:
        for zygote in zygotes.values():
            zygote.close()
        isolation.reap_all()
        if worker.protections["drop_privileges"]:
            isolation.kill_uid(worker.uid)
        # The host directories bound read-only under base (bind_covered): detached first, or the
        # removal would walk all of the host's /tmp (1.3 s on a development machine) and fail there.
        for point in isolation.mounts_below(worker.base) if worker.base else ():
            isolation.umount(point)
        shutil.rmtree(worker.base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
