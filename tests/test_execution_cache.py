"""Execution cache: persistence, resume after a killed run, re-runs execute nothing; the CLI."""
from __future__ import annotations

import subprocess
import sys

import pytest

from lever_jax.data.jsonl import read_problems, write_problems
from lever_jax.data.schema import Candidate, Execution, Problem
from lever_jax.execution.base import Limits
from lever_jax.execution.cache import ExecutionCache, cache_key, context_hash, default_cache_dir
from lever_jax.execution.python_gsm8k import GSM8kExecutor
from lever_jax.execution.runner import RunStats, execute_problems
from lever_jax.execution.sandbox import Sandbox


def problems(n: int = 6) -> list[Problem]:
    return [
        Problem(f"p{i}", "gsm8k", "q", {}, float(i), (Candidate(f"answer = {i}"), Candidate(f"answer = {i} + 1"),
                                                      Candidate(f"answer = {i}"), Candidate("answer = nope")))
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(workers=2, limits=Limits(timeout_s=3, cpu_s=3)) as box:
        yield box


def test_put_get_and_persistence(tmp_path):
    ok = Execution("ok", "3", "{'answer': '3'}", None, True, {"answer": 3})
    key = cache_key("gsm8k:x", "answer = 3", "ctx")
    with ExecutionCache(tmp_path) as cache:
        assert cache.get(key) is None
        cache.put(key, ok)
        cache.put(cache_key("gsm8k:x", "slow", "ctx"), Execution("timeout", "!err:1", "ERROR", "t", False))
        assert cache.get(key) == ok
    with ExecutionCache(tmp_path) as cache:
        assert cache.get(key) == ok
        assert cache.get(cache_key("gsm8k:x", "slow", "ctx")) is None  # timeouts are not cached
        assert cache.get(cache_key("gsm8k:y", "answer = 3", "ctx")) is None  # executor version is part of the key
        assert len(cache) == 1


def test_default_dir_env(monkeypatch, tmp_path):
    monkeypatch.setenv("LEVER_JAX_CACHE_DIR", str(tmp_path / "c"))
    assert default_cache_dir() == tmp_path / "c"
    monkeypatch.delenv("LEVER_JAX_CACHE_DIR")
    assert default_cache_dir().parts[-3:] == (".cache", "lever_jax", "execution")


def test_context_hash_depends_on_context_and_gold():
    a = Problem("a", "gsm8k", "q", {}, 1.0, ())
    assert context_hash(a) == context_hash(a.replace(problem_id="b", question="other"))
    assert context_hash(a) != context_hash(a.replace(gold=2.0))
    assert context_hash(a) != context_hash(a.replace(context={"db_id": "x"}))


def test_context_hash_ignores_verifier_only_schema():
    base = Problem("p", "spider", "q?", {"db_id": "concert_singer"}, "SELECT 1", ())
    with_schema = base.replace(context={"db_id": "concert_singer", "schema": "singer: Name"})
    other_db = base.replace(context={"db_id": "pets_1", "schema": "singer: Name"})
    assert context_hash(base) == context_hash(with_schema)
    assert context_hash(base) != context_hash(other_db)


def test_rerun_executes_nothing_and_gives_identical_output(tmp_path, sandbox):
    executor = GSM8kExecutor()
    first_stats, second_stats = RunStats(), RunStats()
    with ExecutionCache(tmp_path) as cache:
        first = list(execute_problems(problems(), executor, sandbox, cache, progress=False, stats=first_stats))
    with ExecutionCache(tmp_path) as cache:
        second = list(execute_problems(problems(), executor, sandbox, cache, progress=False, stats=second_stats))
    assert first == second
    # 4 candidates per problem, one duplicate program each; p0's "answer = 0 + 1" equals p1's
    # "answer = 1" only in value, not in text, so nothing is shared across problems here.
    assert first_stats.executed == 6 * 3 and first_stats.deduplicated == 6
    assert second_stats.executed == 0 and second_stats.cached == 6 * 4
    p = first[2]
    assert [c.execution.correct for c in p.candidates] == [True, False, True, False]
    assert p.candidates[0].execution.result_key == p.candidates[2].execution.result_key


def test_killed_run_resumes(tmp_path, sandbox):
    executor = GSM8kExecutor()
    cache = ExecutionCache(tmp_path, commit_every=1)
    stream = execute_problems(problems(), executor, sandbox, cache, progress=False, window=2)
    done = [next(stream) for _ in range(3)]  # then the process "dies": no close, no final commit
    assert len(done) == 3
    stream.close()
    del cache
    stats = RunStats()
    with ExecutionCache(tmp_path) as cache:
        out = list(execute_problems(problems(), executor, sandbox, cache, progress=False, stats=stats))
    assert len(out) == 6
    assert stats.cached >= 3 * 3 and stats.executed <= 3 * 3


@pytest.mark.slow
def test_cli_execute(tmp_path):
    samples = tmp_path / "samples.jsonl.gz"
    write_problems(samples, problems(3))
    out = tmp_path / "executed.jsonl"
    cmd = [sys.executable, "-m", "lever_jax.cli", "execute", "--dataset", "gsm8k", "--input", str(samples),
           "--output", str(out), "--workers", "1", "--timeout", "3", "--cache-dir", str(tmp_path / "cache"),
           "--no-progress"]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert "9 run, 0 cached" in first.stderr
    executed = list(read_problems(out, require_execution=True))
    assert [p.problem_id for p in executed] == ["p0", "p1", "p2"]
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0 and "0 run, 12 cached" in second.stderr
    bad = subprocess.run(cmd[:5] + ["mbpp"] + cmd[6:], capture_output=True, text=True, timeout=300)
    # a samples file of another dataset is the user's mistake: one line, exit 2
    assert bad.returncode == 2 and "not 'mbpp'" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize("field", [f.name for f in __import__("dataclasses").fields(Limits)])
def test_every_limit_is_part_of_the_cache_key(field):
    """A changed limit (e.g. output_bytes, which decides output_limit) never reuses old results."""
    import dataclasses

    base = Limits()
    value = getattr(base, field)
    changed = dataclasses.replace(base, **{field: value * 2 + 1})
    from lever_jax.execution.cache import executor_key

    assert executor_key("gsm8k", "v", base) != executor_key("gsm8k", "v", changed)
    assert executor_key("gsm8k", "v", base) == executor_key("gsm8k", "v", Limits())
    assert executor_key("gsm8k", "v", base) != executor_key("gsm8k", "w", base)  # and the executor version


def test_other_limits_recompute(tmp_path, sandbox):
    executor = GSM8kExecutor()
    with ExecutionCache(tmp_path) as cache:
        list(execute_problems(problems(2), executor, sandbox, cache, progress=False))
    stats = RunStats()
    with Sandbox(workers=1, limits=Limits(timeout_s=3, cpu_s=3, output_bytes=1024)) as other, \
            ExecutionCache(tmp_path) as cache:
        list(execute_problems(problems(2), executor, other, cache, progress=False, stats=stats))
    assert stats.cached == 0 and stats.executed == 2 * 3


def _open_and_close(directory: str) -> None:
    ExecutionCache(directory).close()


def test_many_processes_open_a_new_cache_at_once(tmp_path):
    """Several processes creating the same cache file at the same moment (Beam workers) all open it."""
    import multiprocessing

    for attempt in range(3):
        directory = tmp_path / f"c{attempt}"
        with multiprocessing.get_context("fork").Pool(6) as pool:
            pool.map(_open_and_close, [str(directory)] * 12)
        assert (directory / "executions.sqlite").exists()
