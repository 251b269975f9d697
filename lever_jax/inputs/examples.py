"""Verifier examples from executed files, without TensorFlow: task specs, folds, per-candidate records.

Shared by the SeqIO tasks (``tasks/lever_tasks.py``) and the pure-numpy pipeline
(``lever_jax/inputs/batching.py``) so both see exactly the same examples in the same order.

Data layout: a *data dir* holds ``<dataset>/<split>.executed.jsonl[.gz]``. Task specs are discovered
from the directory named by the ``LEVER_JAX_DATA_DIR`` env var (or an explicit argument, or gin
``discover_specs.data_dir``), then the bundled pools
(``lever_jax/data/bundled/<dataset>_pool/<pool>.executed.jsonl.gz``, e.g. ``gsm8k_pool/code002``).

Folds (k-fold pools, e.g. the GSM8k test-set pool): problem ``p`` is in fold
``int(sha256(f"{seed}:{p.problem_id}"), 16) % num_folds``. A hash (rather than a permutation) keeps
assignment streaming and stable when problems are added or reordered. Defaults: 5 folds, seed 0.

Example fields (one per candidate): ``inputs``/``targets`` text, ``problem_id``, ``problem_index``
(0-based order of the problem within the task), ``candidate_index``, ``gen_logprob``,
``num_tokens``, ``result_id`` (dense per problem, first appearance of ``result_key``), ``correct``
(0/1), ``count``, ``has_gen_logprob``. When a problem has any candidate without a generation
log-prob, every candidate of it gets LEVER's frequency fallback ``log(count / total count)``
instead, and ``has_gen_logprob`` = 0.
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import re
from pathlib import Path
from typing import Any, Iterator, Mapping

import gin

from lever_jax.data.bundled import bundled_path
from lever_jax.data.jsonl import read_problems
from lever_jax.data.schema import Problem
from lever_jax.inputs.serialize import SerializeOptions, serialize, target_text, truncation_side

DATA_DIR_ENV = "LEVER_JAX_DATA_DIR"
POOL_SUFFIX = "_pool"
POOL_DATASET = "gsm8k_pool"
# The pool that also gets the short fold names (lever_verify_<dataset>_pool_fold{i}_{role}); a pool
# folder with a single pool file uses that one.
DEFAULT_POOLS = {"gsm8k_pool": "code002", "humaneval_pool": "codegen16b"}
SERIALIZER_DATASETS = ("gsm8k", "mbpp", "humaneval", "spider", "wikitq")
DEFAULT_NUM_FOLDS = 5
DEFAULT_FOLD_SEED = 0
SUFFIXES = (".executed.jsonl.gz", ".executed.jsonl")
_NAME_RE = re.compile(r"^[A-Za-z0-9_]+$")


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """One verifier task: the executed file(s) it reads, and an optional fold filter.

    fold_role: None (all problems), 'train' (problems outside ``fold``), 'eval' (problems in it).
    """

    name: str
    dataset: str  # a serializer dataset name (gsm8k, mbpp, ...); the pool uses gsm8k
    split: str
    path: Path
    fold: int | None = None
    fold_role: str | None = None
    num_folds: int = DEFAULT_NUM_FOLDS
    fold_seed: int = DEFAULT_FOLD_SEED

    @property
    def is_training(self) -> bool:
        return self.fold_role == "train" or (self.fold_role is None and self.split == "train")

    @property
    def truncation_side(self) -> str:
        return truncation_side(self.dataset)


def fold_of(problem_id: str, num_folds: int = DEFAULT_NUM_FOLDS, seed: int = DEFAULT_FOLD_SEED) -> int:
    """Deterministic fold of a problem (hash of seed and problem id)."""
    digest = hashlib.sha256(f"{seed}:{problem_id}".encode("utf-8")).hexdigest()
    return int(digest, 16) % num_folds


def task_name(dataset: str, split: str) -> str:
    return f"lever_verify_{dataset}_{split}"


def _split_of(path: Path) -> str | None:
    for suffix in SUFFIXES:
        if path.name.endswith(suffix):
            split = path.name[: -len(suffix)]
            return split if _NAME_RE.match(split) else None
    return None


def discover_files(data_dir: str | os.PathLike) -> dict[tuple[str, str], Path]:
    """``{(dataset, split): path}`` for every ``<dataset>/<split>.executed.jsonl[.gz]`` under ``data_dir``."""
    root = Path(data_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"data dir not found: {root} (set {DATA_DIR_ENV} or pass data_dir)")
    found: dict[tuple[str, str], Path] = {}
    for dataset_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        if not _NAME_RE.match(dataset_dir.name):
            continue
        for path in sorted(dataset_dir.iterdir()):
            split = _split_of(path)
            if split is not None:
                found.setdefault((dataset_dir.name, split), path)  # .gz listed first wins
    return found


def bundled_pool_files(dataset: str = POOL_DATASET) -> dict[str, Path]:
    """``{pool_name: path}`` for the bundled pools of ``dataset`` (e.g. ``gsm8k_pool``) that exist."""
    folder = bundled_path(dataset)
    if not folder.is_dir():
        return {}
    return {split: path for path in sorted(folder.iterdir()) if (split := _split_of(path)) is not None}


def bundled_pools() -> dict[tuple[str, str], Path]:
    """``{(pool_dataset, pool_name): path}`` for every bundled ``<dataset>_pool/`` folder."""
    root = bundled_path()
    found: dict[tuple[str, str], Path] = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and p.name.endswith(POOL_SUFFIX)):
        for pool, path in bundled_pool_files(folder.name).items():
            found[(folder.name, pool)] = path
    return found


def is_pool(dataset: str) -> bool:
    return dataset.endswith(POOL_SUFFIX)


def _serializer_dataset(dataset: str) -> str:
    return dataset[: -len(POOL_SUFFIX)] if is_pool(dataset) else dataset


def fold_specs(dataset: str, split: str, path: Path, num_folds: int, fold_seed: int, prefix: str) -> list[TaskSpec]:
    """``{prefix}_fold{i}_{train,eval}`` specs over one pool file."""
    return [
        TaskSpec(f"{prefix}_fold{i}_{role}", _serializer_dataset(dataset), split, path, i, role, num_folds, fold_seed)
        for i in range(num_folds)
        for role in ("train", "eval")
    ]


@gin.configurable
def discover_specs(
    data_dir: str | os.PathLike | None = None,
    include_bundled: bool = True,
    num_folds: int = DEFAULT_NUM_FOLDS,
    fold_seed: int = DEFAULT_FOLD_SEED,
) -> list[TaskSpec]:
    """Every task spec: user files (``data_dir`` or ``$LEVER_JAX_DATA_DIR``), then bundled pools.

    A dataset directory named ``<dataset>_pool`` (user or bundled, e.g. ``gsm8k_pool``) is a k-fold
    pool over test problems: besides ``lever_verify_gsm8k_pool_{pool}`` it gets
    ``lever_verify_gsm8k_pool_{pool}_fold{i}_{train,eval}``, and the default pool
    (:data:`DEFAULT_POOLS`, or the only one) also ``lever_verify_gsm8k_pool_fold{i}_{train,eval}``.
    """
    data_dir = data_dir if data_dir is not None else os.environ.get(DATA_DIR_ENV) or None
    files: dict[tuple[str, str], Path] = {}
    if data_dir is not None:
        files.update(discover_files(data_dir))
    if include_bundled:
        for key, path in bundled_pools().items():
            files.setdefault(key, path)
    pools_per_dataset: dict[str, int] = {}
    for dataset, _ in files:
        pools_per_dataset[dataset] = pools_per_dataset.get(dataset, 0) + 1
    specs: list[TaskSpec] = []
    for (dataset, split), path in sorted(files.items()):
        if _serializer_dataset(dataset) not in SERIALIZER_DATASETS:
            continue
        name = task_name(dataset, split)
        specs.append(TaskSpec(name, _serializer_dataset(dataset), split, path, num_folds=num_folds, fold_seed=fold_seed))
        if is_pool(dataset):
            specs.extend(fold_specs(dataset, split, path, num_folds, fold_seed, name))
            if DEFAULT_POOLS.get(dataset) == split or pools_per_dataset[dataset] == 1:
                specs.extend(fold_specs(dataset, split, path, num_folds, fold_seed, f"lever_verify_{dataset}"))
    return specs


def find_spec(name: str, data_dir: str | os.PathLike | None = None) -> TaskSpec:
    """The spec of task ``name`` among :func:`discover_specs` (TF-free twin of the seqio registry)."""
    specs = discover_specs(data_dir) if data_dir is not None else discover_specs()
    for spec in specs:
        if spec.name == name:
            return spec
    raise KeyError(f"no lever task {name!r}; found: {', '.join(s.name for s in specs) or 'none'} "
                   f"(data dir: argument, gin discover_specs.data_dir or ${DATA_DIR_ENV})")


@gin.configurable
def serialize_options(
    include_program: bool = True,
    include_execution: bool = True,
    include_schema: bool = False,
    max_result_chars: int | None = 5000,
    max_chars: int | None = None,
) -> SerializeOptions:
    """The :class:`SerializeOptions` used when none are passed (gin: ``serialize_options.*``)."""
    return SerializeOptions(include_program, include_execution, include_schema, max_result_chars, max_chars)


def iter_spec_problems(spec: TaskSpec) -> Iterator[Problem]:
    """Stream the executed problems of ``spec`` (fold filter applied)."""
    for problem in read_problems(spec.path, require_execution=True):
        if spec.fold is not None:
            in_fold = fold_of(problem.problem_id, spec.num_folds, spec.fold_seed) == spec.fold
            if in_fold != (spec.fold_role == "eval"):
                continue
        yield problem


def lm_logprobs(problem: Problem) -> tuple[list[float], bool]:
    """Per-candidate LM log-probs, or LEVER's frequency fallback ``log(count / total)``."""
    values = [c.gen_logprob for c in problem.candidates]
    if values and all(v is not None for v in values):
        return [float(v) for v in values], True  # type: ignore[arg-type]
    total = sum(c.count for c in problem.candidates)
    return [math.log(c.count / total) for c in problem.candidates], False


