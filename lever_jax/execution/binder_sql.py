"""Binder's execution of a plain-SQL program on table ``w``, re-implemented for the sandbox.

What Binder (zsong96wisc/Binder-TableQA @ c725c13, ``utils/normalizer.py:post_process_sql`` and
``nsql/database.py:execute_query``) does to a generated program before and after running it, and
so what its recorded answers reflect:

1. :func:`basic_fix`: ``FROM <page title>`` becomes ``FROM w``; every mention of a column name
   outside quotes (longest names first) is wrapped in backticks, so ``shirt sponsor = 'none'`` runs.
2. Binder's "fuzzy match on db" (compared values replaced by the most similar table cell) is NOT
   applied: the recorded answers show no trace of it (it runs inside a ``try/except`` that
   swallows any failure of its NLTK tokeniser), and an approximation of it (value spans replaced
   by the best cell, Levenshtein ratio >= 70) made 10 of the 1,336 plain-SQL samples disagree
   with their recorded answers that agree without it (measured while building this module; the
   code was not kept).
3. :func:`binder_query`: the query runs as ``SELECT row_id, <rest of the query>`` (falling back to
   the query itself on an SQLite operational error) so that Binder can align rows; the answer
   (:func:`binder_answer`) is every cell of every row, minus the first cell when a column is named
   ``row_id``.

Programs with neural calls (``QA("map@...")``) need an LLM: :func:`has_neural_call` finds them.
Pure functions (no I/O); the sandboxed task is in ``wikitq_binder.py``.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

KEYWORDS = frozenset({"select", "from", "where", "group", "order", "limit", "intersect", "union", "except",
                      "join", "on", "as", "not", "between", "=", ">", "<", ">=", "<=", "!=", "in", "like", "is",
                      "exists", "none", "-", "+", "*", "/", "max", "min", "count", "sum", "avg"})
_NEURAL = re.compile(r"\bQA\s*\(")


def has_neural_call(program: str) -> bool:
    """True for Binder programs that call the LLM (``QA("map@...")`` / ``QA("ans@...")``)."""
    return bool(_NEURAL.search(program))


def basic_fix(sql: str, headers: Sequence[str], title: str | None = None) -> str:
    """Binder's ``basic_fix``: the page title as ``w`` and column names outside quotes backticked.

    Raises ValueError where Binder's own code failed (its assertion on unbalanced spans)."""
    if title:
        sql = sql.replace("FROM " + title, "FROM w").replace("FROM " + title.lower(), "FROM w")
    sql = sql.replace("\\n", "\n").replace("\n", "\\n")
    marks = [0] * len(sql)
    for quote in ("'", '"'):
        idx = [i for i in range(1, len(sql)) if sql[i] == quote and sql[i - 1] != quote]
        if len(idx) % 2 == 0:
            for k in range(0, len(idx), 2):
                marks[idx[k]:idx[k + 1]] = [2] * (idx[k + 1] - idx[k])
    for header in sorted((h for h in headers if h), key=len, reverse=True):
        if header in KEYWORDS or header not in sql:
            continue
        start = 0
        while True:
            # str.find(sub, start, -1): Binder's search never looks at the last character
            start = sql.find(header, start, -1)
            if start == -1:
                break
            end = start + len(header)
            if not all(marks[start:end]) and sql[start - 1] != "`" and (end >= len(sql) or sql[end] != "`"):
                marks[start:end] = [1] * (end - start)
            start = end
    padded = [0] + marks + [0]
    starts = [i for i in range(len(marks)) if padded[i] == 0 and padded[i + 1] == 1]
    ends = [i for i in range(len(marks)) if padded[i + 1] == 1 and padded[i + 2] == 0]
    if len(starts) != len(ends):
        raise ValueError("unbalanced column spans (Binder's basic_fix assertion)")
    pieces, current = [], 0
    for s, e in zip(starts, ends):
        pieces += [sql[current:s], sql[s:e + 1]]
        current = e + 1
    pieces.append(sql[current:])
    return "`".join(pieces)


def binder_query(sql: str) -> tuple[str, str | None]:
    """(query to run first, fallback query or None), as Binder's ``execute_query`` builds them."""
    if len(sql.split(" ")) == 1 or (sql.startswith("`") and sql.endswith("`")):
        return f"SELECT row_id, {sql} FROM w", None
    if sql.lower().startswith("select *") or sql.startswith("select col_id"):
        return sql, None
    return "SELECT row_id, " + sql[7:], sql


def binder_answer(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[Any]:
    """Binder's ``extract_answers``: all cells row by row, minus the first when a column is row_id."""
    skip = 1 if "row_id" in columns else 0
    return [cell for row in rows for cell in list(row)[skip:]]
