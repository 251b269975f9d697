"""`lever-jax tables` (lever_jax.pipeline.paper_tables, lever_jax.cli.tables): which runs it makes, how rows, paired
CIs and 'comparable' flags come out of the runs' files, resumability; and a --quick smoke run of
the real `lever-jax run`s (transfer on the two GSM8k pools, RunConfig.train_problems)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lever_jax.cli.main import main as lever_jax
from lever_jax.data.errors import UserError
from lever_jax.pipeline import paper_tables as pt

POOLS = {"gsm8k_code002": "gsm8k", "gsm8k_other_llms": "gsm8k", "humaneval_codegen16b": "humaneval"}


def _fake_run(calls: list):
    """A stand-in for `lever-jax run`: per-problem values drawn from the job's bindings."""

    def run(run_dir: Path, files, bindings) -> dict:
        calls.append((run_dir, tuple(bindings)))
        pool = next(b for b in bindings if b.startswith("RunConfig.pool")).split("'")[1]
        n = 30 if pool.startswith("humaneval") else 700
        rng = np.random.default_rng(abs(hash((pool, tuple(b for b in bindings if "ablation" in b or "train_" in b))))
                                    % 2**32)
        methods = {"majority_vote": rng.random(n) < 0.6, "lever": rng.random(n) < 0.7,
                   "lever_no_agg": rng.random(n) < 0.5, "oracle": np.ones(n, bool), "greedy": rng.random(n) < 0.5}
        if pool.startswith("humaneval"):
            methods.update(max_gen_prob=rng.random(n) < 0.3, ml_ep=rng.random(n) < 0.35,
                           codet_dual_agreement=rng.random(n))
        per = {"problem_ids": [f"p{i}" for i in range(n)],
               "methods": {k: [float(x) for x in v] for k, v in methods.items()}}
        per["methods"]["greedy"][0] = None  # a method that does not apply to one problem
        limit = next((int(b.split("=")[1]) for b in bindings if b.startswith("RunConfig.train_problems")), None)
        per_fold = int(n * 0.8 * 0.9)
        train_pool = next((b.split("'")[1] for b in bindings if b.startswith("RunConfig.train_pool")), None)
        metrics = {"problems": n, "samples": 14 * n, "verifier": {"binary_acc": 0.8},
                   "training": {"train_rows_per_fold": [min(limit or per_fold, per_fold)] * 5, "train_pool": train_pool},
                   "accuracy_at_k": {m: [{"k": k, "accuracy": 0.5, "std": 0.01} for k in (1, 2, 4, 14)]
                                     for m in ("majority_vote", "lever", "oracle")}}
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "metrics.json").write_text(json.dumps(metrics))
        (run_dir / "per_problem.json").write_text(json.dumps(per))
        return metrics

    return run


