"""The wikitq_binder pool: Binder's table w, Binder's SQL handling, LEVER's relaxed check, the bundle."""
from __future__ import annotations

import math
import sqlite3

import pytest

from lever_jax.data import binder_tables
from lever_jax.data.datasets import wikitq_binder as pool
from lever_jax.data.jsonl import iter_json_lines
from lever_jax.data.bundled import bundled_path
from lever_jax.execution import binder_sql
from lever_jax.data.result_keys import canonical_key
from lever_jax.execution.wikitq_binder import run_binder_task
from lever_jax.execution.wikitq_match import denotation_match, relaxed_match, wtq_answer_eq as lever_answer_eq

TABLE = {"header": ["Rank", "Name", "Name", "", "Date", "Points"],
         "rows": [["1", "Alice", "A", "x", "October 15, 1994", "10"],
                  ["2", "Bob", "B", "-", "October 22, 1994", "-"],
                  ["3", "Carol", "C", "y", "November 1, 1994", "7.5"]]}


def test_binder_columns_names_types_and_nulls() -> None:
    names, types, values = binder_tables.binder_columns(TABLE, normalize=False)
    assert names == ["row_id", "rank", "name", "name_2", "filledcolumnname", "date", "points"]
    assert types == ["INTEGER", "INTEGER", "TEXT", "TEXT", "TEXT", "TIMESTAMP", "REAL"]
    assert values[0] == [0, 1, 2]
    assert values[3] == ["a", "b", "c"]
    assert values[4] == ["x", "none", "y"]  # '-' in a text column is the string None, lower-cased
    assert values[5] == ["1994-10-15 00:00:00", "1994-10-22 00:00:00", "1994-11-01 00:00:00"]
    assert values[6][0] == 10.0 and values[6][1] is None and values[6][2] == 7.5  # '-' -> NaN -> NULL


def test_pandas_date_rules_keep_weekdays_and_ordinals_as_text() -> None:
    # pandas 1.3 fills missing parts from year 1, outside datetime64[ns]: these stay text
    for cells in (["sunday", "saturday"], ["1st", "2nd"], ["november 17", "november 24"]):
        assert binder_tables._typed(cells)[0] == "TEXT", cells
    assert binder_tables._typed(["1994-10-15", "nan"]) == ("TIMESTAMP", ["1994-10-15 00:00:00", None])
    assert binder_tables._typed(["3", "3.0"])[0] == "REAL"  # int("3.0") fails as pandas astype(int) does
    assert binder_tables._typed(["1991/92", "1992/93"])[0] == "TEXT"


def test_str_normalize_with_recognizers() -> None:
    pytest.importorskip("recognizers_number")
    assert binder_tables.str_normalize("100,000") == "100000"
    assert binder_tables.str_normalize("1991/92") == "1991/92"  # \d+/\d+ is left alone
    # the date's TIMEX, then the number recogniser reads "-03" as -3: Binder's cells really are so
    assert binder_tables.str_normalize("March 3, 1991") == "1991-3-3"


def test_basic_fix_backticks_names_outside_quotes() -> None:
    headers = ["row_id", "shirt sponsor", "year"]
    assert binder_sql.basic_fix("SELECT year FROM w WHERE shirt sponsor = 'none'", headers) == \
        "SELECT `year` FROM w WHERE `shirt sponsor` = 'none'"
    assert binder_sql.basic_fix("SELECT year FROM w WHERE x = 'year'", headers) == "SELECT `year` FROM w WHERE x = 'year'"
    assert binder_sql.basic_fix("SELECT `year` FROM My Page", headers, "My Page") == "SELECT `year` FROM w"


def test_binder_query_and_answer() -> None:
    assert binder_sql.binder_query("SELECT name FROM w") == ("SELECT row_id, name FROM w", "SELECT name FROM w")
    assert binder_sql.binder_query("SELECT * FROM w") == ("SELECT * FROM w", None)
    assert binder_sql.binder_answer(["row_id", "name"], [(0, "a"), (1, "b")]) == ["a", "b"]
    assert binder_sql.binder_answer(["name"], [("a",)]) == ["a"]
    assert binder_sql.has_neural_call('SELECT QA("map@country?"; name) FROM w')
    assert not binder_sql.has_neural_call("SELECT qa FROM w")


