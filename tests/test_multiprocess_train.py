"""Multi-process training on CPU: 2 processes x 1 device (gloo collectives, jax.distributed on
127.0.0.1) train exactly as 1 process x 2 devices -- same loss every step, same dev metrics --
through a SIGKILL of both processes after the first checkpoint and a restart: the steps before the
kill come from the killed pair, the rest from the resumed one, and every step must match."""
from __future__ import annotations

import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.micro_train import (DROPOUT, REPO, cli_command, gin_args, read_jsonl, run_env, strip_timing,
                               with_devices)

EXTRA = DROPOUT  # dropout on: per-device RNG must match too


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_pair(model_dir: Path, env: dict, logs: Path, extra: list[str] = EXTRA) -> list[subprocess.Popen]:
    address = f"127.0.0.1:{_port()}"
    procs = []
    for i in range(2):
        with open(logs / f"p{i}.log", "a") as log:
            procs.append(subprocess.Popen(
                cli_command("train") + gin_args(model_dir, extra) +
                ["--distributed", "--coordinator_address", address, "--num_processes", "2", "--process_id", str(i)],
                cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT))
    return procs


def _wait(procs: list[subprocess.Popen], logs: Path, timeout: float = 900) -> None:
    try:
        for proc in procs:
            proc.wait(timeout=timeout)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    for i, proc in enumerate(procs):
        assert proc.returncode == 0, (logs / f"p{i}.log").read_text()[-4000:]


@pytest.mark.slow
def test_two_processes_match_two_devices_through_a_kill(tmp_path, jax_cache):
    env = run_env(jax_cache)
    one_dir, cut_dir = tmp_path / "one", tmp_path / "cut"
    # The one-process run is independent of the pair: it runs beside the killed pair (most of both is
    # single-threaded compilation) and is compared once the resumed pair has finished.
    with open(tmp_path / "one.log", "w") as one_log:
        one = subprocess.Popen(cli_command("train") + gin_args(one_dir, EXTRA), cwd=REPO, stdout=one_log,
                               env={**env, "XLA_FLAGS": with_devices(2, env)}, stderr=subprocess.STDOUT)
    try:
        _kill_pair_after_first_checkpoint(cut_dir, env, tmp_path)
        (tmp_path / "p0.log").write_text("")
        _wait(_start_pair(cut_dir, env, tmp_path), tmp_path)
        one.wait(timeout=900)
    finally:
        if one.poll() is None:
            one.kill()
    one_text = (tmp_path / "one.log").read_text()
    assert one.returncode == 0, one_text[-4000:]
    assert "mesh {'data': 2, 'model': 1}" in one_text
    want = strip_timing(read_jsonl(one_dir / "metrics.jsonl"))
    assert [r["step"] for r in want] == list(range(1, 25)) and "eval/summing_agg_rerank_acc" in want[-1]
    assert "resumed from step" in (tmp_path / "p0.log").read_text()
    assert "process 1 of 2, 1 local / 2 global devices" in (tmp_path / "p1.log").read_text()
    assert strip_timing(read_jsonl(cut_dir / "metrics.jsonl")) == want  # written once, by process 0
    assert sorted(p.name for p in (cut_dir / "checkpoints").iterdir() if p.name.isdigit()) == ["20", "24"]


@pytest.mark.slow
def test_two_processes_train_bucketed_micro_batches_as_two_devices(tmp_path, jax_cache):
    """'bucketed' with accumulation across processes: every process builds the same micro-batch
    widths from the global batch and holds its own problems of each micro-batch."""
    env = run_env(jax_cache)
    extra = [*DROPOUT, "TRAIN_STEPS = 3", "EVAL_PERIOD = 3", "CHECKPOINT_PERIOD = 3", "BATCH_SIZE = 4",
             "ACCUM_STEPS = 2", "TrainDataConfig.batching = 'bucketed'",
             "TASK_FEATURE_LENGTHS = {'inputs': 512, 'targets': 1}"]  # GSM8k inputs: widths differ
    with open(tmp_path / "one.log", "w") as one_log:
        one = subprocess.Popen(cli_command("train") + gin_args(tmp_path / "one", extra), cwd=REPO,
                               stdout=one_log, env={**env, "XLA_FLAGS": with_devices(2, env)},
                               stderr=subprocess.STDOUT)
    try:
        _wait(_start_pair(tmp_path / "pair", env, tmp_path, extra), tmp_path)
        one.wait(timeout=900)
    finally:
        if one.poll() is None:
            one.kill()
    assert one.returncode == 0, (tmp_path / "one.log").read_text()[-4000:]
    want = strip_timing(read_jsonl(tmp_path / "one" / "metrics.jsonl"))
    assert [r["step"] for r in want] == [1, 2, 3] and "eval/summing_agg_rerank_acc" in want[-1]
    assert strip_timing(read_jsonl(tmp_path / "pair" / "metrics.jsonl")) == want


def _kill_pair_after_first_checkpoint(cut_dir: Path, env: dict, logs: Path) -> None:
    """Start the pair, SIGKILL both processes once the first checkpoint is on disk; the killed pair
    must have logged some steps, not all."""
    procs = _start_pair(cut_dir, env, logs)
    deadline = time.time() + 900
    try:
        while time.time() < deadline and all(p.poll() is None for p in procs):
            if (cut_dir / "checkpoints").is_dir() and any(p.name.isdigit() for p in (cut_dir / "checkpoints").iterdir()):
                break
            time.sleep(0.02)
        assert all(p.poll() is None for p in procs), "a process ended before the kill"
        for proc in procs:
            proc.send_signal(signal.SIGKILL)
        for proc in procs:
            proc.wait(timeout=60)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    partial = read_jsonl(cut_dir / "metrics.jsonl") if (cut_dir / "metrics.jsonl").exists() else []
    assert 0 < len(partial) < 24  # the killed pair logged the first steps
