"""Gin-configurable training and evaluation runs (the bodies of `lever-jax train` / `lever-jax eval`).

Entry points: `lever-jax train` and `lever-jax eval` (lever_jax.training.launch), with t5x-style
flags --gin_file, --gin_bindings, --gin_search_paths and --distributed. Gin files are layered as
in t5x: a run file (gin_configs/runs/train.gin, eval.gin) binds `train.*` / `evaluate.*` and the
setting groups of lever_jax.training.configs (`TrainDataConfig`, `EvalDataConfig`,
`TrainLoopConfig`, `CheckpointConfig`, `ScoringConfig`, `PartitionConfig`) to macros that a model
file (gin_configs/models/*.gin: MODEL, VOCABULARY_NAME, the architecture) and a task file
(gin_configs/tasks/*.gin: task names or executed files, lengths, LEVER's per-dataset batch,
learning rate, steps and selection metric) define; each macro is defined in exactly one of them,
so their order does not matter. Other configurables: `OptimizerConfig`, `LossConfig`.

Data: a registered task name (`MIXTURE_OR_TASK_NAME`, ...) or any executed file (`TRAIN_FILE`,
`DEV_FILE`, `EVAL_FILE`, docs/data_format.md). Checkpoints are selected on a dev split that never
overlaps the reported problems: `DEV_FILE` / `DEV_MIXTURE_OR_TASK_NAME`, else a seeded
`TrainDataConfig.dev_fraction` slice of `TRAIN_FILE` (lever_jax.data.folds.dev_split).

`train()` resumes from MODEL_DIR's latest checkpoint when there is one (same step, data position
and RNG), logs one JSON line per logged step to MODEL_DIR/metrics.jsonl (+ TensorBoard), saves
checkpoints every `CheckpointConfig.every` steps and on every evaluation (dev metrics rank them;
the best `keep_best` are kept besides the latest), and writes the operative gin config to
MODEL_DIR/config.gin (the loop: lever_jax.training.loop). `--distributed` calls
jax.distributed.initialize() first (multi-host); each host then loads only its rows of every batch.
"""
from __future__ import annotations

import logging
import os
import time
from typing import Any, Optional

import gin
import jax

from lever_jax.data import paths
from lever_jax.data.errors import UserError
from lever_jax.inputs.tokenizers import TextTokenizer, get_vocabulary
from lever_jax.models.base import VerifierModel
from lever_jax.models.configs import LossConfig
from lever_jax.training.checkpoints import Checkpointer
from lever_jax.training.configs import (CheckpointConfig, EvalDataConfig, PartitionConfig, ScoringConfig,
                                        TrainDataConfig, TrainLoopConfig, check_batching)
from lever_jax.training.loop import TrainLoop, open_checkpoints, restore_for_eval
from lever_jax.training.metric_sinks import MetricsWriter
from lever_jax.training.train_data import check_pipeline, check_settings, data_specs, load_train_inputs, one_of
from lever_jax.training.trainer import OptimizerConfig, Trainer

log = logging.getLogger("lever_jax.training.runs")
gin.external_configurable(OptimizerConfig, module="lever_jax.training.trainer")
gin.external_configurable(LossConfig, module="lever_jax.models.configs")


def gin_model(configurable: str = "train") -> VerifierModel:
    """Build the model the parsed gin config passes to `train` / `evaluate` (``<configurable>.model``),
    e.g. to inspect or count it without training."""
    ref = gin.query_parameter(f"{configurable}.model")
    return ref.scoped_configurable_fn() if isinstance(ref, gin.config.ConfigurableReference) else ref


