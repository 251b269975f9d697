"""Verifier examples from executed files, without TensorFlow: task specs, folds, per-candidate records.

Shared by the SeqIO tasks (``tasks/lever_tasks.py``) and the pure-numpy pipeline
(``lever_jax/inputs/batching.py``) so both see exactly the same examples in the same order.

Data layout: a *data dir* holds ``<dataset>/<split>.executed.jsonl[.gz]``. Task specs are discovered
from the directory named by the ``LEVER_JAX_DATA_DIR`` env var (or an explicit argument, or gin
``discover_specs.data_dir``), then the bundled pools
(``lever_jax/data/bundled/<dataset>_pool/<pool>.executed.jsonl.gz``, e.g. ``gsm8k_pool/code002``).

Folds (k-fold pools, e.g. the GSM8k test-set pool): ``lever_jax.data.folds``, the same folds as
`lever-jax run` (a seeded permutation of the file's sorted problem ids; defaults 5 folds, seed 0,
dev fraction 0.1). Fold ``i`` of a pool gives three tasks: ``..._fold{i}_train`` (the other folds
minus a dev slice), ``..._fold{i}_dev`` (that slice: checkpoint selection) and ``..._fold{i}_eval``
(the held-out fold: reported). Dev and eval never overlap.

Any executed file can be a task too (:func:`file_spec`): role None (all problems), or 'train' /
'dev' for a file used whole for training with a seeded dev slice carved out
(``lever_jax.data.folds.dev_split``).

Example fields (one per candidate): ``inputs``/``targets`` text, ``problem_id``, ``problem_index``
(0-based order of the problem within the task), ``candidate_index``, ``gen_logprob``,
``num_tokens``, ``result_id`` (dense per problem, first appearance of ``result_key``), ``correct``
(0/1), ``count``, ``has_gen_logprob``. When a problem has any candidate without a generation
log-prob, every candidate of it gets LEVER's frequency fallback ``log(count / total count)``
instead, and ``has_gen_logprob`` = 0.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import gin

from lever_jax.data import folds as folds_lib
from lever_jax.data import paths
from lever_jax.data.bundled import bundled_path
from lever_jax.data.errors import UserError
from lever_jax.data.jsonl import DataFileError, iter_json_lines, read_problems
from lever_jax.data.schema import Problem
from lever_jax.inputs.serialize import SerializeOptions, serialize, target_text, truncation_side

DATA_DIR_ENV = "LEVER_JAX_DATA_DIR"
POOL_SUFFIX = "_pool"
POOL_DATASET = "gsm8k_pool"
# The pool that also gets the short fold names (lever_verify_<dataset>_pool_fold{i}_{role}); a pool
# folder with a single pool file uses that one.
# HumanEval: the like-for-like pool (verifier inputs from the docstring examples; ``codegen16b`` feeds
# the hidden tests' calls to the verifier: an upper bound).
DEFAULT_POOLS = {"gsm8k_pool": "code002", "humaneval_pool": "codegen16b_docstring"}
SERIALIZER_DATASETS = ("gsm8k", "mbpp", "humaneval", "spider", "wikitq")
DEFAULT_NUM_FOLDS = folds_lib.DEFAULT_NUM_FOLDS
DEFAULT_FOLD_SEED = folds_lib.DEFAULT_FOLD_SEED
DEFAULT_DEV_FRACTION = folds_lib.DEFAULT_DEV_FRACTION
FOLD_ROLES = ("train", "dev", "eval")
SUFFIXES = (".executed.jsonl.gz", ".executed.jsonl")
_NAME_RE = re.compile(r"^[A-Za-z0-9_]+$")


class UnknownTaskError(UserError, KeyError):
    """A task name that no data dir or bundled pool provides (a user mistake; also a KeyError)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """One verifier task: the executed file it reads, and an optional problem filter.

    With ``fold`` set, ``fold_role`` is 'train' (the other folds minus the dev slice), 'dev' (the
    slice) or 'eval' (the held-out fold). Without a fold, ``fold_role`` None reads every problem,
    'train' / 'dev' split the whole file by :func:`lever_jax.data.folds.dev_split`.
    """

    name: str
    dataset: str  # a serializer dataset name (gsm8k, mbpp, ...); the pool uses gsm8k
    split: str
    path: Path | str  # a local Path, or a URL string (gs://...) read through lever_jax.data.paths
    fold: int | None = None
    fold_role: str | None = None
    num_folds: int = DEFAULT_NUM_FOLDS
    fold_seed: int = DEFAULT_FOLD_SEED
    dev_fraction: float = DEFAULT_DEV_FRACTION

    def __post_init__(self) -> None:
        roles = FOLD_ROLES if self.fold is not None else (None, "train", "dev")
        if self.fold_role not in roles:
            raise ValueError(f"task {self.name}: fold_role must be one of {roles}, got {self.fold_role!r}")

    @property
    def is_training(self) -> bool:
        return self.fold_role == "train" or (self.fold_role is None and self.split == "train")

    @property
    def truncation_side(self) -> str:
        """Side too-long inputs are cut from, per gin ``serialize_options.truncation`` (LEVER: right)."""
        return truncation_side(self.dataset, serialize_options())

    def side(self, options: SerializeOptions | None = None) -> str:
        """Truncation side under explicit ``options`` (None: gin ``serialize_options``)."""
        return truncation_side(self.dataset, options if options is not None else serialize_options())

    def selected_ids(self) -> frozenset[str] | None:
        """The problem ids this task reads (None: all of the file)."""
        if self.fold is None and self.fold_role is None:
            return None
        ids = file_problem_ids(self.path)
        if self.fold is None:
            train, dev = folds_lib.dev_split(ids, self.dev_fraction, self.fold_seed)
            return train if self.fold_role == "train" else dev
        role = "heldout" if self.fold_role == "eval" else self.fold_role
        return folds_lib.role_ids(ids, self.fold, role, self.num_folds, self.fold_seed, self.dev_fraction)


