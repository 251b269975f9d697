"""Spider / WikiTQ loaders, the MySQL->SQLite rebuild, LEVER's WikiTQ column names, rendering."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from lever_jax.data.datasets import spider, wikitq
from lever_jax.data.spider_db import SpiderBuildError, build_database, prepare_spider, spider_db_path, translate_ddl
from lever_jax.execution.sql import run_sql_task
from lever_jax.data.table_render import dataframe_to_string, render_table
from tests.fixtures.sql.tiny import build_tiny_spider

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "sql"


@pytest.mark.parametrize("split,size", [("dev", 1034), ("train", 6726)])
def test_spider_splits(split: str, size: int) -> None:
    problems = spider.load_problems(split)
    assert len(problems) == size == spider.SIZES[split]
    assert len({p.problem_id for p in problems}) == size
    assert all(p.dataset == "spider" and p.context["db_id"] and spider.gold_program(p) == p.gold for p in problems)
    assert problems[0].candidates == ()


def test_spider_dev_variant_and_schemas() -> None:
    official = spider.load_problems("dev")
    corrected = spider.load_problems("dev", "spiderman")
    assert len(corrected) == 1034
    assert {(p.context["db_id"], p.question) for p in official} == {(p.context["db_id"], p.question) for p in corrected}
    schemas = spider.load_schemas()
    assert len(schemas) == 166 and {p.context["db_id"] for p in official} <= set(schemas)
    with pytest.raises(ValueError):
        spider.load_problems("train", "spiderman")


@pytest.mark.parametrize("split,size", [("train", 11321), ("dev", 2831), ("test", 4344)])
def test_wikitq_splits(split: str, size: int) -> None:
    problems = wikitq.load_problems(split)
    assert len(problems) == size
    assert len({p.problem_id for p in problems}) == size
    p = problems[0]
    assert isinstance(p.gold, list) and all(isinstance(g, str) for g in p.gold)
    assert len(p.context["target_canon"]) == len(p.gold)
    assert p.context["target_canon_source"] == ("corenlp" if split == "test" else "approx")
    assert wikitq.gold_program(p) is None
    assert all(wikitq.lever_columns(q.context["table_id"]) for q in problems[:50])


def test_wikitq_lever_column_names_match_levers_prompts() -> None:
    assert wikitq.header_to_name("money ($)") == "money_lrb_rrb"
    assert wikitq.header_to_name("boat #") == "boat_count"
    assert wikitq.header_to_name("position in 1993-94") == "position_in_1993_94"
    assert wikitq.header_to_name("no.") == "no"
    assert wikitq.header_to_name("") == "column"
    assert wikitq.header_to_name("1st") == "col_1st"
    # the 8 LEVER exemplar tables (NLP4Code's wtq-8_exemplars.jsonl, db_table_headers)
    expected = json.loads((FIXTURES / "lever_wtq_headers.json").read_text())
    for table_id, headers in expected.items():
        assert [dst for _, dst in wikitq.lever_columns(table_id)] == headers, table_id


def test_wikitq_duplicate_headers_are_disambiguated() -> None:
    pairs = wikitq.lever_column_names(["id", "agg", "score", "score", "score number"],
                                      ["id", "agg", "c1", "c1_number", "c2", "c3"])
    assert [d for _, d in pairs] == ["id", "agg", "score", "score_number", "score_2", "score_number_2"]


def test_translate_ddl() -> None:
    stmts, tables = translate_ddl((FIXTURES / "tiny_db" / "schema.sql").read_text())
    assert tables == ["singer", "concert", "singer_in_concert", "ranking"]
    text = "\n".join(stmts)
    for bad in ("`", "tiny_db", "AUTO_INCREMENT", "ENGINE", "CHARSET", "COMMENT", "UNSIGNED", "ENUM", "INDEX idx"):
        assert bad not in text, bad
    assert 'CREATE INDEX "singer_idx_country" ON "singer" ("Country")' in stmts
    conn = sqlite3.connect(":memory:")
    for s in stmts:
        conn.execute(s)
    with pytest.raises(SpiderBuildError):
        translate_ddl("DROP TABLE x;")


def test_build_reports_bad_csv_with_location(tmp_path: Path) -> None:
    schema = "CREATE TABLE `d`.`t` (`a` INT, `b` TEXT);"
    with pytest.raises(SpiderBuildError, match=r"d/data/t.csv:3"):
        build_database("d", schema, {"t": "a,b\n1,x\n2\n"}, tmp_path / "d.sqlite")
    with pytest.raises(SpiderBuildError, match="not in table"):
        build_database("d", schema, {"t": "a,zz\n1,x\n"}, tmp_path / "d.sqlite")
    assert not (tmp_path / "d.sqlite").exists()


def test_rebuild_is_deterministic(tmp_path: Path) -> None:
    a = build_tiny_spider(tmp_path / "a")
    b = build_tiny_spider(tmp_path / "b")
    assert a.read_bytes() == b.read_bytes()


def test_prepared_dev_databases_answer_gold_queries(tmp_path: Path) -> None:
    """Rebuild the 20 dev databases (~1 s) and run a sample of gold queries as candidates."""
    prepare_spider(tmp_path, archives=("databases_dev.tar.xz",), log=False)
    problems = spider.load_problems("dev")[::25]
    for p in problems:
        out = run_sql_task({"dataset": "spider", "db_path": str(spider_db_path(p.context["db_id"], tmp_path)),
                            "sql": p.gold, "gold_sql": p.gold})
        assert out["status"] == "ok" and out["correct"], (p.problem_id, out)
    # cached: a second call builds nothing
    assert prepare_spider(tmp_path, archives=("databases_dev.tar.xz",), log=False) == {}


def test_table_render_matches_pandas_fixture() -> None:
    """Cases generated by pandas 1.5.3 (tests/fixtures/sql/make_render_cases.py)."""
    cases = json.loads((FIXTURES / "render_cases.json").read_text())["cases"]
    assert len(cases) >= 300
    for case in cases:
        assert dataframe_to_string(case["columns"], case["rows"]) == case["expected"], case


def test_render_cut() -> None:
    rows = [["x" * 3000] for _ in range(10)]
    text = render_table(["c"], rows)
    assert len(text) == 5000
    assert len(render_table(["a"], [[i] for i in range(10)]).splitlines()) == 6
