"""`lever-jax train` / `eval` configuration mistakes: one line naming what is wrong, exit 2, before any work."""
from __future__ import annotations

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
