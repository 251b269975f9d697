"""Selection baselines over padded candidate arrays, next to LEVER itself.

Every selector takes ``[B, N]`` arrays with the field meanings of
``lever_jax.data.arrays.CandidateArrays`` (``mask`` True for real candidates, ``counts`` =
duplicates merged into a candidate, ``result_ids`` = execution-result group ids, ...) and returns
``int32[B]`` chosen indices, ``-1`` where a row has nothing to choose; accuracy is then
``lever_jax.rerank.statistics.accuracy(choice, correct)``. Ties always go to the lowest index (or, for
group-based selectors, to the group whose first member comes first), as in LEVER's scripts.

The one exception is :func:`random_expected`, which returns per-problem expected correctness.
CodeT's dual execution agreement (:func:`codet_dual_agreement`) works on a per-problem
sample x generated-test pass matrix instead.

numpy + jax only (LEVER selectors call the jitted scorer in ``lever_jax.rerank.scoring``).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from lever_jax.rerank import scoring

__all__ = [
    "first_sample",
    "greedy",
    "max_gen_logprob",
    "max_normalized_gen_logprob",
    "most_frequent_program",
    "majority_vote",
    "ml_ep",
    "voting_error_free",
    "oracle",
    "verifier_only",
    "lever",
    "lever_voting",
    "lever_gen_logprob",
    "random_expected",
    "CodeTResult",
    "codet_dual_agreement",
    "codet_expected_accuracy",
]


def _first_true(flags: np.ndarray) -> np.ndarray:
    """Index of the first True per row, -1 where none."""
    flags = np.asarray(flags, bool)
    return np.where(flags.any(axis=-1), flags.argmax(axis=-1), -1).astype(np.int32)


def _argmax_masked(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Row argmax over unmasked entries (NaN counts as -inf), ties to the lowest index.

    A row whose unmasked values are all NaN/-inf picks its first unmasked entry; all padding -> -1.
    """
    mask = np.asarray(mask, bool)
    vals = np.where(mask & ~np.isnan(values), values, -np.inf).astype(np.float64)
    best = vals.max(axis=-1, keepdims=True, initial=-np.inf)
    return _first_true(mask & (vals == best))


def first_sample(mask: np.ndarray) -> np.ndarray:
    """The first real candidate of each row (the first sample, when pools keep sampling order)."""
    return _first_true(mask)


