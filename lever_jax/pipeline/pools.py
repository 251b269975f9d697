"""The problems of a `lever-jax run`: the bundled pools (:data:`POOLS`) or the user's file, executed
in the sandbox when they ship only samples (cached), the training pool of the transfer / LEVER
protocol options (:func:`training_view`) and a pool's CodeT row."""
from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Optional, Sequence

import numpy as np

from lever_jax.data.arrays import CandidateArrays
from lever_jax.data.bundled import bundled_path
from lever_jax.data.errors import UserError
from lever_jax.data.jsonl import read_problems, write_json, write_problems
from lever_jax.data.schema import Problem
from lever_jax.execution.context_ids import check_context_ids
from lever_jax.pipeline import protocol as protocols
from lever_jax.pipeline.run_keys import log, train_name
from lever_jax.pipeline.training_data import TrainingView, build_training_view, with_gold_rows
from lever_jax.rerank import methods

if TYPE_CHECKING:
    from lever_jax.pipeline.run import RunConfig

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
    # MBPP sampled by lever-jax itself from Qwen2.5-Coder-0.5B-Instruct (Q4_K_M; `lever-jax sample`,
    # scripts/sample_qwen_pools.sh): the test split (500) and the train split (374) that LEVER's
    # protocol trains on; 5 samples at temperature 0.6 + the greedy decode, real summed log-probs.
    # ``train_pool``: the TRAIN split's pool LEVER's protocol trains on; ``train_split_of``: a training
    # pool, never a table of its own.
    "mbpp_qwen05b": {"dataset": "mbpp", "samples": ("qwen05b_pools", "mbpp_test.samples.jsonl.gz"),
                     "train_pool": "mbpp_qwen05b_train"},
    "mbpp_qwen05b_train": {"dataset": "mbpp", "samples": ("qwen05b_pools", "mbpp_train.samples.jsonl.gz"),
                           "train_split_of": "mbpp_qwen05b"},
    # Spider dev (all 1,034 questions) sampled the same way; LEVER reports Spider on dev. Its train
    # pool: 1,000 train questions drawn with seed 0 (scripts/sample_qwen_pools.sh; data card).
    "spider_qwen05b": {"dataset": "spider", "samples": ("qwen05b_pools", "spider_dev.samples.jsonl.gz"),
                       "train_pool": "spider_qwen05b_train"},
    "spider_qwen05b_train": {"dataset": "spider", "samples": ("qwen05b_pools", "spider_train_1000.samples.jsonl.gz"),
                             "train_split_of": "spider_qwen05b"},
    "wikitq_binder": {"dataset": "wikitq_binder", "samples": ("wikitq_binder", "binder.samples.jsonl.gz"),
                      "second_checker": ("official evaluator", "correct_official")},
}


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
        log(f"reading executed pool {path} (bundled executed file; nothing is executed)")
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
        log(f"reading executed file {path} (nothing is executed)")
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
        log(f"execution: reusing {target}")
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
    log(f"execution: {stats.candidates} candidates, {stats.executed} run, {stats.cached} cached "
        f"in {time.time() - t0:.0f}s")
    return executed


def run_datasets(cfg: RunConfig) -> set[str]:
    """The datasets of the run's problems and training pool, without executing anything (the input
    file is read once more); a missing input or an unknown pool is reported elsewhere."""
    found = {POOLS.get(cfg.train_pool, {}).get("dataset")} if cfg.train_pool is not None else set()
    if cfg.input is None:
        found.add(POOLS.get(cfg.pool, {}).get("dataset"))
    elif Path(cfg.input).is_file():
        found.update(p.dataset for p in _head(read_problems(cfg.input), cfg.max_problems))
    return {d for d in found if d is not None}


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
        protocols.check_disjoint(cfg.protocol, problems, train, train_name(cfg))
    if train is not None:
        if cfg.protocol == "lever":
            what = "LEVER's protocol: the verifier trains on"
            how = "the training split; a dev slice of it picks the checkpoint"
        elif cfg.train_pool_mode == "replace":
            what, how = "transfer: the verifier trains on", "same folds by problem id"
        else:
            what, how = "extra training data: the verifier also trains on", "same folds by problem id"
        log(f"{what} {train_name(cfg)} ({len(train)} problems; {how})")
    view = build_training_view(problems, arrays, folds, cfg.fold_seed, cfg.train_problems, train, train_name(cfg) or "",
                      cfg.train_pool_mode)
    return with_gold_rows(view, _gold_rows(cfg, view.problems)) if cfg.add_gold else view


def _gold_rows(cfg: RunConfig, problems: Sequence[Problem]) -> list[tuple[int, Problem]]:
    """(row, the problem holding only its gold program, executed in the sandbox) for every problem
    LEVER adds a gold program to (lever_jax.inputs.feeds.gold_to_add: MBPP always, Spider / WikiTQ
    unless a candidate is the gold query)."""
    from lever_jax.execution.cache import ExecutionCache
    from lever_jax.inputs.feeds import append_gold, gold_to_add

    wanted = [(row, p) for row, p in enumerate(problems) if gold_to_add(p) is not None]
    if not wanted:
        return []
    cache = ExecutionCache(cfg.execution_cache_dir)
    try:
        executed, _ = append_gold([p.replace(candidates=()) for _, p in wanted], cache=cache)
    finally:
        cache.close()
    correct = sum(bool(p.candidates[0].execution and p.candidates[0].execution.correct) for p in executed)
    log(f"gold programs: {len(executed)} executed ({correct} judged correct), one row each; a gold row trains "
        f"only when its problem's row does (never in a fold that scores it)")
    return [(row, p) for (row, _), p in zip(wanted, executed)]


def codet_per_problem(cfg: RunConfig, problems: Sequence[Problem], arrays: CandidateArrays) -> Optional[np.ndarray]:
    """Per-problem expected accuracy of CodeT dual agreement (f64[B]), when the pool ships its tests."""
    spec = POOLS[cfg.pool] if cfg.input is None else {}
    if "codet" not in spec:
        return None
    path = bundled_path(*spec["codet"])
    if not path.exists():
        log(f"CodeT row skipped: {path} missing (run scripts/run_codet_tests.py)")
        return None
    from lever_jax.data.jsonl import iter_json_lines

    rows = {obj["problem_id"]: obj["passed"] for _, obj in iter_json_lines(path)}
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
    # problems with no usable generated test: a random sample (CodeT's convention)
    rand = methods.random_expected(arrays.correct, arrays.mask, arrays.counts)
    return np.where(np.isnan(acc), rand, acc)
