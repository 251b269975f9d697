"""Binder's execution of a plain-SQL program on table ``w``, re-implemented for the sandbox.

What Binder (zsong96wisc/Binder-TableQA @ c725c13, ``utils/normalizer.py:post_process_sql`` and
``nsql/database.py:execute_query``) does to a generated program before and after running it, and
so what its recorded answers reflect:

1. :func:`basic_fix`: ``FROM <page title>`` becomes ``FROM w``; every mention of a column name
   outside quotes (longest names first) is wrapped in backticks, so ``shirt sponsor = 'none'`` runs.
2. :func:`fuzzy_values` (Binder's "fuzzy match on db"): each value compared in a condition
   (after ``=``, ``<``, ``like``, ``between`` ...) is lower-cased and replaced by the table cell
   most similar to it (Levenshtein ratio >= 70, the numbers in one a subset of the other's), so
   ``position = '1st'`` finds the cell ``1st`` of ``1st (a)``-style data. Binder tokenised the
   query with NLTK and re-joined the tokens; here only the value spans are rewritten (the rest of
   the text is kept), an approximation measured in the ``wikitq_binder`` data card.
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
FUZZ_THRESHOLD = 70
_NUMBER = re.compile(r"[+]?[.]?[\d]+(?:,\d\d\d)*[\.]?\d*(?:[eE][-+]?\d+)?")
_NEURAL = re.compile(r"\bQA\s*\(")
# an operator, then a value: a quoted string, a number or a bare word (not a backticked name).
_OP = r"(?:<>|!=|>=|<=|=|>|<|\blike\b|\bis\b)"
_VALUE = r"""('[^']*'|"[^"]*"|[+-]?\d[\w.,]*|[A-Za-z_][\w.]*)"""
_CONDITION = re.compile(rf"(?i)({_OP})(\s*)" + _VALUE)
_BETWEEN = re.compile(rf"(?i)(\bbetween\s+){_VALUE}(\s+and\s+){_VALUE}")
_VALUE_WORDS = frozenset({"not", "null", "select", "in", "exists"})


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


def fuzz_ratio(a: str, b: str) -> int:
    """fuzzywuzzy's ``fuzz.ratio`` with python-Levenshtein: round(100 * 2 * LCS / (|a| + |b|))."""
    if a == b:
        return 100
    if not a or not b:
        return 0
    prev = [0] * (len(b) + 1)
    for ca in a:
        cur = [0]
        for j, cb in enumerate(b):
            cur.append(prev[j] + 1 if ca == cb else max(prev[j + 1], cur[j]))
        prev = cur
    return int(round(100 * 2 * prev[-1] / (len(a) + len(b))))


def _numbers(text: str) -> set[float] | None:
    try:
        return {float(n.replace(",", "")) for n in _NUMBER.findall(text)}
    except ValueError:
        return None


def _valid_match(value: str, cell: str) -> bool:
    a, b = _numbers(value), _numbers(cell)
    if a is None or b is None:  # Binder printed a warning and compared the raw strings
        a, b = set(_NUMBER.findall(value)), set(_NUMBER.findall(cell))
    return a <= b or b <= a


def best_cell(value: str, cells: Sequence[str]) -> str:
    """Binder's replacement for a compared value: an exact cell, else the most similar valid one."""
    matched: list[tuple[str, int]] = []
    for cell in cells:
        score = fuzz_ratio(value, cell)
        if score == 100:
            return cell
        if score >= FUZZ_THRESHOLD:
            matched.append((cell, score))
    matched.sort(key=lambda m: m[1], reverse=True)  # stable: ties keep table order
    for cell, _ in matched:
        if _valid_match(value, cell):
            return cell
    return value


def _replace(token: str, cells: Sequence[str]) -> str:
    quoted = len(token) >= 2 and token[0] == token[-1] and token[0] in "'\""
    text = token[1:-1] if quoted else token
    if not text or text[0] == "%" or text[-1] == "%" or (not quoted and text.lower() in _VALUE_WORDS):
        return token
    new = best_cell(text.lower(), cells)
    if quoted:
        q = token[0]
        return q + new.replace(q, q + q) + q
    return new


def fuzzy_values(sql: str, cells: Sequence[str]) -> str:
    """Binder's fuzzy value matching, on the value spans only (see the module docstring).

    Binder skipped the step when its tokeniser failed; here that is an odd number of quotes."""
    if (sql.count("'") + sql.count('"')) % 2:
        return sql
    sql = sql.rstrip("`").rstrip("\n")
    sql = _BETWEEN.sub(lambda m: m.group(1) + _replace(m.group(2), cells) + m.group(3) + _replace(m.group(4), cells), sql)
    return _CONDITION.sub(lambda m: m.group(1) + m.group(2) + _replace(m.group(3), cells), sql)


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


def cell_strings(columns: Sequence[str], types: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """The table's cells as Binder's fuzzy matcher saw them (``str`` of each DataFrame cell, row by
    row; pandas ``iterrows`` turns ints into floats when every column is numeric and one is REAL)."""
    numeric = all(t in ("INTEGER", "REAL") for t in types)
    upcast = numeric and "REAL" in types
    out = []
    for row in rows:
        for cell, kind in zip(row, types):
            if cell is None:
                out.append("NaT" if kind == "TIMESTAMP" else "nan")
            elif isinstance(cell, int) and upcast:
                out.append(str(float(cell)))
            else:
                out.append(str(cell))
    return out
