"""The ``wikitq_binder`` pool: WikiTQ test questions with real LLM samples (Binder programs).

Files in ``bundled/wikitq_binder/`` (built by ``scripts/build_wikitq_binder_pool.py``; see its
DATA_CARD.md): ``binder.samples.jsonl.gz`` (the pool, data contract), ``tables.json.gz`` (the
WikiTQ tables as Binder read them) and ``tables.tar.xz`` (Binder's table ``w`` of each, one
SQLite file ``<table_id>.db``, built from ``tables.json.gz`` by
:func:`lever_jax.data.binder_tables.write_binder_db`). The databases are unpacked on first use into
``<db root>/wikitq_binder/`` (read-only files). Problem ids are WikiTQ's (``nu-0``); gold = the
target value strings; context = ``{"table_id": "203_733", "page_title": ..., "target_canon":
[...], "binder_eid": "0"}``.
"""
from __future__ import annotations

import re
from pathlib import Path

from lever_jax.data.bundled import bundled_path
from lever_jax.data.datasets.wikitq import unpack_table_bundle
from lever_jax.data.jsonl import read_problems
from lever_jax.data.schema import Problem
from lever_jax.data.spider_db import default_db_root

SPLITS = ("test",)
BUNDLE = "wikitq_binder"
SAMPLES = "binder.samples.jsonl.gz"
_TABLE_ID = re.compile(r"^\d+_\d+$")


def table_id_from_context(context_path: str) -> str:
    """WikiTQ's ``csv/203-csv/733.csv`` as the SQUALL-style id ``203_733``."""
    m = re.fullmatch(r"csv/(\d+)-csv/(\d+)\.csv", context_path)
    if not m:
        raise ValueError(f"not a WikiTQ table path: {context_path!r}")
    return f"{m.group(1)}_{m.group(2)}"


def binder_db_path(table_id: str, root: Path | None = None) -> Path:
    if not _TABLE_ID.match(table_id):
        raise ValueError(f"invalid WikiTQ table id {table_id!r}")
    return (root or default_db_root()) / BUNDLE / f"{table_id}.db"


def prepare_binder_tables(root: Path | None = None, force: bool = False, log: bool = True) -> int:
    """Unpack the bundled ``w`` databases (read-only) into ``<root>/wikitq_binder`` (cached); files written."""
    return unpack_table_bundle(BUNDLE, root, mode=0o444, force=force, log=log)


def ensure_binder_db(table_id: str, root: Path | None = None) -> Path:
    """Path of a table's ``w`` database, unpacking the bundle first when it is missing."""
    path = binder_db_path(table_id, root)
    if not path.exists():
        prepare_binder_tables(root)
        if not path.exists():
            prepare_binder_tables(root, force=True)
        if not path.exists():
            raise FileNotFoundError(f"no wikitq_binder table {table_id!r} in the bundle (looked for {path})")
    return path


def load_binder_pool() -> list[Problem]:
    """The pool with its candidates (no execution)."""
    return list(read_problems(bundled_path(BUNDLE, SAMPLES, must_exist=True)))


def load_problems(split: str, variant: str | None = None) -> list[Problem]:
    """The pool's problems without candidates (the dataset-loader contract)."""
    if split not in SPLITS:
        raise ValueError(f"wikitq_binder has no split {split!r}; splits: {', '.join(SPLITS)}")
    if variant is not None:
        raise ValueError(f"wikitq_binder has no variant {variant!r}")
    return [p.replace(candidates=()) for p in load_binder_pool()]


def gold_program(problem: Problem) -> str | None:
    """No gold program: the WikiTQ test set has none."""
    return None
