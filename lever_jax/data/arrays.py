"""The one padded ``[P, N]`` container of a pool: :class:`CandidateArrays`.

Every consumer (the method table, the scores file, ``lever-jax rerank`` / ``run`` / ``eval`` and
the SeqIO metric) reads candidates through this container, built either from executed problems
(:func:`problems_to_arrays`) or from flat per-candidate vectors (:func:`from_flat`, used for
``lever-jax eval``'s ``EvalSet`` and for SeqIO targets).

Group ids are *dense*: ``0..G-1`` numbered by first appearance of each execution result within a
row, the layout ``lever_jax.rerank.scoring.rerank(..., ids_are_dense=True)`` expects. Programs
whose execution errored never join a group (LEVER): each gets a group of its own, whatever its
``result_key`` says, so every method that groups (majority vote, LEVER summing / voting) treats
them the same way.
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
from typing import Sequence

import numpy as np

from lever_jax.data.schema import Problem

_INT32_MAX = 2**31 - 1


@dataclasses.dataclass(frozen=True)
class CandidateArrays:
    """Padded per-candidate arrays for P problems with up to N candidates each.

    ``greedy_correct`` is per problem: the correctness of the greedy decode -- the problem-level
    ``greedy`` program when the problem carries one (the greedy decode is not among the samples,
    data contract), else the candidate marked ``is_greedy`` -- NaN where the problem has neither
    (the greedy row is then computed over the problems where it is known, never counted as wrong,
    and reported unavailable when no problem has one).
    """

    problem_ids: tuple[str, ...]
    gen_logprob: np.ndarray  # f32[P, N]; the pool's summed log-prob, NaN where unknown
    num_tokens: np.ndarray  # i32[P, N]; 0 where unknown
    counts: np.ndarray  # i32[P, N]; samples merged into the candidate, 0 on padding
    result_ids: np.ndarray  # i32[P, N]; dense per row, -1 on padding
    correct: np.ndarray  # bool[P, N]
    mask: np.ndarray  # bool[P, N]; True for real candidates
    is_greedy: np.ndarray  # bool[P, N]
    errored: np.ndarray  # bool[P, N]; execution status other than "ok"
    greedy_correct: np.ndarray  # f64[P]; NaN where the greedy decode is unknown
    errored_known: bool = True  # False when the source does not say which executions errored
    digests: np.ndarray | None = None  # object[P, N]: program_digest of each candidate, "" on padding; None if unknown

    @property
    def shape(self) -> tuple[int, int]:
        return self.mask.shape  # type: ignore[return-value]

    @property
    def num_problems(self) -> int:
        return int(self.mask.shape[0])

    @property
    def has_logprobs(self) -> bool:
        real = self.gen_logprob[self.mask]
        return bool(real.size) and not np.isnan(real).any()

    def select(self, rows: np.ndarray | Sequence[int]) -> "CandidateArrays":
        """The sub-pool of the given problem rows (in that order)."""
        rows = np.asarray(rows, np.int64)
        return CandidateArrays(
            problem_ids=tuple(self.problem_ids[int(r)] for r in rows),
            errored_known=self.errored_known,
            digests=None if self.digests is None else self.digests[rows],
            **{f.name: getattr(self, f.name)[rows] for f in dataclasses.fields(self)
               if f.name not in ("problem_ids", "errored_known", "digests")},
        )


def program_digest(program: str) -> str:
    """A short fingerprint of a candidate's program text (the scores file stores it so that scores
    are never applied to another program: reordered or edited candidates)."""
    return hashlib.sha256(program.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def dense_ids_with_errors(keys: Sequence[object], errored: Sequence[bool]) -> list[int]:
    """Dense first-appearance group ids of one row; errored candidates get fresh singleton ids."""
    dense: dict[object, int] = {}
    out = []
    next_id = 0
    for key, err in zip(keys, errored):
        if err:
            out.append(next_id)
            next_id += 1
            continue
        if key not in dense:
            dense[key] = next_id
            next_id += 1
        out.append(dense[key])
    return out


def _greedy_correct(is_greedy: np.ndarray, correct: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per row: correctness of the first marked greedy candidate, NaN where none is marked."""
    marked = is_greedy & mask
    first = marked.argmax(axis=1)
    hit = correct[np.arange(len(first)), first].astype(np.float64)
    return np.where(marked.any(axis=1), hit, np.nan)


def _with_greedy_programs(greedy_correct: np.ndarray, problems: Sequence[Problem]) -> np.ndarray:
    """``greedy_correct`` with each problem-level greedy program's verdict filled in."""
    out = greedy_correct.copy()
    for row, problem in enumerate(problems):
        if problem.greedy is not None:
            if problem.greedy.execution is None:
                raise ValueError(f"problem {problem.problem_id!r}: its greedy program has no execution")
            out[row] = float(problem.greedy.execution.correct)
    return out


