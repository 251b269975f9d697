"""WikiTableQuestions (Pasupat & Liang 2015) with SQUALL's SQLite tables, in LEVER's SQL format.

Splits: ``train`` / ``dev`` = random-split-1 (11,321 / 2,831; LEVER's sizes) and ``test`` = the
pristine-unseen-tables set (4,344). Problem ids are WikiTQ's (``nt-2``, ``nu-0``). gold = the list
of target value strings (``targetValue`` split on ``|``); context = ``{"table_id": "204_772",
"target_canon": [...], "target_canon_source": "corenlp" | "approx"}``. Canonical target forms come
from the CoreNLP-tagged file for test; the tagged training file is not available, so train/dev use
:func:`lever_jax.execution.wikitq_match.approximate_canon`-style forms computed at bundle time.

Tables: SQUALL's ``tables/db/<table_id>.db`` (one table ``w``: ``id``, ``agg``, ``c1``,
``c1_number``, ...) are unpacked from ``bundled/wikitq/tables.tar.xz`` into
``<db root>/wikitq/`` on first use. Candidates' SQL runs on LEVER's table ``main_table``: a TEMP
view over ``w`` whose columns are renamed by :func:`lever_column_names` (the convention is in
``bundled/wikitq/DATA_CARD.md``); ``bundled/wikitq/columns.json.gz`` holds the mapping per table.
There is no gold SQL (SQUALL's annotations are not available): :func:`gold_program` is None.
"""
from __future__ import annotations

import functools
import json
import os
import re
import sys
import tarfile
import unicodedata
from pathlib import Path
from typing import Sequence

from lever_jax.data import paths
from lever_jax.data.bundled import bundled_path
from lever_jax.data.jsonl import DataFileError, iter_json_lines, open_text
from lever_jax.data.schema import Problem
from lever_jax.data.spider_db import default_db_root

SPLITS = ("train", "dev", "test")
SIZES = {"train": 11321, "dev": 2831, "test": 4344}
MAIN_TABLE = "main_table"
SQUALL_TABLE = "w"
TABLES_ARCHIVE = "tables.tar.xz"
_SYMBOLS = {"(": " lrb ", ")": " rrb ", "[": " lsb ", "]": " rsb ", "{": " lcb ", "}": " rcb ", "#": " count "}
_TABLE_ID = re.compile(r"^\d+_\d+$")


def header_to_name(header: str) -> str:
    """A SQUALL header as a LEVER column name: lower-case ASCII words joined by ``_``; brackets
    become ``lrb``/``rrb`` (``lsb``/``rsb``, ``lcb``/``rcb``) and ``#`` becomes ``count``, as in
    LEVER's prompts (``money ($)`` -> ``money_lrb_rrb``, ``boat #`` -> ``boat_count``); every
    other character separates words; empty -> ``column``; a leading digit gets ``col_``."""
    text = "".join(_SYMBOLS.get(ch, ch) for ch in header.lower())
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    name = "_".join(re.findall(r"[a-z0-9]+", text)) or "column"
    return "col_" + name if name[0].isdigit() else name


def lever_column_names(headers: Sequence[str], squall_columns: Sequence[str]) -> list[tuple[str, str]]:
    """``[(squall_column, lever_column), ...]`` for a table, given SQUALL's ``headers`` (which start
    with ``id``, ``agg``): ``c<i>[_suffix]`` -> ``header_to_name(headers[i + 1])[_suffix]``; ``id``/``agg`` keep their names; a name already
    taken gets ``_2``, ``_3``, ... (in column order)."""
    taken: set[str] = set()
    out: list[tuple[str, str]] = []
    for col in squall_columns:
        m = re.fullmatch(r"c(\d+)(_\w+)?", col)
        if m:
            idx = int(m.group(1))
            if not 1 <= idx < len(headers) - 1:
                raise ValueError(f"column {col!r} has no header (only {len(headers)} headers)")
            base = header_to_name(headers[idx + 1]) + (m.group(2) or "")
        else:
            base = col
        name, k = base, 2
        while name in taken:
            name, k = f"{base}_{k}", k + 1
        taken.add(name)
        out.append((col, name))
    return out


@functools.lru_cache(maxsize=1)
def _column_map() -> dict[str, list[list[str]]]:
    with open_text(bundled_path("wikitq", "columns.json.gz", must_exist=True)) as handle:
        return json.load(handle)["tables"]


