"""Preemption: SIGTERM (or SIGINT) mid-run saves a checkpoint at the current step, waits for it,
exits 0 with a message; the restarted run resumes there and ends exactly as an uninterrupted one."""
from __future__ import annotations

import re
import signal
import subprocess
import time

import pytest

from tests.test_train_cli import REPO, TIMING_KEYS, cli_command, gin_args, jax_cache, read_jsonl, run_env  # noqa: F401

# A checkpoint period longer than the run: any checkpoint before the end is the preemption's.
EXTRA = ["DROPOUT_RATE = 0.1", "CHECKPOINT_PERIOD = 1000", "EVAL_PERIOD = 12"]


def _strip(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in records]


@pytest.fixture(scope="module")
def full_metrics(tmp_path_factory, jax_cache) -> list[dict]:
    """The uninterrupted run both signals are compared with (run once)."""
    full_dir = tmp_path_factory.mktemp("full")
    full = subprocess.run(cli_command("train") + gin_args(full_dir, EXTRA), cwd=REPO, env=run_env(jax_cache),
                          capture_output=True, text=True, timeout=900)
    assert full.returncode == 0, full.stderr[-4000:]
    return _strip(read_jsonl(full_dir / "metrics.jsonl"))


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_saves_and_resumes_exactly(tmp_path, jax_cache, full_metrics, sig):
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
    want, got = full_metrics, _strip(read_jsonl(cut_dir / "metrics.jsonl"))
    assert [r["step"] for r in got] == list(range(1, 25))
    assert got == want  # bit-exact: same batches, dropout keys, optimizer state and dev metrics
