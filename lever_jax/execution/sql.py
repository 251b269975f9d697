"""SQL executors for Spider and WikiTQ (sqlite3), safe for untrusted queries.

Each candidate becomes a :class:`Task` running :func:`run_sql_task` in the sandbox. Inside it the
database is opened read-only *and* immutable (``file:...?mode=ro&immutable=1``), an authorizer
allows reading only (no ATTACH/DETACH, no writes or DDL, no transactions, no PRAGMA except read-only
introspection ones (``table_info`` ...), no ``load_extension``), a progress handler
interrupts the query at its deadline, results are capped at ``max_rows`` rows and values at
``SQLITE_LIMIT_LENGTH``, and only one statement may run. :func:`run_sql_task` is an ordinary
function, so it can also be called in-process (tests, tools).

Correctness: Spider uses the test-suite execution match (``spider_match``) against the gold query
on the same database; WikiTQ LEVER's relaxed ``wtq_answer_eq`` (default) or the official denotation
match (``wikitq_match``) against the target values, both verdicts kept in ``details``. ``result_text`` is LEVER's rendering (``table_render``: first 5 rows, pandas layout, 5,000
characters). ``result_key`` follows LEVER's grouping: the canonical key of the *flattened first 5
rows in order* (``canonical_key([cell, cell, ...])``); ``details["full_key"]`` is the canonical key
of all rows, for users who prefer grouping on the whole result. Errors and timeouts get unique keys.

Databases are found under :func:`lever_jax.data.spider_db.default_db_root` (env
``LEVER_JAX_DB_DIR``), built on first use by ``lever-jax prepare``.
"""
from __future__ import annotations

import math
import sqlite3
import time
import urllib.parse
from pathlib import Path
from typing import Any, Mapping, Sequence

from lever_jax.data.schema import Candidate, Execution, Problem
from lever_jax.execution import spider_match, wikitq_match
from lever_jax.execution.base import TIMEOUT_TEXT, SandboxResult, Task
from lever_jax.data.result_keys import canonical_key, unique_error_key
from lever_jax.data.table_render import render_table

TASK_FUNCTION = "lever_jax.execution.sql:run_sql_task"
DEFAULT_TIMEOUT_S = 5.0  # below the sandbox's default wall clock so that SQL reports "timeout" itself
DEFAULT_MAX_ROWS = 100_000
MAX_VALUE_BYTES = 10_000_000
KEY_ROWS = 5  # LEVER groups on the flattened first 5 rows
PREVIEW_CHARS = 200
MAX_ERROR_CHARS = 500
_PROGRESS_STEPS = 1000
_SANDBOX_HINT = (" (SQL runs in the sandbox as an unprivileged user who is shown the interpreter, the package and "
                 "its own database file: the file must exist and be world-readable)")

# Read-only introspection pragmas a query may use (their argument is a table/index name).
_SAFE_PRAGMAS = frozenset({"table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
                           "foreign_key_list", "collation_list", "function_list", "pragma_list"})
_ALLOWED_ACTIONS = frozenset(
    getattr(sqlite3, name) for name in ("SQLITE_SELECT", "SQLITE_READ", "SQLITE_FUNCTION", "SQLITE_RECURSIVE")
    if hasattr(sqlite3, name)
)
_FORBIDDEN_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})


class QueryTimeout(Exception):
    """The query ran past its deadline (raised in place of sqlite's 'interrupted')."""


def _authorizer(action: int, arg1: str | None, arg2: str | None, db_name: str | None, source: str | None) -> int:
    if action in _ALLOWED_ACTIONS:
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _FORBIDDEN_FUNCTIONS:
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in _SAFE_PRAGMAS:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def connect_readonly(db_path: str | Path) -> sqlite3.Connection:
    """Open ``db_path`` read-only and immutable (the file can never be written or locked)."""
    path = Path(db_path)
    if not path.is_file():
        raise FileNotFoundError(f"database not found: {path}")
    uri = "file:" + urllib.parse.quote(str(path.resolve())) + "?mode=ro&immutable=1"
    conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
    conn.text_factory = lambda b: b.decode(errors="ignore")  # as test-suite-sql-eval
    if hasattr(conn, "setlimit"):
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    return conn


