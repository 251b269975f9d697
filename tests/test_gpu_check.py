"""scripts/gpu_check.py, the prepared accelerator check, runs end to end on the CPU at tiny sizes and
writes the one JSON document BENCHMARKS.md records from."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_check.py"


@pytest.mark.slow
def test_gpu_check_dry_run_writes_every_section(tmp_path: Path) -> None:
    out = tmp_path / "check.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--dry_run", "--steps", "2", "--budget_s", "5",
                           "--output", str(out)], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["dry_run"] is True and report["device"]["platform"] == "cpu"
    assert report["t5"]["tokens_per_s"] > 0 and report["t5"]["model_tflops_per_step"] > 0
    assert report["t5"]["mfu"] is None  # no peak is known for a CPU: no made-up utilisation
    assert set(report["minilm"]) >= {"float32", "bfloat16"}
    assert report["scorer"]["shape"] == [1000, 10] and report["scorer"]["problems_per_s"] > 0
    assert "skipped" in report["sampling"] or "arms" in report["sampling"]


def test_peak_table_names_the_device_or_nothing() -> None:
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    gpu_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_check)
    assert gpu_check.peak_flops("NVIDIA H200", None) == 989e12
    assert gpu_check.peak_flops("TPU v5 lite", None) == 197e12
    assert gpu_check.peak_flops("cpu", None) is None
    assert gpu_check.peak_flops("cpu", 10.0) == 10e12