def problems_to_arrays(problems: Sequence[Problem], max_candidates: int | None = None) -> CandidateArrays:
    """Pad executed problems into :class:`CandidateArrays` (candidates past ``max_candidates`` are
    dropped). Raises ValueError naming the problem and candidate on a missing execution or a
    count that does not fit int32."""
    width = max((len(p.candidates) for p in problems), default=0)
    if max_candidates is not None:
        width = min(width, max_candidates)
    width = max(width, 1)
    shape = (len(problems), width)
    gen = np.full(shape, np.nan, np.float32)
    tokens = np.zeros(shape, np.int32)
    counts = np.zeros(shape, np.int32)
    ids = np.full(shape, -1, np.int32)
    correct = np.zeros(shape, bool)
    mask = np.zeros(shape, bool)
    greedy = np.zeros(shape, bool)
    errored = np.zeros(shape, bool)
    digests = np.full(shape, "", object)
    for row, problem in enumerate(problems):
        cands = problem.candidates[:width]
        for col, cand in enumerate(cands):
            where = f"problem {problem.problem_id!r} candidate {col}"
            if cand.execution is None:
                raise ValueError(f"{where} has no execution")
            for name, value in (("count", cand.count), ("num_tokens", cand.num_tokens or 0)):
                if not 0 <= value <= _INT32_MAX:
                    raise ValueError(f"{where}: {name} {value} is outside [0, 2**31 - 1]")
            gen[row, col] = math.nan if cand.gen_logprob is None else cand.gen_logprob
            tokens[row, col] = cand.num_tokens or 0
            counts[row, col] = cand.count
            correct[row, col] = cand.execution.correct
            errored[row, col] = cand.execution.status != "ok"
            mask[row, col] = True
            greedy[row, col] = cand.is_greedy
            digests[row, col] = program_digest(cand.program)
        row_ids = dense_ids_with_errors([c.execution.result_key for c in cands], errored[row, : len(cands)])
        ids[row, : len(cands)] = row_ids
    return CandidateArrays(
        problem_ids=tuple(p.problem_id for p in problems),
        gen_logprob=gen,
        num_tokens=tokens,
        counts=counts,
        result_ids=ids,
        correct=correct,
        mask=mask,
        is_greedy=greedy,
        errored=errored,
        greedy_correct=_with_greedy_programs(_greedy_correct(greedy, correct, mask), problems),
        digests=digests,
    )


def from_flat(
    problem_ids: Sequence[str],
    offsets: np.ndarray,
    *,
    gen_logprob: np.ndarray,
    num_tokens: np.ndarray,
    counts: np.ndarray,
    result_ids: np.ndarray,
    correct: np.ndarray,
    errored: np.ndarray | None = None,
    is_greedy: np.ndarray | None = None,
    greedy_correct: np.ndarray | None = None,
    program_digests: Sequence[str] | None = None,
) -> CandidateArrays:
    """CandidateArrays from flat per-candidate vectors; problem ``i`` owns ``offsets[i]:offsets[i+1]``.

    ``gen_logprob`` is NaN where unknown; ``result_ids`` are any ints with equal <=> same result
    (renumbered densely here, errored candidates as singletons). ``errored`` / ``is_greedy``
    default to all False when the source does not carry them (``errored=None`` also sets
    ``errored_known=False``, which leaves out the methods that need it). ``greedy_correct``
    (per problem, NaN where unknown) gives the verdict of greedy programs that are not candidates;
    where it is NaN the ``is_greedy`` candidate decides. ``program_digests`` (``program_digest``
    per candidate) lets the scores file pin each score to its program.
    """
    offsets = np.asarray(offsets, np.int64)
    sizes = np.diff(offsets)
    total = int(offsets[-1]) if len(offsets) else 0
    errored_known = errored is not None
    errored = np.zeros(total, bool) if errored is None else np.asarray(errored, bool)
    is_greedy = np.zeros(total, bool) if is_greedy is None else np.asarray(is_greedy, bool)
    width = max(int(sizes.max()) if sizes.size else 0, 1)
    shape = (len(problem_ids), width)
    mask = np.arange(width)[None, :] < sizes[:, None]
    rows = np.repeat(np.arange(len(problem_ids)), sizes)
    cols = np.arange(total) - np.repeat(offsets[:-1], sizes)

    def pad(values: np.ndarray, fill: object, dtype: object) -> np.ndarray:
        out = np.full(shape, fill, dtype)
        out[rows, cols] = np.asarray(values)[:total]
        return out

    flat_ids = np.asarray(result_ids)
    dense = np.full(shape, -1, np.int32)
    for i in range(len(problem_ids)):
        a, b = int(offsets[i]), int(offsets[i + 1])
        dense[i, : b - a] = dense_ids_with_errors(flat_ids[a:b].tolist(), errored[a:b].tolist())
    correct_rows = pad(correct, False, bool)
    greedy_rows = pad(is_greedy, False, bool)
    return CandidateArrays(
        problem_ids=tuple(problem_ids),
        gen_logprob=pad(gen_logprob, np.nan, np.float32),
        num_tokens=pad(num_tokens, 0, np.int32),
        counts=pad(counts, 0, np.int32),
        result_ids=dense,
        correct=correct_rows,
        mask=mask,
        is_greedy=greedy_rows,
        errored=pad(errored, False, bool),
        greedy_correct=_override(_greedy_correct(greedy_rows, correct_rows, mask), greedy_correct),
        errored_known=errored_known,
        digests=None if program_digests is None else pad(np.asarray(program_digests, object), "", object),
    )


def _override(marked: np.ndarray, given: np.ndarray | None) -> np.ndarray:
    """``given`` where it is known (not NaN), else ``marked``."""
    if given is None:
        return marked
    given = np.asarray(given, np.float64)
    if given.shape != marked.shape:
        raise ValueError(f"greedy_correct has shape {given.shape}, expected {marked.shape}")
    return np.where(np.isnan(given), marked, given)
