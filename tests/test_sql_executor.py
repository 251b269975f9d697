"""SQL executors: read-only/immutable databases, hostile queries, timeouts, row caps, Execution."""
from __future__ import annotations

import dataclasses

import hashlib
import time
from pathlib import Path

import pytest

from lever_jax.data.schema import Candidate, Problem
from lever_jax.execution.base import SandboxResult
from lever_jax.data.result_keys import canonical_key, is_error_key
from lever_jax.execution.sql import TASK_FUNCTION, SpiderExecutor, WikiTQExecutor, run_sql_task
from tests.fixtures.sql.tiny import TINY_WIKITQ_COLUMNS, build_tiny_spider, build_tiny_wikitq


@pytest.fixture(scope="module")
def db_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sqldb")
    build_tiny_spider(root)
    build_tiny_wikitq(root)
    return root


@pytest.fixture()
def spider_db(db_root: Path) -> Path:
    return db_root / "spider" / "tiny_db" / "tiny_db.sqlite"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _run(db: Path, sql: str, gold: str | None = None, **kw) -> dict:
    payload = {"dataset": "spider", "db_path": str(db), "sql": sql, "gold_sql": gold, **kw}
    return run_sql_task(payload)


def test_select_result_text_and_key(spider_db: Path) -> None:
    out = _run(spider_db, "SELECT Name, Age FROM singer ORDER BY Singer_ID", gold="SELECT Name, Age FROM singer ORDER BY Singer_ID")
    assert out["status"] == "ok" and out["correct"] is True
    assert out["num_rows"] == 6
    # LEVER's rendering: first 5 rows, pandas to_string(index=False) layout
    assert out["result_text"].splitlines()[0] == "        Name  Age"
    assert out["result_text"].splitlines()[1] == "   Joe Sharp   52"
    assert len(out["result_text"].splitlines()) == 6
    # LEVER's grouping: the flattened first 5 rows in order
    assert out["result_key"] == canonical_key(["Joe Sharp", 52, "Timbaland", 32, "Justin Brown", 29,
                                               "Rose White", 41, "John Nizinik", 43])


HOSTILE = [
    "DROP TABLE singer",
    "DELETE FROM singer",
    "INSERT INTO singer (Singer_ID, Name, Note) VALUES (99, 'x', 'y')",
    "UPDATE singer SET Age = 0",
    "CREATE TABLE evil (x)",
    "CREATE TEMP TABLE evil (x)",
    "ALTER TABLE singer ADD COLUMN evil INT",
    "ALTER TABLE singer RENAME TO evil",
    "CREATE INDEX evil ON singer(Age)",
    "CREATE VIEW evil AS SELECT 1",
    "CREATE TRIGGER evil AFTER INSERT ON singer BEGIN DELETE FROM singer; END",
    "ATTACH DATABASE '/tmp/evil.sqlite' AS evil",
    "ATTACH DATABASE ':memory:' AS evil",
    "DETACH DATABASE main",
    "PRAGMA writable_schema = 1",
    "PRAGMA writable_schema",
    "PRAGMA journal_mode = WAL",
    "PRAGMA user_version = 7",
    "PRAGMA foreign_keys = ON",
    "VACUUM",
    "VACUUM INTO '/tmp/evil-copy.sqlite'",
    "REINDEX",
    "ANALYZE",
    "BEGIN",
    "SAVEPOINT x",
    "SELECT load_extension('/tmp/evil.so')",
    "SELECT 1; DROP TABLE singer",
    "REPLACE INTO singer (Singer_ID, Name, Note) VALUES (1, 'x', 'y')",
    "WITH x AS (SELECT 1) DELETE FROM singer",
]


@pytest.mark.parametrize("sql", HOSTILE)
def test_hostile_statements_are_refused_and_db_unchanged(spider_db: Path, sql: str) -> None:
    before = _digest(spider_db)
    out = _run(spider_db, sql, gold="SELECT count(*) FROM singer")
    assert out["status"] == "error", out
    assert out["correct"] is False
    assert _digest(spider_db) == before
    assert not Path("/tmp/evil.sqlite").exists() and not Path("/tmp/evil-copy.sqlite").exists()
    # the database still answers afterwards
    assert _run(spider_db, "SELECT count(*) FROM singer")["result_text"].splitlines()[1].strip() == "6"


def test_read_only_introspection_pragma_allowed(spider_db: Path) -> None:
    out = _run(spider_db, "PRAGMA table_info(singer)")
    assert out["status"] == "ok" and out["num_rows"] == 7