def lever_columns(table_id: str) -> list[list[str]]:
    """The ``[[squall_column, lever_column], ...]`` mapping of one table (from the bundle)."""
    try:
        return _column_map()[table_id]
    except KeyError:
        raise KeyError(f"unknown WikiTQ table id {table_id!r}") from None


def wikitq_db_path(table_id: str, root: Path | None = None) -> Path:
    if not _TABLE_ID.match(table_id):
        raise ValueError(f"invalid WikiTQ table id {table_id!r}")
    return (root or default_db_root()) / "wikitq" / f"{table_id}.db"


def unpack_table_bundle(bundle: str, root: Path | None = None, subdir: str | None = None, mode: int = 0o644,
                        force: bool = False, log: bool = True) -> int:
    """Unpack ``<bundle>/tables.tar.xz``'s ``<table_id>.db`` files into ``<root>/<subdir>`` (default:
    the bundle's name), each written atomically with ``mode``; cached by a stamp of the archive's size.
    Returns the number of files written (0 when already unpacked)."""
    root = root or default_db_root()
    out_dir = root / (subdir or bundle)
    stamp = out_dir / ".prepared"
    archive = bundled_path(bundle, TABLES_ARCHIVE, must_exist=True)
    tag = f"{archive.stat().st_size}"
    if not force and stamp.exists() and stamp.read_text().strip() == tag:
        return 0
    if log:
        print(f"lever-jax: unpacking the {bundle} tables into {out_dir} ...", file=sys.stderr)
    out_dir.mkdir(parents=True, exist_ok=True)
    count = 0
    with tarfile.open(archive, "r:*") as tar:
        for member in tar:
            name = Path(member.name).name
            handle = tar.extractfile(member) if member.isfile() else None
            if handle is None or not name.endswith(".db") or not _TABLE_ID.match(name[:-3]):
                continue
            with paths.staged(out_dir / name) as tmp:
                Path(tmp).write_bytes(handle.read())
                os.chmod(tmp, mode)
            count += 1
    for path in (root, out_dir):
        os.chmod(path, 0o755)
    stamp.write_text(tag + "\n")
    return count


def prepare_wikitq(root: Path | None = None, force: bool = False, log: bool = True) -> int:
    """Unpack the SQUALL SQLite tables into ``<root>/wikitq`` (cached); returns files written."""
    return unpack_table_bundle("wikitq", root, mode=0o644, force=force, log=log)


def ensure_wikitq_db(table_id: str, root: Path | None = None) -> Path:
    """Path of a table's SQLite file, unpacking the bundled tables first when it is missing."""
    path = wikitq_db_path(table_id, root)
    if not path.exists():
        if table_id not in _column_map():
            raise FileNotFoundError(f"no WikiTQ table {table_id!r} at {path} nor in the bundle")
        prepare_wikitq(root)
        if not path.exists():  # stamped as prepared, but the file was removed since
            prepare_wikitq(root, force=True)
        if not path.exists():
            raise FileNotFoundError(f"no WikiTQ table {table_id!r} in the bundle (looked for {path})")
    return path


def problems_from_file(path: Path) -> list[Problem]:
    """Problems from a bundled split file (``id``, ``question``, ``table_id``, ``targets``, ...)."""
    problems = []
    for lineno, obj in iter_json_lines(path):
        try:
            table_id = obj["table_id"]
            targets = obj["targets"]
            if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
                raise DataFileError(path, lineno, "targets", "expected a list of strings")
            context = {"table_id": table_id, "target_canon": obj["target_canon"], "target_canon_source": obj["canon_source"]}
            problems.append(Problem(problem_id=obj["id"], dataset="wikitq", question=obj["question"],
                                    context=context, gold=list(targets), candidates=()))
        except KeyError as err:
            raise DataFileError(path, lineno, str(err.args[0]), "missing") from None
    return problems


def load_problems(split: str, variant: str | None = None) -> list[Problem]:
    if split not in SPLITS:
        raise ValueError(f"wikitq has no split {split!r}; splits: {', '.join(SPLITS)}")
    if variant is not None:
        raise ValueError(f"wikitq has no variant {variant!r}")
    return problems_from_file(bundled_path("wikitq", f"{split}.jsonl.gz", must_exist=True))


def gold_program(problem: Problem) -> str | None:
    """The gold SQL in ``context["gold_sql"]`` (SQUALL's, as LEVER's released files carry it in
    ``gold_program``; the importer copies it), else None (SQUALL's annotations are not bundled)."""
    sql = problem.context.get("gold_sql")
    return sql if isinstance(sql, str) and sql.strip() else None
