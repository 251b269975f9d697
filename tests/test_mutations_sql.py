"""Synthetic SQL candidates: deterministic, marked synthetic, literals untouched, labelled by execution."""
from __future__ import annotations

from pathlib import Path

import pytest

from lever_jax.data import mutations_sql as ms
from lever_jax.data.datasets import spider
from lever_jax.data.schema import Problem
from lever_jax.execution.sql import run_sql_task
from tests.fixtures.sql.tiny import build_tiny_spider

GOLD = "SELECT T1.Name, max(T1.Age) FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID " \
       "WHERE T1.Country = 'France' AND T1.Age > 30 GROUP BY T1.Name ORDER BY T1.Name LIMIT 3"
COLUMNS = ["Age", "Country", "Name", "Singer_ID"]


def test_each_mutation_applies_and_differs() -> None:
    muts = dict(ms.mutate(GOLD, COLUMNS, key="k"))
    assert set(muts) == set(ms.MUTATIONS)
    assert muts["agg"].count("min(") == 1
    assert "ORDER BY T1.Name DESC" in muts["order"]
    assert muts["op"].count("!=") + muts["op"].count("<") + muts["op"].count(">") > GOLD.count(">") or "!=" in muts["op"]
    assert "LEFT JOIN" in muts["join"] or "ON T1.Singer_ID = T1.Singer_ID" in muts["join"]
    assert "GROUP BY" not in muts["group_drop"]
    for name, sql in muts.items():
        assert sql != GOLD, name
        assert "'France'" in sql or name == "cond_drop", name  # literals are never edited


def test_deterministic_and_limited() -> None:
    a = ms.mutate(GOLD, COLUMNS, key="p1", limit=4)
    assert a == ms.mutate(GOLD, COLUMNS, key="p1", limit=4)
    assert len(a) == 4
    assert all(sql.strip() != "SELECT 1" for _, sql in ms.mutate("SELECT 1", key="x"))


def test_string_literals_are_protected() -> None:
    sql = "SELECT name FROM t WHERE note = 'a = b ORDER BY max(x) LIMIT 5' AND n = 2"
    for name, mutant in ms.mutate(sql, ["name", "n"], key="k"):
        if name != "cond_drop":
            assert "'a = b ORDER BY max(x) LIMIT 5'" in mutant, name


def test_candidates_are_marked_synthetic() -> None:
    cands = ms.synthetic_candidates(GOLD, COLUMNS, key="k")
    assert cands[0].program == GOLD and cands[0].source == "synthetic:gold"
    assert all(c.source.startswith("synthetic:") for c in cands)
    assert len({c.program for c in cands}) == len(cands)


def test_spider_pool_on_dev_sample() -> None:
    problems = spider.load_problems("dev")[:20]
    pool = ms.spider_pool(problems)
    assert pool == ms.spider_pool(problems)
    assert all(p.candidates[0].program == p.gold for p in pool)
    assert sum(len(p.candidates) for p in pool) > 3 * len(pool)


def test_mutants_are_labelled_by_execution(tmp_path: Path) -> None:
    db = build_tiny_spider(tmp_path)
    gold = "SELECT Name FROM singer WHERE Country = 'France' AND Age > 30"
    problem = Problem("p", "spider", "q", {"db_id": "tiny_db"}, gold, ())
    pooled = problem.replace(candidates=ms.synthetic_candidates(gold, COLUMNS, "p"))
    labels = {}
    for cand in pooled.candidates:
        out = run_sql_task({"dataset": "spider", "db_path": str(db), "sql": cand.program, "gold_sql": gold})
        labels[cand.source] = out["correct"]
    assert labels["synthetic:gold"] is True
    assert labels["synthetic:distinct"] is True  # DISTINCT-insensitive match
    assert labels["synthetic:op"] is False and labels["synthetic:cond_drop"] is False


@pytest.mark.parametrize("target,kind", [(["Larry Nelson"], "cell")])
def test_wikitq_seed_selects_a_matching_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target, kind) -> None:
    import lever_jax.data.datasets.wikitq as wikitq
    from tests.fixtures.sql.tiny import TINY_WIKITQ_COLUMNS, build_tiny_wikitq

    build_tiny_wikitq(tmp_path)
    monkeypatch.setattr(wikitq, "lever_columns", lambda table_id: TINY_WIKITQ_COLUMNS)
    seed = ms.wikitq_seed("999_1", target, root=tmp_path)
    assert seed == (kind, "select player from main_table where id = 1")
    assert ms.wikitq_seed("999_1", ["17"], root=tmp_path) == ("count", "select count(*) from main_table")