def configured_model(model: Optional[VerifierModel], tok: TextTokenizer) -> VerifierModel:
    """The model the gin files name, fitted to the vocabulary, logged with its parameter count."""
    if model is None:
        raise UserError("train.model / evaluate.model is not set: add a model file "
                        "(--gin_file gin_configs/models/<model>.gin defines MODEL)")
    if not isinstance(model, VerifierModel):
        raise UserError(f"MODEL must build a lever_jax.models.base.VerifierModel, got {type(model).__name__}")
    model = model.for_vocabulary(tok)
    log.info("model: %s; %s parameters; vocabulary %r (%d ids)", model.describe(),
             f"{model.num_parameters():,}", tok.spec, tok.vocab_size)
    return model


@gin.configurable(module="lever_jax.training.runs", denylist=["argv_note"])
def train(
    model_dir: str = gin.REQUIRED,
    train_steps: int = gin.REQUIRED,
    model: Optional[VerifierModel] = None,
    data: Optional[TrainDataConfig] = None,
    loop: Optional[TrainLoopConfig] = None,
    optimizer: Optional[OptimizerConfig] = None,
    checkpoint: Optional[CheckpointConfig] = None,
    scoring: Optional[ScoringConfig] = None,
    partition: Optional[PartitionConfig] = None,
    argv_note: str = "",
) -> dict[str, Any]:
    """Train (or resume) and return the last logged record (see the module docstring). A setting
    group left None is built from its gin bindings."""
    data, loop = data or TrainDataConfig(), loop or TrainLoopConfig()
    checkpoint, scoring = checkpoint or CheckpointConfig(), scoring or ScoringConfig()
    paths.require(model_dir)  # a gs:// MODEL_DIR without gcsfs: one line now, not after loading the data
    length = data.length
    check_pipeline(data)
    spec, dev_spec = data_specs(data, loop.seed)
    model_dir_path = paths.location(model_dir)  # a local Path or a URL (gs://...): lever_jax.data.paths
    lead = jax.process_index() == 0
    tok = get_vocabulary()
    model = configured_model(model, tok)
    mesh, rules = (partition or PartitionConfig()).mesh_and_rules()
    data_size = mesh.shape["data"]
    check_settings(data, loop, data_size)
    trainer = Trainer(model, optimizer or OptimizerConfig(), train_steps, mesh, rules, length, loop.accum_steps,
                      loop.dropout, data.batching)
    log.info("mesh %s, %d problems x %d candidates x %d tokens per step, accum %d, %s batches", dict(mesh.shape),
             data.problems_per_batch, data.candidates_per_problem, length, loop.accum_steps, data.batching)
    batcher, eval_set = load_train_inputs(data, spec, dev_spec, tok, model.tokens_key, loop.seed,
                                          loop.accum_steps, data_size)
    ckpt = Checkpointer(model_dir_path, keep_latest=checkpoint.keep_latest, keep_best=checkpoint.keep_best,
                        best_metric=checkpoint.best_metric if eval_set is not None else None,
                        async_save=checkpoint.async_save)
    start, state = open_checkpoints(ckpt, trainer, loop.seed, batcher.num_problems, loop.init_params)
    writer = MetricsWriter(model_dir_path, resume_step=start if start else None, enabled=lead)
    if lead:
        paths.write_text_atomic(paths.join(model_dir_path, "config.gin"), gin.operative_config_str() + argv_note)
    runner = TrainLoop(trainer, batcher, eval_set, writer, ckpt, data.problems_per_batch, loop, checkpoint, scoring)
    try:
        return runner.run(state, start, train_steps, loop.progress_bar and lead)
    finally:
        ckpt.close()
        writer.close()


def eval_output_paths(model_dir: str, name: str, output: Optional[str],
                      output_dir: Optional[str]) -> tuple[str, str]:
    """(scores file, metrics file): ``output`` or OUTPUT_DIR (default MODEL_DIR/eval)/<name>.scores.json,
    the metrics beside it as <stem>.metrics.json; local paths or URLs alike (lever_jax.data.paths)."""
    scores = os.fspath(output) if output else paths.join(output_dir or paths.join(model_dir, "eval"),
                                                         f"{name}.scores.json")
    stem = paths.basename(scores).replace(".scores.json", "").replace(".json", "")
    return scores, paths.sibling(scores, stem + ".metrics.json")