@functools.lru_cache(maxsize=32)
def _file_ids(path: str, size: int, version: str) -> tuple[tuple[str, ...], str | None]:
    ids, dataset = [], None
    for line, obj in iter_json_lines(path):
        if not isinstance(obj, dict) or not isinstance(obj.get("problem_id"), str):
            raise DataFileError(path, line, "problem_id", "missing or not a string")
        ids.append(obj["problem_id"])
        dataset = dataset or obj.get("dataset")
    return tuple(ids), dataset


def _stat_key(path: str | os.PathLike) -> tuple[str, int, str]:
    return paths.version_key(path)  # local mtime or an object's generation


def file_problem_ids(path: str | os.PathLike) -> tuple[str, ...]:
    """Problem ids of an executed file in file order (cached per file version)."""
    return _file_ids(*_stat_key(path))[0]


def file_spec(path: str | os.PathLike, role: str | None = None, dataset: str | None = None,
              dev_fraction: float = DEFAULT_DEV_FRACTION, seed: int = DEFAULT_FOLD_SEED) -> TaskSpec:
    """A task over a user's executed file (the data contract, docs/data_format.md).

    ``role`` None: every problem; 'train' / 'dev': the file split by a seeded dev slice.
    ``dataset`` None: the file's own ``dataset`` field (of its first problem).
    """
    path = _existing_file(path)
    ids, file_dataset = _file_ids(*_stat_key(path))
    return _file_task(path, ids, file_dataset, role, dataset, dev_fraction, seed)


def read_file_task(path: str | os.PathLike) -> tuple[TaskSpec, list[Problem]]:
    """(:func:`file_spec` of ``path``, its executed problems) from one read of the file (what
    `lever-jax eval --input` needs: on gs:// a second read is a second download)."""
    path = _existing_file(path)
    problems = list(read_problems(path, require_execution=True))
    dataset = next((p.dataset for p in problems if p.dataset), None)
    return _file_task(path, tuple(p.problem_id for p in problems), dataset, None, None,
                      DEFAULT_DEV_FRACTION, DEFAULT_FOLD_SEED), problems


def _existing_file(path: str | os.PathLike) -> Path | str:
    path = paths.location(path)
    if paths.isdir(path):
        raise DataFileError(path, None, "path", "is a directory, expected an executed JSONL(.gz) file")
    if not paths.exists(path):
        raise DataFileError(path, None, "path", "no such file")
    return path


def _file_task(path: Path | str, ids: Sequence[str], file_dataset: str | None, role: str | None,
               dataset: str | None, dev_fraction: float, seed: int) -> TaskSpec:
    if not ids:
        raise DataFileError(path, None, "problems", "the file has no problems")
    dataset = _serializer_dataset(dataset or file_dataset or "")
    if dataset not in SERIALIZER_DATASETS:
        raise DataFileError(path, 1, "dataset", f"{dataset!r} is not one of {', '.join(SERIALIZER_DATASETS)}")
    base = paths.basename(path)
    name = f"file:{base}" + (f":{role}" if role else "")
    stem = base.rsplit(".", 1)[0] if "." in base else base
    return TaskSpec(name, dataset, _split_of(path) or stem, path, fold=None, fold_role=role,
                    fold_seed=seed, dev_fraction=dev_fraction)


def task_name(dataset: str, split: str) -> str:
    return f"lever_verify_{dataset}_{split}"


def _split_of(path: Path | str) -> str | None:
    base = paths.basename(path)
    for suffix in SUFFIXES:
        if base.endswith(suffix):
            split = base[: -len(suffix)]
            return split if _NAME_RE.match(split) else None
    return None


