"""Kill-and-resume: a training run SIGKILLed after its first checkpoint and restarted ends with
exactly the metrics (loss every step, learning rate, dev rerank metrics) of an uninterrupted run
(the session's micro run, tests/micro_train.py)."""
from __future__ import annotations

import signal
import subprocess
import time

import pytest

from tests.micro_train import DROPOUT, REPO, cli_command, gin_args, read_jsonl, run_env, strip_timing


@pytest.mark.slow
def test_killed_run_resumes_exactly(tmp_path, jax_cache, micro_run):
    env = run_env(jax_cache)
    killed_dir = tmp_path / "killed"
    proc = subprocess.Popen(cli_command("train") + gin_args(killed_dir, DROPOUT), cwd=REPO, env=env,
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

    resumed = subprocess.run(cli_command("train") + gin_args(killed_dir, DROPOUT), cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    assert "resumed from step" in resumed.stderr
    got = strip_timing(read_jsonl(killed_dir / "metrics.jsonl"))
    assert [r["step"] for r in got] == list(range(1, 25))
    assert got == micro_run.metrics  # bit-exact: same batches, same dropout keys, same state
