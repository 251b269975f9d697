"""`lever-jax compare`: `folds` compares runs on the folds all of them finished (a run stopped early
still counts), paired over the same problems, and on a finished run reproduces metrics.json;
`runs` tabulates finished runs from their metrics.json."""
from __future__ import annotations

import json
import shutil

import pytest

pytestmark = pytest.mark.usefixtures("minilm_weights")

from lever_jax.cli import run as run_cmd  # noqa: E402
from lever_jax.cli.main import main  # noqa: E402

TINY = ["--quick", "--max_problems", "16", "--no-progress", "--gin_bindings", "RunConfig.execute = False",
        "--gin_bindings", "HeadConfig.steps = 30", "--gin_bindings", "HeadConfig.eval_every = 15",
        "--gin_bindings", "RunConfig.bootstrap = 200", "--gin_bindings", "FeatureConfig.question_len = 48",
        "--gin_bindings", "FeatureConfig.program_len = 48"]


def compare_folds(*argv: str) -> int:
    return main(["compare", "folds", *argv])


def _rows(text: str) -> dict[str, list[str]]:
    return {cells[0]: cells[1:] for line in text.splitlines() if line.startswith("| ") and not line.startswith("| run")
            for cells in [[c.strip() for c in line.strip("|").split("|")]]}


@pytest.mark.slow
def test_compare_runs_and_folds_on_finished_and_stopped_runs(tmp_path, capsys) -> None:
    full = tmp_path / "full"
    assert run_cmd.cli([*TINY, "--out", str(full)]) == 0
    capsys.readouterr()
    assert compare_folds(str(full), "--labels", "full", "--bootstrap", "200") == 0
    out = capsys.readouterr().out
    assert "folds [0, 1] of 2: 16 problems" in out
    lever = json.loads((full / "metrics.json").read_text())["methods"]["lever"]["accuracy"]
    assert float(_rows(out)["full"][0]) == pytest.approx(100 * lever, abs=0.051)  # the run's own number
    metas = [json.loads(p.read_text()) for p in sorted(full.glob("folds/**/fold*/fold.json"))]
    assert len(metas) == 2
    assert _rows(out)["full"][5] == (f"{sum(m['dev_loss'] for m in metas) / 2:.3f} / "
                                     f"{100 * sum(m['dev_binary_acc'] for m in metas) / 2:.1f}")

    # finished runs, from their metrics.json
    assert main(["compare", "runs", str(full), str(full), "--labels", "x", "y"]) == 0
    out = capsys.readouterr().out
    doc = json.loads((full / "metrics.json").read_text())
    m, g = doc["methods"]["lever"], doc["verifier"]["lever_minus_majority_vote"]
    rows = _rows(out)
    assert set(rows) == {"x", "y"} and rows["x"] == rows["y"]
    assert rows["x"][:2] == [f"{100 * m['accuracy']:.1f} [{100 * m['ci_low']:.1f}, {100 * m['ci_high']:.1f}]",
                             f"{100 * g['gain']:+.1f} [{100 * g['ci_low']:+.1f}, {100 * g['ci_high']:+.1f}]"]
    assert main(["compare", "runs", str(full), str(tmp_path)]) == 2  # no metrics.json: one line, no table
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith(f"lever-jax: error: {tmp_path / 'metrics.json'}: ")
    assert main(["compare", "runs", str(full), "--labels", "a", "b"]) == 2
    assert "--labels needs one label per run directory" in capsys.readouterr().err

    stopped = tmp_path / "stopped"  # the same run, stopped after fold 0
    shutil.copytree(full, stopped)
    for path in stopped.glob("folds/**/fold1/scores.npy"):
        path.unlink()
    assert compare_folds(str(full), str(stopped), "--labels", "a", "b", "--bootstrap", "200",
                         "--sum-logits", f"ab={full}+{stopped}") == 0
    out = capsys.readouterr().out
    rows = _rows(out)
    assert "folds [0] of 2" in out and set(rows) == {"a", "b", "ab"}
    assert rows["b"][0] == rows["a"][0] and rows["b"][2] == "+0.0 [+0.0, +0.0]"  # same scores, paired
    fold0 = json.loads(next(full.glob("folds/**/fold0/fold.json")).read_text())
    assert rows["a"][5] == rows["b"][5] == f"{fold0['dev_loss']:.3f} / {100 * fold0['dev_binary_acc']:.1f}"
    assert rows["ab"][5] == "—"  # a fused verifier has no checkpoint of its own

    for path in stopped.glob("folds/**/fold0/scores.npy"):
        path.unlink()
    assert compare_folds(str(full), str(stopped)) == 1  # no fold finished in both
    capsys.readouterr()
    assert compare_folds(str(tmp_path / "nowhere"), str(full)) == 2  # not a run directory: one line
    err = capsys.readouterr().err.strip()
    config = tmp_path / "nowhere" / "run_config.json"
    assert err.startswith(f"lever-jax: error: {config}: not a run's config")
    assert "\n" not in err
