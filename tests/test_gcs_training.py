"""`lever-jax train / eval / rerank` with MODEL_DIR, the data dir and every output on gs://, against a
real local GCS emulator (tests/gcs_emulator.py, PyPI gcp-storage-emulator): no mock.

A run SIGKILLed after its first committed checkpoint then restarted: the resumed run continues from
the checkpoint in the bucket and ends with exactly the metrics of the session's uninterrupted local
micro run (tests/micro_train.py: same pool, same bindings, so gs:// and local disk must agree); then
eval reads that gs:// MODEL_DIR and writes gs:// scores that rerank reads."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from lever_jax.data import paths
from lever_jax.data.bundled import bundled_path
from tests.gcs_emulator import emulator
from tests.micro_train import DROPOUT, REPO, cli_command, gin_args, run_env, strip_timing

BUCKET = "gs://lever-train"
POOL = f"{BUCKET}/data/gsm8k_pool/gcs.executed.jsonl.gz"  # a pool only the gs:// data dir holds
TASK = "lever_verify_gsm8k_pool_gcs_fold1"
EXTRA = [*DROPOUT, f"MIXTURE_OR_TASK_NAME = '{TASK}_train'",
         f"DEV_MIXTURE_OR_TASK_NAME = '{TASK}_dev'"]


@pytest.fixture(scope="module")
def gcs():
    with emulator("lever-train") as url:
        paths.copy(bundled_path("gsm8k_pool") / "code002.executed.jsonl.gz", POOL)
        yield url


def _env(jax_cache: Path) -> dict[str, str]:
    return {**run_env(jax_cache), "LEVER_JAX_DATA_DIR": f"{BUCKET}/data"}


def _args(model_dir: str, extra: list[str] = ()) -> list[str]:
    """smoke.gin's micro bindings, the gin file by absolute path (the runs' cwd is an empty folder)."""
    args = gin_args(model_dir, extra)  # type: ignore[arg-type]
    return [str(REPO / a) if a.endswith("smoke.gin") else a for a in args]


def _train(model_dir: str) -> list[str]:
    return cli_command("train") + _args(model_dir, EXTRA)


def _metrics(model_dir: str) -> list[dict]:
    text = paths.read_text(paths.join(model_dir, "metrics.jsonl"))
    return strip_timing([json.loads(line) for line in text.splitlines()])


def _committed_steps(model_dir: str) -> list[int]:
    """Checkpoint steps orbax finished writing (on GCS: a commit_success.txt in the step)."""
    found = paths.glob(paths.join(model_dir, "checkpoints", "*", "commit_success.txt"))
    return sorted(int(p.split("/")[-2]) for p in found if p.split("/")[-2].isdigit())


@pytest.mark.slow
def test_train_resume_eval_rerank_on_gcs(gcs, jax_cache, micro_run, tmp_path):
    env = _env(jax_cache)
    cut = f"{BUCKET}/runs/cut"
    proc = subprocess.Popen(_train(cut), cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 900
    try:  # each poll lists the bucket: a few a second, not to crowd the emulator the run writes to
        while time.time() < deadline and proc.poll() is None and not _committed_steps(cut):
            time.sleep(0.25)
        assert proc.poll() is None, "the run ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    saved = _committed_steps(cut)
    assert saved and saved[-1] < 24
    resumed = subprocess.run(_train(cut), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    assert f"({TASK}_train)" in resumed.stderr  # the task came from the gs:// data dir
    start = int(re.search(r"resumed from step (\d+)", resumed.stderr).group(1))
    assert saved[-1] <= start < 24  # a later step may have committed between the poll and the kill
    got = _metrics(cut)
    assert [r["step"] for r in got] == list(range(1, 25))
    assert got == micro_run.metrics  # bit-exact: batches, dropout keys, optimizer state, dev metrics
    assert _committed_steps(cut)[-1] == 24
    assert paths.read_text(paths.join(cut, "config.gin")).count("MODEL_DIR") >= 1
    assert paths.glob(paths.join(cut, "tensorboard", "events.out.tfevents.*"))
    assert not list(tmp_path.iterdir())  # nothing landed in a local ./gs: folder

    scores = f"{BUCKET}/eval/gcs.scores.json"
    evaluated = subprocess.run(cli_command("eval") + _args(cut) + ["--input", POOL, "--output", scores],
                               cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert evaluated.returncode == 0, evaluated.stderr[-4000:]
    metrics = json.loads(paths.read_text(f"{BUCKET}/eval/gcs.metrics.json"))
    assert metrics["checkpoint_step"] in _committed_steps(cut) and metrics["task"] == "file:gcs.executed.jsonl.gz"
    reranked = subprocess.run(cli_command("rerank") + ["--input", POOL, "--verifier-scores", scores, "--bootstrap", "10",
                                                       "--metrics", f"{BUCKET}/eval/rerank.metrics.json"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert reranked.returncode == 0, reranked.stderr[-4000:]
    assert "reranking those 6" in reranked.stderr and "LEVER" in reranked.stdout
    assert json.loads(paths.read_text(f"{BUCKET}/eval/rerank.metrics.json"))
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("command", ["rerank", "train"])
def test_unknown_scheme_is_one_line(tmp_path, command):
    """A URL whose filesystem is unavailable is a user error: one line, exit 2, no ./nope: folder
    (train checks MODEL_DIR before it loads any data)."""
    args = (["--input", "nope://bucket/x.executed.jsonl"] if command == "rerank" else _args("nope://bucket/run"))
    out = subprocess.run(cli_command(command) + args, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 2, out.stderr
    errors = [line for line in out.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and "nope://" in errors[0], out.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--out", "--input"])
def test_run_directory_must_be_local(tmp_path, flag):
    """`lever-jax run` keeps its run directory local: a gs:// --out/--input is one line, exit 2,
    never a ./gs: folder."""
    out = subprocess.run(cli_command("run") + ["--quick", flag, "gs://bucket/x"], cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=300)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [line for line in out.stderr.strip().splitlines() if "gs://bucket/x" in line]
    assert "must be a local path" in out.stderr and not list(tmp_path.iterdir())