def test_tables_rows_gains_flags_and_resume(tmp_path) -> None:
    calls: list = []
    with pytest.raises(UserError, match="no finished run"):  # --finished_only with nothing run yet
        pt.Tables(tmp_path, _fake_run(calls), list(POOLS), POOLS, run_new=False).build()
    assert calls == []  # --finished_only runs nothing
    tables = pt.Tables(tmp_path, _fake_run(calls), list(POOLS), POOLS, bootstrap=500)
    doc = tables.build()
    names = sorted(str(d.relative_to(tmp_path / "runs")) for d, _ in calls)
    # gsm8k: main, 4 ablations, 250, 500 (both < 504 per fold); humaneval: no size runs (21 per fold)
    assert len([n for n in names if n.startswith("gsm8k_code002/")]) == 8  # + the transfer run
    assert "gsm8k_code002/from_gsm8k_other_llms" in names and "gsm8k_other_llms/from_gsm8k_code002" in names
    assert not [n for n in names if n.startswith("humaneval_codegen16b/train")]
    shared = [b for _, bs in calls for b in bs if "folds_dir" in b]
    assert len(set(shared)) == 1  # every run shares the trained folds (scoring-only ablations reuse them)

    g = doc["pools"]["gsm8k_code002"]
    main = {r["key"]: r for r in g["main"]}
    assert "n/a" in main["ml_ep"] and "log-probs" in main["ml_ep"]["n/a"]
    assert main["codet_dual_agreement"]["n/a"] == "the pool ships no generated tests"
    assert main["lever"]["paper"] == 84.5 and main["lever"]["comparable"] == "no"
    assert main["lever"]["notes"] == ["S", "T", "V"] and main["majority_vote"]["notes"] == ["S"]
    per = json.loads((tmp_path / "runs/gsm8k_code002/main/per_problem.json").read_text())["methods"]
    want = np.mean(np.array(per["lever"]) - np.array(per["majority_vote"]))
    gain = main["lever"]["minus_majority_vote"]
    assert gain["gain"] == pytest.approx(want) and gain["ci_low"] <= want <= gain["ci_high"]
    assert main["greedy"]["accuracy"]["problems"] == 699  # the problem where greedy does not apply is dropped
    abl = {r["ablation"]: r for r in g["ablations"]}
    assert "no gold program" in abl["no_gold"]["n/a"]
    no_agg = json.loads((tmp_path / "runs/gsm8k_code002/no_agg/per_problem.json").read_text())["methods"]
    assert abl["no_agg"]["accuracy"]["accuracy"] == pytest.approx(np.mean(no_agg["lever_no_agg"]))
    assert [r["train_problems"] for r in g["train_sizes"]] == ["250", "500", "all"]
    assert g["train_sizes"][0]["train_rows_per_fold"] == [250] * 5
    h = doc["pools"]["humaneval_codegen16b"]
    assert all("n/a" in r for r in h["train_sizes"][:2]) and "only 21 training problems" in h["train_sizes"][0]["n/a"]
    assert {r["key"]: r for r in h["main"]}["codet_dual_agreement"]["comparable"].startswith("yes")
    assert {r["key"]: r for r in g["main"]}["majority_vote"]["minus_majority_vote"] is None
    assert "gold program" in {r["ablation"]: r for r in h["ablations"]}["no_gold"]["n/a"]
    assert [(t["train_pool"], t["eval_pool"]) for t in doc["transfer"]] == list(pt.TRANSFERS)

    pt.write(tmp_path, doc, "python scripts/paper_tables.py")
    md = (tmp_path / "paper_tables.md").read_text()
    assert "## Transfer between LLMs" in md and "| - gold program in training | n/a:" in md
    assert "NaN" not in (tmp_path / "paper_tables.json").read_text()

    calls.clear()  # a re-run reads every run back
    again = pt.Tables(tmp_path, _fake_run(calls), list(POOLS), POOLS, bootstrap=500).build()
    assert calls == [] and again["pools"] == doc["pools"]
    (tmp_path / "runs/gsm8k_code002/no_exec/metrics.json").unlink()  # a run not finished yet
    partial = pt.Tables(tmp_path, _fake_run(calls), list(POOLS), POOLS, bootstrap=500, run_new=False).build()
    assert calls == []
    rows = {r["ablation"]: r for r in partial["pools"]["gsm8k_code002"]["ablations"]}
    assert rows["no_exec"]["n/a"] == "not run" and "accuracy" in rows["no_program"]
    before = (tmp_path / "paper_tables.md").read_text()
    other = pt.Tables(tmp_path, _fake_run(calls), list(POOLS), POOLS, bindings=["RunConfig.num_folds = 3"],
                      bootstrap=500, run_new=False)  # runs made with other settings are not these tables' runs
    with pytest.raises(UserError, match=r"--finished_only: .*gsm8k_code002/main: no finished run with these"):
        other.build(partial=lambda d: pt.write(tmp_path, d, "partial"))
    assert calls == [] and (tmp_path / "paper_tables.md").read_text() == before


