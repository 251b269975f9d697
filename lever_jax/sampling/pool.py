"""Prompts -> a pool of candidate programs: the sampler behind ``lever-jax sample``.

Per problem: ``settings.n`` samples (each with its own seed, :func:`settings.sample_seed`; with
``settings.shared_prefill`` one request with n choices) and, with ``settings.greedy``, one
temperature-0 decode. Requests of several problems are in flight at once
(``backend.parallel``) so that llama.cpp's slots stay full; a problem is journaled when all its
sequences are back, and problems come out in input order.

Completions become candidates as ``lever-jax import --format openai`` makes them
(:func:`lever_jax.data.importers.completions.candidate_from_choice`): the text cut at the first
stop, ``strip()``-ed (HumanEval: the prompt + the completion), ``gen_logprob`` the sum of the kept
tokens' log-probs and ``num_tokens`` their count; identical programs merge with ``count``. The
greedy decode is the problem's ``greedy`` (executed, never reranked; the table's greedy row).
"""
from __future__ import annotations

import collections
import dataclasses
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Iterable, Iterator

from lever_jax.data.importers.completions import candidate_from_choice
from lever_jax.data.importers.merge import merge_candidates
from lever_jax.data.schema import Candidate, Problem
from lever_jax.sampling.backends import Backend, BlankCompletion, Completion, Request, SamplingError
from lever_jax.sampling.journal import Entry, Journal
from lever_jax.sampling.settings import SampleSettings, journal_key, sample_seed


@dataclasses.dataclass(frozen=True)
class PromptRecord:
    """One line of ``lever-jax prompts``: the problem it belongs to, its prompt and stops."""

    problem: Problem
    prompt: str
    stop: tuple[str, ...]


@dataclasses.dataclass
class SampleStats:
    """What a run did (printed as the command's summary)."""

    problems: int = 0
    from_journal: int = 0
    sequences: int = 0
    tokens: int = 0
    hit_max_tokens: int = 0
    seconds: float = 0.0

    def rates(self) -> tuple[float, float]:
        """(sequences/s, tokens/s) over the sequences this run decoded."""
        elapsed = max(self.seconds, 1e-9)
        return self.sequences / elapsed, self.tokens / elapsed


def requests_for(record: PromptRecord, settings: SampleSettings) -> list[Request]:
    """The sampled sequences of one problem, then (with ``settings.greedy``) the greedy one."""
    pid = record.problem.problem_id
    out = [Request(record.prompt, record.stop, settings.max_tokens, settings.temperature, settings.top_p,
                   sample_seed(settings.seed, pid, i)) for i in range(settings.n)]
    if settings.greedy:
        out.append(Request(record.prompt, record.stop, settings.max_tokens, 0.0, 1.0, settings.seed))
    return out


BLANK_REDRAWS = 8  # a blank completion without log-probs is drawn again, up to this many times


def complete_redrawing_blanks(backend: Backend, request: Request) -> Completion:
    """``backend.complete(request)``; a :class:`BlankCompletion` (no program, no probability) is drawn
    again with the next seeds (``seed + k``, so a resumed run redraws the same), and a greedy decode
    that stays blank is kept as the empty program with no tokens."""
    for k in range(BLANK_REDRAWS + 1):
        try:
            return backend.complete(dataclasses.replace(request, seed=(request.seed + k) & 0x7FFFFFFF))
        except BlankCompletion:
            if request.temperature == 0.0:
                return Completion("", (), (), "stop")
    raise SamplingError(f"{BLANK_REDRAWS + 1} blank completions in a row for one sample (seed {request.seed}): "
                        "the prompt or the stop strings leave the model nothing to write")


def complete_shared_prefill(backend: Backend, samples: list[Request]) -> list[Completion]:
    """One problem's sampled ``samples`` (:func:`requests_for`) as one request with that many choices
    (seeded with the first one's seed); a blank choice is drawn again alone with its own request's
    next seeds, as :func:`complete_redrawing_blanks` would."""
    choices = backend.complete_choices(samples[0], len(samples))
    return [c if c is not None else complete_redrawing_blanks(backend, dataclasses.replace(r, seed=r.seed + 1))
            for c, r in zip(choices, samples)]


def _complete_one(backend: Backend, request: Request) -> list[Completion]:
    return [complete_redrawing_blanks(backend, request)]


