"""Linux isolation primitives for the sandbox (ctypes wrappers; each degrades gracefully).

Every function returns True when the protection is active and False when the kernel or our
privileges refuse it, so that the sandbox can report which protections are in force
(``Sandbox.protections()``) instead of silently pretending.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import re
import resource
import signal
from typing import Any, NamedTuple

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_BIND = 4096
MS_REC = 16384
MS_REMOUNT = 32
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38

# World-writable places an unprivileged task could otherwise leave files in.
WRITABLE_DIRS = ("/tmp", "/var/tmp", "/run/lock", "/dev/shm")

_libc = None

_OCTAL = re.compile(r"\\([0-7]{3})")


def libc() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _libc


def _call(name: str, *args: object) -> bool:
    try:
        fn = getattr(libc(), name)
    except (OSError, AttributeError):
        return False
    return fn(*args) == 0


def prctl(option: int, arg: int) -> bool:
    return _call("prctl", ctypes.c_int(option), ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0),
                 ctypes.c_ulong(0))


def unshare(flags: int) -> bool:
    return _call("unshare", ctypes.c_int(flags))


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None) -> bool:
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    return _call("mount", enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data))


# In the view: a per-task, root-owned tmpfs holding that task's own inputs (``Task.readable``),
# each at this prefix + its host path; unmounted, with them, when the task ends.
TASK_INPUTS = "/lever-inputs"


def umount(target: str) -> bool:
    """Lazily detach the mount at ``target`` (MNT_DETACH)."""
    return _call("umount2", target.encode(), ctypes.c_int(MNT_DETACH))


def mounts_below(path: str) -> list[str]:
    """The mount points strictly below ``path`` in this mount namespace, deepest first (from
    /proc/self/mountinfo, its octal escapes decoded): what to detach before deleting ``path``, so
    that the deletion never walks a bound host directory."""
    root = os.path.realpath(path).rstrip("/") + "/"
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as handle:
            points = {_OCTAL.sub(lambda m: chr(int(m.group(1), 8)), line.split(" ")[4]) for line in handle}
    except OSError:
        return []
    return sorted((p for p in points if p.startswith(root)), key=lambda p: p.count("/"), reverse=True)


def _outermost(paths: list[str]) -> list[str]:
    """The paths that are not inside another one of ``paths``."""
    out: list[str] = []
    for path in sorted(set(paths)):
        if not any(path == o or path.startswith(o + "/") for o in out):
            out.append(path)
    return out


def _tmpfs_keeping(real: str, keep: list[str], size_mb: int) -> int | None:
    """Mount a fresh tmpfs over ``real`` and bind-mount the ``keep`` paths (inside it) back,
    read-only. Returns an O_PATH handle on the host directory it covers (:func:`bind_covered`),
    or None; all or nothing: if any step fails the tmpfs is detached again."""
    fds: list[tuple[str, int]] = []
    under = -1
    try:
        under = os.open(real, os.O_PATH | os.O_DIRECTORY)
        for path in keep:
            fds.append((path, os.open(path, os.O_PATH | os.O_DIRECTORY)))
        if not mount("lever_sandbox_tmp", real, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size_mb}m,mode=1777"):
            return None
        for path, fd in fds:
            try:
                os.makedirs(path, mode=0o755, exist_ok=True)
            except OSError:
                umount(real)
                return None
            if not (mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC, None)
                    and mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None)):
                umount(real)
                return None
        handle, under = under, -1
        return handle
    except OSError:
        return None
    finally:
        for fd in [under, *(fd for _, fd in fds)]:
            if fd >= 0:
                os.close(fd)


def bind_covered(handles: dict[str, int], into: str) -> dict[str, str]:
    """Bind each host directory a private tmpfs covers (``handles``, :class:`PrivateTmp`) read-only
    under ``into`` (a root-only directory no task can reach), so that processes that later enter
    their own mount namespace (the zygotes) can still bind per-task inputs from there: a handle on
    the parent's namespace cannot be a bind source in theirs. Closes the handles; returns
    {covered directory: where it is reachable now} for the binds that succeeded."""
    reachable: dict[str, str] = {}
    for index, (directory, fd) in enumerate(sorted(handles.items())):
        target = os.path.join(into, str(index))
        try:
            os.makedirs(target, mode=0o700, exist_ok=True)
            # not recursive: a recursive bind would carry the covering tmpfs along
            if (mount(f"/proc/self/fd/{fd}", target, None, MS_BIND, None)
                    and mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None)):
                reachable[directory] = target
        except OSError:
            pass
        finally:
            os.close(fd)
    return reachable


def covered_source(path: str, reachable: dict[str, str]) -> str | None:
    """Where host ``path`` (a real path in a directory a private tmpfs covers) is reachable
    through :func:`bind_covered`'s binds (a bind-mount source), or None."""
    for directory, at in reachable.items():
        if path.startswith(directory.rstrip("/") + "/"):
            return at + path[len(directory.rstrip("/")):]
    return None