def test_lever_relaxed_check_retries_the_gold() -> None:
    assert lever_answer_eq([(17,)], "17 years") and not denotation_match([(17,)], ["17 years"])
    assert lever_answer_eq([(12467,)], "12,467")
    assert lever_answer_eq([(5,)], "5th") and lever_answer_eq([(3,)], "$3")
    assert lever_answer_eq([("a",), ("b",)], "a|b")  # multi-row: the first column
    assert lever_answer_eq([("a", "b")], "a|b")  # one row: all its cells
    assert not lever_answer_eq([("a", 1), ("b", 2)], "a|1|b|2")
    assert not lever_answer_eq([], "a") and not lever_answer_eq(None, "a")
    assert relaxed_match([(1,)], ["yes"], "is it big?")  # LEVER's 0/1 post-processing first


@pytest.fixture()
def table_db(tmp_path):
    return binder_tables.write_binder_db(TABLE, tmp_path / "1_1.db", normalize=False)


def _task(db, sql, targets, **extra):
    return run_binder_task({"db_path": str(db), "sql": sql, "targets": targets, "question": "q", **extra})


def test_run_binder_task_answers_errors_and_neural_calls(table_db) -> None:
    out = _task(table_db, " SELECT name FROM w WHERE points > 8", ["Alice"])
    assert out["status"] == "ok" and out["answer"] == ["alice"] and out["columns"] == ["name"]
    assert out["correct"] and out["correct_official"] and out["result_key"] == canonical_key(["alice"])
    count = _task(table_db, "SELECT COUNT(*) FROM w", ["3"])  # runs as SELECT row_id, COUNT(*)
    assert count["answer"] == [3] and count["correct"]
    distinct = _task(table_db, "SELECT DISTINCT rank FROM w WHERE rank < 3", ["1", "2"])  # fallback query
    assert distinct["answer"] == [1, 2]
    assert _task(table_db, "SELECT nope FROM w", ["x"])["status"] == "error"
    neural = _task(table_db, 'SELECT QA("map@who?"; name) FROM w', ["x"])
    assert neural["status"] == "unsupported" and not neural["correct"]
    blocked = _task(table_db, "DELETE FROM w", ["x"])
    assert blocked["status"] == "error"
    assert sqlite3.connect(table_db).execute("SELECT COUNT(*) FROM w").fetchone() == (3,)


def test_checker_choice(table_db) -> None:
    relaxed = _task(table_db, "SELECT rank FROM w WHERE row_id = 1", ["2 points"])
    assert relaxed["correct"] and relaxed["correct_lever"] and not relaxed["correct_official"]
    official = _task(table_db, "SELECT rank FROM w WHERE row_id = 1", ["2 points"], checker="official")
    assert not official["correct"]


def test_bundled_pool_counts_and_log_probs() -> None:
    problems = pool.load_binder_pool()
    assert len(problems) == 94
    candidates = [c for p in problems for c in p.candidates]
    assert len(candidates) == 742 and sum(c.count for c in candidates) == 1880
    assert all(c.gen_logprob is not None and math.isfinite(c.gen_logprob) and c.gen_logprob < 0 for c in candidates)
    assert all(c.num_tokens and c.num_tokens > 0 for c in candidates)
    assert all(c.program == c.program.strip() for c in candidates)
    assert sum(binder_sql.has_neural_call(c.program) for c in candidates) == 400
    assert {p.problem_id for p in problems}.isdisjoint({"nu-18", "nu-30", "nu-34", "nu-44", "nu-65", "nu-81"})
    assert pool.load_problems("test")[0].candidates == ()


def test_execution_agrees_with_recorded_answers_on_the_first_problems(tmp_path) -> None:
    """In-process (no sandbox) re-execution of the first 8 problems against Binder's answers."""
    recorded = {o["problem_id"]: o["answers"] for _, o in
                iter_json_lines(bundled_path("wikitq_binder", "recorded_answers.jsonl.gz"))}
    checked = 0
    for problem in pool.load_binder_pool()[:8]:
        db = pool.ensure_binder_db(problem.context["table_id"], tmp_path)
        for cand, answers in zip(problem.candidates, recorded[problem.problem_id]):
            if binder_sql.has_neural_call(cand.program):
                continue
            out = _task(db, cand.program, problem.gold, page_title=problem.context["page_title"])
            got = canonical_key(out["answer"]) if out["status"] == "ok" else "<error>"
            want = answers[0] if answers[0] == "<error>" else canonical_key(answers[0])
            assert got == want, (problem.problem_id, cand.program)
            checked += 1
    assert checked > 20
