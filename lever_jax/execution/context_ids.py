"""Up-front check of the database / table each SQL problem names, before anything runs.

A misspelt Spider ``db_id`` (or WikiTQ ``table_id``) used to turn every candidate of the problem
into ``status: error`` ("database not found") inside the executed file, and the command exited 0.
:func:`check_context_ids` reads a samples file once and raises a one-line
:class:`~lever_jax.data.jsonl.DataFileError` naming file, line and field, with a did-you-mean and
some of the known ids, for the first problem whose id no database answers to.
"""
from __future__ import annotations

import difflib
import os
import tarfile
from pathlib import Path
from typing import Any, Callable, Optional

from lever_jax.data.jsonl import DataFileError, iter_json_lines

# dataset -> (context field, what the id names)
ID_FIELDS: dict[str, tuple[str, str]] = {
    "spider": ("db_id", "Spider database"),
    "wikitq": ("table_id", "WikiTQ table"),
    "wikitq_binder": ("table_id", "wikitq_binder table"),
}
_SHOWN = 8  # known ids listed in the message


def _files_under(directory: Path, pattern: str) -> set[str]:
    return {p.stem for p in directory.glob(pattern)} if directory.is_dir() else set()


def _spider_ids(root: Path) -> set[str]:
    from lever_jax.data.spider_db import bundled_db_ids

    return set(bundled_db_ids()) | _files_under(root / "spider", "*/*.sqlite")


def _wikitq_ids(root: Path) -> set[str]:
    from lever_jax.data.datasets.wikitq import _column_map

    return set(_column_map())  # the executor also needs the table's column map: only the bundle has it


def _binder_ids(root: Path) -> set[str]:
    from lever_jax.data.bundled import bundled_path
    from lever_jax.data.datasets.wikitq import TABLES_ARCHIVE
    from lever_jax.data.datasets.wikitq_binder import BUNDLE

    archive = bundled_path(BUNDLE, TABLES_ARCHIVE)
    bundled: set[str] = set()
    if archive.exists():
        with tarfile.open(archive, "r:*") as tar:
            bundled = {Path(m.name).name[:-3] for m in tar if m.isfile() and m.name.endswith(".db")}
    return bundled | _files_under(root / BUNDLE, "*.db")


_KNOWN: dict[str, Callable[[Path], set[str]]] = {
    "spider": _spider_ids, "wikitq": _wikitq_ids, "wikitq_binder": _binder_ids,
}


def unknown_id_message(what: str, value: Any, known: set[str]) -> str:
    """``unknown Spider database 'x' (did you mean 'y'?); N known, e.g. a, b, ...``."""
    close = difflib.get_close_matches(str(value), sorted(known), n=3, cutoff=0.6)
    hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
    shown = ", ".join(sorted(known)[:_SHOWN])
    return f"unknown {what} {value!r}{hint}; {len(known)} known, e.g. {shown}"


def check_context_ids(path: str | os.PathLike, dataset: str, db_root: Optional[Path] = None) -> None:
    """DataFileError (file, line, ``context.<field>``) for the first problem of ``path`` whose
    database / table id is unknown under ``db_root`` and in the bundles; other datasets pass.
    Lines that are not problem objects are left to the reader, which reports them."""
    if dataset not in ID_FIELDS:
        return
    from lever_jax.data.spider_db import default_db_root

    field, what = ID_FIELDS[dataset]
    known = _KNOWN[dataset](Path(db_root) if db_root is not None else default_db_root())
    for lineno, obj in iter_json_lines(path):
        context = obj.get("context") if isinstance(obj, dict) else None
        if not isinstance(context, dict) or field not in context:
            continue
        if context[field] not in known:
            raise DataFileError(path, lineno, f"context.{field}", unknown_id_message(what, context[field], known))
