"""The end-to-end LEVER run (`lever-jax run`): execute -> k-fold verifier -> rerank -> report.

Steps, each resumable (a re-run redoes nothing that is already on disk):
1. execute the pool's samples in the sandbox (lever_jax.execution; cached by the execution cache,
   and the executed file under DIR/executed/ is reused as is), or read a bundled executed file;
2. assign problems to `num_folds` folds (seeded permutation; DIR/folds.json): the verifier that
   scores a problem never trained on it (cross-fitting);
3. encode question / program / execution result with the frozen MiniLM (lever_jax.pipeline.encoder_features;
   cached under DIR/features/), optionally add hand-crafted candidate features
   (lever_jax.pipeline.gsm8k_features), and train a head per fold (lever_jax.pipeline.head) with orbax
   checkpoints under DIR/folds/fold{i}/ (the best by held-out dev loss is kept; a finished fold
   writes scores.npy and is never retrained; an interrupted one resumes from its latest step);
4. score every candidate and rerank with the jitted scorer (lever_jax.rerank.report / scoring);
5. write DIR/scores.json, DIR/metrics.json, DIR/report.md and the PNG plots (lever_jax.rerank.plots).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Sequence

import gin
import numpy as np

from lever_jax.data import paths
from lever_jax.execution.context_ids import check_context_ids
from lever_jax.pipeline.config_checks import check_run_config
from lever_jax.rerank import methods, plots, pool_rows, report, statistics
from lever_jax.pipeline import gsm8k_features
from lever_jax.data.arrays import CandidateArrays, problems_to_arrays
from lever_jax.data.bundled import bundled_path
from lever_jax.data.errors import UserError
from lever_jax.data.folds import fold_rows
from lever_jax.data.jsonl import read_problems, write_json, write_problems
from lever_jax.data.schema import Problem
from lever_jax.pipeline.encoder_features import FeatureConfig, pool_features
from lever_jax.pipeline.finetune import FinetuneConfig
from lever_jax.pipeline.head import HeadConfig, HeadTrainer
from lever_jax.pipeline import protocol as protocols
from lever_jax.pipeline import run_report
from lever_jax.pipeline.training_data import TrainingView, build_view

gin.external_configurable(FeatureConfig, module="lever_jax.pipeline.encoder_features")
gin.external_configurable(HeadConfig, module="lever_jax.pipeline.head")
gin.external_configurable(FinetuneConfig, module="lever_jax.pipeline.finetune")

ABLATIONS = ("none", "no_exec", "no_program", "no_gen_prob", "no_agg")
VERIFIERS = ("head", "trained", "finetune")
POOLS: dict[str, dict[str, Any]] = {
    # GSM8k code-davinci-002 pool: executed here (LEVER's final-locals result text) with the
    # Faithful-CoT / PoT conventions its programs were written for (executor option, registry.py).
    "gsm8k_code002": {"dataset": "gsm8k", "samples": ("gsm8k_pool", "code002.samples.jsonl.gz"),
                      "executor_options": {"convention": "faithful_cot"}},
    "gsm8k_other_llms": {"dataset": "gsm8k", "samples": ("gsm8k_pool", "other_llms.samples.jsonl.gz"),
                         "executor_options": {"convention": "faithful_cot"}},
    # HumanEval CodeGen-16B x 100, like for like: the verifier reads (and candidates group on) the
    # docstring examples' calls (CodeT's tests where there are none), the hidden tests judge
    # (scripts/humaneval_visible_pool.py).
    "humaneval_codegen16b": {"dataset": "humaneval",
                             "executed": ("humaneval_pool", "codegen16b_docstring.executed.jsonl.gz"),
                             "codet": ("humaneval_pool", "codet_test_results.jsonl.gz")},
    # Upper bound, not deployable: the hidden tests' calls feed the verifier and the grouping too.
    "humaneval_codegen16b_hidden_inputs": {"dataset": "humaneval",
                                           "executed": ("humaneval_pool", "codegen16b.executed.jsonl.gz"),
                                           "codet": ("humaneval_pool", "codet_test_results.jsonl.gz")},
    # WikiTQ test x Binder programs with real summed log-probs, executed here (Binder's table w);
    # correct = LEVER's relaxed check, the official evaluator reported beside it.
    "wikitq_binder": {"dataset": "wikitq_binder", "samples": ("wikitq_binder", "binder.samples.jsonl.gz"),
                      "second_checker": ("official evaluator", "correct_official")},
}


@gin.configurable
@dataclasses.dataclass(frozen=True)
class RunConfig:
    """Everything a run depends on (written to DIR/run_config.json)."""

    pool: str = "gsm8k_code002"
    input: Optional[str] = None  # your own samples or executed file (docs/data_format.md) instead of a pool
    max_problems: Optional[int] = None  # first N problems (quick runs)
    num_folds: int = 5
    fold_seed: int = 0
    dev_fraction: float = 0.1  # of each fold's training problems, for checkpoint selection
    ablation: str = "none"
    verifier: str = "head"  # 'head': frozen features + small head; 'trained': lever_jax.pipeline.fold_training (gin train.*);
    # 'finetune': top MiniLM layers fine-tuned on cached lower layers (lever_jax.pipeline.finetune; run.finetune)
    execute: bool = True  # False: use the bundled executed file (recorded results)
    execution_workers: Optional[int] = None
    execution_timeout_s: Optional[float] = None  # None: the executor's own (GSM8k under LEVER's convention: 2 s; else 10 s)
    execution_cache_dir: Optional[str] = None  # default: $LEVER_JAX_CACHE_DIR or ~/.cache/lever_jax
    features_dir: Optional[str] = None  # default: DIR/features
    executed_dir: Optional[str] = None  # default: DIR/executed (the executed pool; shareable)
    folds_dir: Optional[str] = None  # default: DIR/folds (per-fold checkpoints + scores; shareable)
    bootstrap: int = 10_000
    progress: bool = True
    # Training-set size (the paper's figure): each fold's verifier trains on at most this many
    # problems, a seeded subset of its training rows that is nested across sizes (the 250 are among
    # the 500); the dev slice and the held-out problems (what is scored) stay the same.
    train_problems: Optional[int] = None
    # Transfer between LLMs: each fold's verifier trains (and selects its checkpoint) on this pool's
    # problems whose ids are in the training folds of the evaluated pool -- same folds by problem
    # id, so no evaluated problem is ever trained on -- and scores the evaluated pool's fold.
    train_pool: Optional[str] = None
    # 'replace' (transfer, above) or 'add': train on the evaluated pool's training problems AND this
    # pool's samples for them (more programs per question; dev slice and scored problems unchanged).
    train_pool_mode: str = "replace"
    # LEVER's train -> dev -> test protocol (lever_jax.pipeline.protocol): 'lever' trains one verifier
    # on the training split's pool (train_pool, or train_input: a samples / executed file), picks its
    # checkpoint on a dev_fraction slice of those problems and scores every evaluated problem.
    protocol: str = "crossfit"
    train_input: Optional[str] = None


def _sha(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------ 1 execute
def load_pool(cfg: RunConfig, out: Path) -> list[Problem]:
    """Executed problems of the run: the user's file (``RunConfig.input``: executed as is, or a
    samples file executed first) or a bundled pool (executed first when it ships only samples)."""
    if cfg.input is not None:
        return _load_input(cfg, out)
    spec = POOLS.get(cfg.pool)
    if spec is None:
        raise UserError(f"unknown pool {cfg.pool!r}; known: {', '.join(POOLS)} (or RunConfig.input = FILE)")
    if "samples" not in spec or not cfg.execute:
        path = bundled_path(*spec["executed"]) if "executed" in spec else \
            bundled_path(spec["samples"][0], spec["samples"][1].replace(".samples.", ".executed."))
        _log(f"reading executed pool {path} (bundled executed file; nothing is executed)")
        return list(_head(read_problems(path, require_execution=True), cfg.max_problems))
    return _execute(cfg, out, bundled_path(*spec["samples"]), spec["dataset"], cfg.pool, spec.get("executor_options"))


def _head(problems: Iterable[Problem], n: Optional[int]) -> Iterator[Problem]:
    for i, p in enumerate(problems):
        if n is not None and i >= n:
            return
        yield p


def _load_input(cfg: RunConfig, out: Path) -> list[Problem]:
    """The user's file: an executed file is used as is; a samples file is executed first."""
    path = Path(cfg.input)
    if not path.is_file():
        raise UserError(f"RunConfig.input: {path}: " + ("is a directory" if path.is_dir() else "no such file"))
    first = next(iter(read_problems(path)), None)
    if first is None:
        raise UserError(f"RunConfig.input: {path}: the file has no problems")
    if all(c.execution is not None for c in first.candidates):
        _log(f"reading executed file {path} (nothing is executed)")
        return list(_head(read_problems(path, require_execution=True), cfg.max_problems))
    return _execute(cfg, out, path, first.dataset, path.name.split(".")[0])


