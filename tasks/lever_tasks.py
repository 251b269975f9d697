"""SeqIO tasks for LEVER verifiers: ``lever_verify_{dataset}_{split}`` over executed files.

Registration (:func:`register_lever_tasks`, also run once at import with the defaults):

- every ``<data_dir>/<dataset>/<split>.executed.jsonl[.gz]`` (``data_dir`` argument, gin binding
  ``discover_specs.data_dir``, or env ``LEVER_JAX_DATA_DIR``) and the bundled pools
  (``lever_jax/data/bundled/<dataset>_pool/<pool>.executed.jsonl.gz``) become
  ``lever_verify_{dataset}_{split}`` (e.g. ``lever_verify_gsm8k_pool_code002``);
- k-fold pools (``*_pool``) also get ``lever_verify_gsm8k_pool_{pool}_fold{i}_{train,dev,eval}`` and,
  for the default pool (``lever_jax.inputs.examples.DEFAULT_POOLS``: GSM8k ``code002``, HumanEval
  ``codegen16b_docstring``; or a folder's only pool), ``lever_verify_gsm8k_pool_fold{i}_{train,dev,eval}``
  (the folds of ``lever_jax.data.folds``, the same as `lever-jax run`'s: a seeded permutation of the
  file's sorted problem ids dealt round-robin, a dev slice of the other folds; 5 folds, seed 0, dev
  fraction 0.1 unless ``discover_specs.num_folds`` / ``fold_seed`` / ``dev_fraction`` say otherwise);
- mixture ``lever_verify_all_train``: every training task (split ``train``), equal rates
  (registered only when at least one exists).

This is the task module that users and gin files import, as in t5x (lever_jax never imports it):
``lever-jax train --task_module tasks.lever_tasks`` (with ``TrainDataConfig.pipeline='seqio'``) imports it
after the gin files are parsed, so the import-time registration sees their ``discover_specs.*``
bindings. Imported before gin is parsed (``import tasks.lever_tasks`` in a gin file, or your own
code), call ``register_lever_tasks()`` again after parsing (vocabulary and serialisation options are
read lazily, when a dataset is built, so only a changed data dir or fold setting needs it). Set
``LEVER_JAX_NO_AUTO_REGISTER=1`` to skip the import-time registration.

The task name fixes the data; any seqio split name ('train', 'validation', 'test') yields it.
Examples are streamed (``seqio.FunctionDataSource`` over ``tf.data.Dataset.from_generator``), one
per candidate, carrying the rerank fields (see ``lever_jax.inputs.examples``). Output features:
``inputs`` and ``targets`` with the gin-chosen vocabulary (``get_vocabulary.name``; or a fixed
``vocab_name``). Use :func:`lever_jax.seqio.feature_converters.feature_converter` for model features.
Pre-tokenising large pools: the tasks carry a ``seqio.CacheDatasetPlaceholder`` after tokenising
(before the length-dependent framing), so ``python -m seqio.scripts.cache_tasks_main
--module_import=tasks.lever_tasks --tasks=NAME --output_cache_dir=DIR`` caches them with Apache Beam
(DirectRunner locally, Dataflow by ``--pipeline_options``); ``LEVER_JAX_SEQIO_CACHE_DIR=DIR`` makes
``get_dataset(use_cached=True)`` read them (:func:`lever_jax.seqio.feeds.cached_dir`, also importable
from here). The cache records the vocabulary: reading it under another one is an error, not silently
wrong ids.
Evaluation: score metric :func:`lever_jax.rerank.grouping.make_rerank_metric_fn` (GSM8k: length-
normalised generation log-prob, as LEVER); it needs only a ``score_fn`` in ``seqio.Evaluator``.
"""
from __future__ import annotations

import functools
import os
from typing import Iterable

import gin
import seqio
import tensorflow as tf

from lever_jax.rerank.grouping import make_rerank_metric_fn, verifier_postprocess
# CACHE_DIR_ENV and cached_dir are this module's API too (lever_jax.seqio.feeds holds them)
from lever_jax.seqio.feeds import CACHE_DIR_ENV, add_env_cache_dirs, cached_dir  # noqa: F401
from lever_jax.seqio.vocab import GinVocabulary, seqio_vocabulary
from lever_jax.inputs.serialize import SerializeOptions
from lever_jax.inputs.examples import TaskSpec, discover_specs, iter_examples
from tasks.preprocessors import EXAMPLE_SIGNATURE, frame_verifier_inputs, tokenize_verifier

