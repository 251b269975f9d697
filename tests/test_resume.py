"""Kill-and-resume: a training run SIGKILLed after its first checkpoint and restarted ends with
exactly the metrics (loss every step, learning rate, dev rerank metrics) of an uninterrupted run."""
from __future__ import annotations

import signal
import subprocess
import time

import pytest

from tests.test_train_cli import REPO, TIMING_KEYS, cli_command, gin_args, jax_cache, read_jsonl, run_env  # noqa: F401


def _strip(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in records]


@pytest.mark.slow
def test_killed_run_resumes_exactly(tmp_path, jax_cache):
    env = run_env(jax_cache)
    full_dir, killed_dir = tmp_path / "full", tmp_path / "killed"
    extra = ["DROPOUT_RATE = 0.1"]  # dropout on: the RNG must replay too
    full = subprocess.run(cli_command("train") + gin_args(full_dir, extra), cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)
    assert full.returncode == 0, full.stderr[-4000:]

    proc = subprocess.Popen(cli_command("train") + gin_args(killed_dir, extra), cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    checkpoints = killed_dir / "checkpoints"
    deadline = time.time() + 900
    try:
        while time.time() < deadline and proc.poll() is None:
            if checkpoints.is_dir() and any(p.name.isdigit() for p in checkpoints.iterdir()):
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    partial = read_jsonl(killed_dir / "metrics.jsonl") if (killed_dir / "metrics.jsonl").exists() else []
    assert len(partial) < 24

    resumed = subprocess.run(cli_command("train") + gin_args(killed_dir, extra), cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    assert "resumed from step" in resumed.stderr
    want, got = _strip(read_jsonl(full_dir / "metrics.jsonl")), _strip(read_jsonl(killed_dir / "metrics.jsonl"))
    assert [r["step"] for r in got] == list(range(1, 25))
    assert got == want  # bit-exact: same batches, same dropout keys, same state
