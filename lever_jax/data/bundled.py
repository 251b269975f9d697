"""Locate data files shipped inside the package (``lever_jax/data/bundled/``).

Nothing at run time reads outside the package: datasets, pools and prompt exemplars are copied
here (compressed, with their licences and a DATA_CARD.md per folder) by the scripts in
``scripts/``.
"""
from __future__ import annotations

from pathlib import Path

BUNDLED_DIR = Path(__file__).resolve().parent / "bundled"


def bundled_path(*parts: str, must_exist: bool = False) -> Path:
    """Path of ``bundled/<parts...>``; with ``must_exist`` raise FileNotFoundError naming it."""
    path = BUNDLED_DIR.joinpath(*parts)
    if BUNDLED_DIR not in path.resolve().parents and path.resolve() != BUNDLED_DIR:
        raise ValueError(f"bundled path escapes the bundle directory: {parts!r}")
    if must_exist and not path.exists():
        raise FileNotFoundError(f"bundled data file missing: {path} (rebuild it with the script named in its DATA_CARD.md)")
    return path
