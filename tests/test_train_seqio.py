"""`lever-jax train` with TrainDataConfig.pipeline='seqio': the SeqIO tasks come from a task module the user
names (--task_module tasks.lever_tasks, as t5x imports its task modules); lever_jax itself never
imports the top-level `tasks` package."""
from __future__ import annotations

import re
import subprocess

import pytest

from tests.micro_train import REPO, cli_command, gin_args, read_jsonl, run_env

SEQIO_BINDINGS = ["PIPELINE = 'seqio'", "TRAIN_STEPS = 2", "EVAL_PERIOD = 100", "CHECKPOINT_PERIOD = 100"]
# TensorFlow's native logging writes to stderr before Python can silence it: not ours.
NATIVE_LOG = re.compile(r"^(WARNING: All log messages before absl::InitializeLog|[IWEF]\d{4} )")


def _one_line_user_error(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in proc.stderr.strip().splitlines() if not NATIVE_LOG.match(line)]
    assert proc.returncode == 2, proc.stderr[-4000:]
    assert "Traceback" not in proc.stderr and len(lines) == 1, proc.stderr[-4000:]
    return lines[0]


def _env(jax_cache) -> dict[str, str]:
    env = run_env(jax_cache)
    env.pop("LEVER_JAX_NO_AUTO_REGISTER", None)  # tests/test_tasks.py sets it for its own process
    return env


def test_a_task_module_that_does_not_import_is_one_line(tmp_path, jax_cache):
    proc = subprocess.run(cli_command("train") + gin_args(tmp_path / "m", SEQIO_BINDINGS)
                          + ["--task_module", "no_such_task_module"], cwd=REPO, env=_env(jax_cache),
                          capture_output=True, text=True, timeout=600)
    line = _one_line_user_error(proc)
    assert "--task_module no_such_task_module" in line and "No module named 'no_such_task_module'" in line, line
    assert not (tmp_path / "m").exists()


@pytest.mark.slow
def test_seqio_pipeline_without_a_task_module_names_the_flag(tmp_path, jax_cache):
    pytest.importorskip("seqio")
    proc = subprocess.run(cli_command("train") + gin_args(tmp_path / "m", SEQIO_BINDINGS), cwd=REPO,
                          env=_env(jax_cache), capture_output=True, text=True, timeout=600)
    line = _one_line_user_error(proc)
    assert "'lever_verify_gsm8k_pool_fold1_train' is not registered" in line, line
    assert "--task_module tasks.lever_tasks" in line, line


@pytest.mark.slow
def test_seqio_pipeline_trains_on_the_tasks_of_the_task_module(tmp_path, jax_cache):
    pytest.importorskip("seqio")
    model_dir = tmp_path / "m"
    proc = subprocess.run(cli_command("train") + gin_args(model_dir, SEQIO_BINDINGS)
                          + ["--task_module", "tasks.lever_tasks"], cwd=REPO, env=_env(jax_cache),
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert [r["step"] for r in read_jsonl(model_dir / "metrics.jsonl")] == [1, 2]
    assert "inputs ready" in proc.stderr and "16 train problems" in proc.stderr, proc.stderr[-4000:]
