"""LEVER's rendering of an SQL result for the verifier, without pandas.

LEVER reads the result with ``pandas.read_sql_query``, keeps the first 5 rows and prints
``df.to_string(index=False)``, cut at 5,000 characters. pandas is not a dependency here, so
:func:`render_table` re-implements that layout (pandas 1.5 rules, checked against pandas 1.5.3
output in ``tests/fixtures/sql/render_cases.json``):

* column dtype inferred from the rendered rows: all ints -> int64; ints/floats (and NULLs) with at
  least one number -> float64 (NULL -> ``NaN``); anything else -> object (NULL -> ``None``);
* numeric columns get one leading space in the header (decided per column *name*, last wins);
* float64 columns: ``%.6f`` then trailing zeros trimmed uniformly (at least one decimal kept);
  ``%.6e`` when a value would print as 0 or the column is too wide with values > 1e6;
* object cells: ``str(value)`` with tab/newline/CR escaped, floats as ``' %.6f'`` trimmed;
* every column right-justified to max(header, cells); columns joined by one space;
* no rows -> ``Empty DataFrame\\nColumns: [a, b]\\nIndex: []``.
"""
from __future__ import annotations

import math
import re
from typing import Any, Sequence

MAX_ROWS = 5
MAX_CHARS = 5000
_PRECISION = 6
_NUMBER_WITH_DECIMAL = re.compile(r"^\s*[\+-]?[0-9]+\.[0-9]*$")
_INT64 = (-(2**63), 2**63 - 1)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_float(v: Any) -> bool:
    return isinstance(v, float)


def _column_kind(values: Sequence[Any]) -> str:
    """'int', 'float' or 'object', as pandas' from_records would infer for these cells."""
    non_null = [v for v in values if v is not None]
    if not non_null:
        return "object"
    if all(_is_int(v) and _INT64[0] <= v <= _INT64[1] for v in values):
        return "int"
    if all((_is_int(v) and _INT64[0] <= v <= _INT64[1]) or _is_float(v) for v in non_null):
        return "float"
    return "object"


def _trim_zeros_float(strs: list[str]) -> list[str]:
    def is_num(x: str) -> bool:
        return _NUMBER_WITH_DECIMAL.match(x) is not None

    def should_trim(values: list[str]) -> bool:
        numbers = [x for x in values if is_num(x)]
        return len(numbers) > 0 and all(x.endswith("0") for x in numbers)

    trimmed = list(strs)
    while should_trim(trimmed):
        trimmed = [x[:-1] if is_num(x) else x for x in trimmed]
    return [x + "0" if is_num(x) and x.endswith(".") else x for x in trimmed]


def _trim_zeros_single_float(text: str) -> str:
    text = text.rstrip("0")
    return text + "0" if text.endswith(".") else text


def _format_float_column(values: Sequence[Any]) -> list[str]:
    def fmt(pattern: str) -> list[str]:
        out = ["NaN" if v is None or (isinstance(v, float) and math.isnan(v)) else pattern.format(float(v)) for v in values]
        return _trim_zeros_float(out)

    formatted = fmt("{:." + str(_PRECISION) + "f}")
    too_long = bool(formatted) and max(len(x) for x in formatted) > _PRECISION + 6
    finite = [abs(float(v)) for v in values if v is not None and not math.isnan(float(v))]
    has_large = any(a > 1e6 for a in finite)
    has_small = any(0 < a < 10 ** (-_PRECISION) for a in finite)
    if has_small or (too_long and has_large):
        formatted = fmt("{:." + str(_PRECISION) + "e}")
    return formatted


def _escape(text: str) -> str:
    return text.replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _format_object_cell(v: Any) -> str:
    if v is None:
        return "None"
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        return _trim_zeros_single_float(f"{v: .{_PRECISION}f}")
    return _escape(str(v))


def _format_column(values: Sequence[Any]) -> tuple[list[str], bool]:
    """Formatted cells and whether the column is numeric (numeric headers get a leading space)."""
    kind = _column_kind(values)
    if kind == "int":
        return [str(v) for v in values], True
    if kind == "float":
        return _format_float_column(values), True
    return [_format_object_cell(v) for v in values], False


def dataframe_to_string(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """``pd.DataFrame.from_records(rows, columns=columns).to_string(index=False)``, pandas-free."""
    names = [_escape(str(c)) for c in columns]
    if not rows:
        return "Empty DataFrame\nColumns: [" + ", ".join(names) + "]\nIndex: []"
    if not names:
        return ""
    formatted = [_format_column([row[i] if i < len(row) else None for row in rows]) for i in range(len(names))]
    # pandas keys the header's leading space by column *name*: the last column of a name decides.
    numeric_by_name = {name: numeric for name, (_, numeric) in zip(names, formatted)}
    strcols: list[list[str]] = []
    for name, (cells, _) in zip(names, formatted):
        header = (" " + name) if numeric_by_name[name] else name
        width = max([len(header)] + [len(c) for c in cells])
        strcols.append([header.rjust(width)] + [c.rjust(width) for c in cells])
    return "\n".join(" ".join(col[r] for col in strcols) for r in range(len(rows) + 1))


def render_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], max_rows: int = MAX_ROWS, max_chars: int = MAX_CHARS) -> str:
    """LEVER's result text: the first ``max_rows`` rows rendered, cut at ``max_chars`` characters."""
    return dataframe_to_string(columns, list(rows[:max_rows]))[:max_chars]
