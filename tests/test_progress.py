"""Progress bars readable in a non-TTY log (CI): complete lines, at most one per interval."""
from __future__ import annotations

import io
from pathlib import Path

import pytest

from lever_jax.data import progress

ROOT = Path(__file__).resolve().parents[1]


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_non_tty_gets_complete_periodic_lines(monkeypatch):
    monkeypatch.delenv(progress.MODE_ENV, raising=False)
    clock = [0.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    out = io.StringIO()
    bar = progress.progress_bar(total=100, desc="execute gsm8k", unit="prog", file=out, interval=30,
                                smoothing=0.05)
    assert isinstance(bar, progress.LogProgress)
    for _ in range(10):  # 10 updates within 10 s: nothing printed yet
        clock[0] += 1
        bar.update(2)
    assert out.getvalue() == ""
    clock[0] = 40
    bar.set_postfix(cached=3, refresh=False)
    bar.update(20)
    bar.close()  # the last line already says 40/100: not repeated
    bar.close()  # idempotent
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert lines == ["execute gsm8k: 40/100 prog (40%), 1 prog/s, elapsed 40s, eta 1m00s, cached=3"]


def test_initial_counts_from_resume_step(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    out = io.StringIO()
    bar = progress.LogProgress(total=240, initial=200, unit="step", file=out, interval=0)
    clock[0] = 10
    bar.update(40)
    bar.close()
    assert out.getvalue().splitlines() == ["240/240 step (100%), 4 step/s, elapsed 10s"]


def test_tty_gets_tqdm_and_env_overrides(monkeypatch):
    from tqdm import tqdm

    monkeypatch.delenv(progress.MODE_ENV, raising=False)
    bar = progress.progress_bar(total=3, file=_Tty())
    assert isinstance(bar, tqdm)
    bar.close()
    monkeypatch.setenv(progress.MODE_ENV, "log")
    assert isinstance(progress.progress_bar(total=3, file=_Tty()), progress.LogProgress)
    monkeypatch.setenv(progress.MODE_ENV, "off")
    out = io.StringIO()
    bar = progress.progress_bar(total=3, file=out)
    bar.update(3)
    bar.close()
    assert out.getvalue() == ""


def test_disabled_prints_nothing():
    out = io.StringIO()
    bar = progress.progress_bar(total=3, file=out, disable=True)
    bar.update(1)
    bar.close()
    assert out.getvalue() == ""



@pytest.mark.slow
@pytest.mark.usefixtures("minilm_weights")
def test_finetune_encoding_logs_complete_lines_off_a_terminal(tmp_path, monkeypatch, capsys):
    """`lever-jax run` with the fine-tune: its frozen-layer encoding, like every other progress
    report, prints complete lines (no tqdm carriage-return redraws) when stderr is not a terminal."""
    import gin

    from lever_jax.cli.main import main

    monkeypatch.delenv(progress.MODE_ENV, raising=False)
    monkeypatch.setenv(progress.INTERVAL_ENV, "0")
    args = ["run", "--gin_file", str(ROOT / "gin_configs/runs/finetune_minilm.gin"), "--max_problems", "8",
            "--out", str(tmp_path / "run")]
    for b in ("RunConfig.execute = False", "RunConfig.bootstrap = 50", "RunConfig.num_folds = 2",
              "FinetuneConfig.steps = 1", "FinetuneConfig.eval_every = 1", "FinetuneConfig.warmup_steps = 1"):
        args += ["--gin_bindings", b]
    try:
        assert main(args) == 0
    finally:
        gin.clear_config()
    err = capsys.readouterr().err
    assert "encode " in err and "\r" not in err, err[-2000:]