def greedy(is_greedy: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The candidate marked as the greedy decode; -1 where none is marked (also where the greedy
    decode is the problem-level ``greedy`` program, not a candidate: its verdict is in
    ``CandidateArrays.greedy_correct``, which the method table's ``greedy`` row reads)."""
    return _first_true(np.asarray(is_greedy, bool) & np.asarray(mask, bool))


def max_gen_logprob(gen_logprob: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Most likely program under the generator (LEVER's "most confident")."""
    return _argmax_masked(np.asarray(gen_logprob, np.float64), mask)


def max_normalized_gen_logprob(
    gen_logprob: np.ndarray, num_tokens: np.ndarray, mask: np.ndarray
) -> np.ndarray:
    """Highest per-token mean log-prob (LEVER's "normalized most confident"); unknown token
    counts (<= 0) never win unless nothing else is known."""
    norm = np.asarray(scoring.normalize_gen_logprob(gen_logprob, num_tokens, "mean"))
    return _argmax_masked(norm, mask)


def most_frequent_program(counts: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The most often sampled distinct program (LEVER's "most frequent")."""
    return _argmax_masked(np.asarray(counts, np.float64), mask)


def _group_totals(result_ids: np.ndarray, mask: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per candidate, the total ``weights`` of its row's group (equal ids); 0 on padding."""
    ids = np.asarray(result_ids).astype(np.int64) & 0xFFFFFFFF
    mask = np.asarray(mask, bool)
    rows = np.broadcast_to(np.arange(ids.shape[0], dtype=np.int64)[:, None], ids.shape)
    keys = (rows << 32) | ids
    _, inverse = np.unique(keys[mask], return_inverse=True)
    totals = np.bincount(inverse, weights=np.asarray(weights, np.float64)[mask])
    out = np.zeros(ids.shape, np.float64)
    out[mask] = totals[inverse]
    return out


def majority_vote(
    result_ids: np.ndarray, mask: np.ndarray, counts: np.ndarray | None = None
) -> np.ndarray:
    """Self-consistency / MBR-exec: the first member of the execution-result group with the most
    samples (``counts`` weight the votes; ties to the group appearing first). Errored
    candidates carry unique result ids, so they only ever form groups of their own."""
    mask = np.asarray(mask, bool)
    weights = np.ones(mask.shape) if counts is None else np.asarray(counts, np.float64)
    totals = _group_totals(result_ids, mask, weights)
    best = np.where(mask, totals, -np.inf).max(axis=-1, keepdims=True, initial=-np.inf)
    return _first_true(mask & (totals == best))


def oracle(correct: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """A correct candidate where any exists (pass@k upper bound), else the first candidate."""
    mask = np.asarray(mask, bool)
    hit = _first_true(np.asarray(correct, bool) & mask)
    return np.where(hit >= 0, hit, _first_true(mask)).astype(np.int32)


def verifier_only(verifier_logprob: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Highest verifier probability P(yes), ignoring the generator."""
    return _argmax_masked(np.asarray(verifier_logprob, np.float64), mask)


def lever_gen_logprob(
    gen_logprob: np.ndarray,
    num_tokens: np.ndarray,
    counts: np.ndarray,
    mask: np.ndarray,
    *,
    normalize: bool = False,
) -> np.ndarray:
    """The ``log P_LM`` LEVER uses: the pool's log-probs (per-token mean when ``normalize``, as
    LEVER's GSM8k setting), or, for rows where any real candidate lacks one (NaN), LEVER's
    fallback ``log(count / total count)`` over the row's distinct programs."""
    mask = np.asarray(mask, bool)
    gen = np.asarray(gen_logprob, np.float32)
    if normalize:
        gen = np.asarray(scoring.normalize_gen_logprob(gen, num_tokens, "mean"))
    missing = (np.isnan(gen) & mask).any(axis=-1, keepdims=True)
    freq = np.asarray(scoring.frequency_logprob(counts, mask))
    return np.where(missing, freq, np.where(mask, gen, 0.0)).astype(np.float32)


def lever(
    gen_logprob: np.ndarray,
    verifier_logprob: np.ndarray,
    result_ids: np.ndarray,
    mask: np.ndarray,
    *,
    aggregate: bool = True,
    ids_are_dense: bool = True,
    gen_coef: float = 1.0,
    verifier_coef: float = 1.0,
) -> np.ndarray:
    """LEVER's choice (``scoring.rerank``), with or without aggregating over execution results.

    ``ids_are_dense`` defaults to True: ``problems_to_arrays`` numbers result ids densely.
    """
    out = scoring.rerank(
        gen_logprob,
        verifier_logprob,
        result_ids,
        mask,
        gen_coef=gen_coef,
        verifier_coef=verifier_coef,
        aggregate=aggregate,
        ids_are_dense=ids_are_dense,
    )
    return np.asarray(out.choice)


def lever_voting(
    gen_logprob: np.ndarray,
    verifier_logprob: np.ndarray,
    result_ids: np.ndarray,
    mask: np.ndarray,
    *,
    threshold: float = 0.5,
    ids_are_dense: bool = True,
    gen_coef: float = 1.0,
) -> np.ndarray:
    """LEVER's "voting" aggregation (``scoring.rerank_voting``)."""
    out = scoring.rerank_voting(
        gen_logprob,
        verifier_logprob,
        result_ids,
        mask,
        gen_coef=gen_coef,
        threshold=threshold,
        ids_are_dense=ids_are_dense,
    )
    return np.asarray(out.choice)


def random_expected(
    correct: np.ndarray, mask: np.ndarray, counts: np.ndarray | None = None
) -> np.ndarray:
    """Expected correctness of a uniformly random *sample* per problem: the mean correctness of
    the candidates weighted by ``counts`` (duplicates are separate samples). Pass ``counts=None``
    for LEVER's script's variant, a random *distinct program*. NaN for rows without candidates."""
    mask = np.asarray(mask, bool)
    weights = np.where(mask, 1.0 if counts is None else np.asarray(counts, np.float64), 0.0)
    total = weights.sum(axis=-1)
    hits = (weights * np.asarray(correct, bool)).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, hits / total, np.nan)


# ----------------------------------------------------------------------------------------------
# CodeT (Chen et al., 2022): dual execution agreement


class CodeTResult(NamedTuple):
    """Output of :func:`codet_dual_agreement` (leading problem axis ``[B]`` when batched).

    choice: int32[B], first member of the best consensus set (-1: no sample passes any test).
    group_ids: int32[B, S], consensus set of each sample, numbered by first appearance (-1 for
      samples that pass no test or are padding).
    scores: float64[B, S], the score of each sample's consensus set (0 where group_ids is -1).
    top_mask: bool[B, S], samples in a consensus set with the best score (ties included): CodeT's
      pass@1 draws uniformly from these.
    """

    choice: np.ndarray
    group_ids: np.ndarray
    scores: np.ndarray
    top_mask: np.ndarray


def codet_dual_agreement(
    passes: np.ndarray,
    sample_mask: np.ndarray | None = None,
    *,
    test_mask: np.ndarray | None = None,
    sample_counts: np.ndarray | None = None,
    test_counts: np.ndarray | None = None,
    sample_weight: str = "sqrt",
) -> CodeTResult:
    """CodeT's dual execution agreement over ``passes: bool[S, T]`` (or ``[B, S, T]``).

    Samples that pass exactly the same set of generated tests form a consensus set; its score is
    ``f(#samples) * #tests passed`` with ``f = sqrt`` (``sample_weight='sqrt'``, CodeT's released
    ``agreement.py``, 37.3 on our HumanEval pool) or ``f = identity`` (``'linear'``, the paper's
    formula, 36.4). ``sample_counts`` / ``test_counts`` give the multiplicity of each distinct
    sample / test string (CodeT counts duplicates separately). Samples passing no test are left
    out, as in CodeT. The choice is the first member of the best set, ties to the set whose first
    member comes first; CodeT's own pass@1 is :func:`codet_expected_accuracy`.
    """
    if sample_weight not in ("sqrt", "linear"):
        raise ValueError(f"sample_weight must be 'sqrt' or 'linear', got {sample_weight!r}")
    passes = np.asarray(passes, bool)
    squeeze = passes.ndim == 2
    if squeeze:
        passes = passes[None]
    if passes.ndim != 3:
        raise ValueError(f"passes must be [S, T] or [B, S, T], got shape {passes.shape}")
    batch, num_samples, num_tests = passes.shape

    def expand(x, shape, default):
        if x is None:
            return np.full(shape, default)
        x = np.asarray(x)
        x = x[None] if squeeze else x
        if x.shape != shape:
            raise ValueError(f"expected shape {shape[1:] if squeeze else shape}, got {x.shape}")
        return x

    smask = expand(sample_mask, (batch, num_samples), True).astype(bool)
    tmask = expand(test_mask, (batch, num_tests), True).astype(bool)
    scount = expand(sample_counts, (batch, num_samples), 1).astype(np.float64)
    tcount = expand(test_counts, (batch, num_tests), 1).astype(np.float64)

    choice = np.full(batch, -1, np.int32)
    group_ids = np.full((batch, num_samples), -1, np.int32)
    scores = np.zeros((batch, num_samples), np.float64)
    top_mask = np.zeros((batch, num_samples), bool)
    for b in range(batch):
        valid = passes[b] & tmask[b][None, :]
        eligible = smask[b] & valid.any(axis=1)
        rows = np.flatnonzero(eligible)
        if rows.size == 0:
            continue
        keys = np.packbits(valid[rows], axis=1)
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        order = np.argsort(first, kind="stable")  # groups by first appearance
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        gid = rank[inverse]
        sizes = np.bincount(gid, weights=scount[b, rows])
        tests = (valid[rows[first[order]]] * tcount[b][None, :]).sum(axis=1)
        f = np.sqrt(sizes) if sample_weight == "sqrt" else sizes
        group_score = f * tests
        best = group_score.max()
        winner = int(np.flatnonzero(group_score == best)[0])
        choice[b] = rows[first[order][winner]]
        group_ids[b, rows] = gid
        scores[b, rows] = group_score[gid]
        top_mask[b, rows] = group_score[gid] == best
    result = CodeTResult(choice, group_ids, scores, top_mask)
    if squeeze:
        return CodeTResult(*(x[0] for x in result))
    return result


def codet_expected_accuracy(
    result: CodeTResult,
    correct: np.ndarray,
    sample_mask: np.ndarray | None = None,
    sample_counts: np.ndarray | None = None,
) -> np.ndarray:
    """CodeT's pass@1 per problem: the (count-weighted) fraction of correct samples among the
    best-scoring consensus sets (ties merged, as CodeT's ``evaluation.py``); where no sample
    passes any generated test, the expected correctness of a random sample."""
    correct = np.asarray(correct, bool)
    top = np.asarray(result.top_mask, bool)
    squeeze = correct.ndim == 1
    if squeeze:
        correct, top = correct[None], top[None]
    mask = np.ones_like(correct) if sample_mask is None else np.asarray(sample_mask, bool).reshape(correct.shape)
    counts = np.ones(correct.shape) if sample_counts is None else np.asarray(sample_counts, np.float64).reshape(correct.shape)
    use = np.where(top.any(axis=1, keepdims=True), top, mask)
    weights = np.where(use, counts, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = (weights * correct).sum(axis=1) / weights.sum(axis=1)
    acc = np.where(weights.sum(axis=1) > 0, acc, math.nan)
    return acc[0] if squeeze else acc


# ----------------------------------------------------------------------------------------------
# The paper's execution-aware baselines (LEVER Table 2: ML + EP, voting over error-free programs)


def ml_ep(gen_logprob: np.ndarray, errored: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """ML + EP: the most likely program among those that execute without error (the paper's main
    baseline); rows where every program errored fall back to the most likely program."""
    mask = np.asarray(mask, bool)
    ok = mask & ~np.asarray(errored, bool)
    pick = _argmax_masked(np.asarray(gen_logprob, np.float64), ok)
    return np.where(ok.any(axis=-1), pick, max_gen_logprob(gen_logprob, mask)).astype(np.int32)


def voting_error_free(
    result_ids: np.ndarray, errored: np.ndarray, mask: np.ndarray, counts: np.ndarray | None = None
) -> np.ndarray:
    """Majority vote over the programs that execute without error (errored samples cast no vote);
    rows where every program errored fall back to the plain majority vote."""
    mask = np.asarray(mask, bool)
    ok = mask & ~np.asarray(errored, bool)
    pick = majority_vote(result_ids, ok, counts)
    return np.where(ok.any(axis=-1), pick, majority_vote(result_ids, mask, counts)).astype(np.int32)
