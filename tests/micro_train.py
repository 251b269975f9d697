"""`lever-jax train` as the end-to-end tests run it: smoke.gin shrunk by bindings to a micro model
(a 1+1-layer, 16-wide T5 on 48-token inputs, 24 steps), in a subprocess with a persistent XLA
compilation cache. The session's one uninterrupted run of it is the ``micro_run`` fixture
(tests/conftest.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SMOKE = "gin_configs/runs/smoke.gin"
MICRO_BINDINGS = [
    "TRAIN_STEPS = 24",
    "CHECKPOINT_PERIOD = 4",
    "EVAL_PERIOD = 12",
    "TASK_FEATURE_LENGTHS = {'inputs': 48, 'targets': 1}",
    "configs.T5Config.d_model = 16",
    "configs.T5Config.num_heads = 2",
    "configs.T5Config.d_kv = 8",
    "configs.T5Config.d_ff = 32",
    "configs.T5Config.num_encoder_layers = 1",
    "configs.T5Config.num_decoder_layers = 1",
    "TrainDataConfig.max_problems = 16",
    "TrainDataConfig.max_dev_problems = 6",
    "EvalDataConfig.max_problems = 6",
    "ScoringConfig.batch_size = 16",
    "TrainLoopConfig.log_every = 1",
    "TrainLoopConfig.progress_bar = False",
]
# Dropout on: a resumed run must replay the RNG too. Every resume test compares with a run of these
# bindings; where checkpoints are written (CHECKPOINT_PERIOD) does not change its metrics.
DROPOUT = ["DROPOUT_RATE = 0.1"]
TIMING_KEYS = ("steps_per_sec", "examples_per_sec", "problems_per_sec", "eval/seconds")


def cli_command(command: str) -> list[str]:
    """`lever-jax <command>` as a subprocess (the console script's module entry point)."""
    return [sys.executable, "-m", "lever_jax.cli", command]


def run_env(cache_dir: Path) -> dict[str, str]:
    """The subprocess environment: CPU, the given compilation cache (every compile cached), the
    suite's compiler flags without a device count (a test asks for its own)."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_COMPILATION_CACHE_DIR=str(cache_dir),
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0", PYTHONPATH=str(REPO))
    env["XLA_FLAGS"] = with_devices(None, env)
    return env


def with_devices(count: int | None, env: dict[str, str]) -> str:
    """``env``'s XLA_FLAGS with ``count`` fake host devices (None: the real one) instead of any it named."""
    name = "--xla_force_host_platform_device_count"
    flags = [f for f in env.get("XLA_FLAGS", "").split() if not f.startswith(name)]
    return " ".join(flags + ([f"{name}={count}"] if count else []))


def gin_args(model_dir: Path | str, extra: list[str] = ()) -> list[str]:  # type: ignore[assignment]
    """smoke.gin, MODEL_DIR, the micro bindings, then ``extra`` (later bindings win)."""
    args = ["--gin_file", SMOKE, "--gin_bindings", f"MODEL_DIR = '{model_dir}'"]
    for binding in [*MICRO_BINDINGS, *extra]:
        args += ["--gin_bindings", binding]
    return args


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def strip_timing(records: list[dict]) -> list[dict]:
    """Metrics records without their wall-clock fields (the rest is deterministic)."""
    return [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in records]


@dataclass(frozen=True)
class MicroRun:
    """One finished uninterrupted micro run with :data:`DROPOUT`: its MODEL_DIR, stderr and metrics
    (timing fields stripped)."""

    model_dir: Path
    stderr: str
    metrics: list[dict]


def train_micro_run(model_dir: Path, cache_dir: Path) -> MicroRun:
    """Train the micro model with dropout into ``model_dir``; a failed run fails the caller."""
    done = subprocess.run(cli_command("train") + gin_args(model_dir, DROPOUT), cwd=REPO, env=run_env(cache_dir),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    return MicroRun(model_dir, done.stderr, strip_timing(read_jsonl(model_dir / "metrics.jsonl")))
