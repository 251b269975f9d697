"""Spider (Yu et al. 2018): text-to-SQL over 200 databases; gold = the gold SQL string.

Splits: ``dev`` (1,034 questions from the official ``dev.json``; Spider's SQLite dialect) and
``train`` (6,726 questions from the SpiderMan re-release; its corrected, MySQL-flavoured SQL with
backticks, which SQLite also accepts). Variant ``"spiderman"`` of ``dev`` gives SpiderMan's
corrected versions of the 1,034 dev queries instead of the official ones. Problem ids are
``spider-<split>-<index, 4 digits>``; context = ``{"db_id": ..., "schema": ...}``.

``schema`` is the database schema as one line, read from the bundled ``tables.json``
(:func:`schema_text`): ``table: col1, col2, ... | table2: ...`` with Spider's original table and
column names in ``tables.json`` order (the ``*`` column left out). The verifier reads it only with
``SerializeOptions(include_schema=True)`` (LEVER's schema ablation; LEVER's notes do not fix the
string, so this format is ours). Databases: :mod:`lever_jax.data.spider_db`.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from lever_jax.data.bundled import bundled_path
from lever_jax.data.jsonl import DataFileError, iter_json_lines, open_text
from lever_jax.data.schema import Problem

SPLITS = ("dev", "train")
SIZES = {"dev": 1034, "train": 6726}
VARIANTS = {("dev", None): "dev.jsonl.gz", ("dev", "spiderman"): "dev_spiderman.jsonl.gz", ("train", None): "train.jsonl.gz"}


def problem_id(split: str, index: int) -> str:
    return f"spider-{split}-{index:04d}"


def problems_from_file(path: Path, split: str, with_schema: bool = True) -> list[Problem]:
    """Problems from a bundled file (``db_id``, ``question``, ``query`` per line); ``with_schema``
    adds ``context["schema"]`` (:func:`schema_text`) for databases known to ``tables.json``."""
    problems = []
    for index, (lineno, obj) in enumerate(iter_json_lines(path)):
        for key in ("db_id", "question", "query"):
            if not isinstance(obj.get(key), str):
                raise DataFileError(path, lineno, key, "missing or not a string")
        problems.append(Problem(problem_id=problem_id(split, index), dataset="spider", question=obj["question"],
                                context=_context(obj["db_id"], with_schema), gold=obj["query"], candidates=()))
    return problems


def _context(db_id: str, with_schema: bool) -> dict[str, Any]:
    schema = schema_text(db_id) if with_schema else None
    return {"db_id": db_id} if schema is None else {"db_id": db_id, "schema": schema}


def load_problems(split: str, variant: str | None = None) -> list[Problem]:
    name = VARIANTS.get((split, variant))
    if name is None:
        raise ValueError(f"spider has no split/variant {split!r}/{variant!r}; known: {sorted(VARIANTS, key=str)}")
    return problems_from_file(bundled_path("spider", name, must_exist=True), split)


def gold_program(problem: Problem) -> str | None:
    return problem.gold if isinstance(problem.gold, str) else None


@functools.lru_cache(maxsize=1)
@functools.lru_cache(maxsize=1)
def load_schemas() -> dict[str, dict[str, Any]]:
    """Spider's ``tables.json`` keyed by db_id (table/column names, types, keys)."""
    with open_text(bundled_path("spider", "tables.json.gz", must_exist=True)) as handle:
        return {entry["db_id"]: entry for entry in json.load(handle)}


def table_columns(db_id: str) -> dict[str, list[str]] | None:
    """``{table: [columns]}`` of a database (original names, ``tables.json`` order); None when unknown."""
    schema = load_schemas().get(db_id)
    if schema is None:
        return None
    tables = list(schema["table_names_original"])
    out: dict[str, list[str]] = {t: [] for t in tables}
    for table_index, column in schema["column_names_original"]:
        if table_index >= 0:
            out[tables[table_index]].append(column)
    return out


@functools.lru_cache(maxsize=512)
def schema_text(db_id: str) -> str | None:
    """The schema string of the verifier's schema option, e.g. for ``concert_singer``
    ``stadium: Stadium_ID, Location, ... | singer: Singer_ID, Name, ... | ...``; None when unknown."""
    columns = table_columns(db_id)
    if columns is None:
        return None
    return " | ".join(f"{table}: {', '.join(cols)}" for table, cols in columns.items())