def test_cartesian_join_times_out(spider_db: Path) -> None:
    before = _digest(spider_db)
    start = time.monotonic()
    out = _run(spider_db, "SELECT count(*) FROM singer a, singer b, singer c, singer d, singer e, singer f, "
                          "singer g, singer h, singer i, singer j, singer k, singer l, singer m, singer n",
               gold="SELECT count(*) FROM singer", timeout_s=0.5)
    elapsed = time.monotonic() - start
    assert out["status"] == "timeout"
    assert elapsed < 120  # did not hang: the join alone would run for hours
    assert _digest(spider_db) == before


def test_recursive_cte_row_cap(spider_db: Path) -> None:
    out = _run(spider_db, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c",
               gold="SELECT 1", max_rows=50, timeout_s=2.0)
    assert out["status"] == "ok" and out["truncated"] is True and out["num_rows"] == 50
    assert out["correct"] is False


def test_huge_value_is_an_error(spider_db: Path) -> None:
    out = _run(spider_db, "SELECT zeroblob(200000000)")
    assert out["status"] == "error"


def test_missing_database_is_an_error(tmp_path: Path) -> None:
    out = run_sql_task({"dataset": "spider", "db_path": str(tmp_path / "nope.sqlite"), "sql": "SELECT 1"})
    assert out["status"] == "error" and "not found" in out["error"]
    assert not (tmp_path / "nope.sqlite").exists()


def test_spider_gold_match_semantics(spider_db: Path) -> None:
    gold = "SELECT Name FROM singer WHERE Country = 'France'"
    assert _run(spider_db, "SELECT DISTINCT Name FROM singer WHERE Country = 'France'", gold)["correct"]
    assert _run(spider_db, "SELECT Name FROM singer WHERE Age < 50 AND Country = 'France' ORDER BY Age", gold)["correct"]
    assert not _run(spider_db, "SELECT Name FROM singer", gold)["correct"]
    # column permutation accepted; ORDER BY in gold makes row order matter
    assert _run(spider_db, "SELECT Age, Name FROM singer", "SELECT Name, Age FROM singer")["correct"]
    ordered_gold = "SELECT Name FROM singer ORDER BY Age"
    assert _run(spider_db, "SELECT Name FROM singer ORDER BY Age ASC", ordered_gold)["correct"]
    assert not _run(spider_db, "SELECT Name FROM singer ORDER BY Age DESC", ordered_gold)["correct"]
    # an erroring prediction is wrong
    out = _run(spider_db, "SELECT nope FROM singer", gold)
    assert out["status"] == "error" and not out["correct"]


def test_typing_and_nulls_of_rebuilt_db(spider_db: Path) -> None:
    out = _run(spider_db, "SELECT Age, Net_Worth, Note FROM singer WHERE Singer_ID IN (1, 2, 3) ORDER BY Singer_ID")
    assert out["preview"] == [[52, 12.5, ""], [32, None, "quoted, with comma"], [29, 3, "null"]]
    assert _run(spider_db, "SELECT count(*) FROM ranking")["preview"] == [[0]]


def _problem(dataset: str, context: dict, gold) -> Problem:
    return Problem(problem_id="p1", dataset=dataset, question="how many?", context=context, gold=gold, candidates=())


def test_spider_executor_protocol(db_root: Path) -> None:
    ex = SpiderExecutor(db_root=db_root)
    problem = _problem("spider", {"db_id": "tiny_db"}, "SELECT count(*) FROM singer")
    cand = Candidate(program="SELECT count(Singer_ID) FROM singer")
    task = ex.make_task(problem, cand)
    assert task.function == TASK_FUNCTION
    value = run_sql_task(task.payload)
    execution = ex.to_execution(problem, cand, SandboxResult(status="ok", value=value))
    assert execution.status == "ok" and execution.correct and execution.result_key == canonical_key([6])
    bad = Candidate(program="DROP TABLE singer")
    err = ex.to_execution(problem, bad, SandboxResult(status="ok", value=run_sql_task(ex.make_task(problem, bad).payload)))
    assert err.status == "error" and not err.correct and is_error_key(err.result_key)
    for status in ("timeout", "killed", "memory"):
        e = ex.to_execution(problem, cand, SandboxResult(status=status, error=status))
        assert e.status == status and is_error_key(e.result_key) and not e.correct


