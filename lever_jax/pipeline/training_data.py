"""Which problems each fold's verifier trains on, beyond the default cross-fitting rows.

Two `lever-jax run` options (RunConfig), for the paper's figures (scripts/paper_tables.py):

- ``train_problems``: at most this many training problems per fold, cut from the fold's training
  rows in a seeded rank order of problem ids, so the subsets are nested across sizes (the 250 are
  among the 500); the dev slice (checkpoint selection) and the held-out fold stay the same, so
  accuracies at different sizes are paired over the same scored problems.
- ``train_pool``: transfer. The verifier trains and selects its checkpoint on another pool's
  problems whose ids lie in the training folds of the evaluated pool (folds by problem id: no
  evaluated problem is ever trained on), and scores the evaluated pool's held-out fold.
- ``add_gold`` (LEVER's): each problem's gold program, executed, is a row of its own
  (:func:`with_gold_rows`) that trains only when its problem's row trains: never in a dev slice,
  never scored, never beside the sampled candidates it would outscore.
"""
from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import numpy as np

from lever_jax.data.arrays import CandidateArrays, problems_to_arrays
from lever_jax.data.errors import UserError
from lever_jax.data.folds import fold_rows
from lever_jax.data.schema import Problem

TRAIN_ID_PREFIX = "train_pool:"
GOLD_ID_PREFIX = "gold:"
TRAIN_POOL_MODES = ("replace", "add")


@dataclasses.dataclass(frozen=True)
class TrainingView:
    """What the verifier trains and scores on: the evaluated problems (rows ``[0, num_eval)``), then,
    with ``RunConfig.train_pool``, the training pool's problems (ids prefixed by
    :data:`TRAIN_ID_PREFIX`). ``folds``: the evaluated rows' folds, -1 for training-pool rows (never
    scored). :meth:`rows` is None when the default fold rows apply."""

    problems: Sequence[Problem]
    arrays: CandidateArrays
    folds: np.ndarray
    num_eval: int
    eval_width: int
    train_folds: Optional[np.ndarray] = None  # fold of each training-pool row, by problem id
    train_problems: Optional[int] = None
    rank: Optional[np.ndarray] = None  # seeded rank of every training-candidate row (nested subsets)
    # train_pool_mode='add': each training-pool row's row among the evaluated problems (-1: none)
    train_own_row: Optional[np.ndarray] = None
    # add_gold: the last len(gold_source) rows hold one gold program each; gold_source[i] is the row
    # of the problem the i-th is the gold of
    gold_source: Optional[np.ndarray] = None

    @property
    def gold_rows(self) -> int:
        """How many gold rows follow the other rows (0 without ``add_gold``)."""
        return 0 if self.gold_source is None else len(self.gold_source)

    @property
    def base_rows(self) -> int:
        """The rows before the gold rows (all rows without ``add_gold``)."""
        return len(self.folds) - self.gold_rows

    def resolved_rows(self, fold: int, dev_fraction: float, seed: int) -> dict[str, np.ndarray]:
        """The rows ``fold`` trains, selects on and scores: ``rows`` with the options, else the
        default ``fold_rows``; then the gold rows of the problems it trains on (train only).
        Gold rows leave every other row's fold, dev slice and rank unchanged."""
        if self.gold_source is None:
            return self.rows(fold, dev_fraction, seed) or fold_rows(self.folds, fold, dev_fraction, seed)
        base = dataclasses.replace(self, folds=self.folds[:self.base_rows], gold_source=None)
        rows = base.resolved_rows(fold, dev_fraction, seed)
        gold = self.base_rows + np.flatnonzero(np.isin(self.gold_source, rows["train"]))
        return {**rows, "train": np.concatenate([rows["train"], gold])}

    def rows(self, fold: int, dev_fraction: float, seed: int) -> Optional[dict[str, np.ndarray]]:
        """'train' / 'dev' / 'heldout' rows of ``fold`` (``fold_rows``' dev slice with the caller's
        seed), 'train' cut to the first ``train_problems`` by rank; None without the options."""
        if self.train_folds is None and self.train_problems is None:
            return None
        if self.train_own_row is not None:
            return self._added_rows(fold, dev_fraction, seed)
        if self.train_folds is not None:
            own = fold_rows(self.train_folds, fold, dev_fraction, seed)
            rows = {"train": own["train"] + self.num_eval, "dev": own["dev"] + self.num_eval,
                    "heldout": np.flatnonzero(self.folds == fold)}
        else:
            rows = fold_rows(self.folds, fold, dev_fraction, seed)
        if self.train_problems is not None and self.rank is not None:
            keep = rows["train"][np.argsort(self.rank[rows["train"]], kind="stable")][:self.train_problems]
            rows["train"] = np.sort(keep)
        return rows

    def _added_rows(self, fold: int, dev_fraction: float, seed: int) -> dict[str, np.ndarray]:
        """train_pool_mode='add': the evaluated pool's rows (cut to ``train_problems``), plus the
        training pool's rows of the kept training problems (and, without a cut, of problems the
        evaluated pool does not have: never scored, so never leaked)."""
        own = fold_rows(self.folds[:self.num_eval], fold, dev_fraction, seed)
        train = own["train"]
        if self.train_problems is not None and self.rank is not None:
            train = np.sort(train[np.argsort(self.rank[train], kind="stable")][:self.train_problems])
        linked = self.train_own_row
        keep = np.isin(linked, train) | ((linked < 0) & (self.train_problems is None))
        return {"train": np.concatenate([train, np.flatnonzero(keep) + self.num_eval]),
                "dev": own["dev"], "heldout": own["heldout"]}


