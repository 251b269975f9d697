"""Executor for the ``wikitq_binder`` pool: Binder's SQL on Binder's table ``w``, in the sandbox.

Each plain-SQL candidate runs in the sandbox on the table's read-only SQLite file (opened
immutable, with :mod:`lever_jax.execution.sql`'s authorizer and deadline) the way Binder ran it
(:mod:`lever_jax.execution.binder_sql`: column names backticked, ``SELECT row_id, ...``, the
answer = all cells minus ``row_id``). Programs with neural calls (``QA("map@...")``) are not run:
they get status ``unsupported`` (error ``neural call: needs an LLM``, details ``neural: true``), a
unique result key and ``correct = false``, and stay in the pool.

Result: ``result_key`` = canonical key of Binder's answer (all cells, in order: what Binder's
majority vote compares), ``result_text`` = LEVER's table rendering of the result without the
``row_id`` column, ``details.answer`` = the answer cells (first 100). Correctness: ``correct`` is
LEVER's relaxed check (:func:`wikitq_match.relaxed_match`, ``checker="lever"``, the default) or,
with ``checker="official"``, the official denotation match after LEVER's 0/1 post-processing
(:func:`wikitq_match.denotation_match`), as the ``wikitq`` executor; both verdicts are kept in
``details.correct_lever`` / ``details.correct_official`` (so ``wikitq_match.relabel`` and
``lever-jax rerank`` report both).
"""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any, Mapping

from lever_jax.data.binder_tables import TABLE_NAME
from lever_jax.data.schema import Candidate, Execution, Problem
from lever_jax.execution import binder_sql, wikitq_match
from lever_jax.execution.base import SandboxResult, Task
from lever_jax.data.result_keys import canonical_key, unique_error_key
from lever_jax.execution.sql import (DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT_S, QueryTimeout, WikiTQExecutor, _error_execution,
                                     _json_cell, _short, connect_readonly, execute_query, guard)
from lever_jax.data.table_render import render_table

TASK_FUNCTION = "lever_jax.execution.wikitq_binder:run_binder_task"
NEURAL_ERROR = "neural call: needs an LLM (Binder QA(...) program)"
MAX_ANSWER_CELLS = 100


def _run_binder(conn: sqlite3.Connection, sql: str, max_rows: int) -> dict[str, Any]:
    """Binder's query (``SELECT row_id, ...``, else the query itself on an operational error)."""
    first, fallback = binder_sql.binder_query(sql)
    try:
        try:
            columns, rows, truncated = execute_query(conn, first, max_rows)
        except sqlite3.OperationalError:
            if fallback is None:
                raise
            columns, rows, truncated = execute_query(conn, fallback, max_rows)
    except QueryTimeout as err:
        return {"status": "timeout", "error": str(err)}
    except (sqlite3.Error, ValueError, OverflowError, MemoryError) as err:
        return {"status": "error", "error": _short(f"{type(err).__name__}: {err}")}
    return {"status": "ok", "columns": columns, "rows": rows, "truncated": truncated}