def create_view(conn: sqlite3.Connection, name: str, source: str, columns: Sequence[Sequence[str]]) -> None:
    """A TEMP view ``name`` over ``source`` with renamed columns (kept in memory, not the file)."""
    def q(ident: str) -> str:
        return '"' + ident.replace('"', '""') + '"'
    select = ", ".join(f"{q(src)} AS {q(dst)}" for src, dst in columns)
    conn.execute(f"CREATE TEMP VIEW {q(name)} AS SELECT {select} FROM {q(source)}")


def guard(conn: sqlite3.Connection, deadline: float) -> None:
    """Install the read-only authorizer and the deadline (call after any trusted set-up)."""
    conn.set_authorizer(_authorizer)
    conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, _PROGRESS_STEPS)


def execute_query(conn: sqlite3.Connection, sql: str, max_rows: int) -> tuple[list[str], list[tuple[Any, ...]], bool]:
    """(column names, at most ``max_rows`` rows, truncated?); raises sqlite3.Error / QueryTimeout."""
    try:
        cursor = conn.execute(sql)
        if cursor.description is None:
            raise sqlite3.ProgrammingError("not a query (no result columns)")
        columns = [d[0] for d in cursor.description]
        rows = cursor.fetchmany(max_rows + 1)
    except sqlite3.OperationalError as err:
        if "interrupted" in str(err):
            raise QueryTimeout("query timed out") from None
        raise
    truncated = len(rows) > max_rows
    return columns, [tuple(r) for r in rows[:max_rows]], truncated


def _json_cell(value: Any) -> Any:
    """A cell for ``details["preview"]``: JSON-safe, long text cut to ``PREVIEW_CHARS``."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, str) and len(value) > PREVIEW_CHARS:
        return value[:PREVIEW_CHARS] + "..."
    return value


def _short(message: str) -> str:
    return message if len(message) <= MAX_ERROR_CHARS else message[:MAX_ERROR_CHARS] + "..."


def _run(conn: sqlite3.Connection, sql: str, max_rows: int) -> dict[str, Any]:
    try:
        columns, rows, truncated = execute_query(conn, sql, max_rows)
    except QueryTimeout as err:
        return {"status": "timeout", "error": str(err)}
    except (sqlite3.Error, ValueError, OverflowError, MemoryError) as err:
        return {"status": "error", "error": _short(f"{type(err).__name__}: {err}")}
    return {"status": "ok", "columns": columns, "rows": rows, "truncated": truncated}


def _spider_correct(conn: sqlite3.Connection, sql: str, gold_sql: str, pred: dict[str, Any], max_rows: int) -> dict[str, Any]:
    pred_sql, gold_prepared = spider_match.prepare_queries(sql, gold_sql)
    gold = _run(conn, gold_prepared, max_rows)
    if gold["status"] != "ok":
        return {"correct": False, "gold_status": gold["status"], "gold_error": gold.get("error")}
    if pred_sql != sql:
        pred = _run(conn, pred_sql, max_rows)
    if pred["status"] != "ok":
        return {"correct": False, "gold_status": "ok", "match_error": pred.get("error")}
    if pred["truncated"] or gold["truncated"]:
        return {"correct": False, "gold_status": "ok", "match_error": f"result over {max_rows} rows"}
    ordered = spider_match.order_matters(gold_prepared)
    return {"correct": spider_match.result_eq(gold["rows"], pred["rows"], ordered), "gold_status": "ok"}


def run_sql_task(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Execute one candidate query and judge it; returns a JSON-serialisable summary.

    payload: ``dataset`` ("spider" | "wikitq"), ``db_path``, ``sql``, optional ``view``
    (``{"name", "source", "columns": [[src, dst], ...]}``), ``timeout_s``, ``max_rows``; Spider:
    ``gold_sql``; WikiTQ: ``targets``, optional ``target_canon`` and ``question``.
    """
    timeout_s = float(payload.get("timeout_s", DEFAULT_TIMEOUT_S))
    max_rows = int(payload.get("max_rows", DEFAULT_MAX_ROWS))
    deadline = time.monotonic() + timeout_s
    sql = str(payload["sql"])
    try:
        conn = connect_readonly(payload["db_path"])
    except (sqlite3.Error, OSError) as err:
        return {"status": "error", "error": _short(f"cannot open database: {err}{_SANDBOX_HINT}"), "correct": False}
    try:
        view = payload.get("view")
        if view:
            try:
                create_view(conn, view["name"], view["source"], view["columns"])
            except sqlite3.Error as err:
                return {"status": "error", "error": _short(f"cannot create view {view['name']}: {err}"), "correct": False}
        guard(conn, deadline)
        result = _run(conn, sql, max_rows)
        out: dict[str, Any] = {"status": result["status"], "error": result.get("error"), "correct": False}
        if result["status"] != "ok":
            return out
        rows = result["rows"]
        first = rows[:KEY_ROWS]
        out.update(
            columns=result["columns"],
            num_rows=len(rows),
            truncated=result["truncated"],
            preview=[[_json_cell(c) for c in r] for r in first],
            result_key=canonical_key([c for r in first for c in r]),
            full_key=canonical_key([list(r) for r in rows]),
            result_text=render_table(result["columns"], rows),
        )
        if payload.get("dataset") == "wikitq":
            targets = list(payload.get("targets") or [])
            canon = payload.get("target_canon")
            if canon is not None and len(canon) != len(targets):
                canon = None  # malformed context: fall back to the original strings
            question = str(payload.get("question", ""))
            complete = not result["truncated"]
            out["correct_official"] = complete and wikitq_match.denotation_match(rows, targets, canon, question)
            out["correct_lever"] = complete and wikitq_match.relaxed_match(rows, targets, question)
            out["correct"] = out["correct_official" if payload.get("checker") == "official" else "correct_lever"]
        elif payload.get("gold_sql"):
            out.update(_spider_correct(conn, sql, str(payload["gold_sql"]), result, max_rows))
        return out
    finally:
        conn.close()


