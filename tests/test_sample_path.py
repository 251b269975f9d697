"""The sampled-pool path a user runs, on the real llama.cpp runtime with the tiny GGUF model:
`prompts | sample` for the TRAIN and TEST splits -> `execute` -> `run` under LEVER's protocol
(one verifier trained on the train split's pool, its checkpoint picked on a held-out slice of it,
every test problem scored), and the errors of that protocol."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lever_jax.cli.main import main
from lever_jax.data.jsonl import read_problems
from tests.gguf_tiny import write_tiny_gguf

pytestmark = pytest.mark.slow


def _lever(*argv: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lever_jax.cli", *argv], input=stdin, capture_output=True,
                          text=True, timeout=900, cwd=cwd, env=None)


@pytest.fixture(scope="module")
def executed_splits(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """MBPP train (8 problems) and test (6) pools sampled by the tiny model, executed."""
    tmp = tmp_path_factory.mktemp("sampled")
    model = write_tiny_gguf(tmp / "tiny.gguf")
    out: dict[str, Path] = {}
    for split, limit in (("train", 8), ("test", 6)):
        prompts = _lever("prompts", "--dataset", "mbpp", "--split", split, "--limit", str(limit))
        assert prompts.returncode == 0, prompts.stderr
        samples = tmp / f"{split}.samples.jsonl.gz"
        sampled = _lever("sample", "--input", "-", "--split", split, "--model", str(model), "--threads", "1",
                         "--n", "3", "--max-tokens", "16", "--output", str(samples), stdin=prompts.stdout)
        assert sampled.returncode == 0, sampled.stderr
        executed = tmp / f"{split}.executed.jsonl.gz"
        assert main(["execute", "--dataset", "mbpp", "--input", str(samples), "--output", str(executed),
                     "--workers", "1"]) == 0
        out[split] = executed
    return out


def _run(tmp_path: Path, test_file: Path, *bindings: str) -> int:
    argv = ["run", "--quick", "--input", str(test_file), "--out", str(tmp_path / "run"), "--no-progress",
            "--gin_bindings", "HeadConfig.use_candidate_features = False"]
    for binding in bindings:
        argv += ["--gin_bindings", binding]
    return main(argv)


def test_lever_protocol_trains_on_train_split_and_scores_every_test_problem(
        executed_splits: dict[str, Path], tmp_path: Path) -> None:
    code = _run(tmp_path, executed_splits["test"], "RunConfig.protocol = 'lever'",
                f"RunConfig.train_input = '{executed_splits['train']}'")
    assert code == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["problems"] == 6 and metrics["training"]["protocol"] == "lever"
    assert metrics["training"]["train_rows_per_fold"] == [7]  # 8 train problems, 1 held out as dev
    assert metrics["training"]["gold_rows_per_fold"] == [7]  # LEVER's gold positives: the 7 trained problems'
    report = (tmp_path / "run" / "report.md").read_text()
    assert "LEVER's protocol" in report and "cross-fitting" not in report
    assert "Gold programs added to training as positives" in report
    scores = json.loads((tmp_path / "run" / "scores.json").read_text())
    test_ids = {p.problem_id for p in read_problems(executed_splits["test"])}
    assert {p["problem_id"] for p in scores["problems"]} == test_ids
    scored = [c["verifier_logprob"] for p in scores["problems"] for c in p["candidates"]]
    assert scored and all(v is not None for v in scored)  # every test candidate got a verifier score


@pytest.mark.parametrize("case", ["no_train_split", "same_split", "add_mode"])
def test_lever_protocol_errors(case: str, executed_splits: dict[str, Path], tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    bindings = ["RunConfig.protocol = 'lever'"]
    if case == "same_split":
        bindings.append(f"RunConfig.train_input = '{executed_splits['test']}'")
    elif case == "add_mode":
        bindings += [f"RunConfig.train_input = '{executed_splits['train']}'", "RunConfig.train_pool_mode = 'add'"]
    assert _run(tmp_path, executed_splits["test"], *bindings) == 2
    err = capsys.readouterr().err.strip().splitlines()
    expected = {"no_train_split": "needs the TRAIN split", "same_split": "also evaluated",
                "add_mode": "train_pool_mode must be 'replace'"}[case]
    assert err[-1].startswith("lever-jax: error:") and expected in err[-1], err
    assert not (tmp_path / "run" / "metrics.json").exists()