def test_a_pool_with_a_train_split_gets_levers_protocol_row_and_the_gold_ablation(tmp_path) -> None:
    """MBPP (a gold program, a TRAIN split's pool): the LEVER's-protocol run sits under the LEVER row,
    paired with the main run's baselines; '- gold program' is retrained with RunConfig.add_gold = False."""
    calls: list = []
    pools = {"mbpp_qwen05b": "mbpp"}
    doc = pt.Tables(tmp_path, _fake_run(calls), list(pools), pools, bootstrap=300, sections=("protocol", "ablations"),
                    train_pools={"mbpp_qwen05b": "mbpp_qwen05b_train"}).build()
    bindings = {str(d.relative_to(tmp_path / "runs")): b for d, b in calls}
    assert "RunConfig.protocol = 'lever'" in bindings["mbpp_qwen05b/lever_protocol"]
    assert "RunConfig.train_pool = 'mbpp_qwen05b_train'" in bindings["mbpp_qwen05b/lever_protocol"]
    assert "RunConfig.add_gold = False" in bindings["mbpp_qwen05b/no_gold"]
    keys = [r["key"] for r in doc["pools"]["mbpp_qwen05b"]["main"]]
    assert keys[keys.index("lever") + 1] == "lever_protocol"
    row = doc["pools"]["mbpp_qwen05b"]["main"][keys.index("lever_protocol")]
    own = json.loads((tmp_path / "runs/mbpp_qwen05b/lever_protocol/per_problem.json").read_text())["methods"]
    main = json.loads((tmp_path / "runs/mbpp_qwen05b/main/per_problem.json").read_text())["methods"]
    want = np.mean(np.array(own["lever"]) - np.array(main["majority_vote"]))
    assert row["minus_majority_vote"]["gain"] == pytest.approx(want)
    assert row["paper"] == 68.9 and "mbpp_qwen05b_train" in row["label"] and row["comparable"] == "no"
    assert "accuracy" in {r["ablation"]: r for r in doc["pools"]["mbpp_qwen05b"]["ablations"]}["no_gold"]
    pt.write(tmp_path, doc, "python scripts/paper_tables.py")
    assert "| LEVER, LEVER's protocol (trained on mbpp_qwen05b_train) | `lever_protocol` |" in \
        (tmp_path / "paper_tables.md").read_text()
    only = pt.Tables(tmp_path / "protocol_only", _fake_run([]), list(pools), pools, bootstrap=300,
                     sections=("protocol",), train_pools={"mbpp_qwen05b": "mbpp_qwen05b_train"}).build()
    rows = {r["ablation"]: r for r in only["pools"]["mbpp_qwen05b"]["ablations"]}
    assert rows["no_gold"]["n/a"] == "not run (--sections)"  # MBPP has gold programs: left out, not impossible


def test_every_train_split_pool_names_the_pool_it_trains() -> None:
    from lever_jax.pipeline.pools import POOLS

    linked = {p: POOLS[p]["train_pool"] for p in POOLS if "train_pool" in POOLS[p]}
    assert linked and all(POOLS[t]["train_split_of"] == p and POOLS[t]["dataset"] == POOLS[p]["dataset"]
                          for p, t in linked.items())


def test_unknown_pool_or_section_is_one_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert lever_jax(["tables", "--pools", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("lever-jax: error:") and "unknown pool(s) nope" in err[0]
    assert lever_jax(["tables", "--pools", "gsm8k_code002", "--sections", "tables"]) == 2
    assert "--sections: unknown tables" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.usefixtures("minilm_weights")
def test_quick_paper_tables_on_the_gsm8k_pools(tmp_path, monkeypatch, capsys) -> None:
    """The real runs, tiny: main tables and both transfer directions, every verifier trained on 4
    problems per fold (RunConfig.train_problems); then a re-run that runs nothing."""
    monkeypatch.setenv("LEVER_JAX_CACHE_DIR", str(tmp_path / "exec_cache"))
    argv = ["--quick", "--out", str(tmp_path), "--pools", "gsm8k_code002,gsm8k_other_llms",
            "--sections", "transfer", "--gin_bindings", "RunConfig.max_problems = 16",
            "--gin_bindings", "RunConfig.train_problems = 4",
            "--gin_bindings", "HeadConfig.steps = 6", "--gin_bindings", "HeadConfig.eval_every = 6"]
    assert lever_jax(["tables", *argv]) == 0
    doc = json.loads((tmp_path / "paper_tables.json").read_text())
    g = doc["pools"]["gsm8k_code002"]
    assert {r["key"] for r in g["main"] if "n/a" not in r} >= {"majority_vote", "voting_error_free", "lever", "oracle"}
    sizes = {r["train_problems"]: r for r in g["train_sizes"]}
    assert sizes["all"]["train_rows_per_fold"] == [4, 4]  # 16 problems, 2 folds: 7 per fold, cut to 4
    assert "n/a" in sizes["8"] and "only 4 training problems" in sizes["8"]["n/a"]
    assert {r["ablation"]: r for r in g["ablations"]}["no_exec"]["n/a"] == "not run (--sections)"
    assert len(doc["transfer"]) == 2
    for t in doc["transfer"]:
        assert 0 <= t["transfer"]["accuracy"] <= 1 and t["notes"] == ["Q"]
    metrics = json.loads((tmp_path / "runs/gsm8k_other_llms/from_gsm8k_code002/metrics.json").read_text())
    assert metrics["training"]["train_pool"] == "gsm8k_code002" and metrics["problems"] == 16
    md = (tmp_path / "paper_tables.md").read_text()
    assert "Q = `--quick`" in md and "| gsm8k_code002 | gsm8k_other_llms |" in md
    capsys.readouterr()
    assert lever_jax(["tables", *argv]) == 0
    assert "transfer:" not in capsys.readouterr().err  # nothing was rerun
    assert json.loads((tmp_path / "paper_tables.json").read_text())["pools"] == doc["pools"]
