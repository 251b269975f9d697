"""The one fold assignment of lever-jax: k folds over a file's problems, plus a dev slice.

Used by `lever-jax run` (cross-fitting: every problem is scored by a verifier that never trained
on it) and by the ``lever_verify_*_fold{i}_{train,dev,eval}`` tasks of `lever-jax train` / `eval`,
so both see the same folds for the same problems.

- ``assign_folds``: a seeded permutation of the *sorted* problem ids dealt round-robin, so fold
  sizes differ by at most one and the assignment depends on the set of ids and the seed only
  (not on file order).
- ``fold_rows``: for fold ``f``, 'heldout' = the fold (reported), 'dev' = a seeded slice of the
  other folds (checkpoint selection), 'train' = the rest. 'dev' never overlaps 'heldout'.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

DEFAULT_NUM_FOLDS = 5
DEFAULT_FOLD_SEED = 0
DEFAULT_DEV_FRACTION = 0.1
ROLES = ("train", "dev", "heldout")


def assign_folds(problem_ids: Sequence[str], num_folds: int, seed: int) -> np.ndarray:
    """Fold of each problem (int32, aligned with ``problem_ids``)."""
    if num_folds < 2:
        raise ValueError("num_folds must be >= 2 (cross-fitting needs held-out folds)")
    ids = list(problem_ids)
    if len(set(ids)) != len(ids):
        raise ValueError("problem ids must be unique to assign folds")
    order = np.argsort(np.asarray(ids, dtype=object), kind="stable")
    perm = np.random.default_rng(seed).permutation(len(order))
    folds = np.empty(len(order), np.int32)
    folds[order[perm]] = np.arange(len(order)) % num_folds
    return folds


def fold_rows(folds: np.ndarray, fold: int, dev_fraction: float, seed: int) -> dict[str, np.ndarray]:
    """Sorted row indices of 'train', 'dev' and 'heldout' for ``fold`` (see the module docstring).

    ``dev_fraction`` of the non-held-out rows (at least one) go to 'dev'; 0 gives an empty dev set.
    """
    if not 0.0 <= dev_fraction < 1.0:
        raise ValueError(f"dev_fraction must be in [0, 1), got {dev_fraction}")
    held = np.flatnonzero(folds == fold)
    rest = np.random.default_rng([seed, fold]).permutation(np.flatnonzero(folds != fold))
    n_dev = 0 if dev_fraction == 0 else max(1, int(round(dev_fraction * len(rest))))
    return {"train": np.sort(rest[n_dev:]), "dev": np.sort(rest[:n_dev]), "heldout": held}


def role_ids(problem_ids: Sequence[str], fold: int, role: str, num_folds: int = DEFAULT_NUM_FOLDS,
             seed: int = DEFAULT_FOLD_SEED, dev_fraction: float = DEFAULT_DEV_FRACTION) -> frozenset[str]:
    """The ids of ``problem_ids`` that play ``role`` ('train' | 'dev' | 'heldout') for ``fold``."""
    if role not in ROLES:
        raise ValueError(f"fold role must be one of {ROLES}, got {role!r}")
    ids = list(problem_ids)
    rows = fold_rows(assign_folds(ids, num_folds, seed), fold, dev_fraction, seed)[role]
    return frozenset(ids[i] for i in rows)


def dev_split(problem_ids: Sequence[str], dev_fraction: float = DEFAULT_DEV_FRACTION,
              seed: int = DEFAULT_FOLD_SEED) -> tuple[frozenset[str], frozenset[str]]:
    """(train ids, dev ids) of one file used whole for training: a seeded ``dev_fraction`` slice
    becomes the dev set for checkpoint selection (at least one problem when there are two)."""
    ids = sorted(set(problem_ids))
    if dev_fraction <= 0 or len(ids) < 2:
        return frozenset(ids), frozenset()
    perm = np.random.default_rng([seed, 7919]).permutation(len(ids))
    n_dev = min(len(ids) - 1, max(1, int(round(dev_fraction * len(ids)))))
    dev = frozenset(ids[i] for i in perm[:n_dev])
    return frozenset(ids) - dev, dev
