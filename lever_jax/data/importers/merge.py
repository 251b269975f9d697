"""Merge identical programs of one problem into single candidates with counts (LEVER's dedup)."""
from __future__ import annotations

import dataclasses
from typing import Iterable

from lever_jax.data.schema import Candidate


def merge_candidates(candidates: Iterable[Candidate]) -> tuple[Candidate, ...]:
    """Identical ``program`` text -> one candidate: counts add, sources join (in order, unique),
    ``is_greedy`` is kept if any copy had it; log-prob, token count and execution come from the
    first copy (the same text has the same log-prob under the same model)."""
    merged: dict[str, Candidate] = {}
    sources: dict[str, list[str]] = {}
    for cand in candidates:
        first = merged.get(cand.program)
        if first is None:
            merged[cand.program] = cand
            sources[cand.program] = [cand.source] if cand.source else []
            continue
        if cand.source and cand.source not in sources[cand.program]:
            sources[cand.program].append(cand.source)
        merged[cand.program] = dataclasses.replace(
            first, count=first.count + cand.count, is_greedy=first.is_greedy or cand.is_greedy)
    return tuple(
        dataclasses.replace(c, source=",".join(sources[p]) if sources[p] else None) for p, c in merged.items()
    )
