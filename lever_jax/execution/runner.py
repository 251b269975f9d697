"""Execute every candidate of a stream of problems: cache look-ups, dedup, parallel sandbox runs.

``execute_problems`` reads problems lazily in windows (``window`` problems at a time), looks every
candidate up in the cache, runs each distinct uncached (program, context) once in the sandbox
(tasks stream to all workers; a slow program never stalls the others), stores the new
executions in the cache and yields the problems, in input order, with every candidate's
``execution`` filled. Error keys are re-derived from (problem id, candidate index) so that no two
errored candidates ever share a key, even with identical programs. A problem's ``greedy`` program
(the greedy decode when it is not a candidate, data contract) is executed the same way, in one more
slot after the candidates (its error key uses the index ``"greedy"``); it is never added to the
candidates.
"""
from __future__ import annotations

import dataclasses
import itertools
import time
from typing import Iterable, Iterator

from lever_jax.data.schema import Candidate, Execution, Problem
from lever_jax.execution.base import DatasetExecutor, SandboxResult
from lever_jax.execution.cache import CacheKey, ExecutionCache, cache_key, context_hash, executor_key
from lever_jax.data.result_keys import is_error_key, unique_error_key
from lever_jax.execution.sandbox import Sandbox


@dataclasses.dataclass
class RunStats:
    candidates: int = 0
    executed: int = 0
    cached: int = 0
    deduplicated: int = 0
    seconds: float = 0.0
    statuses: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def programs_per_s(self) -> float:
        return self.executed / self.seconds if self.seconds > 0 else 0.0


GREEDY_INDEX = "greedy"  # error-key index of the problem-level greedy program


def _slots(problem: Problem) -> tuple[Candidate, ...]:
    """The programs to execute: the candidates, then the problem-level greedy program if any."""
    return problem.candidates + ((problem.greedy,) if problem.greedy is not None else ())


def _finish(problem: Problem, executions: list[Execution | None]) -> Problem:
    done = []
    for index, (candidate, execution) in enumerate(zip(_slots(problem), executions)):
        assert execution is not None
        if is_error_key(execution.result_key) or execution.status != "ok":
            where = index if index < len(problem.candidates) else GREEDY_INDEX
            execution = dataclasses.replace(execution, result_key=unique_error_key(problem.problem_id, where))
        done.append(dataclasses.replace(candidate, execution=execution))
    count = len(problem.candidates)
    return problem.replace(candidates=tuple(done[:count]), greedy=done[count] if len(done) > count else None)


def execute_problems(
    problems: Iterable[Problem],
    executor: DatasetExecutor,
    sandbox: Sandbox,
    cache: ExecutionCache | None = None,
    progress: bool = True,
    window: int = 2000,
    stats: RunStats | None = None,
) -> Iterator[Problem]:
    """Yield ``problems`` with executed candidates (see the module doc)."""
    stats = stats if stats is not None else RunStats()
    executor_id = executor_key(executor.dataset, executor.version, getattr(sandbox, "limits", None))
    bar = None
    if progress:
        from lever_jax.data.progress import progress_bar

        total = sum(len(_slots(p)) for p in problems) if isinstance(problems, (list, tuple)) else None
        bar = progress_bar(total=total, unit="prog", desc=f"execute {executor.dataset}", smoothing=0.05)
    start = time.monotonic()
    source = iter(problems)
    try:
        while True:
            chunk = list(itertools.islice(source, window))
            if not chunk:
                break
            yield from _run_window(chunk, executor, executor_id, sandbox, cache, stats, bar)
            stats.seconds = time.monotonic() - start
            if cache is not None:
                cache.commit()
    finally:
        stats.seconds = time.monotonic() - start
        if bar is not None:
            bar.close()


def _run_window(chunk: list[Problem], executor: DatasetExecutor, executor_id: str, sandbox: Sandbox,
                cache: ExecutionCache | None, stats: RunStats, bar: object) -> Iterator[Problem]:
    filled: list[list[Execution | None]] = [[None] * len(_slots(p)) for p in chunk]
    remaining = [len(_slots(p)) for p in chunk]
    # distinct uncached work: cache key -> (task, [(problem index, candidate index), ...])
    work: dict[CacheKey, list[tuple[int, int]]] = {}
    order: list[CacheKey] = []
    for pi, problem in enumerate(chunk):
        ctx = context_hash(problem)
        for ci, candidate in enumerate(_slots(problem)):
            stats.candidates += 1
            key = cache_key(executor_id, candidate.program, ctx)
            if key in work:
                work[key].append((pi, ci))
                stats.deduplicated += 1
                continue
            hit = cache.get(key) if cache is not None else None
            if hit is not None:
                filled[pi][ci] = hit
                remaining[pi] -= 1
                stats.cached += 1
                stats.statuses[hit.status] = stats.statuses.get(hit.status, 0) + 1
                if bar is not None:
                    bar.update(1)  # type: ignore[attr-defined]
                continue
            work[key] = [(pi, ci)]
            order.append(key)

    next_out = 0

    def ready() -> Iterator[Problem]:
        nonlocal next_out
        while next_out < len(chunk) and remaining[next_out] == 0:
            yield _finish(chunk[next_out], filled[next_out])
            next_out += 1

    yield from ready()
    tasks = []
    for key in order:
        pi, ci = work[key][0]
        tasks.append(executor.make_task(chunk[pi], _slots(chunk[pi])[ci]))
    for index, result in sandbox.map_indexed(tasks):
        key = order[index]
        first_pi, first_ci = work[key][0]
        execution = _to_execution(executor, chunk[first_pi], first_ci, result)
        stats.executed += 1
        stats.statuses[execution.status] = stats.statuses.get(execution.status, 0) + 1
        if cache is not None:
            cache.put(key, execution)
        for pi, ci in work[key]:
            filled[pi][ci] = execution
            remaining[pi] -= 1
        if bar is not None:
            bar.update(len(work[key]))  # type: ignore[attr-defined]
            bar.set_postfix(cached=stats.cached, refresh=False)  # type: ignore[attr-defined]
        yield from ready()
    yield from ready()


def _clean(value: object, depth: int = 0) -> object:
    """Lone surrogates (a program may print or return any str) become ``\\udXXX`` text, so that
    the UTF-8 output file can always be written."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if depth > 50:
        return value
    if isinstance(value, dict):
        return {_clean(k, depth + 1): _clean(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v, depth + 1) for v in value]
    return value


def _to_execution(executor: DatasetExecutor, problem: Problem, ci: int, result: SandboxResult) -> Execution:
    try:
        execution = executor.to_execution(problem, _slots(problem)[ci], result)
        return dataclasses.replace(
            execution, result_key=_clean(execution.result_key), result_text=_clean(execution.result_text),
            error=_clean(execution.error), details=None if execution.details is None else _clean(dict(execution.details)))
    except Exception as err:  # noqa: BLE001 - a malformed result must not abort the whole run
        return Execution(status="error", result_key=unique_error_key(problem.problem_id, ci), result_text="ERROR",
                         error=f"could not interpret the sandbox result: {err!r}", correct=False)