def private_network() -> bool:
    """Move this process (and its future children) into an empty network namespace."""
    return unshare(CLONE_NEWNET)


class PrivateTmp(NamedTuple):
    """What :func:`private_tmp` did: the directories now covered by a private tmpfs (real path ->
    an O_PATH handle on the host directory underneath, :func:`covered_source`) and the kept paths
    bind-mounted inside them (the caller's clean-up must never delete those)."""

    covered: dict[str, int]
    kept: list[str]


def private_tmp(keep: list[str] = (), size_mb: int = 64) -> PrivateTmp:
    """New mount namespace with fresh, size-capped tmpfs over the world-writable directories.

    Mount propagation is made private *first*, so nothing here can reach the host's mounts; if
    that fails we mount nothing. ``keep`` paths that live inside such a directory (e.g. the
    interpreter or our package checked out under /tmp) are bind-mounted back, read-only, into the
    fresh tmpfs; when that fails the directory is left as it was (shared). The caller owns the
    returned handles (:func:`bind_covered` closes them).
    """
    if not unshare(CLONE_NEWNS):
        return PrivateTmp({}, [])
    if not mount(None, "/", None, MS_REC | MS_PRIVATE, None):
        return PrivateTmp({}, [])
    kept = [os.path.realpath(k) for k in keep if k and os.path.isdir(k)]
    covered: dict[str, int] = {}
    bound: list[str] = []
    for path in WRITABLE_DIRS:
        real = os.path.realpath(path)
        if not os.path.isdir(real) or real in kept or real in covered:
            continue
        inside = _outermost([k for k in kept if k.startswith(real + "/")])
        handle = _tmpfs_keeping(real, inside, size_mb)
        if handle is not None:
            covered[real] = handle
            bound.extend(inside)
    return PrivateTmp(covered, bound)


def expose_paths(paths: list[str]) -> list[str]:
    """Make ``paths`` reachable for unprivileged tasks inside our private mount namespace.

    The interpreter may live under a directory only root can traverse (``/root`` is 0700 here),
    which would make every not-yet-imported stdlib module unimportable after the uid drop. For
    each such blocking ancestor we mount an empty tmpfs over it (hiding the rest of it) and
    bind-mount the needed paths back. Only call this after :func:`private_tmp` succeeded (mount
    propagation private). Returns the paths it exposed.
    """
    groups: dict[str, list[tuple[str, int]]] = {}
    for path in sorted({os.path.realpath(p) for p in paths if os.path.isdir(p)}):
        blocked = None
        parts = path.split("/")
        for i in range(2, len(parts) + 1):
            ancestor = "/".join(parts[:i])
            if not os.stat(ancestor).st_mode & 0o001:
                blocked = ancestor
                break
        if blocked is None or blocked == path:
            continue
        if any(path.startswith(kept + "/") for kept, _ in groups.get(blocked, [])):
            continue  # an ancestor of it is exposed already
        groups.setdefault(blocked, []).append((path, os.open(path, os.O_PATH | os.O_DIRECTORY)))
    exposed = []
    for blocked, items in groups.items():
        try:
            if not mount("lever_sandbox_hide", blocked, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755"):
                continue
            for path, fd in items:
                os.makedirs(path, exist_ok=True)
                if mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC, None):
                    exposed.append(path)
        finally:
            for _, fd in items:
                os.close(fd)
    return exposed