def _submit(pool: ThreadPoolExecutor, backend: Backend, record: PromptRecord,
            settings: SampleSettings) -> list[Future[list[Completion]]]:
    """Futures of one problem's completions: the samples (one request each, or one shared-prefill
    request), then the greedy decode."""
    requests = requests_for(record, settings)
    futures = []
    if settings.shared_prefill and settings.n > 1:
        futures.append(pool.submit(complete_shared_prefill, backend, requests[:settings.n]))
        requests = requests[settings.n:]
    return futures + [pool.submit(_complete_one, backend, r) for r in requests]


def to_candidate(completion: Completion, record: PromptRecord, source: str, strip_fences: bool) -> Candidate:
    is_full_program = record.problem.dataset == "humaneval"
    prefix = str(record.problem.context.get("prompt", "")) if is_full_program else ""
    return candidate_from_choice(completion.as_choice(), record.stop, prefix, source,
                                 strip=not is_full_program, strip_fences=strip_fences)


def problem_from_entry(entry: Entry, record: PromptRecord, source: str, strip_fences: bool) -> Problem:
    """The samples-file record of one journaled problem."""
    candidates = merge_candidates(to_candidate(c, record, source, strip_fences) for c in entry.samples)
    greedy = entry.greedy
    greedy_candidate = None if greedy is None else to_candidate(greedy, record, f"{source}:greedy", strip_fences)
    return record.problem.replace(candidates=candidates, greedy=greedy_candidate)


@dataclasses.dataclass
class _Pending:
    record: PromptRecord
    key: str
    futures: list[Future[list[Completion]]] | None  # None: the journal has it
    submitted: float


class Sampler:
    """Samples problems through ``backend``, journaling each finished one in ``journal``."""

    def __init__(self, backend: Backend, settings: SampleSettings, journal: Journal, *, source: str | None = None,
                 strip_fences: bool = False, on_problem: Callable[[SampleStats], None] | None = None):
        self.backend = backend
        self.settings = settings
        self.journal = journal
        self.source = source or f"sample:{backend.model_name}:t{settings.temperature:g}"
        self.strip_fences = strip_fences
        self.on_problem = on_problem
        self.stats = SampleStats()

    def key(self, record: PromptRecord) -> str:
        return journal_key(self.backend.model_id, record.prompt, record.stop, self.settings)

    def run(self, records: Iterable[PromptRecord]) -> Iterator[Problem]:
        """Problems with candidates, in the order of ``records``."""
        window = max(2, 2 * self.backend.parallel)  # problems in flight: enough to keep every slot busy
        pending: collections.deque[_Pending] = collections.deque()
        started = time.perf_counter()
        pool = ThreadPoolExecutor(max_workers=self.backend.parallel)
        try:
            for record in records:
                key = self.key(record)
                futures = None
                if self.journal.get(key) is None:
                    futures = _submit(pool, self.backend, record, self.settings)
                pending.append(_Pending(record, key, futures, time.perf_counter()))
                while len(pending) > window or (pending and pending[0].futures is None):
                    yield self._finish(pending.popleft(), started)
            while pending:
                yield self._finish(pending.popleft(), started)
        finally:  # on an error or a stop, queued sequences are dropped (finished problems are journaled)
            pool.shutdown(wait=True, cancel_futures=True)

    def _finish(self, item: "_Pending", started: float) -> Problem:
        record, key, futures = item.record, item.key, item.futures
        entry = self.journal.get(key)
        if futures is not None:
            done = [c for f in futures for c in f.result()]
            samples, greedy = (done[:-1], done[-1]) if self.settings.greedy else (done, None)
            tokens = sum(len(c.tokens) for c in done)
            entry = self.journal.append(key, record.problem.problem_id, samples, greedy,
                                        {"seconds": round(time.perf_counter() - item.submitted, 3), "tokens": tokens,
                                         "finished_unix": round(time.time(), 1)})
            self.stats.sequences += len(done)
            self.stats.tokens += tokens
            self.stats.hit_max_tokens += sum(c.finish_reason == "length" for c in done)
            self.stats.seconds = time.perf_counter() - started
        else:
            self.stats.from_journal += 1
        assert entry is not None
        self.stats.problems += 1
        if self.on_problem is not None:
            self.on_problem(self.stats)
        return problem_from_entry(entry, record, self.source, self.strip_fences)


def summary(stats: SampleStats, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    per_s, tok_s = stats.rates()
    return {"problems": stats.problems, "from_journal": stats.from_journal, "sequences_decoded": stats.sequences,
            "tokens_decoded": stats.tokens, "hit_max_tokens": stats.hit_max_tokens,
            "seconds": round(stats.seconds, 1), "sequences_per_s": round(per_s, 3),
            "tokens_per_s": round(tok_s, 2), **(extra or {})}
