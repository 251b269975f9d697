"""End-to-end `lever-jax run --quick` (smaller still: 16 problems, 2 folds, 1 frozen MiniLM layer):
execute in the sandbox, cross-fit the verifier, rerank, and check every output file parses; then
re-run and check that nothing is executed, encoded or retrained again."""
from __future__ import annotations

import json

import numpy as np
import pytest

from lever_jax.cli import run as run_cmd
from lever_jax.data.folds import assign_folds

TINY = ["--quick", "--max_problems", "16", "--no-progress",
        "--gin_bindings", "HeadConfig.steps = 30", "--gin_bindings", "HeadConfig.eval_every = 15",
        "--gin_bindings", "RunConfig.bootstrap = 200", "--gin_bindings", "FeatureConfig.question_len = 48",
        "--gin_bindings", "FeatureConfig.program_len = 48"]


def test_assign_folds_deterministic_and_balanced() -> None:
    ids = [f"p{i:03d}" for i in range(23)]
    a = assign_folds(ids, 5, seed=0)
    assert np.array_equal(a, assign_folds(list(reversed(ids)), 5, seed=0)[::-1])
    assert sorted(np.bincount(a).tolist()) == [4, 4, 5, 5, 5]
    assert not np.array_equal(a, assign_folds(ids, 5, seed=1))


@pytest.mark.slow
@pytest.mark.usefixtures("minilm_weights")
def test_run_quick_end_to_end(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("LEVER_JAX_CACHE_DIR", str(tmp_path / "exec_cache"))
    out = tmp_path / "run"
    assert run_cmd.cli([*TINY, "--out", str(out)]) == 0
    for name in ("report.md", "metrics.json", "scores.json", "accuracy_vs_k.png", "reliability.png",
                 "folds.json", "run_config.json", "config.gin"):
        assert (out / name).exists(), name
    doc = json.loads((out / "metrics.json").read_text())
    assert doc["problems"] == 16
    methods = doc["methods"]
    for name in ("random", "first_sample", "majority_vote", "verifier_only", "lever_no_agg", "lever",
                 "lever_voting", "oracle"):
        m = methods[name]
        assert 0.0 <= m["ci_low"] <= m["accuracy"] <= m["ci_high"] <= 1.0, name
    assert methods["oracle"]["accuracy"] >= methods["lever"]["accuracy"]
    assert set(doc["accuracy_at_k"]) >= {"majority_vote", "lever", "oracle", "random"}
    scores = json.loads((out / "scores.json").read_text())
    assert len(scores["problems"]) == 16
    cand = scores["problems"][0]["candidates"][0]
    assert cand["verifier_logprob"] is not None and cand["verifier_logprob"] <= 0.0
    # cross-fitting: a problem is scored only by the fold model that did not train on it
    folds = json.loads((out / "folds.json").read_text())["folds"]
    assert sorted(set(folds.values())) == [0, 1]
    report = (out / "report.md").read_text()
    assert "| LEVER (summing) |" in report and "| majority vote over execution results |" in report
    for png in ("accuracy_vs_k.png", "reliability.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the executed file carries LEVER's final-locals result text from the sandboxed executor
    from lever_jax.data.jsonl import read_problems

    executed = next(iter((out / "executed").glob("*.jsonl.gz")))
    first = next(read_problems(executed, require_execution=True))
    assert first.candidates[0].execution.result_text.startswith("{")
    capsys.readouterr()

    # resume: a second run executes, encodes and trains nothing, and reports the same numbers
    assert run_cmd.cli([*TINY, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "execution: reusing" in err
    assert err.count("done already") == 2
    assert "encode" not in err
    again = json.loads((out / "metrics.json").read_text())
    assert again["methods"] == doc["methods"]
    # the run leaves no gin bindings behind: a RunConfig built afterwards in this process is the default
    from lever_jax.pipeline.run import RunConfig

    assert RunConfig().max_problems is None and RunConfig().progress


@pytest.mark.slow
@pytest.mark.usefixtures("minilm_weights")
def test_run_with_a_t5_trained_per_fold(tmp_path, monkeypatch, capsys) -> None:
    """RunConfig.verifier='trained' (gin_configs/runs/demo_t5.gin): a tiny T5 trained per fold
    through lever_jax.training.runs, held-out problems scored by the fold's best checkpoint; resumable."""
    monkeypatch.setenv("LEVER_JAX_CACHE_DIR", str(tmp_path / "exec_cache"))
    out = tmp_path / "t5run"
    argv = ["--gin_file", "gin_configs/runs/demo_t5.gin", "--out", str(out), "--no-progress",
            "--max_problems", "12",
            "--gin_bindings", "RunConfig.num_folds = 2", "--gin_bindings", "RunConfig.bootstrap = 100",
            "--gin_bindings", "TRAIN_STEPS = 4", "--gin_bindings", "EVAL_PERIOD = 2",
            "--gin_bindings", "CHECKPOINT_PERIOD = 2", "--gin_bindings", "BATCH_SIZE = 2",
            "--gin_bindings", "TASK_FEATURE_LENGTHS = {'inputs': 64, 'targets': 1}"]
    assert run_cmd.cli(argv) == 0
    doc = json.loads((out / "metrics.json").read_text())
    assert doc["problems"] == 12 and "lever" in doc["methods"]
    scores = json.loads((out / "scores.json").read_text())
    real = [c["verifier_logprob"] for p in scores["problems"] for c in p["candidates"]]
    assert len(real) == doc["distinct_programs"] and all(v is not None and v <= 0.0 for v in real)
    fold_dirs = sorted(out.glob("folds/*/fold*"))
    assert len(fold_dirs) == 2
    for fold_dir in fold_dirs:
        info = json.loads((fold_dir / "fold.json").read_text())
        assert info["train"] + info["dev"] + info["held_out"] == 12
        assert (fold_dir / "data" / "gsm8k" / "heldout.executed.jsonl.gz").exists()
        assert any((fold_dir / "model").glob("checkpoints/*"))
    capsys.readouterr()
    assert run_cmd.cli(argv) == 0  # a re-run retrains nothing
    assert json.loads((out / "metrics.json").read_text())["methods"] == doc["methods"]