# ----------------------------------------------------------------------------------------------
# DatasetExecutor implementations


def _error_execution(problem: Problem, candidate: Candidate, status: str, error: str | None, details: dict[str, Any] | None = None) -> Execution:
    message = error or status
    return Execution(status=status, result_key=unique_error_key(problem.problem_id, candidate.program),
                     result_text=TIMEOUT_TEXT if status == "timeout" else _short(f"ERROR: {message}"), error=message,
                     correct=False, details=details)


def _invalid_record(value: Mapping[str, Any]) -> str | None:
    """What is wrong with the task's record (None: plain data of the expected types). A SQL
    candidate runs no Python, so it cannot reach the judge in the child; the parent still reads
    only well-typed fields."""
    if value.get("status") not in ("ok", "error", "timeout") or type(value.get("correct")) is not bool:
        return "status/correct"
    if value.get("error") is not None and not isinstance(value.get("error"), str):
        return "error"
    if value["status"] == "ok" and not (isinstance(value.get("result_key"), str)
                                        and isinstance(value.get("result_text"), str)):
        return "result_key/result_text"
    return None


class _SqlExecutor:
    dataset = ""
    version = "sql-1"

    def __init__(self, db_root: str | Path | None = None, timeout_s: float = DEFAULT_TIMEOUT_S, max_rows: int = DEFAULT_MAX_ROWS):
        self._db_root = Path(db_root) if db_root is not None else None
        self.timeout_s = timeout_s
        self.max_rows = max_rows

    @property
    def db_root(self) -> Path:
        if self._db_root is None:
            from lever_jax.data.spider_db import default_db_root

            self._db_root = default_db_root()
        return self._db_root

    def _payload(self, db_path: Path, candidate: Candidate) -> dict[str, Any]:
        return {"dataset": self.dataset, "db_path": str(db_path), "sql": candidate.program,
                "timeout_s": self.timeout_s, "max_rows": self.max_rows}

    def to_execution(self, problem: Problem, candidate: Candidate, result: SandboxResult) -> Execution:
        value = result.value
        if result.status != "ok" or not isinstance(value, Mapping):
            status = result.status if result.status != "ok" else "error"
            return _error_execution(problem, candidate, status, result.error or "no result")
        bad = _invalid_record(value)
        if bad:
            return _error_execution(problem, candidate, "error", f"invalid result record: {bad}")
        if value.get("status") != "ok":
            status = "timeout" if value.get("status") == "timeout" else "error"
            return _error_execution(problem, candidate, status, value.get("error"))
        details = {k: value[k] for k in ("columns", "num_rows", "truncated", "preview", "full_key", "gold_status",
                                         "gold_error", "match_error", "correct_lever", "correct_official")
                   if value.get(k) is not None}
        return Execution(status="ok", result_key=str(value["result_key"]), result_text=str(value["result_text"]),
                         error=None, correct=bool(value.get("correct")), details=details)