def set_subreaper() -> bool:
    """Orphaned descendants are re-parented to us, so we can see (and reap) escaped processes."""
    return prctl(PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent(sig: int = signal.SIGKILL) -> bool:
    return prctl(PR_SET_PDEATHSIG, int(sig))


def no_new_privs() -> bool:
    """setuid binaries can no longer raise privileges (must be set after dropping them)."""
    return prctl(PR_SET_NO_NEW_PRIVS, 1)


def is_root() -> bool:
    return os.geteuid() == 0


def drop_privileges(uid: int) -> None:
    """Become ``uid`` / ``gid == uid`` with no supplementary groups (raises OSError on failure)."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def set_limit(which: int, value: int) -> bool:
    try:
        resource.setrlimit(which, (value, value))
        return True
    except (ValueError, OSError):
        return False


def kill_uid(uid: int) -> None:
    """SIGKILL every process owned by ``uid`` (a forked helper calls ``kill(-1)`` as that uid).

    Used after each task when a descendant escaped the task's process group (``setsid``).
    Only valid when each uid belongs to a single sandbox slot.
    """
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the helper child
        try:
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            os.kill(-1, signal.SIGKILL)
        except BaseException:  # noqa: BLE001
            pass
        os._exit(0)
    while True:
        try:
            os.waitpid(pid, 0)
            return
        except InterruptedError:
            continue
        except ChildProcessError:
            return


def reap_all() -> bool:
    """Reap exited children without blocking; True when no children remain at all."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        except OSError as err:  # pragma: no cover
            if err.errno == errno.EINTR:
                continue
            raise
        if pid == 0:
            return False


# -- per-task namespaces and the task's mount view ------------------------------------------------
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
# /etc files the interpreter and the C libraries read (the dynamic loader's cache, time zone, ids).
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "nsswitch.conf", "host.conf",
             "mime.types")
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
DEVICES = ("null", "zero", "full", "random", "urandom")


def _bind_ro(source: str, target: str, dev: bool = False) -> bool:
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | (0 if dev else MS_NODEV)
    return mount(source, target, None, MS_BIND | MS_REC, None) and mount(None, target, None, flags, None)


def bind_into(root: str, path: str, dev: bool = False, at: str | None = None) -> bool:
    """Bind-mount host ``path`` read-only at ``at`` (default: the same path) under ``root``
    (dirs or files)."""
    target = root + (path if at is None else at)
    try:
        if os.path.isdir(path):
            os.makedirs(target, mode=0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
            if not os.path.exists(target):
                os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
    except OSError:
        return False
    return _bind_ro(path, target, dev)


def build_sandbox_view(root: str, places: dict[str, str], uid: int | None = None) -> bool:
    """Make ``root`` (an empty directory) the task's whole file system: a fresh tmpfs holding
    read-only binds of the system directories, a few /etc files, /dev's harmless devices and
    ``places`` (host path -> its path in the view: interpreter, package, databases), plus empty
    ``/tmp``, ``/dev/shm`` and ``/proc`` mount points (filled per task). Everything else -- host
    sockets, /home, /work, /run, the directory we were started from -- does not exist inside it.
    Call in a private mount namespace only. All or nothing (False: undone)."""
    if not mount("lever_sandbox_root", root, "tmpfs", MS_NOSUID, "size=1m,mode=0755"):
        return False
    try:
        for sub in ("tmp", "proc", "dev/shm", "var", "etc", TASK_INPUTS.lstrip("/")):
            os.makedirs(os.path.join(root, sub), mode=0o755, exist_ok=True)
        os.symlink("/tmp", os.path.join(root, "var/tmp"))
        for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                             ("stderr", "/proc/self/fd/2")):
            os.symlink(target, os.path.join(root, "dev", name))
        for path in SYSTEM_DIRS:
            if os.path.islink(path):  # merged /usr: /bin -> usr/bin
                os.symlink(os.readlink(path), root + path)
            elif os.path.isdir(path) and not bind_into(root, path):
                raise OSError(f"cannot bind {path}")
        for name in ETC_FILES:
            path = os.path.join("/etc", name)
            if os.path.exists(path) and not bind_into(root, os.path.realpath(path) if os.path.islink(path) else path):
                raise OSError(f"cannot bind {path}")
        for name in DEVICES:
            if os.path.exists(f"/dev/{name}") and not bind_into(root, f"/dev/{name}", dev=True):
                raise OSError(f"cannot bind /dev/{name}")
        for path, at in sorted(places.items(), key=lambda item: item[1]):
            if not os.path.exists(root + at) and not bind_into(root, path, at=at):
                raise OSError(f"cannot bind {path}")
        # The host's user list and host names are not the task's business: synthetic ones.
        task = f"sandbox:x:{uid}:{uid}::/tmp:/bin/false\n" if uid is not None else ""
        for name, text in (("passwd", f"root:x:0:0::/root:/bin/false\n{task}"),
                           ("group", "root:x:0:\n" + (f"sandbox:x:{uid}:\n" if uid is not None else "")),
                           ("hosts", "127.0.0.1 localhost\n::1 localhost\n")):
            with open(os.path.join(root, "etc", name), "w", encoding="utf-8") as handle:
                handle.write(text)
        os.chmod(os.path.join(root, "tmp"), 0o1777)
        return True  # (root-owned, 0755: the unprivileged task cannot write to it)
    except OSError:
        umount(root)
        return False