@gin.configurable(module="lever_jax.training.runs")
def evaluate(
    model_dir: str = gin.REQUIRED,
    model: Optional[VerifierModel] = None,
    data: Optional[EvalDataConfig] = None,
    output: Optional[str] = None,
    output_dir: Optional[str] = None,
    checkpoint_step: Any = "best",
    checkpoint: Optional[CheckpointConfig] = None,
    optimizer: Optional[OptimizerConfig] = None,
    scoring: Optional[ScoringConfig] = None,
    partition: Optional[PartitionConfig] = None,
) -> dict[str, Any]:
    """Score every candidate of the eval task or file with a checkpoint ('best' by
    `CheckpointConfig.best_metric` among the dev-evaluated steps, 'latest' or a step number) and
    write, atomically, the scores file (`output`, default OUTPUT_DIR/<task>.scores.json; per problem
    every candidate's gen_logprob, verifier_logprob, group, final score and every method's choice:
    the schema `lever-jax rerank --verifier-scores` reads) and the metrics next to it
    (<name>.metrics.json). The input is read once, the method table computed once and LEVER's rerank done once.
    `optimizer` must match training's (it shapes the restored state): use the same gin files."""
    from lever_jax.data.jsonl import write_json
    from lever_jax.rerank.scores_file import default_gen_normalize, eval_outputs

    data, scoring = data or EvalDataConfig(), scoring or ScoringConfig()
    one_of(data.task, data.file, "eval", required=True)
    for where in (model_dir, output, output_dir):
        if where:
            paths.require(where)
    length = data.length
    tok = get_vocabulary()
    eval_set = _eval_set(data, tok)  # input mistakes before the model is built
    model = configured_model(model, tok)
    mesh, rules = (partition or PartitionConfig()).mesh_and_rules()
    check_batching(data.batching, "EvalDataConfig")
    trainer = Trainer(model, optimizer or OptimizerConfig(), 1, mesh, rules, length, batching=data.batching)
    step, state = restore_for_eval(model_dir, trainer, (checkpoint or CheckpointConfig()).best_metric,
                                   checkpoint_step)
    t0 = time.time()
    scores = trainer.score_tokens(state.params, eval_set.tokens, scoring.batch_size)
    seconds = time.time() - t0
    norm = scoring.gen_normalize or default_gen_normalize(eval_set.dataset)
    metrics, document = eval_outputs(eval_set, scores, norm, task=eval_set.name, checkpoint_step=step)
    metrics.update({"checkpoint_step": step, "task": eval_set.name, "gen_normalize": norm, "score_seconds": seconds,
                    "candidates_per_sec": float(len(eval_set.tokens) / max(seconds, 1e-9))})
    name = data.task or paths.basename(data.file).split(".")[0]
    scores_path, metrics_path = eval_output_paths(model_dir, name, output, output_dir)
    if jax.process_index() == 0:
        write_json(scores_path, document, indent=None)
        write_json(metrics_path, metrics)
        log.info("evaluated step %d on %s (%d problems): wrote %s and %s", step, eval_set.name,
                 eval_set.num_problems, scores_path, metrics_path)
    log.info("metrics: %s", {k: round(v, 4) for k, v in metrics.items() if isinstance(v, float)})
    return metrics


def _eval_set(data: EvalDataConfig, tok: TextTokenizer) -> Any:
    """The EvalSet of the eval task, or of the eval file read once (spec and problems together)."""
    from lever_jax.inputs.examples import read_file_task
    from lever_jax.inputs.feeds import load_eval_set, resolve_task

    if data.file is not None:
        spec, problems = read_file_task(data.file)
        return load_eval_set(spec, tok, data.length, max_problems=data.max_problems, problems=problems)
    return load_eval_set(resolve_task(data.task, data.data_dir), tok, data.length, max_problems=data.max_problems)
