"""Rebuild Spider's SQLite databases from SpiderMan's MySQL ``schema.sql`` + CSV files.

The original Spider SQLite files are not obtainable offline; the SpiderMan re-release ships every
database as MySQL DDL plus one CSV per table. The bundle (``bundled/spider/databases_*.tar.xz``,
members ``<db_id>/schema.sql`` and ``<db_id>/data/<Table>.csv``) is turned into
``<root>/spider/<db_id>/<db_id>.sqlite`` (Spider's layout) by :func:`prepare_spider`:

* DDL: ``db``.``table`` qualifiers dropped, backticks -> double quotes, ``INDEX``/``KEY`` lines
  moved to ``CREATE INDEX`` statements, MySQL-only clauses removed (``AUTO_INCREMENT``,
  ``UNSIGNED``, ``ENGINE=``, ``CHARSET``, ``COLLATE``, ``COMMENT '...'``, ``ON UPDATE
  CURRENT_TIMESTAMP``), ``ENUM(...)``/``SET(...)`` -> ``TEXT``; declared types are kept, so
  SQLite's type affinity types the loaded values (INT columns hold integers, REAL/DECIMAL
  columns numbers, TEXT columns text);
* data: CSV values are inserted as text and converted by the column's affinity; ``NULL`` becomes
  SQL NULL (other spellings such as ``null`` stay text, as in the original Spider files); an
  empty field is NULL in a column with numeric affinity and ``''`` in a text column (SpiderMan
  has empty values in NOT NULL text columns); a table whose CSV is missing stays empty
  (``wta_1.rankings``).

The build is deterministic (same bytes for the same bundle and SQLite version), writes each file
atomically and records the bundle digest in ``<root>/spider/.prepared-<archive>`` so that later
calls skip it. This module is also the home of :func:`default_db_root`, the location shared by
the Spider and WikiTQ databases.
"""
from __future__ import annotations

import csv
import functools
import hashlib
import io
import os
import re
import sqlite3
import sys
import tarfile
from pathlib import Path
from typing import Iterable, Iterator

from lever_jax.data import paths
from lever_jax.data.bundled import bundled_path

ARCHIVES = ("databases_dev.tar.xz", "databases_train.tar.xz")
NULL_TOKEN = "NULL"


class SpiderBuildError(RuntimeError):
    """A database could not be rebuilt; the message names the database, file and line."""


def default_db_root() -> Path:
    """Where prepared databases live: ``$LEVER_JAX_DB_DIR``, else ``.cache/db`` beside the
    package in a source checkout (readable by the sandbox's unprivileged uid), else
    ``~/.cache/lever_jax/db``."""
    env = os.environ.get("LEVER_JAX_DB_DIR")
    if env:
        return Path(env).expanduser()
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "setup.py").exists() and os.access(checkout, os.W_OK):
        return checkout / ".cache" / "db"
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return cache / "lever_jax" / "db"


def spider_db_path(db_id: str, root: Path | None = None) -> Path:
    if not re.fullmatch(r"[A-Za-z0-9_]+", db_id):
        raise ValueError(f"invalid Spider db_id {db_id!r}")
    return (root or default_db_root()) / "spider" / db_id / f"{db_id}.sqlite"


# ----------------------------------------------------------------------------------------------
# MySQL DDL -> SQLite


_QUALIFIED = re.compile(r"`[^`]+`\.`([^`]+)`")
_INDEX_LINE = re.compile(r"^\s*(?:UNIQUE\s+)?(?:INDEX|KEY)\s+`?(\w+)`?\s*\(([^)]*)\)\s*,?\s*$", re.I)
_MYSQL_ONLY = [
    (re.compile(r"\bAUTO_INCREMENT\b(\s*=\s*\d+)?", re.I), ""),
    (re.compile(r"\bUNSIGNED\b", re.I), ""),
    (re.compile(r"\bON\s+UPDATE\s+CURRENT_TIMESTAMP\b", re.I), ""),
    (re.compile(r"\bCOMMENT\s+'(?:[^']|'')*'", re.I), ""),
    (re.compile(r"\b(?:CHARACTER\s+SET|CHARSET)\s*=?\s*\w+", re.I), ""),
    (re.compile(r"\bCOLLATE\s*=?\s*\w+", re.I), ""),
    (re.compile(r"\b(?:ENUM|SET)\s*\((?:[^()']|'(?:[^']|'')*')*\)", re.I), "TEXT"),
]
_TABLE_OPTIONS = re.compile(r"\)\s*(?:ENGINE|DEFAULT\s+CHARSET|AUTO_INCREMENT|CHARSET|COLLATE|ROW_FORMAT)\b[^)]*$", re.I)


