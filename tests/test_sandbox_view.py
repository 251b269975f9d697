"""What a task sees of the host, wherever ``lever-jax`` is started from: ``lever-jax execute``
runs candidates that look for the files, sockets and directories of the user's environment;
every look must come back empty.

The mount view these tests pin needs root (user, mount and PID namespaces); without it the
sandbox runs with the fallback layers (reported by ``Sandbox.protections()``) and they are skipped.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

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


def _execute(python: str, samples: Path, out: Path, cwd: Path, pythonpath: list[Path]) -> list[dict]:
    """``lever-jax execute`` as a user runs it; the candidates' executions, in input order."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, pythonpath))}
    done = subprocess.run([python, "-m", "lever_jax.cli", "execute", "--dataset", "gsm8k", "--input",
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
