"""The path a researcher takes with their own data, one command's output feeding the next:
a samples file written from docs/data_format.md alone -> `lever-jax execute` -> `lever-jax train`
(run + model + task files, --train_file) -> `lever-jax eval --input --output` -> `lever-jax rerank
--verifier-scores`, printing the method table. Nothing is edited between the steps."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MICRO = [  # t5_tiny.gin shrunk further so the whole path runs in about a minute on 2 cores
    "TRAIN_STEPS = 8", "CHECKPOINT_PERIOD = 4", "EVAL_PERIOD = 4", "BATCH_SIZE = 2", "CANDIDATES_PER_PROBLEM = 3",
    "TASK_FEATURE_LENGTHS = {'inputs': 64, 'targets': 1}", "configs.T5Config.d_model = 16",
    "configs.T5Config.num_heads = 2", "configs.T5Config.d_kv = 8", "configs.T5Config.d_ff = 32",
    "configs.T5Config.num_encoder_layers = 1", "configs.T5Config.num_decoder_layers = 1",
    "TrainLoopConfig.progress_bar = False", "TrainLoopConfig.log_every = 2",
]


def samples(split: str, n: int) -> list[dict]:
    """GSM8k problems in the documented samples layout: a correct, a wrong and a failing program."""
    out = []
    for i in range(n):
        a, b = 3 + i, 4 + 2 * i
        out.append({
            "schema_version": 1, "problem_id": f"mine-{split}-{i:03d}", "dataset": "gsm8k",
            "question": f"Tom has {a} apples and buys {b} more. How many apples does he have?",
            "context": {}, "gold": float(a + b),
            "candidates": [
                {"program": f"apples = {a}\nbought = {b}\nanswer = apples + bought", "gen_logprob": -3.0 - i % 3,
                 "num_tokens": 12, "count": 2},
                {"program": f"apples = {a}\nbought = {b}\nanswer = apples * bought", "gen_logprob": -2.5,
                 "num_tokens": 12, "count": 1},
                {"program": f"answer = apples + {b}", "gen_logprob": -4.0, "num_tokens": 6, "count": 1},
            ],
        })
    return out


def lever_jax(*args: str, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lever_jax.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_own_file_through_execute_train_eval_rerank(tmp_path):
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(REPO), LEVER_JAX_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("XLA_FLAGS", None)
    for split, n in (("train", 16), ("test", 6)):
        (tmp_path / f"{split}.samples.jsonl").write_text("".join(json.dumps(p) + "\n" for p in samples(split, n)))
        done = lever_jax("execute", "--dataset", "gsm8k", "--input", f"{split}.samples.jsonl", "--output",
                         f"{split}.executed.jsonl", "--workers", "2", "--no-progress", env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]

    gin = ["--gin_file", f"{REPO}/gin_configs/runs/train.gin", "--gin_file", f"{REPO}/gin_configs/models/t5_tiny.gin",
           "--gin_file", f"{REPO}/gin_configs/tasks/executed_file.gin"]
    bindings = [a for b in [f"MODEL_DIR = '{tmp_path / 'model'}'", *MICRO] for a in ("--gin_bindings", b)]
    train = lever_jax("train", *gin, "--train_file", "train.executed.jsonl", *bindings, env=env, cwd=tmp_path)
    assert train.returncode == 0, train.stderr[-4000:]
    # the model trained is the one the model file names (+ bindings), said with its parameter count
    logged = re.search(r"model: T5 v1.1-style \(gated-gelu\): d_model 16, 1\+1 layers.*?; ([\d,]+) parameters",
                       train.stderr)
    assert logged, train.stderr[-3000:]
    assert re.search(r"step 8: dev rerank_acc = ", train.stderr) and "checkpoint saved" in train.stderr
    assert "14 train problems" in train.stderr and "2 dev problems" in train.stderr  # a 10% dev slice, disjoint

    eval_gin = [a.replace("runs/train.gin", "runs/eval.gin") for a in gin]
    ev = lever_jax("eval", *eval_gin, "--input", "test.executed.jsonl", "--output", "scores.json", *bindings,
                   env=env, cwd=tmp_path)
    assert ev.returncode == 0, ev.stderr[-4000:]
    assert "scores.json" in ev.stderr and (tmp_path / "scores.metrics.json").exists()

    rr = lever_jax("rerank", "--input", "test.executed.jsonl", "--verifier-scores", "scores.json",
                   "--bootstrap", "200", env=env, cwd=tmp_path)
    assert rr.returncode == 0, rr.stderr[-3000:]
    assert "LEVER (summing)" in rr.stdout and "majority vote" in rr.stdout, rr.stdout


def test_readme_own_data_train_example_sizes_train_steps():
    """The README's own-data `lever-jax train` sets TRAIN_STEPS: executed_file.gin's 10,000 steps
    would train t5_tiny for hours on a handful of problems."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Your own samples, end to end"):]
    section = section[:section.index("\n## ", 1)]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
    commands = [c for b in blocks for c in re.sub(r"\\\n", " ", b).splitlines()]  # continuation lines joined
    train = next(c.split("#")[0] for c in commands if c.startswith("lever-jax train"))
    steps = re.search(r"TRAIN_STEPS\s*=\s*(\d+)", train)
    assert steps and int(steps.group(1)) <= 1000, train
