"""Binder's table ``w`` for a WikiTQ table: the SQLite database the Binder samples' SQL runs on.

Re-implements, without pandas, Binder's ``prepare_df_for_neuraldb_from_table`` +
``convert_df_type`` + ``to_sql("w", conn)`` (``utils/normalizer.py`` and ``nsql/database.py`` of
zsong96wisc/Binder-TableQA @ c725c13, the repository the bundled samples come from):

1. a ``row_id`` column ("0", "1", ...) is prepended (unless the header has one);
2. empty header names become ``FilledColumnName``; duplicates get ``_2``, ``_3``, ...;
3. cells ``''``, ``'-'``, ``'/'`` become ``"None"``; in a column whose every cell is a float or
   ``None``/``none``, those become ``"NaN"``;
4. every cell goes through :func:`str_normalize` (Microsoft Recognizers-Text, English, datetime
   then number recognisers; recognised spans are replaced by their TIMEX / resolved value; a cell
   starting with ``\\d+/\\d+`` is left alone; a trailing `` 00:00:00`` after a date is cut);
5. a column whose every cell ends in ``-01-01 00:00:00`` / ``-01 00:00:00`` / `` 00:00:00`` loses
   that suffix;
6. headers are lower-cased (duplicates then get ``-2``, ``-3``, ...), cells lower-cased and stripped;
7. a column whose cells all parse as floats becomes REAL, or INTEGER when they all parse as ints
   (pandas ``astype(int)`` on strings, i.e. ``int(text)``); a text column whose cells all parse as
   dates (pandas 1.3 ``to_datetime``: NaT strings, else ``dateutil``) becomes TIMESTAMP text
   ``YYYY-MM-DD HH:MM:SS``;
8. the table is written as pandas 1.3's SQLite fallback does: ``"index"`` INTEGER first (the
   DataFrame index), then the columns; NaN is NULL; an index ``ix_w_index`` on ``"index"``.

Steps 1-3 and 5-8 are plain Python; step 4 needs the PyPI ``recognizers-text-suite`` (extra
``wikitq-build``), imported only when a table is normalised. Fidelity limits (measured in the
``wikitq_binder`` data card): dateutil fills a missing year/month/day from :data:`DATE_DEFAULT`
(pandas used the day Binder ran); the emoji package version changes what the recognisers see as
emoji (Binder had emoji 1.7.0, pinned in the extra).
"""
from __future__ import annotations

import datetime
import functools
import math
import re
import sqlite3
from pathlib import Path
from typing import Any, Mapping, Sequence

TABLE_NAME = "w"
NULL_TOKENS = ("", "-", "/")
NAT_STRINGS = frozenset({"", "NaT", "nat", "NAT", "nan", "NaN", "NAN"})
# dateutil's default for missing date parts; Binder's run took "today" (results committed 2023-11-01).
DATE_DEFAULT = datetime.datetime(2023, 11, 1)
_NS_MIN = datetime.datetime(1677, 9, 21, 0, 12, 44)  # pandas' datetime64[ns] bounds
_NS_MAX = datetime.datetime(2262, 4, 11, 23, 47, 16)
_FRACTION = re.compile(r"\d+/\d+")
_ZERO_TIME = re.compile(r"(.*)-(.*)-(.*) 00:00:00")


@functools.lru_cache(maxsize=1)
def _models() -> dict[str, Any]:
    """Recognizers-Text's English datetime and number models (built once: they are slow to make)."""
    from recognizers_date_time import DateTimeRecognizer  # the build-time extra (wikitq-build)
    from recognizers_number import NumberRecognizer
    from recognizers_text import Culture

    culture = Culture.English
    return {"datetime": DateTimeRecognizer(culture).get_datetime_model(culture),
            "number": NumberRecognizer(culture).get_number_model(culture)}


@functools.lru_cache(maxsize=None)
def str_normalize(text: str) -> str:
    """Binder's ``str_normalize``: Recognizers-Text datetime then number normalisation of a cell
    (datetime references resolved against :data:`DATE_DEFAULT`, Binder's run date)."""
    text = str(text).replace("\\n", "; ")
    for kind in ("datetime", "number"):
        if _FRACTION.match(text):
            continue
        model = _models()[kind]
        found = model.parse(text, DATE_DEFAULT) if kind == "datetime" else model.parse(text)
        replacements: list[tuple[int, int, str]] = []
        for item in found:
            if kind == "datetime":
                values = (item.resolution or {}).get("values") or []
                if item.resolution and len(values) == 1:
                    replacements.append((item.start, item.end + 1, str(values[0]["timex"])))
            else:
                value = str(item.resolution["value"])
                if not value.startswith("P"):
                    replacements.append((item.start, item.end + 1, value))
        if replacements:
            out, last = [], 0
            for start, end, new in replacements:
                out.append(text[last:start])
                out.append(new)
                last = end
            out.append(text[last:])
            text = "".join(out)
    if _ZERO_TIME.match(text):
        text = text[: -len("00:00:00") - 1]
    return text


def _dedupe(names: Sequence[str], sep: str) -> list[str]:
    out: list[str] = []
    for name in names:
        new, k = name, 2
        while new in out:
            new, k = f"{name}{sep}{k}", k + 1
        out.append(new)
    return out


def _is_float(text: str) -> bool:
    try:
        float(text)
    except (ValueError, TypeError, OverflowError):
        return False
    return True


