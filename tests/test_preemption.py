"""Preemption: SIGTERM (or SIGINT) mid-run saves a checkpoint at the current step, waits for it,
exits 0 with a message; the restarted run resumes there and ends exactly as an uninterrupted one
(the session's micro run, tests/micro_train.py: its checkpoint period does not change metrics)."""
from __future__ import annotations

import re
import signal
import subprocess
import time

import pytest

from tests.micro_train import DROPOUT, REPO, cli_command, gin_args, read_jsonl, run_env, strip_timing

# A checkpoint period longer than the run: any checkpoint before the end is the preemption's.
EXTRA = [*DROPOUT, "CHECKPOINT_PERIOD = 1000"]


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_saves_and_resumes_exactly(tmp_path, jax_cache, micro_run, sig):
    env = run_env(jax_cache)
    cut_dir = tmp_path / "cut"

    proc = subprocess.Popen(cli_command("train") + gin_args(cut_dir, EXTRA), cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    metrics = cut_dir / "metrics.jsonl"
    deadline = time.time() + 900
    try:  # signal once training is under way (two steps logged), well before the last step
        while time.time() < deadline and proc.poll() is None:
            if metrics.exists() and len(metrics.read_text().splitlines()) >= 2:
                break
            time.sleep(0.01)
        assert proc.poll() is None, "the run ended before it could be signalled"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-4000:]
    found = re.search(r"preempted: checkpoint saved at step (\d+)", err)
    assert found, err[-4000:]
    step = int(found.group(1))
    assert 2 <= step < 24
    steps = sorted(int(p.name) for p in (cut_dir / "checkpoints").iterdir() if p.name.isdigit())
    assert steps[-1] == step  # the checkpoint of the preempted step, complete on disk

    resumed = subprocess.run(cli_command("train") + gin_args(cut_dir, EXTRA), cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    assert f"resumed from step {step}" in resumed.stderr
    want, got = micro_run.metrics, strip_timing(read_jsonl(cut_dir / "metrics.jsonl"))
    assert [r["step"] for r in got] == list(range(1, 25))
    assert got == want  # bit-exact: same batches, dropout keys, optimizer state and dev metrics
