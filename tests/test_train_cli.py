"""End to end from gin files: `lever-jax train` (the session's micro run, tests/micro_train.py) then
`lever-jax eval` on the bundled GSM8k pool, plus the TPU launcher."""
from __future__ import annotations

import argparse
import json
import subprocess

import pytest

from tests.micro_train import DROPOUT, REPO, cli_command, gin_args, read_jsonl, run_env


@pytest.mark.slow
def test_train_then_eval_from_gin_files(micro_run, jax_cache):
    model_dir = micro_run.model_dir
    records = read_jsonl(model_dir / "metrics.jsonl")
    assert [r["step"] for r in records] == list(range(1, 25))
    for key in ("loss", "learning_rate", "examples_per_sec", "binary_acc"):
        assert all(key in r for r in records), key
    evaluated = [r for r in records if "eval/summing_agg_rerank_acc" in r]
    assert [r["step"] for r in evaluated] == [12, 24]
    steps = sorted(int(p.name) for p in (model_dir / "checkpoints").iterdir() if p.name.isdigit())
    assert 24 in steps and len(steps) <= 3  # the 2 latest + the best by dev rerank accuracy
    assert (model_dir / "config.gin").read_text().count("train.train_steps") == 1
    assert any((model_dir / "tensorboard").iterdir())

    ev = subprocess.run(cli_command("eval") + gin_args(model_dir, DROPOUT), cwd=REPO, env=run_env(jax_cache),
                        capture_output=True, text=True, timeout=900)
    assert ev.returncode == 0, ev.stderr[-4000:]
    task = "lever_verify_gsm8k_pool_fold1_eval"  # smoke.gin reports the held-out fold, not the dev slice
    scores = json.loads((model_dir / "eval" / f"{task}.scores.json").read_text())
    metrics = json.loads((model_dir / "eval" / f"{task}.metrics.json").read_text())
    assert len(scores["problems"]) == 6
    problem = scores["problems"][0]
    # the pool has no generation log-probs: no ml_ep / max_gen_prob; execution status is known
    assert set(problem["choices"]) >= {"lever_no_agg", "lever", "lever_voting", "majority_vote", "voting_error_free"}
    cand = problem["candidates"][0]
    assert set(cand) >= {"candidate_index", "gen_logprob", "verifier_logprob", "group", "score", "correct"}
    for key in ("binary_acc", "rerank_acc", "summing_agg_rerank_acc", "voting_agg_rerank_acc",
                "majority_vote_acc", "random_acc", "oracle_acc", "calibration_error"):
        assert 0.0 <= metrics[key] <= 1.0, key
    # The evaluated checkpoint is the best by the dev slice's rerank accuracy (ties: latest).
    best = max(evaluated, key=lambda r: (r["eval/summing_agg_rerank_acc"], r["step"]))
    assert metrics["checkpoint_step"] == best["step"]


@pytest.mark.slow
def test_bucketed_feed_with_accumulation_trains_as_the_padded_feed(tmp_path, jax_cache):
    """gin -> batcher -> trainer -> loop: 'bucketed' with ACCUM_STEPS = BATCH_SIZE (LEVER's loop: one
    problem per forward, each at its own width) gives the padded feed's losses (dropout is off)."""
    losses = {}
    for feed in ("padded", "bucketed"):
        model_dir = tmp_path / feed
        extra = ["TRAIN_STEPS = 3", "EVAL_PERIOD = 3", "CHECKPOINT_PERIOD = 3", "ACCUM_STEPS = 2",
                 f"TrainDataConfig.batching = '{feed}'",  # GSM8k inputs of ~250-512 tokens: widths differ
                 "TASK_FEATURE_LENGTHS = {'inputs': 512, 'targets': 1}"]
        done = subprocess.run(cli_command("train") + gin_args(model_dir, extra), cwd=REPO,
                              env=run_env(jax_cache), capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-4000:]
        losses[feed] = [r["loss"] for r in read_jsonl(model_dir / "metrics.jsonl") if "loss" in r]
    assert len(losses["padded"]) == 3 and len(set(losses["padded"])) > 1
    assert losses["bucketed"] == pytest.approx(losses["padded"], rel=2e-4, abs=2e-5)


def test_commands_register_the_t5x_flags():
    """`lever-jax train` / `eval` are registered by the one launcher module, each with its flags."""
    from lever_jax.cli.main import build_parser
    from lever_jax.training import launch

    args = build_parser("train").parse_args(["train", "--gin_file", "a.gin", "--gin_file", "b.gin",
                                             "--gin_bindings", "X=1", "--gin_search_paths", "d", "--distributed"])
    assert args.gin_file == ["a.gin", "b.gin"] and args.gin_bindings == ["X=1"] and args.distributed
    assert args.gin_search_paths == ["d"] and args.func is launch.run_train
    args = build_parser("eval").parse_args(["eval", "--gin_file", "a.gin", "--input", "x", "--output", "y"])
    assert args.func is launch.run_evaluate and (args.input, args.output) == ("x", "y")


@pytest.mark.slow
def test_eval_reads_its_input_once(micro_run, tmp_path, monkeypatch, capsys):
    """`lever-jax eval --input FILE` opens FILE once (on gs:// each open is a download) and writes
    the scores file and the metrics from one method table."""
    import builtins

    import gin

    from lever_jax.cli.main import main

    executed = REPO / "tests" / "fixtures" / "executed" / "gsm8k" / "test.executed.jsonl"
    opened: list[str] = []
    real_open = builtins.open

    def counting_open(file, *args, **kwargs):
        if str(file) == str(executed):
            opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    from lever_jax.rerank import table

    tables: list[int] = []
    per_problem = table.per_problem
    monkeypatch.setattr(table, "per_problem", lambda *a, **k: tables.append(1) or per_problem(*a, **k))
    scores = tmp_path / "fixture.scores.json"
    try:
        code = main(["eval", *gin_args(micro_run.model_dir, DROPOUT), "--input", str(executed),
                     "--output", str(scores)])
    finally:
        gin.clear_config()
    assert code == 0, capsys.readouterr().err[-3000:]
    assert len(opened) == 1, opened
    assert len(tables) == 1  # the method table (and its reranks) computed once for metrics and scores
    metrics = json.loads((tmp_path / "fixture.metrics.json").read_text())
    document = json.loads(scores.read_text())
    lever = sum(p["choice_correct"]["lever"] for p in document["problems"]) / len(document["problems"])
    assert metrics["summing_agg_rerank_acc"] == pytest.approx(lever)  # the same choices in both files


def test_launch_tpu_script_parses_and_dry_runs():
    script = REPO / "scripts" / "launch_tpu.sh"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    out = subprocess.run(["bash", str(script), "--dry-run", "--name", "lever-test", "--zone",
                          "us-central2-b", "--accelerator-type", "v4-32", "--gin_file",
                          "gin_configs/runs/train.gin", "--gin_bindings", "MODEL_DIR='gs://b/m'"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = [l for l in out.stdout.splitlines() if l.startswith("gcloud ")]
    assert any("compute tpus tpu-vm create lever-test" in l and "--accelerator-type=v4-32" in l
               for l in lines), out.stdout
    assert any("--worker=all" in l and "pip install" in l for l in lines), out.stdout
    run = [l for l in lines if "lever_jax.training.train" in l]
    assert run and "--worker=all" in run[0] and "--distributed" in run[0]
    assert "gin_configs/runs/train.gin" in run[0]