def _as_int(text: str) -> int | None:
    try:
        value = int(text)
    except (ValueError, TypeError):
        return None
    return value if -(2 ** 63) <= value < 2 ** 63 else None


def _looks_like_datetime(text: str) -> bool:
    """pandas 1.3 ``_does_string_look_like_datetime``: numbers count only from 1000 up."""
    if not text:
        return True
    if text[0] == "0":
        return True
    if text in ("a", "A", "m", "M", "p", "P", "t", "T"):
        return False
    try:
        return float(text) >= 1000
    except ValueError:
        return True


def _looks_like_time(text: str) -> bool:
    """pandas 1.3 ``does_string_look_like_time``: starts with H:MM or HH:MM, valid hour/minute."""
    if len(text) < 4:
        return False
    if text[1] == ":":
        hour, minute = text[0], text[2:4]
    elif text[2] == ":":
        hour, minute = text[:2], text[3:5]
    else:
        return False
    if not (hour.isascii() and hour.isdigit() and minute.isascii() and minute.isdigit() and len(minute) == 2):
        return False
    return 0 <= int(hour) <= 23 and 0 <= int(minute) <= 59


def _as_datetime(text: str) -> datetime.datetime | None | bool:
    """A cell as pandas 1.3 ``to_datetime`` reads it: None for NaT, False when it cannot.

    pandas fills missing parts from 0001-01-01 (so ``sunday`` or ``1st`` fall outside the
    nanosecond range and fail) except for strings that start like a time, which take "today"
    (:data:`DATE_DEFAULT` here)."""
    from dateutil import parser as du_parser

    if text in NAT_STRINGS:
        return None
    if not _looks_like_datetime(text):
        return False
    default = DATE_DEFAULT if _looks_like_time(text) else datetime.datetime(1, 1, 1)
    try:
        value = du_parser.parse(text, default=default)
    except (ValueError, OverflowError, TypeError):
        return False
    if value.tzinfo is not None or not _NS_MIN <= value <= _NS_MAX:
        return False
    return value


def _strip_zero_times(column: list[str]) -> list[str]:
    for suffix in ("-01-01 00:00:00", "-01 00:00:00", " 00:00:00"):
        if column and all(str(c).endswith(suffix) for c in column):
            return [c[: -len(suffix)] for c in column]
    return column


def _typed(column: list[str]) -> tuple[str, list[Any]]:
    """(SQLite type, values) for a lower-cased string column, by Binder's type recognition."""
    if all(_is_float(c) for c in column):
        ints = [_as_int(c) for c in column]
        if all(i is not None for i in ints):
            return "INTEGER", ints
        floats = [float(c) for c in column]
        return "REAL", [None if math.isnan(f) else f for f in floats]
    dates = [_as_datetime(c) for c in column]
    if column and all(d is not False for d in dates):
        return "TIMESTAMP", [None if d is None else d.isoformat(" ") for d in dates]
    return "TEXT", list(column)


def binder_columns(table: Mapping[str, Any], normalize: bool = True) -> tuple[list[str], list[str], list[list[Any]]]:
    """(column names, SQLite types, columns of values) of Binder's ``w`` for ``table``
    (``{"header": [...], "rows": [[...], ...]}``); ``normalize=False`` skips step 4."""
    header = [str(h) for h in table["header"]]
    rows = [[str(c) for c in row] for row in table["rows"]]
    for i, row in enumerate(rows):
        if len(row) != len(header):
            raise ValueError(f"row {i} has {len(row)} cells but the header has {len(header)}")
    if "row_id" not in header:
        header = ["row_id"] + header
        rows = [[str(i)] + row for i, row in enumerate(rows)]
    header = _dedupe(["FilledColumnName" if h == "" else h for h in header], "_")
    columns = [[row[j] for row in rows] for j in range(len(header))]
    columns = [["None" if c in NULL_TOKENS else c for c in col] for col in columns]
    for j, col in enumerate(columns):
        if all(_is_float(c) or c in ("None", "none") for c in col):
            columns[j] = ["NaN" if c in ("None", "none") else c for c in col]
    if normalize:
        columns = [[str_normalize(c) for c in col] for col in columns]
    columns = [_strip_zero_times(col) for col in columns]
    header = _dedupe([h.lower() for h in header], "-")
    columns = [[str(c).lower().strip() for c in col] for col in columns]
    types, values = [], []
    for col in columns:
        kind, vals = _typed(col)
        types.append(kind)
        values.append(vals)
    return header, types, values


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def write_binder_db(table: Mapping[str, Any], path: str | Path, normalize: bool = True) -> Path:
    """Write Binder's ``w`` for ``table`` to a new SQLite file at ``path`` (replaced if present)."""
    header, types, values = binder_columns(table, normalize)
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)
    conn = sqlite3.connect(tmp)
    try:
        cols = ", ".join(f"{_quote(n)} {t}" for n, t in zip(["index"] + header, ["INTEGER"] + types))
        conn.execute(f"CREATE TABLE {_quote(TABLE_NAME)} ({cols})")
        conn.execute(f'CREATE INDEX "ix_{TABLE_NAME}_index" ON {_quote(TABLE_NAME)} ("index")')
        num_rows = len(values[0]) if values else 0
        marks = ", ".join("?" * (len(header) + 1))
        conn.executemany(f"INSERT INTO {_quote(TABLE_NAME)} VALUES ({marks})",
                         ([i] + [col[i] for col in values] for i in range(num_rows)))
        conn.commit()
    finally:
        conn.close()
    tmp.replace(path)
    return path
