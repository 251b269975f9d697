"""The data of a training run (`TrainDataConfig`): checked settings, the train / dev task specs
(a dev split disjoint from training), and the problems, batcher and dev set the loop reads."""
from __future__ import annotations

import dataclasses
import logging
import time
from typing import Optional

import jax

from lever_jax.data.errors import UserError
from lever_jax.inputs.examples import TaskSpec, file_spec
from lever_jax.inputs.feeds import EvalSet, TrainBatcher, load_eval_set, numpy_problems, resolve_task
from lever_jax.inputs.tokenizers import TextTokenizer
from lever_jax.training import partitioning
from lever_jax.training.configs import TrainDataConfig, TrainLoopConfig, check_batching

log = logging.getLogger("lever_jax.training.runs")


def one_of(task: Optional[str], file: Optional[str], what: str, required: bool) -> None:
    """A task name or a file (not both); ``required``: one of them."""
    if task is not None and file is not None:
        raise UserError(f"{what}: set either the task name or the file, not both "
                        f"(got task {task!r} and file {file!r})")
    if required and task is None and file is None:
        names = {"train": "MIXTURE_OR_TASK_NAME / TRAIN_FILE", "eval": "EVAL_MIXTURE_OR_TASK_NAME / EVAL_FILE"}
        raise UserError(f"no {what} data: set {names[what]} (a task file under gin_configs/tasks/, "
                        f"or --{what}_file / --input FILE)")


def check_settings(data: TrainDataConfig, loop: TrainLoopConfig, data_size: int) -> None:
    """The batch shape against the mesh, the feed and the pipeline, before any data is read."""
    if data.problems_per_batch % (data_size * loop.accum_steps):
        raise UserError(f"BATCH_SIZE (TrainDataConfig.problems_per_batch) = {data.problems_per_batch} must be a "
                        f"multiple of the mesh 'data' size ({data_size}) x ACCUM_STEPS ({loop.accum_steps}): set "
                        f"e.g. --gin_bindings BATCH_SIZE={data_size * loop.accum_steps}")
    check_batching(data.batching, "TrainDataConfig")


def check_pipeline(data: TrainDataConfig) -> None:
    """TrainDataConfig.pipeline's value, and for 'seqio' that only a registered SeqIO task is asked
    for: a task that no task module registered (--task_module tasks.lever_tasks) is one line
    before the model is built."""
    if data.pipeline not in ("numpy", "seqio"):
        raise UserError(f"TrainDataConfig.pipeline must be 'numpy' or 'seqio', got {data.pipeline!r}")
    if data.pipeline == "seqio" and (data.add_gold or data.data_dir or data.file or data.dev_file):
        raise UserError("TrainDataConfig.pipeline='seqio' reads registered SeqIO tasks only: add_gold, "
                        "data_dir and TRAIN_FILE / DEV_FILE need pipeline='numpy'")
    if data.pipeline == "seqio" and data.task:
        from lever_jax.seqio.feeds import registered_task  # imports TensorFlow

        registered_task(data.task)


def data_specs(data: TrainDataConfig, seed: int) -> tuple[TaskSpec, Optional[TaskSpec]]:
    """(train spec, dev spec or None) from task names or executed files.

    Training data without a dev task or file is split: a seeded `dev_fraction` slice of its
    problems becomes the dev set (checkpoint selection), the rest trains (fold tasks are not split
    again: they have ``..._fold{i}_dev``). Dev and train problems must be disjoint (a UserError
    says how many are shared)."""
    one_of(data.task, data.file, "train", required=True)
    one_of(data.dev_task, data.dev_file, "dev", required=False)
    spec = file_spec(data.file) if data.file is not None else resolve_task(data.task, data.data_dir)
    if data.dev_task is None and data.dev_file is None:
        if data.dev_fraction <= 0 or spec.fold is not None or spec.fold_role is not None:
            return spec, None  # fold tasks name their dev slice: ..._fold{i}_dev
        split = dict(dev_fraction=data.dev_fraction, fold_seed=seed)
        return (dataclasses.replace(spec, **split, fold_role="train", name=f"{spec.name}:train"),
                dataclasses.replace(spec, **split, fold_role="dev", name=f"{spec.name}:dev"))
    dev = file_spec(data.dev_file) if data.dev_file is not None else resolve_task(data.dev_task, data.data_dir)
    shared = _ids(spec) & _ids(dev)
    if shared:
        raise UserError(f"dev data {dev.name} shares {len(shared)} problems with the training data "
                        f"{spec.name} (e.g. {sorted(shared)[0]!r}): checkpoints must be selected on "
                        "problems the verifier does not train on")
    return spec, dev


def _ids(spec: TaskSpec) -> frozenset[str]:
    from lever_jax.inputs.examples import file_problem_ids

    selected = spec.selected_ids()
    return selected if selected is not None else frozenset(file_problem_ids(spec.path))


def load_train_inputs(data: TrainDataConfig, spec: TaskSpec, dev_spec: Optional[TaskSpec], tok: TextTokenizer,
                      tokens_key: str, seed: int, accum_steps: int,
                      data_size: int) -> tuple[TrainBatcher, Optional[EvalSet]]:
    """The batcher over the training problems (this host's rows) and the dev set, if any."""
    t0, length = time.time(), data.length
    if data.pipeline == "numpy":
        problems = numpy_problems(spec, tok, length, add_gold=data.add_gold, gold_mode=data.gold_mode,
                                  max_problems=data.max_problems)
    else:
        from lever_jax.seqio.feeds import seqio_problems  # imports TensorFlow

        problems = seqio_problems(data.task, length, max_problems=data.max_problems)
    batcher = TrainBatcher(problems, tok, length, data.problems_per_batch, data.candidates_per_problem, seed,
                           tokens_key=tokens_key, host_rows=partitioning.host_batch_slice(data.problems_per_batch),
                           batching=data.batching, accum_steps=accum_steps,
                           row_multiple=max(1, data_size // jax.process_count()))
    eval_set = None
    if dev_spec is not None:
        eval_set = load_eval_set(dev_spec, tok, length, max_problems=data.max_dev_problems)
    log.info("inputs ready in %.1fs: %d train problems (%s)%s", time.time() - t0, batcher.num_problems, spec.name,
             f", {eval_set.num_problems} dev problems ({dev_spec.name})" if eval_set else ", no dev set")
    return batcher, eval_set
