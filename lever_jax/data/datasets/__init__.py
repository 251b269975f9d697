"""Dataset loaders, one module per dataset, imported lazily by name.

Every module exposes ``SPLITS``, ``load_problems(split, variant=None) -> list[Problem]`` (problems
with no candidates) and ``gold_program(problem) -> str | None``. Data comes from
``lever_jax/data/bundled/<dataset>/`` (or a prepared location for databases); nothing reads
outside the package at run time.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from lever_jax.data.schema import Problem

DATASET_MODULES: dict[str, str] = {
    "gsm8k": "lever_jax.data.datasets.gsm8k",
    "mbpp": "lever_jax.data.datasets.mbpp",
    "humaneval": "lever_jax.data.datasets.humaneval",
    "spider": "lever_jax.data.datasets.spider",
    "wikitq": "lever_jax.data.datasets.wikitq",
    "wikitq_binder": "lever_jax.data.datasets.wikitq_binder",
}


def dataset_module(dataset: str) -> ModuleType:
    """The loader module for ``dataset`` (ValueError naming the known datasets otherwise)."""
    try:
        name = DATASET_MODULES[dataset]
    except KeyError:
        raise ValueError(f"unknown dataset {dataset!r}; known: {', '.join(DATASET_MODULES)}") from None
    return importlib.import_module(name)


def splits(dataset: str) -> tuple[str, ...]:
    return tuple(dataset_module(dataset).SPLITS)


def load_problems(dataset: str, split: str, variant: str | None = None) -> list[Problem]:
    """Problems (no candidates) of ``dataset``/``split``; ``variant`` e.g. ``"sanitized"`` for MBPP."""
    module = dataset_module(dataset)
    if split not in module.SPLITS:
        raise ValueError(f"dataset {dataset!r} has no split {split!r}; splits: {', '.join(module.SPLITS)}")
    return module.load_problems(split, variant)


def gold_program(dataset: str, problem: Problem) -> str | None:
    """The gold program as a candidate program (None where the dataset has none, e.g. GSM8k)."""
    return dataset_module(dataset).gold_program(problem)