def _split_statements(sql: str) -> list[str]:
    """Split on ``;`` outside quotes; comment lines (``--``) dropped."""
    text = "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))
    out, buf, quote = [], [], ""
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'`\"":
            quote = ch
        elif ch == ";":
            out.append("".join(buf).strip())
            buf = []
            continue
        buf.append(ch)
    if "".join(buf).strip():
        out.append("".join(buf).strip())
    return [s for s in out if s]


def translate_ddl(schema_sql: str) -> tuple[list[str], list[str]]:
    """MySQL ``CREATE TABLE`` statements -> (SQLite statements, table names in order)."""
    statements: list[str] = []
    indexes: list[str] = []
    tables: list[str] = []
    for stmt in _split_statements(schema_sql):
        if not re.match(r"CREATE\s+TABLE", stmt, re.I):
            raise SpiderBuildError(f"unsupported statement in schema.sql: {stmt[:80]!r}")
        stmt = _QUALIFIED.sub(r"`\1`", stmt)
        stmt = _TABLE_OPTIONS.sub(")", stmt)
        name_match = re.match(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?`?([^`\s(]+)`?", stmt, re.I)
        if not name_match:
            raise SpiderBuildError(f"cannot read the table name of {stmt[:80]!r}")
        table = name_match.group(1)
        tables.append(table)
        kept: list[str] = []
        for line in stmt.splitlines():
            index = _INDEX_LINE.match(line)
            if index:
                cols = index.group(2).replace("`", '"')
                unique = "UNIQUE " if line.strip().upper().startswith("UNIQUE") else ""
                indexes.append(f'CREATE {unique}INDEX "{table}_{index.group(1)}" ON "{table}" ({cols})')
                continue
            kept.append(line)
        body = "\n".join(kept)
        body = re.sub(r",\s*\)\s*$", "\n)", body)  # the index line may have been the last one
        for pattern, repl in _MYSQL_ONLY:
            body = pattern.sub(repl, body)
        statements.append(body.replace("`", '"'))
    return statements + indexes, tables


# ----------------------------------------------------------------------------------------------
# Loading


def _table_columns(conn: sqlite3.Connection, table: str) -> dict[str, tuple[str, bool]]:
    """lower-cased name -> (name, has text affinity) per column."""
    out = {}
    for row in conn.execute(f'PRAGMA table_info("{table}")'):
        declared = (row[2] or "").upper()
        text = any(t in declared for t in ("CHAR", "CLOB", "TEXT")) and "INT" not in declared
        out[row[1].lower()] = (row[1], text)
    return out


