"""Up-front checks of command-line values; each failure is a one-line :class:`UserError` (exit 2).

Commands call these before any slow work (sandbox start, model build), so a mistyped path or
split is reported in milliseconds, naming the flag.
"""
from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path

from lever_jax.data.errors import UserError


def user_error(message: str, where: str | None = None) -> UserError:
    """A :class:`UserError` reading ``WHERE: message`` (``where``: a file, ``FILE:LINE``, a flag)."""
    return UserError(f"{where}: {message}" if where else message)


def check_positive(flag: str, value: float | int | None, allow_none: bool = True) -> None:
    """UserError naming ``flag`` unless ``value`` > 0 (``None`` passes when ``allow_none``)."""
    if value is None and allow_none:
        return
    if value is None or not value > 0:
        raise user_error(f"must be > 0, got {value!r}", where=flag)


def check_input_file(path: str | os.PathLike, flag: str = "--input", allow_empty: bool = False) -> None:
    """UserError unless ``path`` is a readable file holding more than blank lines (a ``.gz``: once
    decompressed).
    Remote paths (``gs://...``, lever_jax.data.paths) are checked for existence only."""
    where = f"{flag} {path}"
    from lever_jax.data import paths

    if paths.is_remote(path):
        if not paths.exists(path):
            raise user_error("no such file", where=where)
        return
    p = Path(path)
    if not p.exists():
        raise user_error("no such file", where=where)
    if p.is_dir():
        raise user_error("is a directory, expected a file", where=where)
    if not os.access(p, os.R_OK):
        raise user_error("not readable (permission denied)", where=where)
    if allow_empty:
        return
    if p.stat().st_size == 0:
        raise user_error("empty file", where=where)
    if str(p).endswith(".gz"):
        try:
            with gzip.open(p, "rb") as handle:
                head = handle.read(1)
        except (OSError, EOFError, zlib.error) as err:  # zlib.error: a corrupt deflate stream
            raise user_error(f"not a readable gzip file ({err})", where=where) from None
        if not head:
            raise user_error("empty file (gzip holds no data)", where=where)
    from lever_jax.data.jsonl import has_content

    if not has_content(p):
        raise user_error("no problems (the file holds only blank lines)", where=where)


def check_split(dataset: str, split: str | None, flag: str = "--split") -> None:
    """UserError unless ``split`` is one of the bundled ``dataset``'s splits."""
    from lever_jax.data.datasets import DATASET_MODULES, splits

    if dataset not in DATASET_MODULES:
        known_datasets = ", ".join(DATASET_MODULES)
        raise user_error(f"unknown dataset {dataset!r}; known: {known_datasets}", where="--dataset")
    known = splits(dataset)
    if split not in known:
        raise user_error(f"{dataset} has no split {split!r}; splits: {', '.join(known)}", where=flag)