def nested_rank(problem_ids: Sequence[str], seed: int) -> np.ndarray:
    """A seeded rank of each id (independent of order): cutting any row set at rank order gives
    subsets nested across sizes."""
    order = np.argsort(np.asarray(list(problem_ids), dtype=object), kind="stable")
    perm = np.random.default_rng([seed, 250500]).permutation(len(order))
    rank = np.empty(len(order), np.int64)
    rank[order[perm]] = np.arange(len(order))
    return rank


def build_training_view(problems: Sequence[Problem], arrays: CandidateArrays, folds: np.ndarray, seed: int,
               train_problems: Optional[int] = None, train_pool: Optional[Sequence[Problem]] = None,
               train_pool_name: str = "", train_pool_mode: str = "replace") -> TrainingView:
    """The view of the evaluated ``problems`` (sorted by id, aligned with ``arrays`` / ``folds``)
    with at most ``train_problems`` training problems per fold and, with ``train_pool`` (problems of
    the same dataset), training on those instead (``train_pool_mode='replace'``) or as well ('add')."""
    if train_pool_mode not in TRAIN_POOL_MODES:
        raise UserError(f"RunConfig.train_pool_mode must be one of {', '.join(TRAIN_POOL_MODES)}, "
                        f"got {train_pool_mode!r}")
    if train_problems is not None and train_problems < 1:
        raise UserError(f"RunConfig.train_problems must be >= 1 (or None for all), got {train_problems}")
    base = TrainingView(problems, arrays, folds, len(problems), arrays.shape[1], train_problems=train_problems)
    if train_pool is None:
        rank = nested_rank(arrays.problem_ids, seed) if train_problems is not None else None
        return dataclasses.replace(base, rank=rank)
    datasets = {p.dataset for p in problems} | {p.dataset for p in train_pool}
    if len(datasets) > 1:
        raise UserError(f"RunConfig.train_pool {train_pool_name!r}: its dataset differs from the evaluated "
                        f"pool's ({', '.join(sorted(datasets))}); transfer needs the same problems")
    fold_of = dict(zip(arrays.problem_ids, folds.tolist()))
    train_folds = np.array([fold_of.get(p.problem_id, -1) for p in train_pool], np.int32)  # -1: never scored
    combined = [*problems, *(dataclasses.replace(p, problem_id=TRAIN_ID_PREFIX + p.problem_id) for p in train_pool)]
    # rank training-pool rows by their original ids, so a transfer subset is the in-pool subset's ids
    own_rank = nested_rank(arrays.problem_ids, seed) if train_pool_mode == "add" else np.zeros(len(problems), np.int64)
    rank = np.concatenate([own_rank, nested_rank([p.problem_id for p in train_pool], seed)])
    row_of = {pid: i for i, pid in enumerate(arrays.problem_ids)}
    own_row = np.array([row_of.get(p.problem_id, -1) for p in train_pool], np.int64) \
        if train_pool_mode == "add" else None
    return dataclasses.replace(
        base, problems=combined, arrays=problems_to_arrays(combined),
        folds=np.concatenate([folds, np.full(len(train_pool), -1, np.int32)]), train_folds=train_folds, rank=rank,
        train_own_row=own_row)


def with_gold_rows(view: TrainingView, golds: Sequence[tuple[int, Problem]]) -> TrainingView:
    """``view`` plus one row per (source row, problem holding only its executed gold program):
    LEVER's gold positives, which :meth:`TrainingView.resolved_rows` trains on only with their
    problem's row."""
    if not golds:
        return view
    extra = [dataclasses.replace(p, problem_id=GOLD_ID_PREFIX + p.problem_id) for _, p in golds]
    problems = [*view.problems, *extra]
    rank = None if view.rank is None else np.concatenate([view.rank, np.zeros(len(extra), np.int64)])
    return dataclasses.replace(view, problems=problems, arrays=problems_to_arrays(problems), rank=rank,
                               folds=np.concatenate([view.folds, np.full(len(extra), -1, np.int32)]),
                               gold_source=np.array([row for row, _ in golds], np.int64))