def problem_examples(
    problem: Problem,
    problem_index: int,
    options: SerializeOptions | None = None,
    dataset: str | None = None,
) -> list[dict[str, Any]]:
    """One example dict per candidate of an executed problem (options None: gin ``serialize_options``)."""
    options = options if options is not None else serialize_options()
    if dataset is not None and dataset != problem.dataset:
        problem = problem.replace(dataset=dataset)
    logprobs, has_lp = lm_logprobs(problem)
    dense: dict[str, int] = {}
    out = []
    for index, cand in enumerate(problem.candidates):
        assert cand.execution is not None
        out.append(
            {
                "inputs": serialize(problem, cand, options),
                "targets": target_text(cand),
                "problem_id": problem.problem_id,
                "problem_index": problem_index,
                "candidate_index": index,
                "gen_logprob": logprobs[index],
                "has_gen_logprob": int(has_lp),
                "num_tokens": int(cand.num_tokens or 0),
                "result_id": dense.setdefault(cand.execution.result_key, len(dense)),
                "correct": int(cand.execution.correct),
                "count": int(cand.count),
            }
        )
    return out


def iter_examples(spec: TaskSpec, options: SerializeOptions | None = None) -> Iterator[dict[str, Any]]:
    """Stream the examples of ``spec``: problems in file order, candidates in pool order."""
    options = options if options is not None else serialize_options()
    for problem_index, problem in enumerate(iter_spec_problems(spec)):
        yield from problem_examples(problem, problem_index, options, dataset=spec.dataset)


# Field name -> python type, in the order the pipelines emit them (strings first).
EXAMPLE_FIELDS: Mapping[str, type] = {
    "inputs": str,
    "targets": str,
    "problem_id": str,
    "problem_index": int,
    "candidate_index": int,
    "gen_logprob": float,
    "has_gen_logprob": int,
    "num_tokens": int,
    "result_id": int,
    "correct": int,
    "count": int,
}
