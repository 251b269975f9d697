"""The path layer (lever_jax/data/paths.py) on local paths and on gs:// against a GCS emulator."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lever_jax.data import paths
from lever_jax.data.jsonl import DataFileError, read_problems, write_json, write_problems
from lever_jax.data.schema import Candidate, Problem
from tests.gcs_emulator import emulator

ROOT = Path(__file__).resolve().parents[1]
BUCKET = "gs://lever-test"


@pytest.fixture(scope="module")
def gcs():
    with emulator("lever-test") as url:
        yield url


def _problems(n: int) -> list[Problem]:
    return [Problem(f"p{i}", "gsm8k", "q é", {}, float(i), (Candidate(f"answer = {i}"), Candidate("answer = x")))
            for i in range(n)]


def test_local_paths_are_untouched(tmp_path: Path) -> None:
    assert paths.scheme("gs://b/x") == "gs" and paths.scheme("a/b") is None and paths.scheme("file:///a") is None
    assert not paths.is_remote(tmp_path) and paths.local("file:///tmp/x") == Path("/tmp/x")
    assert paths.join("gs://b/", "d", "x.json") == "gs://b/d/x.json"
    assert paths.join(tmp_path, "d", "x") == str(tmp_path / "d" / "x")
    paths.write_bytes_atomic(tmp_path / "d" / "x", b"1")
    assert paths.read_bytes(tmp_path / "d" / "x") == b"1" and paths.listdir(tmp_path / "d") == [str(tmp_path / "d" / "x")]


def test_gs_round_trip_is_atomic(gcs: str) -> None:
    target = f"{BUCKET}/run/executed.jsonl.gz"
    assert write_problems(target, _problems(3)) == 3
    assert [p.problem_id for p in read_problems(target)] == ["p0", "p1", "p2"]
    assert paths.exists(target) and paths.listdir(f"{BUCKET}/run") == [target]

    def failing():
        yield from _problems(2)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_problems(target, failing())
    assert len(list(read_problems(target))) == 3  # the old object survives a failed write
    write_json(f"{BUCKET}/run/metrics.json", {"a": 1})
    assert paths.read_bytes(f"{BUCKET}/run/metrics.json") == b'{\n "a": 1\n}\n'
    with pytest.raises(DataFileError, match="no such file"):
        list(read_problems(f"{BUCKET}/run/missing.jsonl"))
    paths.remove_tree(f"{BUCKET}/run")
    assert not paths.exists(target)


def test_cli_execute_reads_and_writes_gs(gcs: str, tmp_path: Path) -> None:
    write_problems(f"{BUCKET}/pool/samples.jsonl.gz", _problems(2))
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    out = subprocess.run([sys.executable, "-m", "lever_jax.cli", "execute", "--dataset", "gsm8k",
                          "--input", f"{BUCKET}/pool/samples.jsonl.gz", "--output", f"{BUCKET}/pool/executed.jsonl.gz",
                          "--workers", "1", "--no-cache", "--no-progress"],
                         capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    executed = list(read_problems(f"{BUCKET}/pool/executed.jsonl.gz", require_execution=True))
    assert [c.execution.status for p in executed for c in p.candidates] == ["ok", "error", "ok", "error"]
    assert not list(tmp_path.iterdir())  # no local ./gs: folder


def test_sequential_gs_reads_fetch_whole_blocks(gcs: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading a gzip JSONL pool from gs:// line by line costs a few ranged GETs, not one per
    small read (gcsfs's default cache did that: ~2,500 GETs and ~18 s for this 1.7 MB pool)."""
    from lever_jax.data.bundled import bundled_path
    from lever_jax.data.jsonl import iter_json_lines

    pool = f"{BUCKET}/fetches/pool.jsonl.gz"
    paths.copy(bundled_path("gsm8k_pool") / "code002.executed.jsonl.gz", pool)
    caches: list = []  # each handle's fsspec cache, which counts the ranged GETs it made
    real_open = paths.open_binary

    def recording_open(path: paths.PathLike, mode: str = "rb"):
        handle = real_open(path, mode)
        caches.append(handle.cache)
        return handle

    monkeypatch.setattr(paths, "open_binary", recording_open)
    assert sum(1 for _ in iter_json_lines(pool)) == 1319
    assert len(caches) == 1 and caches[0].total_requested_bytes >= paths.version_key(pool)[1]
    assert caches[0].miss_count <= 2, caches[0].miss_count