def execution_limits(cfg: RunConfig, executor: Any) -> Any:
    """The sandbox limits of a run: ``RunConfig.execution_timeout_s``, else the executor's own
    timeout (LEVER's 2 s for GSM8k under its convention; 10 s for the bundled pools' conventions)."""
    from lever_jax.execution.base import Limits

    return Limits.for_timeout(cfg.execution_timeout_s, executor)


def _execute(cfg: RunConfig, out: Path, samples: Path, dataset: str, name: str,
             executor_options: Optional[dict[str, str]] = None) -> list[Problem]:
    """Execute a samples file in the sandbox (cached); the executed file is reused while its stamp
    (samples file, executor version, limits, problem count) matches."""
    from lever_jax.execution.cache import ExecutionCache
    from lever_jax.execution.registry import get_executor
    from lever_jax.execution.runner import RunStats, execute_problems
    from lever_jax.execution.sandbox import Sandbox

    executor = get_executor(dataset, executor_options)
    check_context_ids(samples, dataset, getattr(executor, "db_root", None))  # unknown db / table: exit 2, nothing run
    limits = execution_limits(cfg, executor)
    target = Path(cfg.executed_dir or out / "executed") / f"{name}-{cfg.max_problems or 'all'}.executed.jsonl.gz"
    stamp = target.with_suffix(".json")
    st = samples.stat()
    key = {"samples": str(samples.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
           "max_problems": cfg.max_problems, "executor": f"{executor.dataset}:{executor.version}",
           "limits": dataclasses.asdict(limits)}
    if target.exists() and stamp.exists() and json.loads(stamp.read_text()) == key:
        _log(f"execution: reusing {target}")
        return list(read_problems(target, require_execution=True))
    stats = RunStats()
    cache = ExecutionCache(cfg.execution_cache_dir)
    t0 = time.time()
    try:
        with Sandbox(workers=cfg.execution_workers, limits=limits) as sandbox:
            executed = list(execute_problems(_head(read_problems(samples), cfg.max_problems), executor, sandbox,
                                             cache, progress=cfg.progress, stats=stats))
    finally:
        cache.close()
    write_problems(target, executed)
    write_json(stamp, key)
    _log(f"execution: {stats.candidates} candidates, {stats.executed} run, {stats.cached} cached "
         f"in {time.time() - t0:.0f}s")
    return executed


# ------------------------------------------------------------------------------------ 2 folds
# lever_jax.data.folds (shared with the fold tasks of `lever-jax train`): assign_folds, fold_rows.
def _options_key(cfg: RunConfig) -> dict[str, Any]:
    """The training-data options, only when set (so existing fold directories keep their names)."""
    out = {k: getattr(cfg, k) for k in ("train_problems", "train_pool") if getattr(cfg, k) is not None}
    if cfg.train_input is not None:
        out["train_input"] = _input_key(dataclasses.replace(cfg, input=cfg.train_input))
    if cfg.protocol != "crossfit":
        out["protocol"] = cfg.protocol
    if cfg.train_pool is not None and cfg.train_pool_mode != "replace":
        out["train_pool_mode"] = cfg.train_pool_mode
    return out


# ------------------------------------------------------------------------------------ 3 train
def train_fold(trainer: HeadTrainer, fold: int, folds: np.ndarray, fold_dir: Path, dev_fraction: float,
               seed: int, progress: bool, rows: Optional[dict[str, np.ndarray]] = None) -> np.ndarray:
    """Train on the other folds (minus a dev slice), keep the best-dev-loss checkpoint, score the fold.
    ``rows`` (``TrainingView.rows``) replaces the default fold rows."""
    import jax
    from lever_jax.data.progress import progress_bar

    from lever_jax.training.checkpoints import Checkpointer, abstract_like

    scores_path = fold_dir / "scores.npy"
    if scores_path.exists():
        _log(f"fold {fold}: done already ({scores_path})")
        return np.load(scores_path)
    rows = rows if rows is not None else fold_rows(folds, fold, dev_fraction, seed)
    held, dev, train = rows["heldout"], rows["dev"], rows["train"]
    cfg = trainer.config
    state = trainer.init_state()
    with Checkpointer(fold_dir, keep_latest=1, keep_best=1, best_metric="dev_loss", best_mode="min") as ckpt:
        start = ckpt.latest_step() or 0
        if start:
            state, _ = ckpt.restore(start, abstract_like(state))
            _log(f"fold {fold}: resuming at step {start}")
        bar = progress_bar(total=cfg.steps, initial=start, desc=f"train fold {fold}", unit="step", disable=not progress)
        last: dict[str, float] = {}

        def on_step(step: int, aux: dict) -> None:
            bar.update(1)
            if step % 50 == 0:
                last.update(loss=float(aux["loss"]))
                bar.set_postfix(loss=f"{last['loss']:.3f}")

        step = start
        while step < cfg.steps:
            stop = min(cfg.steps, (step // cfg.eval_every + 1) * cfg.eval_every)
            state = trainer.train(state, train, fold, step, stop, on_step)
            step = stop
            dev_metrics = trainer.eval_metrics(state[0], dev)
            ckpt.save(step, state, {"step": step, "fold": fold},
                      metrics={"dev_loss": dev_metrics["loss"], "dev_binary_acc": dev_metrics["binary_acc"]})
        bar.close()
        ckpt.wait()
        best = ckpt.best_step() or ckpt.latest_step()
        state, _ = ckpt.restore(best, abstract_like(state))
        best_metrics = ckpt.metrics(best) or {}
    scores = trainer.score(jax.device_get(state[0]), held)
    with paths.staged(scores_path) as tmp, open(tmp, "wb") as handle:
        np.save(handle, scores)
    write_json(fold_dir / "fold.json", {"fold": fold, "held_out": int(len(held)), "train": int(len(train)),
                                        "dev": int(len(dev)), "best_step": best, **best_metrics})
    return scores


# ------------------------------------------------------------------------------------ 4-5 report
def training_view(cfg: RunConfig, problems: Sequence[Problem], arrays: CandidateArrays, folds: np.ndarray,
                  out: Path) -> TrainingView:
    """The verifier's problems and fold rows under ``RunConfig.train_pool`` / ``train_problems``."""
    if cfg.train_pool is None and cfg.train_input is None and cfg.train_pool_mode != "replace":
        raise UserError(f"RunConfig.train_pool_mode = {cfg.train_pool_mode!r} needs RunConfig.train_pool "
                        f"(the pool whose samples to add)")
    if cfg.train_pool is not None and cfg.train_pool not in POOLS:
        raise UserError(f"RunConfig.train_pool: unknown pool {cfg.train_pool!r}; known: {', '.join(POOLS)}")
    train = None
    if cfg.train_pool is not None or cfg.train_input is not None:
        train_cfg = dataclasses.replace(cfg, pool=cfg.train_pool or cfg.pool, input=cfg.train_input)
        train = sorted(load_pool(train_cfg, out), key=lambda p: p.problem_id)
        protocols.check_disjoint(cfg.protocol, problems, train, _train_name(cfg))
    if train is not None:
        what = "transfer: the verifier trains on" if cfg.train_pool_mode == "replace" else \
            "extra training data: the verifier also trains on"
        _log(f"{what} {_train_name(cfg)} ({len(train)} problems; same folds by problem id)")
    return build_view(problems, arrays, folds, cfg.fold_seed, cfg.train_problems, train, _train_name(cfg) or "",
                      cfg.train_pool_mode)


def _train_name(cfg: RunConfig) -> Optional[str]:
    return cfg.train_pool if cfg.train_input is None else f"RunConfig.train_input {cfg.train_input}"


@gin.configurable
def run(out_dir: str | os.PathLike, config: RunConfig = gin.REQUIRED, features: FeatureConfig = gin.REQUIRED,
        head: HeadConfig = gin.REQUIRED, command: str = "", gin_text: str = "",
        finetune: FinetuneConfig = FinetuneConfig()) -> dict[str, Any]:
    """Run the whole pipeline into ``out_dir``; returns metrics.json's content."""
    t_start = time.time()
    cfg = config
    check_run_config(cfg, POOLS, ABLATIONS, VERIFIERS)  # the whole config, before any work (UserError: exit 2)
    cfg = dataclasses.replace(cfg, num_folds=protocols.num_folds(cfg.protocol, cfg.num_folds))
    if cfg.ablation == "no_exec":
        head = dataclasses.replace(head, use_result=False)
        finetune = dataclasses.replace(finetune, use_result=False)
    elif cfg.ablation == "no_program":
        head = dataclasses.replace(head, use_program=False)
        finetune = dataclasses.replace(finetune, use_program=False)
    _check_gsm8k_features(cfg, head, finetune)
    use_gen_prob = cfg.ablation != "no_gen_prob"
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    settings = {"run": dataclasses.asdict(cfg), "features": dataclasses.asdict(features),
                "head": dataclasses.asdict(head)}
    if cfg.verifier == "finetune":
        settings["finetune"] = dataclasses.asdict(finetune)
    write_json(out / "run_config.json", settings)
    timings: dict[str, float] = {}

    t = time.time()
    problems = sorted(load_pool(cfg, out), key=lambda p: p.problem_id)
    timings["execute_s"] = time.time() - t
    arrays = problems_to_arrays(problems)
    folds = protocols.evaluated_folds(cfg.protocol, arrays.problem_ids, cfg.num_folds, cfg.fold_seed)
    write_json(out / "folds.json", {"num_folds": cfg.num_folds, "seed": cfg.fold_seed,
                                    "folds": dict(zip(arrays.problem_ids, folds.tolist()))})
    n_cand = int(arrays.mask.sum())
    _log(f"{len(problems)} problems, {n_cand} distinct programs ({arrays.counts.sum()} samples), "
         f"{cfg.num_folds} folds")

    view = training_view(cfg, problems, arrays, folds, out)
    if cfg.verifier == "head":
        ver = _head_verifier(cfg, features, head, view, settings, out, timings)
    elif cfg.verifier == "finetune":
        ver = _finetune_verifier(cfg, finetune, head, view, out, timings)
    else:
        ver = _trained_verifier(cfg, view, out, timings)
    ver = np.where(arrays.mask, ver[:len(problems), :arrays.shape[1]], -np.inf).astype(np.float32)

    t = time.time()
    table = report.method_table(arrays, ver, n_resamples=cfg.bootstrap, use_gen_prob=use_gen_prob)
    if cfg.ablation == "no_agg":  # the headline LEVER row is the one without aggregation
        table = {k: v for k, v in table.items() if k not in ("lever", "lever_voting")}
    headline = "lever_no_agg" if cfg.ablation == "no_agg" else "lever"
    table.update(pool_rows.extra_rows(problems, arrays, ver, cfg.bootstrap))  # lever_count_fallback (ml_ep is in the table)
    checker = POOLS[cfg.pool].get("second_checker")
    second = pool_rows.second_checker(problems, arrays, table, checker[1], cfg.bootstrap) if checker else None
    rel = statistics.reliability(ver, arrays.correct, arrays.mask)
    codet_values = codet_per_problem(cfg, problems, arrays)
    extra = run_report.verifier_summary(table, headline, arrays, ver, rel, codet_values, cfg.bootstrap)
    total = int(arrays.counts.sum(axis=1).max())
    ks = sorted({k for k in (1, 2, 4, 5, 8, 10, 14, 20, 50, 100, total) if k <= total})
    curves = report.accuracy_curves(arrays, ver, ks, 10 if cfg.max_problems else 20, use_gen_prob=use_gen_prob)
    timings["report_s"] = time.time() - t
    timings["total_s"] = time.time() - t_start
    doc = {
        "pool": _pool_name(cfg), "ablation": cfg.ablation, "problems": len(problems), "distinct_programs": n_cand,
        "samples": int(arrays.counts.sum()), "methods": report.metrics_json(table), "verifier": extra,
        **({"methods_second_checker": {"checker": checker[0], **report.metrics_json(second)}} if second else {}),
        "accuracy_at_k": curves, "timings_s": timings, "versions": run_report.versions(), "command": command,
        "training": {"protocol": cfg.protocol, "train_pool": _train_name(cfg), "train_pool_mode": cfg.train_pool_mode,
                     "train_problems": cfg.train_problems,
                     "train_rows_per_fold": [len(view.resolved_rows(f, cfg.dev_fraction, 0)["train"])
                                             for f in range(cfg.num_folds)]},
    }
    write_json(out / "per_problem.json", run_report.per_problem_doc(arrays, ver, table, use_gen_prob, codet_values))
    write_json(out / "metrics.json", doc)
    write_json(out / "scores.json", report.scores_json(arrays, table, ver))
    plots.accuracy_vs_k(curves, out / "accuracy_vs_k.png", title=f"{_pool_name(cfg)}: accuracy vs k")
    plots.reliability_diagram(rel, out / "reliability.png", title=f"{_pool_name(cfg)}: verifier P(yes)")
    paths.write_text_atomic(out / "config.gin", gin_text or gin.operative_config_str())
    run_report.write_report(out / "report.md", doc, table, settings, second=second)
    _log(f"wrote {out}/report.md, metrics.json, scores.json, accuracy_vs_k.png, reliability.png "
         f"({timings['total_s']:.0f}s)")
    return doc


def _head_verifier(cfg: RunConfig, features: FeatureConfig, head: HeadConfig, view: TrainingView,
                   settings: dict[str, Any], out: Path, timings: dict[str, float]) -> np.ndarray:
    """Frozen-encoder features (+ candidate features) and a small head per fold -> log P(yes)
    [view rows, view width]."""
    problems, arrays, folds = view.problems, view.arrays, view.folds
    t = time.time()
    feats = pool_features(problems, arrays.shape[1], features,
                          cfg.features_dir or out / "features", progress=cfg.progress)
    if head.use_candidate_features:  # GSM8k only (_check_gsm8k_features)
        feats = dataclasses.replace(feats, candidate=gsm8k_features.pool_candidate_features(
            problems, arrays.shape[1]))
    timings["features_s"] = time.time() - t
    t = time.time()
    trainer = HeadTrainer(head, feats, arrays.correct, arrays.mask)
    # Fold checkpoints live under a directory named by the settings that change training, so a
    # changed config never resumes a stale fold.
    train_key = _sha({k: settings[k] for k in ("features", "head")} | _fold_key(cfg))
    ver = np.full(arrays.shape, -np.inf, np.float32)
    for fold in range(cfg.num_folds):
        held = np.flatnonzero(folds == fold)
        ver[held] = train_fold(trainer, fold, folds, Path(cfg.folds_dir or out / "folds") / train_key / f"fold{fold}",
                               cfg.dev_fraction, head.seed, cfg.progress, rows=view.rows(fold, cfg.dev_fraction, head.seed))
    timings["train_score_s"] = time.time() - t
    return np.where(arrays.mask, ver, -np.inf).astype(np.float32)


def _finetune_verifier(cfg: RunConfig, finetune: FinetuneConfig, head: HeadConfig, view: TrainingView, out: Path,
                       timings: dict[str, float]) -> np.ndarray:
    """lever_jax.pipeline.finetune on the view; with the training-data options its fold checkpoints
    go under FOLDS/options-<sha>/ (finetune's own key does not name them)."""
    from lever_jax.pipeline.finetune import finetune_verifier

    options = _options_key(cfg)
    if options:
        base = Path(cfg.folds_dir or out / "folds")
        cfg = dataclasses.replace(cfg, folds_dir=str(base / f"options-{_sha(options)}"))

    return finetune_verifier(cfg, finetune, view.problems, view.arrays, view.folds, out, timings, train_fold,
                             lambda fold: view.resolved_rows(fold, cfg.dev_fraction, finetune.seed), head=head)


def _check_gsm8k_features(cfg: RunConfig, head: HeadConfig, finetune: FinetuneConfig) -> None:
    """The hand-crafted candidate features (lever_jax.pipeline.gsm8k_features) exist for GSM8k only:
    asked for on another dataset, one UserError before anything is executed or encoded."""
    if cfg.verifier == "head" and head.use_candidate_features:
        setting, fix = "HeadConfig.use_candidate_features", "HeadConfig.use_candidate_features = False"
    elif cfg.verifier == "finetune" and (finetune.use_candidate_features or finetune.offset_features_head):
        setting, fix = "FinetuneConfig.use_candidate_features / offset_features_head", "both False"
    else:
        return
    others = sorted(_run_datasets(cfg) - {"gsm8k"})
    if others:
        raise UserError(f"{setting}: the hand-crafted candidate features are GSM8k's and this run's problems are "
                        f"{', '.join(others)}; set {fix} for other datasets")


def _run_datasets(cfg: RunConfig) -> set[str]:
    """The datasets of the run's problems and training pool, without executing anything (the input
    file is read once more); a missing input or an unknown pool is reported elsewhere."""
    found = {POOLS.get(cfg.train_pool, {}).get("dataset")} if cfg.train_pool is not None else set()
    if cfg.input is None:
        found.add(POOLS.get(cfg.pool, {}).get("dataset"))
    elif Path(cfg.input).is_file():
        found.update(p.dataset for p in _head(read_problems(cfg.input), cfg.max_problems))
    return {d for d in found if d is not None}


def _fold_key(cfg: RunConfig) -> dict[str, Any]:
    return {"folds": cfg.num_folds, "fold_seed": cfg.fold_seed, "dev_fraction": cfg.dev_fraction,
            "max_problems": cfg.max_problems, "pool": cfg.pool, "execute": cfg.execute, "input": _input_key(cfg),
            **_options_key(cfg)}


def _pool_name(cfg: RunConfig) -> str:
    return cfg.pool if cfg.input is None else Path(cfg.input).name


def _input_key(cfg: RunConfig) -> Optional[dict[str, Any]]:
    if cfg.input is None:
        return None
    st = Path(cfg.input).stat()
    return {"path": str(Path(cfg.input).resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _trained_verifier(cfg: RunConfig, view: TrainingView, out: Path, timings: dict[str, float]) -> np.ndarray:
    """A verifier trained end to end per fold (gin `build_model` / `train.*`) -> log P(yes)
    [view rows, view width]. The dev slice of each fold is seeded by RunConfig.fold_seed."""
    from lever_jax.pipeline import fold_training

    problems, arrays = view.problems, view.arrays
    if cfg.ablation in ("no_exec", "no_program"):  # LEVER's input ablations: the serialized input
        with gin.unlock_config():
            gin.bind_parameter("serialize_options.include_execution", cfg.ablation != "no_exec")
            gin.bind_parameter("serialize_options.include_program", cfg.ablation != "no_program")
    t = time.time()
    # the bindings that shape training (model, train.*, serialize_options.*), not the run's own settings
    training_gin = [line for line in gin.config_str().splitlines()
                    if not any(name in line for name in ("RunConfig.", "FeatureConfig.", "HeadConfig."))]
    train_key = _sha({"gin": training_gin} | _fold_key(cfg))
    ver = np.full(arrays.shape, -np.inf, np.float32)
    for fold in range(cfg.num_folds):
        rows = view.resolved_rows(fold, cfg.dev_fraction, cfg.fold_seed)
        fold_dir = Path(cfg.folds_dir or out / "folds") / train_key / f"fold{fold}"
        _log(f"fold {fold}: training the verifier ({len(rows['train'])} train / {len(rows['dev'])} dev problems)")
        ver[rows["heldout"]] = fold_training.train_fold(problems, rows, arrays.shape[1], fold_dir, cfg.progress)
    timings["train_score_s"] = time.time() - t
    return np.where(arrays.mask, ver, -np.inf).astype(np.float32)


def codet_per_problem(cfg: RunConfig, problems: Sequence[Problem], arrays: CandidateArrays) -> Optional[np.ndarray]:
    """Per-problem expected accuracy of CodeT dual agreement (f64[B]), when the pool ships its tests."""
    spec = POOLS[cfg.pool] if cfg.input is None else {}
    if "codet" not in spec:
        return None
    path = bundled_path(*spec["codet"])
    if not path.exists():
        _log(f"CodeT row skipped: {path} missing (run scripts/run_codet_tests.py)")
        return None
    from lever_jax.data.jsonl import iter_json_lines

    rows = {obj["problem_id"]: obj["passed"] for _, obj in iter_json_lines(path)}
    choice = np.zeros(len(problems), np.int32)
    acc = np.zeros(len(problems))
    for b, p in enumerate(problems):
        bits = rows.get(p.problem_id)
        n = len(p.candidates)
        if not bits or not bits[0]:
            acc[b] = np.nan
            continue
        passes = np.array([[c == "1" for c in s] for s in bits[:n]], bool)
        res = methods.codet_dual_agreement(passes, sample_counts=arrays.counts[b, :n])
        acc[b] = methods.codet_expected_accuracy(res, arrays.correct[b, :n], sample_counts=arrays.counts[b, :n])
        choice[b] = max(int(res.choice), 0)
    # problems with no usable generated test: a random sample (CodeT's convention)
    rand = methods.random_expected(arrays.correct, arrays.mask, arrays.counts)
    return np.where(np.isnan(acc), rand, acc)


