"""Which verifier scores which problem: the two evaluation protocols of `lever-jax run`.

- ``crossfit`` (default when no training split is given): k-fold cross-fitting over the evaluated
  problems; every problem is scored by a verifier that never trained on it, the dev slice of the
  other folds picks checkpoints. Uses only the evaluated split, so it is not LEVER's protocol.
- ``lever`` (LEVER's): the verifier trains on a pool sampled for the TRAIN split
  (``RunConfig.train_pool`` or ``RunConfig.train_input``), a seeded ``dev_fraction`` slice of those
  training problems (held out of training) picks the checkpoint, and every evaluated problem (the
  test split; Spider: dev, as LEVER) is scored by that one verifier. One "fold" holds all evaluated
  problems; the training pool shares no problem with them (checked).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from lever_jax.data.errors import UserError
from lever_jax.data.folds import assign_folds
from lever_jax.data.schema import Problem

PROTOCOLS = ("crossfit", "lever")


def check_protocol(protocol: str, train_pool: str | None, train_input: str | None, train_pool_mode: str) -> None:
    """One-line errors for a protocol the config cannot run, before any work."""
    if protocol not in PROTOCOLS:
        raise UserError(f"RunConfig.protocol must be one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    if train_pool is not None and train_input is not None:
        raise UserError("RunConfig.train_pool and RunConfig.train_input: give one training pool, not both")
    if protocol == "lever":
        if train_pool is None and train_input is None:
            raise UserError("RunConfig.protocol = 'lever' needs the TRAIN split's pool: RunConfig.train_pool "
                            "(a bundled pool) or RunConfig.train_input (a samples or executed file)")
        if train_pool_mode != "replace":
            raise UserError("RunConfig.protocol = 'lever' trains on the training pool alone: "
                            "RunConfig.train_pool_mode must be 'replace'")


def num_folds(protocol: str, configured: int) -> int:
    """The verifiers a run trains: ``configured`` for cross-fitting, one for LEVER's protocol."""
    return 1 if protocol == "lever" else configured


def evaluated_folds(protocol: str, problem_ids: Sequence[str], folds: int, seed: int) -> np.ndarray:
    """The fold of each evaluated problem (LEVER's protocol: all in fold 0, scored by one verifier)."""
    if protocol == "lever":
        return np.zeros(len(problem_ids), np.int32)
    return assign_folds(problem_ids, folds, seed)


def check_disjoint(protocol: str, evaluated: Sequence[Problem], train: Sequence[Problem], name: str) -> None:
    """LEVER's protocol trains on other problems than it reports: shared problem ids are an error."""
    if protocol != "lever":
        return
    shared = {p.problem_id for p in evaluated} & {p.problem_id for p in train}
    if shared:
        example = sorted(shared)[0]
        raise UserError(f"{name}: {len(shared)} of its problems are also evaluated (e.g. {example!r}); "
                        "LEVER's protocol trains on the TRAIN split's pool and reports on another split")


def describe(protocol: str, run: dict[str, Any], train_name: str | None) -> str:
    """The report's sentence on how problems were scored."""
    if protocol == "lever":
        return (f"LEVER's protocol: one verifier trained on {train_name} (the training split's pool; a "
                f"{run['dev_fraction']:.0%} slice of its problems, held out of training, picks the checkpoint) "
                "scores every problem here.")
    return (f"{run['num_folds']}-fold cross-fitting (every problem scored by a verifier that never "
            "trained on it; not LEVER's train -> dev -> test protocol).")


def scored_by(run: dict[str, Any], training: dict[str, Any]) -> str:
    """The report's sentences on how the problems were scored: the protocol, then how many gold
    programs trained beside the samples (LEVER's gold positives), if any."""
    text = describe(run["protocol"], run, training["train_pool"])
    gold = training.get("gold_rows_per_fold") or [0]
    if not max(gold):
        return text
    return (text + f" Gold programs added to training as positives (LEVER's; RunConfig.add_gold): {min(gold)}"
            + (f"-{max(gold)}" if max(gold) != min(gold) else "") + " per fold.")
