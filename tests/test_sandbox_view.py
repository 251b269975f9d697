"""What a task sees of the host, wherever ``lever-jax`` is started from and wherever the checkout
and its interpreter live: ``lever-jax execute`` runs candidates that look for the files, sockets
and directories of the user's environment; every look must come back empty.

The mount view these tests pin needs root (user, mount and PID namespaces); without it the
sandbox runs with the fallback layers (reported by ``Sandbox.protections()``) and they are skipped.
"""
from __future__ import annotations

import json
import os
import shutil
import site
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from lever_jax.execution import sandbox_paths
from lever_jax.execution.base import Limits
from lever_jax.execution.sandbox import Sandbox

REPO = Path(__file__).resolve().parents[1]
SECRET = "host-secret-d41d8cd9"

# A GSM8k candidate that reports everything it finds of the user's environment: files it can read,
# sockets it can connect to, and what /tmp and /dev/shm hold. Its answer is the number of finds.
PROBE = """import os, socket
found = []
for path in {files!r}:
    try:
        with open(path) as handle:
            found.append(handle.read())
    except OSError:
        pass
for path in {sockets!r}:
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        found.append('connected to ' + path)
    except OSError:
        pass
found += os.listdir('/tmp') + os.listdir('/dev/shm')
answer = len(found)
"""


@pytest.fixture(scope="module")
def mount_view() -> None:
    """Skip where the kernel (or our privileges) refuse the mount view."""
    with Sandbox(workers=1, limits=Limits(timeout_s=5)) as box:
        if not box.protections().get("mount_view"):
            pytest.skip("no mount view here (needs root and mount namespaces)")


def _listening_socket(path: Path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(8)
    server.setblocking(False)
    os.chmod(path, 0o777)
    return server


def _readable_dir(path: Path) -> Path:
    """``path`` with a world-readable secret file (as a user's home or project directory has)."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o755)
    (path / "notes.txt").write_text(SECRET)
    os.chmod(path / "notes.txt", 0o644)
    return path


def _samples(path: Path, programs: list[str]) -> Path:
    lines = [{"schema_version": 1, "problem_id": f"probe-{i}", "dataset": "gsm8k", "question": "q", "context": {},
              "gold": 0.0, "candidates": [{"program": program}]} for i, program in enumerate(programs)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _execute(python: str, samples: Path, out: Path, cwd: Path, pythonpath: list[Path],
             wrap: list[str] = ()) -> list[dict]:
    """``lever-jax execute`` as a user runs it (after ``wrap``); the candidates' executions, in input order."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, pythonpath))}
    done = subprocess.run([*wrap, python, "-m", "lever_jax.cli", "execute", "--dataset", "gsm8k", "--input",
                           str(samples), "--output", str(out), "--no-cache", "--no-progress", "--workers", "1",
                           "--timeout", "10"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line)["candidates"][0]["execution"] for line in out.read_text().splitlines()]


def _assert_nothing_found(executions: list[dict]) -> None:
    for execution in executions:
        assert SECRET not in json.dumps(execution)
        assert execution["status"] == "ok" and execution["details"]["answer"] == 0.0, execution
        assert execution["correct"]


def test_execute_from_a_directory_with_a_readable_file_and_a_socket(tmp_path, mount_view):
    """Started from a directory holding a world-readable file and a listening unix socket, with
    another directory on PYTHONPATH: the candidate reads neither file, reaches no socket, and its
    /tmp and /dev/shm are empty (the verifier reads result_text: nothing of the host may be in it)."""
    home = _readable_dir(tmp_path / "home")
    lib = _readable_dir(tmp_path / "lib")
    server = _listening_socket(home / "agent.sock")
    try:
        program = PROBE.format(files=[str(home / "notes.txt"), str(lib / "notes.txt"), "notes.txt"],
                               sockets=[str(home / "agent.sock")])
        executions = _execute(sys.executable, _samples(home / "s.jsonl", [program]), home / "out.jsonl", cwd=home,
                              pythonpath=[REPO, lib])
        _assert_nothing_found(executions)
        with pytest.raises(BlockingIOError):
            server.accept()  # nobody connected
    finally:
        server.close()


# Imports that are not done before the task starts (the standard library and this package): they
# must resolve wherever the view shows the interpreter and the package; ``__file__`` names a file
# the task can read, outside its own /tmp.
LATE_IMPORTS = """import os, tomllib, xml.dom.minidom, lever_jax, lever_jax.execution.spider_match
where = lever_jax.execution.spider_match.__file__
answer = 0 if os.path.isfile(where) and not where.startswith('/tmp/') else 1
"""


def _clone(where: Path) -> tuple[Path, Path]:
    """A copy of the package and a venv of its own (its packages are the test venv's, through a
    .pth file) at ``where``: a user's clone. Returns (checkout, its python)."""
    shutil.copytree(REPO / "lever_jax", where / "lever_jax", ignore=shutil.ignore_patterns("__pycache__"))
    (where / "setup.py").write_text(f"# {SECRET}\n")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where / "venv env")], check=True, timeout=120)
    (site_dir,) = (where / "venv env" / "lib").glob("python*/site-packages")
    (site_dir / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return where, where / "venv env" / "bin" / "python"


# Runs the command after it with the directory "$0" read-only (in a mount namespace of its own).
READ_ONLY = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
             'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"']