def test_wikitq_executor_on_lever_view(db_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import lever_jax.data.datasets.wikitq as wikitq

    monkeypatch.setattr(wikitq, "lever_columns", lambda table_id: TINY_WIKITQ_COLUMNS)
    ex = WikiTQExecutor(db_root=db_root)
    problem = _problem("wikitq", {"table_id": "999_1", "target_canon": ["34500"]}, ["34,500"])
    for sql, correct in [("select money_lrb_rrb from main_table where place_number = 2", True),
                         ("select money_lrb_rrb_number from main_table where player = 'lanny wadkins'", True),
                         ("select money_lrb_rrb from main_table where place_number = 1", False),
                         ("select c3 from w where id = 2", True),
                         ("drop view main_table", False)]:
        cand = Candidate(program=sql)
        value = run_sql_task(ex.make_task(problem, cand).payload)
        execution = ex.to_execution(problem, cand, SandboxResult(status="ok", value=value))
        assert execution.correct is correct, sql
        if execution.status == "ok":  # both checkers' verdicts are kept
            assert execution.details["correct_lever"] is correct and execution.details["correct_official"] is correct
    # the gold '34,500' without a canonical form: LEVER's retry (commas dropped) accepts the number,
    # the official evaluator does not
    plain = _problem("wikitq", {"table_id": "999_1"}, ["34,500"])
    num = Candidate(program="select money_lrb_rrb_number from main_table where player = 'lanny wadkins'")
    official = WikiTQExecutor(db_root=db_root, checker="official")
    assert official.version != ex.version  # the cache keeps the two apart
    for executor, want in ((ex, True), (official, False)):
        value = run_sql_task(executor.make_task(plain, num).payload)
        got = executor.to_execution(plain, num, SandboxResult(status="ok", value=value))
        assert got.correct is want and got.details["correct_lever"] and not got.details["correct_official"]
    with pytest.raises(ValueError, match="checker"):
        WikiTQExecutor(db_root=db_root, checker="other")
    db = db_root / "wikitq" / "999_1.db"
    before = _digest(db)
    run_sql_task(ex.make_task(problem, Candidate(program="select * from main_table")).payload)
    assert _digest(db) == before


def test_sandboxed_sql_tasks(tmp_path: Path) -> None:
    """The real path: tasks run in the sandbox as an unprivileged uid. The database lives under
    pytest's tmp_path: in /tmp, which every task sees as its own empty tmpfs, below a directory
    only root may enter; the task is shown its own database file elsewhere, and only that."""
    from lever_jax.execution import sandbox as sandbox_mod
    from lever_jax.execution.base import Limits

    root = tmp_path
    db = build_tiny_spider(root)
    db.chmod(0o644)
    before = _digest(db)
    ex = SpiderExecutor(db_root=root)
    problem = _problem("spider", {"db_id": "tiny_db"}, "SELECT count(*) FROM singer")
    programs = ["SELECT count(*) FROM singer", "DROP TABLE singer", "ATTACH DATABASE 'x.db' AS x",
                "PRAGMA writable_schema = 1",
                "SELECT count(*) FROM singer a, singer b, singer c, singer d, singer e, singer f, singer g, singer h, "
                "singer i, singer j, singer k, singer l", "SELECT max(Age) FROM singer"]
    cands = [Candidate(program=p) for p in programs]
    tasks = [ex.make_task(problem, c) for c in cands]
    tasks[4] = dataclasses.replace(tasks[4], payload={**tasks[4].payload, "timeout_s": 0.5})
    with sandbox_mod.Sandbox(workers=1, limits=Limits(timeout_s=5)) as sandbox:
        results = list(sandbox.map(tasks))
    execs = [ex.to_execution(problem, c, r) for c, r in zip(cands, results)]
    assert [e.status for e in execs] == ["ok", "error", "error", "error", "timeout", "ok"]
    assert execs[0].correct and not execs[5].correct
    assert _digest(db) == before


def test_unknown_database_becomes_an_execution_error(db_root: Path) -> None:
    ex = SpiderExecutor(db_root=db_root)
    for db_id in ("no_such_db", "../../etc"):
        problem = _problem("spider", {"db_id": db_id}, "SELECT 1")
        cand = Candidate(program="SELECT 1")
        value = run_sql_task(ex.make_task(problem, cand).payload)
        e = ex.to_execution(problem, cand, SandboxResult(status="ok", value=value))
        assert e.status == "error" and "database" in (e.error or "") and is_error_key(e.result_key)
