"""`lever-jax run` on the wikitq_binder pool (tiny: 12 problems, 2 folds, a random 1-layer MiniLM):
Binder programs executed in the sandbox, the text-only head cross-fitted, the real-log-prob rows
(max_gen_prob, ml_ep, lever vs lever_count_fallback) and the official-evaluator table reported."""
from __future__ import annotations

import json
import pytest

from lever_jax.cli import run as run_cmd

TINY = ["--gin_file", "gin_configs/runs/wikitq_binder.gin", "--max_problems", "12", "--no-progress",
        "--gin_bindings", "RunConfig.num_folds = 2", "--gin_bindings", "RunConfig.bootstrap = 100",
        "--gin_bindings", "FeatureConfig.encoder = 'random_minilm'", "--gin_bindings", "FeatureConfig.num_layers = 1",
        "--gin_bindings", "FeatureConfig.program_len = 48", "--gin_bindings", "FeatureConfig.result_len = 32",
        "--gin_bindings", "HeadConfig.steps = 10", "--gin_bindings", "HeadConfig.eval_every = 5",
        "--gin_bindings", "HeadConfig.warmup_steps = 2"]


@pytest.mark.slow
def test_run_on_wikitq_binder(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("LEVER_JAX_CACHE_DIR", str(tmp_path / "exec_cache"))
    out = tmp_path / "run"
    assert run_cmd.cli([*TINY, "--out", str(out)]) == 0
    doc = json.loads((out / "metrics.json").read_text())
    assert doc["pool"] == "wikitq_binder" and doc["problems"] == 12
    methods = doc["methods"]
    for name in ("random", "max_gen_prob", "max_norm_gen_prob", "ml_ep", "majority_vote", "verifier_only",
                 "lever", "lever_count_fallback", "oracle"):
        m = methods[name]
        assert 0.0 <= m["ci_low"] <= m["accuracy"] <= m["ci_high"] <= 1.0, name
        assert m["accuracy"] <= methods["oracle"]["accuracy"], name
    second = doc["methods_second_checker"]
    assert second["checker"] == "official evaluator" and "lever" in second
    assert "official evaluator" in (out / "report.md").read_text()
    from lever_jax.data.jsonl import read_problems

    executed = next(iter((out / "executed").glob("*.jsonl.gz")))
    statuses = {c.execution.status for p in read_problems(executed, require_execution=True) for c in p.candidates}
    assert {"ok", "unsupported"} <= statuses