@pytest.mark.parametrize("layout", ["under /tmp, with spaces", "through a symlink", "read-only"])
def test_execute_from_a_clone_under_tmp(tmp_path, mount_view, layout):
    """A clone and its venv under /tmp (here with spaces in the path, reached through a symlink,
    or on a read-only file system), lever-jax started from inside it: the task's /tmp and /dev/shm
    are empty, it sees nothing of the clone but the package, and imports still work."""
    checkout, _ = _clone(tmp_path / "my clone")
    if layout == "through a symlink":
        (tmp_path / "link").symlink_to(checkout)
        checkout = tmp_path / "link"
    wrap = []
    if layout == "read-only":
        if shutil.which("unshare") is None:
            pytest.skip("no unshare(1) here")
        wrap = [*READ_ONLY, str(checkout)]
    _readable_dir(checkout)
    python = checkout / "venv env" / "bin" / "python"
    server = _listening_socket(checkout / "agent.sock")
    out = tmp_path / "out.jsonl"  # (outside the clone: it may be read-only)
    try:
        probe = PROBE.format(files=[str(checkout / "notes.txt"), str(checkout / "setup.py")],
                             sockets=[str(checkout / "agent.sock")])
        executions = _execute(str(python), _samples(checkout / "s.jsonl", [probe, LATE_IMPORTS]), out,
                              cwd=checkout, pythonpath=[checkout], wrap=wrap)
        _assert_nothing_found(executions)
        with pytest.raises(BlockingIOError):
            server.accept()
    finally:
        server.close()


@pytest.mark.slow
def test_hostile_corpus_passes_from_a_clone_under_tmp(tmp_path, mount_view):
    """The hostile corpus and the sandbox tests, run from a clone under /tmp with spaces in its
    path, by its own venv there, started from the clone's root holding a readable file and a
    listening socket."""
    checkout, python = _clone(tmp_path / "my clone")
    (checkout / "tests").mkdir()
    for name in ("__init__.py", "conftest.py", "test_hostile.py", "test_sandbox.py",
                 "sandbox_slow_import.py"):
        shutil.copy(REPO / "tests" / name, checkout / "tests" / name)
    shutil.copytree(REPO / "tests" / "hostile", checkout / "tests" / "hostile")
    shutil.copy(REPO / "pyproject.toml", checkout / "pyproject.toml")
    _readable_dir(checkout)
    server = _listening_socket(checkout / "agent.sock")
    try:
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        done = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_hostile.py",
                               "tests/test_sandbox.py"], cwd=checkout, env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
        assert " passed" in done.stdout and "skipped" not in done.stdout, done.stdout[-2000:]
        with pytest.raises(BlockingIOError):
            server.accept()
    finally:
        server.close()


