"""`lever-jax train` / `eval` configuration mistakes: one line naming what is wrong, exit 2, before any work."""
from __future__ import annotations

import json
from pathlib import Path

import gin
import pytest

from lever_jax.cli.main import main

REPO = Path(__file__).resolve().parents[1]
RUN = ["--gin_file", str(REPO / "gin_configs/runs/train.gin")]
MODEL = ["--gin_file", str(REPO / "gin_configs/models/t5_tiny.gin")]
TASK = ["--gin_file", str(REPO / "gin_configs/tasks/executed_file.gin")]


@pytest.fixture(autouse=True)
def _clean_gin():
    gin.clear_config()
    yield
    gin.clear_config()


def _error_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lever-jax: error: "), lines
    return lines[0]


@pytest.mark.parametrize("binding", ["MODEL_DIR=/tmp/x", "MODEL_DIR = /tmp/my model"])
def test_unquoted_string_binding_is_named(capsys, tmp_path, binding) -> None:
    train_file = tmp_path / "train.executed.jsonl"
    line = _error_line(capsys, ["train", *RUN, *MODEL, *TASK, "--train_file", str(train_file),
                                "--gin_bindings", binding])
    assert f'--gin_bindings "{binding}"' in line and "strings need quotes" in line, line
    assert "line 3" not in line  # the --train_file binding made it line 3 of gin's bindings string


def test_train_without_a_task_file_names_the_task_file(capsys, tmp_path) -> None:
    line = _error_line(capsys, ["train", *RUN, *MODEL, "--gin_bindings", f"MODEL_DIR = '{tmp_path / 'm'}'"])
    assert line.startswith("lever-jax: error: --gin_file: no task file (gin_configs/tasks/*.gin"), line
    assert "did you mean" not in line and "%TASK_FEATURE_LENGTHS" in line, line


def test_one_task_macro_missing_says_which_file_defines_it(capsys, tmp_path) -> None:
    task = tmp_path / "my_task.gin"  # a user's task file without ACCUM_STEPS
    text = (REPO / "gin_configs/tasks/executed_file.gin").read_text()
    task.write_text("\n".join(line for line in text.splitlines() if not line.startswith("ACCUM_STEPS")))
    line = _error_line(capsys, ["train", *RUN, *MODEL, "--gin_file", str(task), "--train_file", str(task),
                                "--gin_bindings", f"MODEL_DIR = '{tmp_path / 'm'}'"])
    assert "macro %ACCUM_STEPS is never defined (it comes from a task file" in line, line


MICRO = ["TRAIN_STEPS = 2", "CHECKPOINT_PERIOD = 2", "EVAL_PERIOD = 2", "BATCH_SIZE = 2", "CANDIDATES_PER_PROBLEM = 3",
         "TASK_FEATURE_LENGTHS = {'inputs': 64, 'targets': 1}", "TrainLoopConfig.progress_bar = False"]
SMALLER = ["configs.T5Config.d_model = 16", "configs.T5Config.num_heads = 2", "configs.T5Config.d_kv = 8",
           "configs.T5Config.d_ff = 32", "configs.T5Config.num_encoder_layers = 1",
           "configs.T5Config.num_decoder_layers = 1"]


def _executed_file(path: Path, n: int) -> Path:
    """GSM8k problems with their executions already recorded (no sandbox needed)."""
    rows = []
    for i in range(n):
        cands = [{"program": f"answer = {i + k}", "gen_logprob": -1.0 - k,
                  "execution": {"status": "ok", "result_key": f"num:{i + k}", "result_text": str(i + k),
                                "correct": k == 0}} for k in range(3)]
        rows.append({"schema_version": 1, "problem_id": f"mine-{i:03d}", "dataset": "gsm8k", "question": f"q{i}",
                     "context": {}, "gold": float(i), "candidates": cands})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.slow
def test_eval_with_another_model_file_names_the_differing_dimensions(capsys, tmp_path) -> None:
    train_file = _executed_file(tmp_path / "train.executed.jsonl", 8)
    model_dir = tmp_path / "model"
    bindings = [a for b in [f"MODEL_DIR = '{model_dir}'", *MICRO, *SMALLER] for a in ("--gin_bindings", b)]
    assert main(["train", *RUN, *MODEL, *TASK, "--train_file", str(train_file), *bindings]) == 0
    gin.clear_config()
    capsys.readouterr()
    eval_gin = [a.replace("runs/train.gin", "runs/eval.gin") for a in [*RUN, *MODEL, *TASK]]
    code = main(["eval", *eval_gin, "--input", str(train_file), "--output", str(tmp_path / "scores.json"),
                 "--gin_bindings", f"MODEL_DIR = '{model_dir}'"])  # t5_tiny as the file says: not what was trained
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2, last
    assert last.startswith(f"lever-jax: error: {model_dir}: trained with another model (d_model 16 there, 64 here;"), last
    assert "config.gin" in last and len(last) < 400, last
