"""Progress bars readable in a non-TTY log; train/eval log lines name their step and paths."""
from __future__ import annotations

import io
import logging

import pytest

from lever_jax.data import progress
from lever_jax.training.metric_sinks import log_checkpoint, log_evaluation, log_written


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


def test_train_log_lines_name_step_and_paths(caplog, tmp_path):
    caplog.set_level(logging.INFO, logger="lever_jax.training")
    metrics = {"oracle_acc": 0.9, "summing_agg_rerank_acc": 0.70833, "num_problems": 48, "random_acc": 0.6}
    line = log_evaluation(120, metrics, best_metric="summing_agg_rerank_acc", seconds=71.8)
    assert line == ("step 120: eval summing_agg_rerank_acc=0.7083 oracle_acc=0.9 random_acc=0.6 "
                    "(48 problems, 71.8s)")
    line = log_checkpoint(120, tmp_path / "checkpoints", metrics, "summing_agg_rerank_acc")
    saved = tmp_path / "checkpoints" / "120"
    assert line == f"step 120: checkpoint saved to {saved} (summing_agg_rerank_acc=0.7083)"
    assert log_checkpoint(40, tmp_path) == f"step 40: checkpoint saved to {tmp_path / '40'}"
    assert log_written("eval", tmp_path / "a.json", "b.json") == f"eval wrote {tmp_path / 'a.json'}, b.json"
    assert [r.getMessage() for r in caplog.records][0].startswith("step 120: eval")
    assert len(caplog.records) == 4