def discover_files(data_dir: str | os.PathLike) -> dict[tuple[str, str], Path | str]:
    """``{(dataset, split): path}`` for every ``<dataset>/<split>.executed.jsonl[.gz]`` under ``data_dir``
    (a local directory or a URL, e.g. ``gs://bucket/data``: paths are then URL strings)."""
    root = paths.location(data_dir)
    if not paths.isdir(root):
        raise FileNotFoundError(f"data dir not found: {root} (set {DATA_DIR_ENV} or pass data_dir)")
    found: dict[tuple[str, str], Path | str] = {}
    for dataset_dir, is_dir in paths.list_entries(root):
        name = paths.basename(dataset_dir)
        if not is_dir or not _NAME_RE.match(name):
            continue
        for path, _ in paths.list_entries(dataset_dir):
            split = _split_of(path)
            if split is not None:
                found.setdefault((name, split), paths.location(path))  # .gz listed first wins
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


def fold_specs(dataset: str, split: str, path: Path | str, num_folds: int, fold_seed: int, prefix: str,
               dev_fraction: float = DEFAULT_DEV_FRACTION) -> list[TaskSpec]:
    """``{prefix}_fold{i}_{train,dev,eval}`` specs over one pool file."""
    return [
        TaskSpec(f"{prefix}_fold{i}_{role}", _serializer_dataset(dataset), split, path, i, role, num_folds,
                 fold_seed, dev_fraction)
        for i in range(num_folds)
        for role in FOLD_ROLES
    ]


@gin.configurable
def discover_specs(
    data_dir: str | os.PathLike | None = None,
    include_bundled: bool = True,
    num_folds: int = DEFAULT_NUM_FOLDS,
    fold_seed: int = DEFAULT_FOLD_SEED,
    dev_fraction: float = DEFAULT_DEV_FRACTION,
) -> list[TaskSpec]:
    """Every task spec: user files (``data_dir`` or ``$LEVER_JAX_DATA_DIR``), then bundled pools.

    A dataset directory named ``<dataset>_pool`` (user or bundled, e.g. ``gsm8k_pool``) is a k-fold
    pool over test problems: besides ``lever_verify_gsm8k_pool_{pool}`` it gets
    ``lever_verify_gsm8k_pool_{pool}_fold{i}_{train,dev,eval}``, and the default pool
    (:data:`DEFAULT_POOLS`, or the only one) also ``lever_verify_gsm8k_pool_fold{i}_{train,dev,eval}``.
    """
    data_dir = data_dir if data_dir is not None else os.environ.get(DATA_DIR_ENV) or None
    files: dict[tuple[str, str], Path | str] = {}
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
        specs.append(TaskSpec(name, _serializer_dataset(dataset), split, path, num_folds=num_folds,
                              fold_seed=fold_seed, dev_fraction=dev_fraction))
        if is_pool(dataset):
            specs.extend(fold_specs(dataset, split, path, num_folds, fold_seed, name, dev_fraction))
            if DEFAULT_POOLS.get(dataset) == split or pools_per_dataset[dataset] == 1:
                specs.extend(fold_specs(dataset, split, path, num_folds, fold_seed, f"lever_verify_{dataset}",
                                        dev_fraction))
    return specs


def find_spec(name: str, data_dir: str | os.PathLike | None = None) -> TaskSpec:
    """The spec of task ``name`` among :func:`discover_specs` (TF-free twin of the seqio registry)."""
    specs = discover_specs(data_dir) if data_dir is not None else discover_specs()
    for spec in specs:
        if spec.name == name:
            return spec
    raise UnknownTaskError(f"no lever task {name!r}; found: {', '.join(s.name for s in specs) or 'none'} "
                   f"(data dir: argument, gin discover_specs.data_dir or ${DATA_DIR_ENV})")


@gin.configurable
def serialize_options(
    include_program: bool = True,
    include_execution: bool = True,
    include_schema: bool = False,
    max_result_chars: int | None = 5000,
    max_chars: int | None = None,
    style: str = "lever",
    truncation: str = "right",
) -> SerializeOptions:
    """The :class:`SerializeOptions` used when none are passed (gin: ``serialize_options.*``;
    ``style='legacy'`` / ``truncation='left_sql'`` give the pre-issue-13 inputs)."""
    return SerializeOptions(include_program, include_execution, include_schema, max_result_chars, max_chars,
                            style, truncation)


def iter_spec_problems(spec: TaskSpec) -> Iterator[Problem]:
    """Stream the executed problems of ``spec`` (fold / dev filter applied), in file order."""
    selected = spec.selected_ids()
    for problem in read_problems(spec.path, require_execution=True):
        if selected is None or problem.problem_id in selected:
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
