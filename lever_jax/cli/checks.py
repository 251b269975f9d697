"""Up-front checks of command-line values; each failure is a one-line :class:`UserError` (exit 2).

Commands call these before any slow work (sandbox start, model build), so a mistyped path or
split is reported in milliseconds, naming the flag.
"""
from __future__ import annotations

import gzip
import os
from pathlib import Path

from lever_jax.errors import UserError


def check_positive(flag: str, value: float | int | None, allow_none: bool = True) -> None:
    """UserError naming ``flag`` unless ``value`` > 0 (``None`` passes when ``allow_none``)."""
    if value is None and allow_none:
        return
    if value is None or not value > 0:
        raise UserError(f"must be > 0, got {value!r}", where=flag)


def check_input_file(path: str | os.PathLike, flag: str = "--input", allow_empty: bool = False) -> None:
    """UserError unless ``path`` is a readable, non-empty file (a ``.gz`` must hold some bytes)."""
    p = Path(path)
    where = f"{flag} {path}"
    if not p.exists():
        raise UserError("no such file", where=where)
    if p.is_dir():
        raise UserError("is a directory, expected a file", where=where)
    if not os.access(p, os.R_OK):
        raise UserError("not readable (permission denied)", where=where)
    if allow_empty:
        return
    if p.stat().st_size == 0:
        raise UserError("empty file", where=where)
    if str(p).endswith(".gz"):
        try:
            with gzip.open(p, "rb") as handle:
                head = handle.read(1)
        except (OSError, EOFError) as err:
            raise UserError(f"not a readable gzip file ({err})", where=where) from None
        if not head:
            raise UserError("empty file (gzip holds no data)", where=where)


def check_split(dataset: str, split: str | None, flag: str = "--split") -> None:
    """UserError unless ``split`` is one of the bundled ``dataset``'s splits."""
    from lever_jax.data.datasets import DATASET_MODULES, splits

    if dataset not in DATASET_MODULES:
        known_datasets = ", ".join(DATASET_MODULES)
        raise UserError(f"unknown dataset {dataset!r}; known: {known_datasets}", where="--dataset")
    known = splits(dataset)
    if split not in known:
        raise UserError(f"{dataset} has no split {split!r}; splits: {', '.join(known)}", where=flag)
