"""``lever-jax execute --runner beam``: byte-identical to the local runner; shards merged safely."""
from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lever_jax.data.jsonl import write_problems
from lever_jax.data.schema import Candidate, Problem

pytest.importorskip("apache_beam")

from lever_jax.execution.beam import merge_shards  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def problems(n: int = 8) -> list[Problem]:
    """Correct, wrong, erroring, duplicated and non-ASCII programs over several problems."""
    out = []
    for i in range(n):
        cands = (Candidate(f"answer = {i}", gen_logprob=-0.5), Candidate(f"answer = {i} + 1"),
                 Candidate(f"answer = {i}"), Candidate("answer = 1 / 0"), Candidate("answer = 'é' * 2"),
                 Candidate("def solution():\n    return sum(range(%d))" % i))
        out.append(Problem(f"p{i}", "gsm8k", f"question {i} ü", {}, float(i), cands))
    return out


def _execute(tmp_path: Path, samples: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    """``lever-jax execute`` with TMPDIR at ``tmp_path/tmp`` (created empty; it must stay empty)."""
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "TF_CPP_MIN_LOG_LEVEL": "3", "TMPDIR": str(tmp_path / "tmp")}
    # faithful_cot (solution() is read): the option must reach the Beam workers' executors too
    cmd = [sys.executable, "-m", "lever_jax.cli", "execute", "--dataset", "gsm8k", "--input", str(samples),
           "--output", str(out), "--timeout", "5", "--cache-dir", str(tmp_path / "cache"), "--no-progress",
           "--executor-option", "convention=faithful_cot", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".jsonl.gz"])
def test_beam_output_is_byte_identical_to_local(tmp_path: Path, suffix: str) -> None:
    samples = tmp_path / f"samples{suffix}"
    write_problems(samples, problems())
    local = _execute(tmp_path, samples, tmp_path / f"local{suffix}", "--no-cache", "--workers", "2")
    assert local.returncode == 0, local.stderr
    beam = _execute(tmp_path, samples, tmp_path / f"beam{suffix}", "--no-cache", "--runner", "beam",
                    "--beam_options=--direct_num_workers=2 --direct_running_mode=multi_processing")
    assert beam.returncode == 0, beam.stderr
    assert "48 candidates on Beam: 40 run, 0 cached, 8 duplicates" in beam.stderr, beam.stderr
    assert "error 8, ok 32" in beam.stderr, beam.stderr
    assert (tmp_path / f"beam{suffix}").read_bytes() == (tmp_path / f"local{suffix}").read_bytes()
    assert sorted(gzip.decompress((tmp_path / f"beam{suffix}").read_bytes()).splitlines()) == \
        sorted(gzip.decompress((tmp_path / f"local{suffix}").read_bytes()).splitlines())
    assert not [p for p in tmp_path.iterdir() if ".beam-" in p.name]  # shards removed
    # with the (shared SQLite) cache: a second Beam run executes nothing and writes the same bytes
    first = _execute(tmp_path, samples, tmp_path / "cached1.jsonl", "--runner", "beam",
                     "--beam_options=--direct_num_workers=2")
    second = _execute(tmp_path, samples, tmp_path / "cached2.jsonl", "--runner", "beam",
                      "--beam_options=--direct_num_workers=2")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert "Traceback" not in first.stderr + second.stderr + beam.stderr
    assert ": 0 run, 48 cached" in second.stderr, second.stderr
    assert (tmp_path / "cached1.jsonl").read_bytes() == (tmp_path / "cached2.jsonl").read_bytes() == \
        gzip.decompress((tmp_path / f"local{suffix}").read_bytes())
    assert not list((tmp_path / "tmp").iterdir())  # nothing left in TMPDIR (Beam's job service left a dir)


def test_beam_rejects_bad_input_like_local(tmp_path: Path) -> None:
    samples = tmp_path / "samples.jsonl"
    write_problems(samples, problems(2))
    with open(samples, "a", encoding="utf-8") as handle:
        handle.write('{"schema_version": 1, "problem_id": "x"}\n')
    out = _execute(tmp_path, samples, tmp_path / "out.jsonl", "--no-cache", "--runner", "beam")
    assert out.returncode == 1 and "samples.jsonl:3:" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "out.jsonl").exists()


def test_merge_refuses_lost_or_duplicated_problems(tmp_path: Path) -> None:
    shard = tmp_path / "part-0.jsonl"
    shard.write_text('{"problem_id":"a"}\n{"problem_id":"b"}\n', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    with pytest.raises(RuntimeError, match="lacks 1 problems"):
        merge_shards([str(shard)], {"a": 0, "b": 1, "c": 2}, str(out))
    with pytest.raises(RuntimeError, match="duplicated"):
        merge_shards([str(shard), str(shard)], {"a": 0, "b": 1}, str(out))
    assert not out.exists()
    assert merge_shards([str(shard)], {"b": 0, "a": 1}, str(out)) == 2
    assert out.read_text(encoding="utf-8") == '{"problem_id":"b"}\n{"problem_id":"a"}\n'