def run_binder_task(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Execute one Binder program on table ``w`` and judge it (JSON-serialisable summary).

    payload: ``db_path``, ``sql``, ``page_title``, ``targets``, optional ``target_canon``, ``question``, ``timeout_s``, ``max_rows``."""
    sql = str(payload["sql"])
    if binder_sql.has_neural_call(sql):
        return {"status": "unsupported", "error": NEURAL_ERROR, "correct": False}
    deadline = time.monotonic() + float(payload.get("timeout_s", DEFAULT_TIMEOUT_S))
    try:
        conn = connect_readonly(payload["db_path"])
    except (sqlite3.Error, OSError) as err:
        return {"status": "error", "error": _short(f"cannot open database: {err}"), "correct": False}
    try:
        # Binder's headers are the DataFrame's columns: every column of w but pandas' "index"
        headers = [row[1] for row in conn.execute(f'PRAGMA table_info("{TABLE_NAME}")')][1:]
        try:
            sql = binder_sql.basic_fix(sql.strip(), headers, payload.get("page_title"))
        except ValueError as err:
            return {"status": "error", "error": f"binder post-processing: {err}", "correct": False}
        guard(conn, deadline)
        result = _run_binder(conn, sql, int(payload.get("max_rows", DEFAULT_MAX_ROWS)))
    except sqlite3.Error as err:
        return {"status": "error", "error": _short(f"cannot read table {TABLE_NAME}: {err}"), "correct": False}
    finally:
        conn.close()
    if result["status"] != "ok":
        return {"status": result["status"], "error": result.get("error"), "correct": False}
    columns, rows = result["columns"], result["rows"]
    answer = binder_sql.binder_answer(columns, rows)
    if "row_id" in columns:  # what the query itself selected, as the verifier should read it
        columns, rows = columns[1:], [r[1:] for r in rows]
    targets = [str(t) for t in payload.get("targets") or []]
    canon = payload.get("target_canon")
    if canon is not None and len(canon) != len(targets):
        canon = None
    question = str(payload.get("question", ""))
    ok = not result["truncated"]
    relaxed = ok and wikitq_match.relaxed_match(rows, targets, question)
    official = ok and wikitq_match.denotation_match(rows, targets, canon, question)
    return {
        "status": "ok", "error": None,
        "correct": official if payload.get("checker") == "official" else relaxed,
        "correct_lever": relaxed, "correct_official": official,
        "columns": columns, "num_rows": len(rows), "truncated": result["truncated"],
        "answer": [_json_cell(c) for c in answer[:MAX_ANSWER_CELLS]],
        "result_key": canonical_key(list(answer)),
        "result_text": render_table(columns, rows),
    }


class WikiTQBinderExecutor(WikiTQExecutor):
    """``wikitq_binder``: Binder programs on ``<db root>/wikitq_binder/<table_id>.db``."""

    dataset = "wikitq_binder"
    version_prefix = "wikitq-binder-sql-2"  # checker handling: WikiTQExecutor.__init__

    def make_task(self, problem: Problem, candidate: Candidate) -> Task:
        from lever_jax.data.datasets.wikitq_binder import ensure_binder_db

        context = problem.context
        try:
            db_path = ensure_binder_db(str(context.get("table_id")), self.db_root)
        except (FileNotFoundError, ValueError) as err:  # reported by the task as an execution error
            db_path = Path(f"<missing table: {err}>")
        gold = problem.gold if isinstance(problem.gold, list) else ([] if problem.gold is None else [str(problem.gold)])
        payload = {"db_path": str(db_path), "sql": candidate.program, "timeout_s": self.timeout_s,
                   "max_rows": self.max_rows, "page_title": context.get("page_title"), "targets": [str(g) for g in gold],
                   "target_canon": context.get("target_canon"), "question": problem.question, "checker": self.checker}
        return Task(TASK_FUNCTION, payload, readable=(str(db_path),))  # the only file the mount view shows it

    def to_execution(self, problem: Problem, candidate: Candidate, result: SandboxResult) -> Execution:
        value = result.value
        if result.status != "ok" or not isinstance(value, Mapping):
            status = result.status if result.status != "ok" else "error"
            return _error_execution(problem, candidate, status, result.error or "no result")
        if value.get("status") == "unsupported":
            return Execution(status="unsupported", result_key=unique_error_key(problem.problem_id, candidate.program),
                             result_text="ERROR", error=str(value.get("error")), correct=False,
                             details={"neural": True})
        if value.get("status") != "ok":
            status = "timeout" if value.get("status") == "timeout" else "error"
            return _error_execution(problem, candidate, status, value.get("error"))
        details = {k: value[k] for k in ("columns", "num_rows", "truncated", "answer", "correct_lever",
                                         "correct_official") if value.get(k) is not None}
        return Execution(status="ok", result_key=str(value["result_key"]), result_text=str(value["result_text"]),
                         error=None, correct=bool(value.get("correct")), details=details)