def load_csv(conn: sqlite3.Connection, table: str, csv_text: str, where: str) -> int:
    """Insert the rows of one CSV (header = column names) into ``table``; returns the row count."""
    reader = csv.reader(io.StringIO(csv_text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return 0
    known = _table_columns(conn, table)
    missing = [h for h in header if h.lower() not in known]
    if missing:
        raise SpiderBuildError(f"{where}:1: columns {missing} are not in table {table!r}")
    cols = ", ".join(f'"{known[h.lower()][0]}"' for h in header)
    empty = ["" if known[h.lower()][1] else None for h in header]
    sql = f'INSERT INTO "{table}" ({cols}) VALUES ({", ".join("?" * len(header))})'
    rows = []
    for lineno, row in enumerate(reader, start=2):
        if len(row) != len(header):
            raise SpiderBuildError(f"{where}:{lineno}: expected {len(header)} fields, got {len(row)}")
        rows.append([None if v == NULL_TOKEN else (empty[i] if v == "" else v) for i, v in enumerate(row)])
    try:
        conn.executemany(sql, rows)
    except sqlite3.Error as err:
        raise SpiderBuildError(f"{where}: cannot insert into {table!r}: {err}") from None
    return len(rows)


def build_database(db_id: str, schema_sql: str, csv_files: dict[str, str], out_path: Path) -> dict[str, int]:
    """Write ``out_path`` atomically; returns rows per table (missing CSV -> table left empty, -1)."""
    statements, tables = translate_ddl(schema_sql)
    counts: dict[str, int] = {}
    with paths.staged(out_path) as tmp:  # an empty file: SQLite opens it as a new database
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=OFF")
            conn.execute("PRAGMA synchronous=OFF")
            conn.execute("BEGIN")
            for stmt in statements:
                try:
                    conn.execute(stmt)
                except sqlite3.Error as err:
                    raise SpiderBuildError(f"{db_id}/schema.sql: {err} in {stmt[:120]!r}") from None
            by_lower = {name.lower(): text for name, text in csv_files.items()}
            for table in tables:
                text = by_lower.get(table.lower())
                counts[table] = -1 if text is None else load_csv(conn, table, text, f"{db_id}/data/{table}.csv")
            conn.execute("COMMIT")
        finally:
            conn.close()
        os.chmod(tmp, 0o644)
    return counts


def iter_archive(archive: Path) -> Iterator[tuple[str, str, dict[str, str]]]:
    """Yield ``(db_id, schema_sql, {table: csv_text})`` from a bundle archive, sorted by db_id."""
    grouped: dict[str, dict[str, str]] = {}
    with tarfile.open(archive, "r:*") as tar:
        for member in tar:
            if not member.isfile():
                continue
            parts = member.name.split("/")
            handle = tar.extractfile(member)
            if handle is None:
                continue
            text = handle.read().decode("utf-8")
            if len(parts) == 2 and parts[1] == "schema.sql":
                grouped.setdefault(parts[0], {})["\0schema"] = text
            elif len(parts) == 3 and parts[1] == "data" and parts[2].endswith(".csv"):
                grouped.setdefault(parts[0], {})[parts[2][:-4]] = text
    for db_id in sorted(grouped):
        files = grouped[db_id]
        schema = files.pop("\0schema", None)
        if schema is None:
            raise SpiderBuildError(f"{archive}: {db_id}/schema.sql missing")
        yield db_id, schema, files


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def archive_db_ids(archive: Path) -> list[str]:
    with tarfile.open(archive, "r:*") as tar:
        return sorted({m.name.split("/")[0] for m in tar if m.isfile()})


def prepare_spider(root: Path | None = None, archives: Iterable[str] = ARCHIVES, force: bool = False,
                   log: bool = True) -> dict[str, dict[str, int]]:
    """Build every database of the given bundle archives under ``root/spider`` (cached)."""
    root = root or default_db_root()
    out_dir = root / "spider"
    out_dir.mkdir(parents=True, exist_ok=True)
    report: dict[str, dict[str, int]] = {}
    for name in archives:
        archive = bundled_path("spider", name, must_exist=True)
        stamp = out_dir / f".prepared-{name}"
        digest = _digest(archive)
        if not force and stamp.exists() and stamp.read_text().strip() == digest:
            continue
        if log:
            print(f"lever-jax: building Spider databases from {name} into {out_dir} ...", file=sys.stderr)
        for db_id, schema, files in iter_archive(archive):
            report[db_id] = build_database(db_id, schema, files, spider_db_path(db_id, root))
        for path in (root, out_dir, *out_dir.iterdir()):
            if path.is_dir():
                os.chmod(path, 0o755)
        stamp.write_text(digest + "\n")
    return report


@functools.lru_cache(maxsize=1)
def bundled_db_ids() -> dict[str, str]:
    """db_id -> the bundle archive that holds it."""
    out: dict[str, str] = {}
    for name in ARCHIVES:
        archive = bundled_path("spider", name)
        if archive.exists():
            out.update((db_id, name) for db_id in archive_db_ids(archive))
    return out


def ensure_spider_db(db_id: str, root: Path | None = None) -> Path:
    """Path of ``db_id``'s database, building its bundle archive first when it is missing."""
    root = root or default_db_root()
    path = spider_db_path(db_id, root)
    if not path.exists():
        archive = bundled_db_ids().get(db_id)
        if archive is None:
            raise FileNotFoundError(f"no Spider database {db_id!r} at {path} nor in the bundle")
        prepare_spider(root, archives=(archive,))
        if not path.exists():  # stamped as prepared, but the file was removed since
            prepare_spider(root, archives=(archive,), force=True)
        if not path.exists():
            raise FileNotFoundError(f"Spider database {db_id!r} was not built (looked for {path})")
    return path