SEQIO_SPLITS = ("train", "validation", "test")
TRAIN_MIXTURE = "lever_verify_all_train"
REGISTERED_SPECS: dict[str, TaskSpec] = {}


def _dataset_fn(spec: TaskSpec, options: SerializeOptions | None):
    def dataset_fn(split: str, shuffle_files: bool, seed: int | None = None) -> tf.data.Dataset:
        del split, shuffle_files, seed  # one file per task: the task name fixes the data
        return tf.data.Dataset.from_generator(lambda: iter_examples(spec, options), output_signature=EXAMPLE_SIGNATURE)

    return dataset_fn


def output_features(vocab_name: str | None = None) -> dict[str, seqio.Feature]:
    vocab = GinVocabulary() if vocab_name is None else seqio_vocabulary(vocab_name)
    return {
        "inputs": seqio.Feature(vocabulary=vocab, add_eos=True, dtype=tf.int32),
        "targets": seqio.Feature(vocabulary=vocab, add_eos=False, dtype=tf.int32),
    }


def register_task(
    spec: TaskSpec,
    options: SerializeOptions | None = None,
    vocab_name: str | None = None,
    targets_eos: bool = False,
    name: str | None = None,
) -> seqio.Task:
    """Register one verifier task for ``spec`` (replacing a same-named one)."""
    name = name or spec.name
    seqio.TaskRegistry.remove(name)
    gen_normalize = "mean" if spec.dataset == "gsm8k" else "sum"
    task = seqio.TaskRegistry.add(
        name,
        source=seqio.FunctionDataSource(_dataset_fn(spec, options), splits=SEQIO_SPLITS),
        preprocessors=[
            functools.partial(tokenize_verifier, vocab_name=vocab_name),
            seqio.CacheDatasetPlaceholder(),  # what seqio's cache_tasks_main stores: ids, no length cut
            functools.partial(frame_verifier_inputs, side=spec.side(options), targets_eos=targets_eos, vocab_name=vocab_name),
        ],
        output_features=output_features(vocab_name),
        postprocess_fn=verifier_postprocess,
        metric_fns=[make_rerank_metric_fn(gen_normalize=gen_normalize)],
        shuffle_buffer_size=10_000,
    )
    REGISTERED_SPECS[name] = spec
    return task


@gin.configurable
def register_lever_tasks(
    data_dir: str | None = None,
    options: SerializeOptions | None = None,
    vocab_name: str | None = None,
    targets_eos: bool = False,
) -> list[str]:
    """Register every task found (see the module docstring) and the training mixture; returns names.

    ``data_dir`` None: gin ``discover_specs.data_dir`` or ``$LEVER_JAX_DATA_DIR`` (folds, seed and
    bundled pools also come from ``discover_specs.*``). ``options`` None: gin ``serialize_options``,
    read when a dataset is built. ``vocab_name`` None: gin ``get_vocabulary.name``, likewise.
    """
    specs = discover_specs(data_dir) if data_dir is not None else discover_specs()
    names = [register_task(s, options, vocab_name, targets_eos).name for s in specs]
    register_train_mixture(s.name for s in specs if s.split == "train" and s.fold is None)
    return names


def register_train_mixture(task_names: Iterable[str], name: str = TRAIN_MIXTURE) -> seqio.Mixture | None:
    """A mixture of the given training tasks (equal rates); None when there are none."""
    task_names = sorted(set(task_names))
    seqio.MixtureRegistry.remove(name)
    if not task_names:
        return None
    return seqio.MixtureRegistry.add(name, task_names, default_rate=1.0)


def spec_of(task_name: str) -> TaskSpec:
    """The :class:`TaskSpec` behind a registered task (for the numpy pipeline / evaluation)."""
    try:
        return REGISTERED_SPECS[task_name]
    except KeyError:
        raise KeyError(f"no lever task {task_name!r}; registered: {', '.join(sorted(REGISTERED_SPECS)) or 'none'}") from None


add_env_cache_dirs()
# Register what is visible at import time (env var + bundled pools); call register_lever_tasks()
# again after changing LEVER_JAX_DATA_DIR or gin bindings.
if os.environ.get("LEVER_JAX_NO_AUTO_REGISTER") != "1":
    register_lever_tasks()
