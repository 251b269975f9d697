"""`lever-jax run --input FILE`: settings that cannot apply to FILE's dataset fail before any work."""
from __future__ import annotations

import json
from pathlib import Path

import gin
import pytest

from lever_jax.cli.main import main


def _mbpp_samples(path: Path, n: int = 4) -> Path:
    rows = [{"schema_version": 1, "problem_id": f"mbpp-{900 + i}", "dataset": "mbpp",
             "question": "Write a function add(a, b) returning the sum.",
             "context": {"test_list": ["assert add(1, 2) == 3", "assert add(2, 2) == 4"]},
             "gold": "def add(a, b):\n    return a + b\n",
             "candidates": [{"program": "def add(a, b):\n    return a + b\n", "gen_logprob": -2.0},
                            {"program": "def add(a, b):\n    return a - b\n", "gen_logprob": -3.0}]}
            for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(autouse=True)
def _clean_gin():
    gin.clear_config()
    yield
    gin.clear_config()


def test_gsm8k_features_on_an_mbpp_input_fail_before_any_work(tmp_path, capsys) -> None:
    """runs/demo.gin (the default) turns on the GSM8k-only candidate features: on an MBPP file
    that is one line, exit 2, and nothing executed (it used to fail after executing and encoding)."""
    samples = _mbpp_samples(tmp_path / "mine.samples.jsonl")
    out = tmp_path / "run"
    assert main(["run", "--input", str(samples), "--out", str(out), "--no-progress"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith("lever-jax: error: HeadConfig.use_candidate_features"), lines
    assert "GSM8k" in lines[-1] and "mbpp" in lines[-1] and "HeadConfig.use_candidate_features = False" in lines[-1]
    assert not (out / "executed").exists() and not (out / "features").exists()
    assert not any("execut" in line for line in lines[:-1]), lines


@pytest.mark.slow
@pytest.mark.usefixtures("minilm_weights")
def test_a_one_problem_file_is_one_line_not_a_traceback(tmp_path, monkeypatch, capsys) -> None:
    """Cross-fitting scores each problem with a verifier trained on the others: a file of one problem
    has none, which is one line and exit 2 before any fold trains (it used to be an IndexError)."""
    monkeypatch.setenv("LEVER_JAX_CACHE_DIR", str(tmp_path / "cache"))
    samples = _mbpp_samples(tmp_path / "one.samples.jsonl", n=1)
    argv = ["run", "--input", str(samples), "--out", str(tmp_path / "run"), "--no-progress",
            "--gin_bindings", "HeadConfig.use_candidate_features = False"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("lever-jax: error: cross-fitting: fold ") and "1 problem(s) in 5 folds" in err[-1], err
    assert "Traceback" not in "\n".join(err) and not (tmp_path / "run" / "folds").exists()
