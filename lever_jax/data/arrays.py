"""Turn executed problems into the padded [B, N] arrays the jitted scorer consumes.

Group ids are *dense*: 0..G-1 numbered by first appearance of each ``result_key`` within a row,
which is the layout ``lever_jax.rerank.scoring.rerank(..., ids_are_dense=True)`` expects. Errored
candidates carry unique result keys (data contract), so they get groups of their own.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import numpy as np

from lever_jax.data.schema import Problem


@dataclasses.dataclass(frozen=True)
class CandidateArrays:
    """Padded per-candidate arrays for B problems with up to N candidates each."""

    problem_ids: tuple[str, ...]
    gen_logprob: np.ndarray  # f32[B, N]; NaN where the pool has no log-prob
    num_tokens: np.ndarray  # i32[B, N]; 0 where unknown
    counts: np.ndarray  # i32[B, N]; 0 on padding
    result_ids: np.ndarray  # i32[B, N]; dense per row, -1 on padding
    correct: np.ndarray  # bool[B, N]
    mask: np.ndarray  # bool[B, N]; True for real candidates
    is_greedy: np.ndarray  # bool[B, N]

    @property
    def shape(self) -> tuple[int, int]:
        return self.mask.shape  # type: ignore[return-value]

    @property
    def has_logprobs(self) -> bool:
        real = self.gen_logprob[self.mask]
        return bool(real.size) and not np.isnan(real).any()


def problems_to_arrays(problems: Sequence[Problem], max_candidates: int | None = None) -> CandidateArrays:
    """Pad executed problems into :class:`CandidateArrays` (candidates past ``max_candidates`` are dropped)."""
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
    for row, problem in enumerate(problems):
        dense: dict[str, int] = {}
        for col, cand in enumerate(problem.candidates[:width]):
            if cand.execution is None:
                raise ValueError(f"problem {problem.problem_id!r} candidate {col} has no execution")
            gen[row, col] = math.nan if cand.gen_logprob is None else cand.gen_logprob
            tokens[row, col] = cand.num_tokens or 0
            counts[row, col] = cand.count
            ids[row, col] = dense.setdefault(cand.execution.result_key, len(dense))
            correct[row, col] = cand.execution.correct
            mask[row, col] = True
            greedy[row, col] = cand.is_greedy
    return CandidateArrays(
        problem_ids=tuple(p.problem_id for p in problems),
        gen_logprob=gen,
        num_tokens=tokens,
        counts=counts,
        result_ids=ids,
        correct=correct,
        mask=mask,
        is_greedy=greedy,
    )