class SpiderExecutor(_SqlExecutor):
    """Spider: the candidate and the gold query run on ``<root>/spider/<db_id>/<db_id>.sqlite``."""

    dataset = "spider"
    version = "spider-sql-2"  # 2: bounded column-permutation search (spider_match.MAX_WORK)

    def make_task(self, problem: Problem, candidate: Candidate) -> Task:
        from lever_jax.data.spider_db import ensure_spider_db

        try:
            db_path = ensure_spider_db(str(problem.context.get("db_id")), self.db_root)
        except (FileNotFoundError, ValueError) as err:  # reported by the task as an execution error
            db_path = Path(f"<missing database: {err}>")
        payload = self._payload(db_path, candidate)
        payload["gold_sql"] = problem.gold if isinstance(problem.gold, str) else None
        return Task(TASK_FUNCTION, payload, readable=(str(db_path),))


class WikiTQExecutor(_SqlExecutor):
    """WikiTQ: the candidate runs on LEVER's ``main_table`` (a TEMP view over SQUALL's ``w``).

    ``correct`` is LEVER's relaxed check (``checker='lever'``, default) or the official evaluator
    (``checker='official'``); both verdicts are kept in ``details.correct_lever`` /
    ``details.correct_official`` so that tables can report both."""

    dataset = "wikitq"
    version_prefix = "wikitq-sql-3"  # "<prefix>-<checker>"; 3: bounded normalisation (wikitq_match.MAX_*)

    def __init__(self, db_root: str | Path | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                 max_rows: int = DEFAULT_MAX_ROWS, checker: str = "lever"):
        super().__init__(db_root, timeout_s, max_rows)
        if checker not in wikitq_match.CHECKERS:
            raise ValueError(f"checker must be one of {', '.join(wikitq_match.CHECKERS)}, got {checker!r}")
        self.checker = checker
        self.version = f"{self.version_prefix}-{checker}"

    def make_task(self, problem: Problem, candidate: Candidate) -> Task:
        from lever_jax.data.datasets.wikitq import MAIN_TABLE, SQUALL_TABLE, ensure_wikitq_db, lever_columns

        table_id = str(problem.context.get("table_id"))
        try:
            db_path = ensure_wikitq_db(table_id, self.db_root)
            columns = lever_columns(table_id)
        except (FileNotFoundError, KeyError, ValueError) as err:  # reported by the task as an execution error
            db_path, columns = Path(f"<missing table: {err}>"), []
        payload = self._payload(db_path, candidate)
        gold = problem.gold if isinstance(problem.gold, list) else ([] if problem.gold is None else [str(problem.gold)])
        payload.update(
            view={"name": MAIN_TABLE, "source": SQUALL_TABLE, "columns": columns} if columns else None,
            targets=[str(g) for g in gold],
            target_canon=problem.context.get("target_canon"),
            question=problem.question,
            checker=self.checker,
        )
        return Task(TASK_FUNCTION, payload, readable=(str(db_path),))
