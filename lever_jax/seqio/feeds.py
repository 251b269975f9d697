"""The SeqIO feed of `lever-jax train` (``TrainDataConfig.pipeline='seqio'``): a registered SeqIO task read once
into the trainer's :class:`~lever_jax.inputs.batching.ProblemExamples` (imports seqio + TensorFlow).

The tasks are registered by a task module that the user imports, as in t5x: ``tasks.lever_tasks``
(``lever-jax train --task_module tasks.lever_tasks``, or ``import tasks.lever_tasks`` in a gin file);
lever_jax never imports the top-level ``tasks`` package. Pre-tokenised tasks
(``seqio.scripts.cache_tasks_main``) are read from ``$LEVER_JAX_SEQIO_CACHE_DIR`` when cached there.
The TF-free twin is :func:`lever_jax.inputs.feeds.numpy_problems` (same token ids).
"""
from __future__ import annotations

import os
from typing import Any, Iterable, Optional

import seqio

from lever_jax.data.errors import UserError
from lever_jax.inputs.batching import ProblemExamples

CACHE_DIR_ENV = "LEVER_JAX_SEQIO_CACHE_DIR"
TASK_MODULE = "tasks.lever_tasks"


def add_env_cache_dirs() -> None:
    """``$LEVER_JAX_SEQIO_CACHE_DIR`` (comma-separated) joins seqio's global cache directories
    (idempotent: seqio skips a directory it already has)."""
    dirs = [d.strip() for d in os.environ.get(CACHE_DIR_ENV, "").split(",") if d.strip()]
    if dirs:
        seqio.add_global_cache_dirs(dirs)


def registered_task(task_name: str) -> seqio.Task | seqio.Mixture:
    """The registered SeqIO task or mixture ``task_name``; a UserError naming the task module to
    import when no module registered it."""
    try:
        return seqio.get_mixture_or_task(task_name)
    except ValueError:
        raise UserError(f"SeqIO task {task_name!r} is not registered: import the module that registers it "
                        f"(lever-jax train --task_module {TASK_MODULE}, or `import {TASK_MODULE}` in a gin "
                        "file)") from None


def cached_dir(task_name: str) -> str | None:
    """Where seqio found ``task_name`` pre-tokenised by ``seqio.scripts.cache_tasks_main`` (under a
    ``$LEVER_JAX_SEQIO_CACHE_DIR`` directory or ``seqio.add_global_cache_dirs``); None: not cached.
    Read it with ``task.get_dataset(..., use_cached=True)``; the cached examples are shuffled, so
    sort by (``problem_index``, ``candidate_index``) for the uncached order."""
    add_env_cache_dirs()
    task = registered_task(task_name)
    if not getattr(task, "supports_caching", False):
        return None
    return task.cache_dir


def seqio_problems(task_name: str, inputs_length: int,
                   max_problems: Optional[int] = None) -> list[ProblemExamples]:
    """Tokenised problems read through the registered SeqIO task ``task_name``: from its
    ``seqio.scripts.cache_tasks_main`` cache when one exists (:func:`cached_dir`), put back in the
    uncached order (the cache stores examples shuffled)."""
    task = registered_task(task_name)
    use_cached = cached_dir(task_name) is not None
    ds = task.get_dataset(sequence_length={"inputs": inputs_length, "targets": 1},
                          split="train", shuffle=False, use_cached=use_cached)
    examples: Iterable[dict[str, Any]] = ds.as_numpy_iterator()
    if use_cached:
        examples = sorted(examples, key=lambda ex: (int(ex["problem_index"]), int(ex["candidate_index"])))
    grouped: dict[int, list[dict[str, Any]]] = {}
    for ex in examples:
        index = int(ex["problem_index"])
        if index not in grouped and max_problems is not None and len(grouped) >= max_problems:
            break
        grouped.setdefault(index, []).append(ex)
    return [ProblemExamples.from_examples(index, exs, [ex["inputs"] for ex in exs])
            for index, exs in grouped.items()]
