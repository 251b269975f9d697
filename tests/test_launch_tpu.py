"""scripts/launch_tpu.sh --dry-run: a complete, consistent multi-host launch (Python 3.11 venv on
every worker, data staged, a batch that divides the slice, the distributed train command)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "launch_tpu.sh"


def _dry_run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), "--dry-run", "--gin_file", "gin_configs/runs/train.gin", *args],
                          capture_output=True, text=True, timeout=60)


def test_dry_run_prints_every_step_in_order(tmp_path):
    (tmp_path / "gsm8k").mkdir()
    out = _dry_run("--name", "lv", "--accelerator-type", "v4-32", "--spot", "--data", str(tmp_path),
                   "--gin_bindings", "MODEL_DIR='gs://b/run'")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    steps = ["tpu-vm create lv", "tar -czf", "tpu-vm scp", "uv venv -q --python 3.11", "lever-jax-data.tar.gz",
             "tar -xzf ~/lever-jax-data.tar.gz", "lever_jax.training.train --distributed"]
    where = [next(i for i, line in enumerate(lines) if step in line) for step in steps]
    assert where == sorted(where), out.stdout
    train = lines[-1]
    assert "--worker=all" in train and "export LEVER_JAX_DATA_DIR=$HOME/lever-data" in train
    assert "~/lever-venv/bin/python" in train and "BATCH_SIZE\\ =\\ 16" in train  # v4-32: 16 chips
    assert "BATCH_SIZE = 16" in out.stderr


def test_given_batch_size_is_kept_and_gs_data_is_copied_on_workers():
    out = _dry_run("--skip-create", "--skip-install", "--accelerator-type", "v5litepod-16",
                   "--data", "gs://b/data/", "--gin_bindings", "BATCH_SIZE = 32")
    assert out.returncode == 0, out.stderr
    assert "gcloud storage cp -r gs://b/data/" in out.stdout and "--worker=all" in out.stdout
    assert len(re.findall("BATCH_SIZE", out.stdout)) == 1 and "BATCH_SIZE\\ =\\ 32" in out.stdout


def test_python_requirement_agrees_everywhere():
    setup = (REPO / "setup.py").read_text()
    assert 'python_requires=">=3.11"' in setup
    assert 'PYTHON_VERSION="3.11"' in SCRIPT.read_text()
    assert "3.11+" in (REPO / "README.md").read_text()
