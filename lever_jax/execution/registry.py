"""Dataset name -> executor. SQL executors live in ``sql.py`` and are imported lazily by path."""
from __future__ import annotations

import importlib

from lever_jax.execution.base import DatasetExecutor

EXECUTORS: dict[str, str] = {
    "gsm8k": "lever_jax.execution.python_gsm8k:GSM8kExecutor",
    "mbpp": "lever_jax.execution.python_tests:MBPPExecutor",
    "humaneval": "lever_jax.execution.python_tests:HumanEvalExecutor",
    "spider": "lever_jax.execution.sql:SpiderExecutor",
    "wikitq": "lever_jax.execution.sql:WikiTQExecutor",
    "wikitq_binder": "lever_jax.execution.wikitq_binder:WikiTQBinderExecutor",
}


def get_executor(dataset: str) -> DatasetExecutor:
    """A new executor for ``dataset`` (ValueError for unknown names, ImportError if unavailable)."""
    try:
        path = EXECUTORS[dataset]
    except KeyError:
        raise ValueError(f"no executor for dataset {dataset!r}; known: {', '.join(EXECUTORS)}") from None
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)()
