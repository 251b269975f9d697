"""The bundled pools LEVER's protocol runs on (issue 24): each evaluated pool names its TRAIN-split
pool; both samples files ship in the package, hold the same dataset and share no problem; and
``gin_configs/runs/lever_protocol_<dataset>.gin`` binds exactly that pair, so the documented
command trains on the train split and scores the evaluated one."""
from __future__ import annotations

from pathlib import Path

import gin
import pytest

from lever_jax.data import bundled_path, read_problems
from lever_jax.pipeline import run as _run  # noqa: F401 - registers the run's configurables
from lever_jax.pipeline.pools import POOLS
from lever_jax.training.launch import parse_gin_files

ROOT = Path(__file__).resolve().parents[1]


def _databases(problems: list) -> set[str]:
    return {p.context["db_id"] for p in problems if isinstance(p.context, dict) and "db_id" in p.context}


PAIRS = sorted((name, spec["train_pool"]) for name, spec in POOLS.items() if "train_pool" in spec)


def test_both_real_sampled_datasets_have_a_protocol_pair() -> None:
    assert {POOLS[name]["dataset"] for name, _ in PAIRS} >= {"mbpp", "spider"}


@pytest.mark.parametrize("pool,train_pool", PAIRS)
def test_protocol_pair_is_bundled_disjoint_and_configured(pool: str, train_pool: str) -> None:
    spec, train = POOLS[pool], POOLS[train_pool]
    evaluated = list(read_problems(bundled_path(*spec["samples"])))
    trained = list(read_problems(bundled_path(*train["samples"])))
    assert evaluated and trained
    assert {p.dataset for p in evaluated} == {p.dataset for p in trained} == {spec["dataset"]}
    assert not {p.problem_id for p in evaluated} & {p.problem_id for p in trained}
    # Spider: the train and dev databases are disjoint (a few question texts recur on other
    # databases, and MBPP repeats a few problems across splits: the datasets' own, see the data card)
    assert not _databases(evaluated) & _databases(trained)
    gin.clear_config()
    try:
        parse_gin_files([str(ROOT / f"gin_configs/runs/lever_protocol_{spec['dataset']}.gin")], [])
        bound = {name: gin.query_parameter(f"RunConfig.{name}") for name in ("pool", "protocol", "train_pool")}
    finally:
        gin.clear_config()
    assert bound == {"pool": pool, "protocol": "lever", "train_pool": train_pool}
