"""Dataset name -> executor, and the named options an executor takes.

SQL executors live in ``sql.py`` and are imported lazily by path. An executor option is a
constructor keyword with a closed set of string values (:data:`EXECUTOR_OPTIONS`, the first value
is the default, which is LEVER's behaviour); the executor's ``version`` names the chosen value, so
the execution cache and ``lever-jax run``'s executed-file stamp keep the variants apart. The CLI
spells an option ``lever-jax execute --executor-option KEY=VALUE``; ``lever-jax run`` pools name
theirs in ``lever_jax.pipeline.pools.POOLS`` (``executor_options``).
"""
from __future__ import annotations

import importlib
from typing import Mapping, Sequence

from lever_jax.execution.base import DatasetExecutor

EXECUTORS: dict[str, str] = {
    "gsm8k": "lever_jax.execution.python_gsm8k:GSM8kExecutor",
    "mbpp": "lever_jax.execution.python_tests:MBPPExecutor",
    "humaneval": "lever_jax.execution.python_tests:HumanEvalExecutor",
    "spider": "lever_jax.execution.sql:SpiderExecutor",
    "wikitq": "lever_jax.execution.sql:WikiTQExecutor",
    "wikitq_binder": "lever_jax.execution.wikitq_binder:WikiTQBinderExecutor",
}

# dataset -> option -> allowed values (first = default = LEVER's behaviour). GSM8k ``convention``:
# python_gsm8k.CONVENTIONS (``faithful_cot`` = the bundled pools' Faithful-CoT / PoT conventions);
# WikiTQ ``checker``: wikitq_match.CHECKERS (LEVER's relaxed check or the official evaluator).
EXECUTOR_OPTIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "gsm8k": {"convention": ("lever", "faithful_cot")},
    "wikitq": {"checker": ("lever", "official")},
    "wikitq_binder": {"checker": ("lever", "official")},
}


def check_options(dataset: str, options: Mapping[str, str] | None) -> dict[str, str]:
    """``options`` validated against :data:`EXECUTOR_OPTIONS` (ValueError naming the bad one)."""
    known = EXECUTOR_OPTIONS.get(dataset, {})
    out = {}
    for key, value in (options or {}).items():
        if key not in known:
            names = ", ".join(known) if known else "none"
            raise ValueError(f"executor option {key!r} is not one of {dataset}'s ({names})")
        if value not in known[key]:
            raise ValueError(f"executor option {key}={value!r}: expected one of {', '.join(known[key])}")
        out[key] = value
    return out


def parse_options(dataset: str, items: Sequence[str] | None) -> dict[str, str]:
    """``["KEY=VALUE", ...]`` (the CLI's ``--executor-option``) -> a checked option dict."""
    options: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"executor option {item!r}: expected KEY=VALUE")
        options[key.strip()] = value.strip()
    return check_options(dataset, options)


def get_executor(dataset: str, options: Mapping[str, str] | None = None) -> DatasetExecutor:
    """A new executor for ``dataset`` with ``options`` (ValueError for unknown names or options,
    ImportError if unavailable)."""
    try:
        path = EXECUTORS[dataset]
    except KeyError:
        raise ValueError(f"no executor for dataset {dataset!r}; known: {', '.join(EXECUTORS)}") from None
    checked = check_options(dataset, options)
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)(**checked)