def fresh_tmpfs(target: str, size_mb: int, mode: str = "1777") -> bool:
    """A new, empty tmpfs at ``target`` (one per task: the clean-up is its unmount)."""
    return mount("lever_sandbox_task", target, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size_mb}m,mode={mode}")


def mount_proc(target: str) -> bool:
    """A /proc of the caller's PID namespace in which other uids' processes are invisible."""
    return mount("proc", target, "proc", MS_NOSUID | MS_NODEV | 8, "hidepid=2")  # 8 = MS_NOEXEC


def unshare_probe(flags: int) -> bool:
    """Whether a child may ``unshare(flags)`` (tried in a throw-away fork)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - probe child
        os._exit(0 if unshare(flags) else 1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def next_child_in_new_pid_namespace(own_ns_fd: int) -> bool:
    """The next fork() of the caller starts a fresh PID namespace (its pid 1): the kernel kills
    every process left in it when that child exits. ``own_ns_fd``: /proc/self/ns/pid, opened once;
    call :func:`restore_pid_namespace` right after the fork."""
    return _call("setns", ctypes.c_int(own_ns_fd), ctypes.c_int(CLONE_NEWPID)) and unshare(CLONE_NEWPID)


def restore_pid_namespace(own_ns_fd: int) -> bool:
    """Undo :func:`next_child_in_new_pid_namespace` for the caller's later forks."""
    return _call("setns", ctypes.c_int(own_ns_fd), ctypes.c_int(CLONE_NEWPID))


def remove_tree(path: str) -> None:
    """Delete ``path`` and everything below it: iterative (any depth, no RecursionError, no path
    longer than PATH_MAX), never follows symlinks, never raises."""
    names: list[str] = []
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        try:
            os.unlink(path)
        except OSError:
            pass
        return
    try:
        while True:
            sub = None
            try:
                with os.scandir(fd) as entries:
                    for entry in entries:
                        try:
                            if entry.is_dir(follow_symlinks=False):
                                sub = entry.name
                                break
                            os.unlink(entry.name, dir_fd=fd)
                        except OSError:
                            pass
            except OSError:
                pass
            if sub is not None:
                try:
                    child = os.open(sub, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                except OSError:
                    child = None
                if child is not None:
                    os.close(fd)
                    fd = child
                    names.append(sub)
                    continue
                try:
                    os.rmdir(sub, dir_fd=fd)
                except OSError:
                    return  # cannot open nor remove it: give up (the caller restarts the zygote)
                continue
            if not names:
                break
            parent = os.open("..", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = parent
            try:
                os.rmdir(names.pop(), dir_fd=fd)
            except OSError:
                return
    except OSError:
        return
    finally:
        os.close(fd)
    try:
        os.rmdir(path)
    except OSError:
        pass


def block_sockets() -> None:
    """Fallback when no network namespace: make socket creation fail inside the child."""
    import socket

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise PermissionError("network access is disabled in the sandbox")

    socket.socket = refuse  # type: ignore[assignment,misc]
    socket.create_connection = refuse  # type: ignore[assignment]
    socket.socketpair = refuse  # type: ignore[assignment]
    try:
        import _socket

        _socket.socket = refuse  # type: ignore[assignment,misc]
    except ImportError:  # pragma: no cover
        pass


def children(ppid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if int(fields[1]) == ppid:
            found.append(int(entry))
    return found


def is_empty(path: str) -> bool:
    with os.scandir(path) as entries:
        return next(entries, None) is None