def test_a_task_input_under_tmp_is_shown_to_that_task_alone(tmp_path, mount_view):
    """``Task.readable`` under /tmp (pytest's tmp_path, below a root-only directory): the task
    reads it where its payload now says, and sees nothing else of the host's /tmp -- not the
    file beside it, not the input at its host path, and its own /tmp stays empty; the next task,
    which did not ask for it, does not see it."""
    from lever_jax.execution.base import Task
    from lever_jax.execution.isolation import TASK_INPUTS
    from lever_jax.execution.sandbox_paths import RELOCATED

    data = _readable_dir(tmp_path / "inputs") / "input.txt"
    data.write_text("42")
    os.chmod(data, 0o644)
    program = """import os
shown = {shown!r}
seen = [os.path.exists(p) for p in ({beside!r}, {host!r}, {relocated!r}, {shown_beside!r})] + os.listdir('/tmp')
answer = float(open(shown).read()) if os.path.exists(shown) and not any(seen) else -1.0
"""
    beside = data.parent / "notes.txt"

    def task(readable: tuple[str, ...]) -> Task:
        source = program.format(shown=TASK_INPUTS + str(data.resolve()), beside=str(beside), host=str(data),
                                relocated=RELOCATED + str(data.resolve()), shown_beside=TASK_INPUTS + str(beside.resolve()))
        return Task("lever_jax.execution.python_gsm8k:run", {"program": source}, readable)

    with Sandbox(workers=1, limits=Limits(timeout_s=10)) as box:
        first, second = box.map([task((str(data),)), task(())])
    assert first.status == "ok" and first.value["number"] == 42.0, first
    assert second.status == "ok" and second.value["number"] == -1.0, second


def test_a_payload_value_naming_an_input_becomes_where_the_task_finds_it():
    from lever_jax.execution.sandbox_worker import Worker

    shown = {"/tmp/x/db.sqlite": "/lever-inputs/tmp/x/db.sqlite"}
    payload = {"db_path": "/tmp/x/db.sqlite", "sql": "/tmp/x/db.sqlite", "nested": {"db_path": "/tmp/x/db.sqlite"}}
    moved = Worker._shown_payload(payload, shown)
    assert moved["db_path"] == moved["sql"] == "/lever-inputs/tmp/x/db.sqlite"
    assert moved["nested"] == payload["nested"] and payload["db_path"] == "/tmp/x/db.sqlite"
    assert Worker._shown_payload(["/tmp/x/db.sqlite"], shown) == ["/tmp/x/db.sqlite"]


def test_site_packages_added_by_pth_files_are_the_interpreters_and_nothing_else(tmp_path):
    """A venv layered on another environment's packages (a .pth naming its site-packages, under /tmp
    or anywhere) gets them in the task's view; a .pth naming a project checkout, an import line or
    a missing directory shows nothing."""
    site_dir, other, checkout = tmp_path / "site", tmp_path / "env" / "lib" / "site-packages", tmp_path / "project"
    for d in (site_dir, other, checkout, tmp_path / "deb" / "dist-packages"):
        d.mkdir(parents=True)
    (site_dir / "deps.pth").write_text(f"# layered\n{other}\n\nimport os\n{tmp_path / 'gone' / 'site-packages'}\n")
    (site_dir / "__editable__.project.pth").write_text(f"{checkout}\n")
    (site_dir / "relative.pth").write_text("../deb/dist-packages\n")
    assert sandbox_paths.pth_site_dirs([str(site_dir), str(tmp_path / "missing")]) == [
        str(other), str(site_dir / "../deb/dist-packages")]


def test_mounts_below_lists_the_binds_to_detach_before_a_removal_deepest_first(tmp_path):
    """A worker detaches what is mounted under its directory before deleting it: the host /tmp is
    bound read-only there, and a plain recursive removal walked all of it on every close."""
    from lever_jax.execution import isolation

    base = tmp_path / "base"
    (base / "a b").mkdir(parents=True)
    (base / "x").mkdir()
    # In a process of its own (its own mount namespace: nothing reaches the host's mounts).
    script = f"""
import json, os
from lever_jax.execution import isolation as i
base = {str(base)!r}
ok = i.unshare(i.CLONE_NEWNS) and i.mount(None, "/", None, i.MS_REC | i.MS_PRIVATE, None)
ok = ok and i.fresh_tmpfs(base + "/a b", 1) and i.fresh_tmpfs(base + "/x", 1)
if ok:
    os.mkdir(base + "/x/y")  # in the tmpfs at x
    ok = i.fresh_tmpfs(base + "/x/y", 1)
print(json.dumps([i.mounts_below(base), i.mounts_below(base + "/x")] if ok else None))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    if found is None:
        pytest.skip("no mount view here (needs root and mount namespaces)")
    below_base, below_x = found
    assert below_base[0] == str(base / "x" / "y")
    assert sorted(below_base[1:]) == [str(base / "a b"), str(base / "x")]
    assert below_x == [str(base / "x" / "y")]
    assert isolation.mounts_below(str(base)) == []  # this process's namespace: nothing mounted there
