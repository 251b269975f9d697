"""LEVER reranking as pure, jit/vmap/grad-friendly JAX functions (plus a numpy reference).

This module is the ground floor: it imports only jax, numpy and the standard library.

Semantics follow LEVER's ``EndVerificationModel.aggregate_exec_results`` (Ni et al., 2023):

* candidate score ``s = verifier_coef * log P(yes) + gen_coef * log P_LM``;
* ``aggregate=True`` ("summing"): candidates with equal result ids form a group; a group's score
  is the logsumexp of its members' scores; the answer is the *first* (lowest-index) member of the
  best group, and ties between groups go to the group whose first member comes first (LEVER
  builds groups greedily in candidate order and takes ``argmax`` over them);
* ``aggregate=False``: ``argmax`` of the candidate scores, ties to the lowest index;
* "voting" (:func:`rerank_voting`): candidates with ``P(yes) < threshold`` add no mass, and a
  group's score is the logsumexp of its remaining members' ``gen_coef * log P_LM``.

Group ties: mathematically equal groups (the same member scores in another order) differ by
float rounding that depends on summation order, so LEVER's own choice between them is an accident
of rounding. Here group scores within ``tie_rtol * max(1, |best|)`` (default 1e-5) of the best
count as tied and the first group wins, on every path; ``tie_rtol=0`` compares exactly.

Padding (``mask == False``) never wins and never adds mass; a row without any real candidate
returns choice ``-1``. A row with a NaN candidate score also returns ``-1`` (no meaningful
answer); ``-inf`` scores (``log P(yes) = -inf``) are fine and produce finite gradients.

Two group-score paths, chosen with ``ids_are_dense`` (at compile time for a Python bool):

* arbitrary int32 ids: ``N x N`` equality comparisons per row (O(B * N^2) work, N exps per row);
* dense ids (``0 <= id < N``; :func:`dense_group_ids` (hash-based, in ``lever_jax.rerank.group_ids``,
  re-exported here) and ``lever_jax.data.arrays`` produce them,
  numbered by first appearance): one O(B * N) segment sum over ``row * N + id``, shifted by the
  row max. If a whole group sits so far below its row's best (> ~69 nats) that the shifted sum
  loses precision, a ``lax.cond`` recomputes with per-group shifts (segment max), so results are
  exact either way and the common case pays for one scatter and one gather.

The choice is computed the same way on both paths: the first unmasked index whose group score
is (within the tie tolerance of) the row maximum. Because groups are ordered by their first
member, that index is the first member of the first best group, so the dense path does not rely
on the first-appearance numbering; it only needs ids in ``[0, N)`` (others are clipped).
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from lever_jax.rerank.group_ids import dense_group_ids, dense_group_ids_reference

__all__ = [
    "RerankOutput",
    "rerank",
    "rerank_voting",
    "dense_group_ids",
    "normalize_gen_logprob",
    "frequency_logprob",
    "rerank_reference",
    "dense_group_ids_reference",
    "DEFAULT_TIE_RTOL",
]

_NEG_INF = -jnp.inf
# Group scores closer than this (relative, floor 1.0) to the best count as tied.
DEFAULT_TIE_RTOL = 1e-5
# Row-shifted group totals below this (about exp(-69)) are recomputed with a per-group shift.
_TINY = 1e-30


class RerankOutput(NamedTuple):
    """Result of :func:`rerank` (a NamedTuple, hence a pytree usable under jit/vmap).

    choice: int32[B], index of the chosen candidate per row, -1 when the row has none.
    candidate_scores: f32[B, N], per-candidate score (voting: ``gen_coef * log P_LM``); -inf on
      padding.
    group_scores: f32[B, N], score of each candidate's group (equal to ``candidate_scores`` when
      ``aggregate=False``); -inf on padding and for groups without mass.
    """

    choice: jax.Array
    candidate_scores: jax.Array
    group_scores: jax.Array


# ----------------------------------------------------------------------------------------------
# Internals


def _scaled(coef: jax.Array, x: jax.Array) -> jax.Array:
    """``coef * x`` with ``0 * -inf = 0`` (a zero coefficient switches a term off)."""
    return jnp.where(coef == 0, jnp.zeros_like(x), coef * x)


def _safe_logsum(max_: jax.Array, total: jax.Array) -> jax.Array:
    """``max_ + log(total)``, -inf where ``total == 0``, with finite gradients everywhere."""
    has_mass = total > 0
    return jnp.where(has_mass, max_ + jnp.log(jnp.where(has_mass, total, 1.0)), _NEG_INF)


def _finite_or_zero(x: jax.Array) -> jax.Array:
    return jnp.where(jnp.isfinite(x), x, 0.0)


def _row_shift(scores: jax.Array) -> jax.Array:
    """Row max of ``scores`` (0 where the row has no finite score), without gradient."""
    return jax.lax.stop_gradient(_finite_or_zero(jnp.max(scores, axis=-1, keepdims=True)))


def _group_lse_pairwise(scores: jax.Array, ids: jax.Array) -> jax.Array:
    """Group logsumexp for arbitrary ids via ``N x N`` comparisons per row -> f32[B, N].

    ``scores`` is -inf where a candidate adds no mass. Two ``N x N`` reductions (group max, then
    group sum of ``exp(s - group max)``) but only N exps per row; exact, no fallback needed.
    """
    same = ids[:, :, None] == ids[:, None, :]  # [B, i, j]
    group_max = jnp.max(jnp.where(same, scores[:, None, :], _NEG_INF), axis=-1)
    group_max = jax.lax.stop_gradient(_finite_or_zero(group_max))
    weights = jnp.exp(scores - group_max)
    totals = jnp.sum(jnp.where(same, weights[:, None, :], 0.0), axis=-1)
    return _safe_logsum(group_max, totals)


def _segment_ids(ids: jax.Array, mask: jax.Array) -> jax.Array:
    """Flat segment index ``row * N + id`` (ids clipped into ``[0, N)``; padding -> its row's 0)."""
    batch, width = ids.shape
    ids = jnp.where(mask, jnp.clip(ids.astype(jnp.int32), 0, width - 1), 0)
    return (jnp.arange(batch, dtype=jnp.int32)[:, None] * width + ids).reshape(-1)


def _segment_sum(values: jax.Array, seg: jax.Array) -> jax.Array:
    return jax.ops.segment_sum(
        values.reshape(-1), seg, num_segments=values.size, mode="promise_in_bounds"
    )


def _gather(table: jax.Array, seg: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    return table.at[seg].get(mode="promise_in_bounds").reshape(shape)


def _group_lse_segments_exact(scores: jax.Array, seg: jax.Array) -> jax.Array:
    """Segment logsumexp with a per-group shift (two scatters); the underflow-safe fallback."""
    group_max = jax.ops.segment_max(
        scores.reshape(-1), seg, num_segments=scores.size, mode="promise_in_bounds"
    )
    group_max = jax.lax.stop_gradient(_finite_or_zero(group_max))
    totals = _segment_sum(jnp.exp(scores - _gather(group_max, seg, scores.shape)), seg)
    return _gather(_safe_logsum(group_max, totals), seg, scores.shape)


def _group_lse_segments(scores: jax.Array, seg: jax.Array) -> jax.Array:
    """Row-shifted group logsumexp for dense ids via one segment sum (see ``_segment_ids``).

    ``scores`` is -inf where a candidate adds no mass (so padding adds exactly 0 to whatever
    segment it is sent to). Entries that need the exact path are set to +inf: a finite score in
    a group whose shifted total lost precision (below ``_TINY``), or a NaN. The caller detects
    them from the row maxima it computes anyway, so the check costs no extra pass.
    """
    shift = _row_shift(scores)
    totals = _gather(_segment_sum(jnp.exp(scores - shift), seg), seg, scores.shape)
    bad = (jnp.isfinite(scores) & (totals < _TINY)) | jnp.isnan(totals)
    return jnp.where(bad, jnp.inf, _safe_logsum(shift, totals))


def _first_best(
    scores: jax.Array,
    mask: jax.Array,
    candidate_scores: jax.Array | None,
    tie_rtol: jax.Array | float = 0.0,
    best: jax.Array | None = None,
) -> jax.Array:
    """Lowest unmasked index whose score is within ``tie_rtol * max(1, |best|)`` of the row max
    (exact max when ``tie_rtol == 0``); -1 if none (all padding) or a candidate score is NaN
    (the NaN check is skipped when ``candidate_scores`` is None: the caller ruled NaN out).
    ``scores`` must already be -inf on padding; ``best`` is their row max if already known."""
    masked = scores
    if best is None:
        best = jnp.max(masked, axis=-1, keepdims=True)
    slack = tie_rtol * jnp.maximum(1.0, jnp.abs(jnp.where(jnp.isfinite(best), best, 0.0)))
    is_best = mask & (masked >= best - slack)
    # min over positions instead of argmax: a plain reduction, much cheaper on XLA:CPU
    width = scores.shape[-1]
    first = jnp.min(jnp.where(is_best, jnp.arange(width, dtype=jnp.int32), width), axis=-1)
    valid = first < width
    if candidate_scores is not None:
        valid &= ~jnp.any(mask & jnp.isnan(candidate_scores), axis=-1)
    return jnp.where(valid, first, -1).astype(jnp.int32)


def _concrete(flag: object) -> object:
    """A flag's Python value (bool / float / None), or the flag itself when it is traced (a user's
    ``jax.jit`` traced it): traced flags select their branch with ``lax.cond`` at run time."""
    if flag is None or isinstance(flag, (bool, int, float)):
        return flag
    try:
        value = np.asarray(flag)
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
        return flag
    return value.item() if value.shape == () else flag


def _branch(flag: object, if_true, if_false):
    """``if_true()`` or ``if_false()``: chosen in Python for a concrete flag, by lax.cond otherwise."""
    if isinstance(flag, (bool, int, float)):
        return if_true() if flag else if_false()
    return jax.lax.cond(jnp.asarray(flag, bool), if_true, if_false)


def _rerank_2d(
    scores: jax.Array,
    result_ids: jax.Array,
    mask: jax.Array,
    mass: jax.Array | None,
    aggregate: object,
    ids_are_dense: object,
    tie_rtol: jax.Array,
) -> RerankOutput:
    """Shared body of rerank / rerank_voting on [B, N]; ``mass=None`` means nothing is gated.
    ``aggregate`` / ``ids_are_dense`` are Python bools or traced booleans (see :func:`_branch`)."""
    candidate_scores = jnp.where(mask, scores, _NEG_INF)

    def plain() -> RerankOutput:
        return RerankOutput(
            _first_best(candidate_scores, mask, candidate_scores), candidate_scores, candidate_scores
        )

    return _branch(aggregate, lambda: _aggregated(scores, candidate_scores, result_ids, mask, mass,
                                                   ids_are_dense, tie_rtol), plain)


def _aggregated(
    scores: jax.Array,
    candidate_scores: jax.Array,
    result_ids: jax.Array,
    mask: jax.Array,
    mass: jax.Array | None,
    ids_are_dense: object,
    tie_rtol: jax.Array,
) -> RerankOutput:
    """Group scores and choice ("summing" / "voting", depending on ``mass``)."""
    contrib_scores = candidate_scores if mass is None else jnp.where(mass, candidate_scores, _NEG_INF)

    def finish(group: jax.Array) -> RerankOutput:
        group = jnp.where(mask, group, _NEG_INF)
        return RerankOutput(
            _first_best(group, mask, candidate_scores, tie_rtol), candidate_scores, group
        )

    return _branch(ids_are_dense,
                   lambda: _dense_path(candidate_scores, contrib_scores, result_ids, mask, mass, tie_rtol, finish),
                   lambda: finish(_group_lse_pairwise(contrib_scores, result_ids)))


def _dense_path(candidate_scores, contrib_scores, result_ids, mask, mass, tie_rtol, finish) -> RerankOutput:
    """Group scores for dense ids: one segment sum, exact fallback under lax.cond."""
    # Dense ids, fast path: one shift per row and a single segment sum. If a whole group sits so
    # far (> ~69 nats) below its row's best that its shifted total loses precision, or a score
    # is NaN, everything is recomputed with per-group shifts and per-row NaN checks (lax.cond:
    # the exact version only runs when needed; it sits at the very end so that the fast path
    # fuses into as few passes as possible).
    fast = jnp.where(mask, _group_lse_segments(contrib_scores, _segment_ids(result_ids, mask)), _NEG_INF)
    best = jnp.max(fast, axis=-1, keepdims=True)
    needs_exact = jnp.any(best == jnp.inf)
    if mass is not None:  # gated NaN candidates add no mass, so check them directly
        needs_exact |= jnp.any(mask & jnp.isnan(candidate_scores))
    fast_out = RerankOutput(
        _first_best(fast, mask, None, tie_rtol, best=best), candidate_scores, fast
    )
    return jax.lax.cond(
        needs_exact,
        lambda: finish(_group_lse_segments_exact(contrib_scores, _segment_ids(result_ids, mask))),
        lambda: fast_out,
    )


def _as_2d(*arrays: jax.Array) -> tuple[bool, tuple[jax.Array, ...]]:
    ndim = jnp.ndim(arrays[0])
    if ndim not in (1, 2):
        raise ValueError(f"expected [N] or [B, N] inputs, got shape {jnp.shape(arrays[0])}")
    for a in arrays:
        if jnp.shape(a) != jnp.shape(arrays[0]):
            raise ValueError(f"shape mismatch: {jnp.shape(a)} vs {jnp.shape(arrays[0])}")
    if ndim == 1:
        return True, tuple(jnp.asarray(a)[None] for a in arrays)
    return False, tuple(jnp.asarray(a) for a in arrays)


def _unbatch(squeeze: bool, out: RerankOutput) -> RerankOutput:
    if squeeze:
        return RerankOutput(out.choice[0], out.candidate_scores[0], out.group_scores[0])
    return out


# ----------------------------------------------------------------------------------------------
# Public API


def _prepare(gen_logprob, verifier_logprob, result_ids, mask):
    squeeze, (gen, ver, ids, mask) = _as_2d(gen_logprob, verifier_logprob, result_ids, mask)
    mask = mask.astype(bool)
    gen = jnp.where(mask, gen, 0.0).astype(jnp.float32)
    ver = jnp.where(mask, ver, 0.0).astype(jnp.float32)
    return squeeze, gen, ver, ids, mask


def _rerank_impl(gen_logprob, verifier_logprob, result_ids, mask, gen_coef, verifier_coef, tie_rtol,
                 aggregate, ids_are_dense, gate_threshold) -> RerankOutput:
    squeeze, gen, ver, ids, mask = _prepare(gen_logprob, verifier_logprob, result_ids, mask)
    scores = _scaled(jnp.asarray(verifier_coef, jnp.float32), ver) + _scaled(
        jnp.asarray(gen_coef, jnp.float32), gen
    )
    mass = None
    if isinstance(gate_threshold, (int, float)) and not isinstance(gate_threshold, bool):
        if gate_threshold > 0:
            mass = ~(ver < jnp.log(jnp.float32(gate_threshold)))
    elif gate_threshold is not None:  # traced: <= 0 gates nothing (log 0 = -inf)
        t = jnp.asarray(gate_threshold, jnp.float32)
        mass = ~(ver < jnp.log(jnp.maximum(t, 0.0)))
    out = _rerank_2d(scores, ids, mask, mass, aggregate, ids_are_dense, jnp.asarray(tie_rtol, jnp.float32))
    return _unbatch(squeeze, out)


_rerank_static = functools.partial(jax.jit, static_argnames=("aggregate", "ids_are_dense", "gate_threshold"))(
    _rerank_impl)


def rerank(
    gen_logprob: jax.Array,
    verifier_logprob: jax.Array,
    result_ids: jax.Array,
    mask: jax.Array,
    *,
    gen_coef: float | jax.Array = 1.0,
    verifier_coef: float | jax.Array = 1.0,
    aggregate: bool | jax.Array = True,
    ids_are_dense: bool | jax.Array = False,
    gate_threshold: float | jax.Array | None = None,
    tie_rtol: float | jax.Array = DEFAULT_TIE_RTOL,
) -> RerankOutput:
    """LEVER reranking of ``[B, N]`` (or ``[N]``) candidates ("summing" aggregation). Jitted.

    gen_logprob / verifier_logprob: f32, log P_LM and log P(yes); values on padding are ignored
      (NaN allowed there). verifier_logprob may be -inf.
    result_ids: int32 group ids (equal id <=> same execution result). Arbitrary values unless
      ``ids_are_dense``, where the caller promises ``0 <= id < N`` for unmasked candidates.
    mask: bool, True for real candidates.
    gate_threshold: LEVER's ``exec_result_agg_threshold``; candidates with
      ``P(yes) < gate_threshold`` keep their group membership but add no mass (LEVER adds -1e10 to
      their score, which in float32 erases them). None or 0.0 (LEVER's summing default) gates
      nothing. Only used when ``aggregate``. Compared in log space, ``log P(yes) <
      log(gate_threshold)``, which equals LEVER's ``exp(log P(yes)) < t`` except within float
      rounding of the threshold.
    tie_rtol: group scores within ``tie_rtol * max(1, |best|)`` of the best are tied (the first
      group wins). Mathematically equal groups (e.g. the same member scores in another order)
      differ by float rounding that depends on summation order; LEVER then picks whichever
      rounds higher. The tolerance makes such ties go to the first group on every path; 0.0
      restores exact comparison. Not used when ``aggregate=False`` (exact argmax, as LEVER).

    Coefficients and tie_rtol are always traced (sweeping them does not recompile). The flags
    ``aggregate``, ``ids_are_dense`` and ``gate_threshold`` are compile-time constants when given
    as Python values (a new value recompiles); under a caller's ``jax.jit`` that traces them
    (``jax.jit(rerank)(..., ids_are_dense=True)``) they become run-time switches (``lax.cond``:
    only the selected path runs). ``jax.jit(functools.partial(rerank, ids_are_dense=True))``
    keeps them static.
    """
    flags = _concrete(aggregate), _concrete(ids_are_dense), _concrete(gate_threshold)
    args = (gen_logprob, verifier_logprob, result_ids, mask, gen_coef, verifier_coef, tie_rtol)
    if all(f is None or isinstance(f, (bool, int, float)) for f in flags):
        agg, dense, gate = flags
        return _rerank_static(*args, aggregate=bool(agg), ids_are_dense=bool(dense),
                              gate_threshold=None if gate is None else float(gate))
    return _rerank_impl(*args, *flags)


def _voting_impl(gen_logprob, verifier_logprob, result_ids, mask, gen_coef, threshold, tie_rtol,
                 ids_are_dense) -> RerankOutput:
    squeeze, gen, ver, ids, mask = _prepare(gen_logprob, verifier_logprob, result_ids, mask)
    scores = _scaled(jnp.asarray(gen_coef, jnp.float32), gen)
    mass = ~(ver < jnp.log(jnp.asarray(threshold, jnp.float32)))
    out = _rerank_2d(scores, ids, mask, mass, True, ids_are_dense, jnp.asarray(tie_rtol, jnp.float32))
    return _unbatch(squeeze, out)


_voting_static = functools.partial(jax.jit, static_argnames=("ids_are_dense",))(_voting_impl)


def rerank_voting(
    gen_logprob: jax.Array,
    verifier_logprob: jax.Array,
    result_ids: jax.Array,
    mask: jax.Array,
    *,
    gen_coef: float | jax.Array = 1.0,
    threshold: float | jax.Array = 0.5,
    ids_are_dense: bool | jax.Array = False,
    tie_rtol: float | jax.Array = DEFAULT_TIE_RTOL,
) -> RerankOutput:
    """LEVER's "voting" aggregation: ``P(yes) >= threshold`` gates a vote weighted by ``P_LM``. Jitted.

    Every candidate keeps its group membership (so a group's first member may itself be gated,
    as in LEVER); only ungated candidates add ``exp(gen_coef * log P_LM)`` to their group. When
    no candidate of a row passes the gate, every group scores -inf and the first candidate is
    chosen, which is what LEVER's float32 ``-1e10`` penalty produces. ``threshold`` is traced;
    ``ids_are_dense`` behaves as in :func:`rerank`.
    """
    dense = _concrete(ids_are_dense)
    args = (gen_logprob, verifier_logprob, result_ids, mask, gen_coef, threshold, tie_rtol)
    if isinstance(dense, (bool, int, float)):
        return _voting_static(*args, ids_are_dense=bool(dense))
    return _voting_impl(*args, dense)


def normalize_gen_logprob(
    gen_logprob: jax.Array, num_tokens: jax.Array, mode: str = "mean"
) -> jax.Array:
    """LEVER's ``norm_gen_prob``: ``mode='mean'`` divides the summed log-prob by the token
    count (NaN where ``num_tokens <= 0``, i.e. unknown); ``mode='sum'`` returns it unchanged."""
    gen = jnp.asarray(gen_logprob, jnp.float32)
    if mode == "sum":
        return gen
    if mode != "mean":
        raise ValueError(f"mode must be 'sum' or 'mean', got {mode!r}")
    tokens = jnp.asarray(num_tokens)
    return jnp.where(tokens > 0, gen / jnp.maximum(tokens, 1).astype(jnp.float32), jnp.nan)


def frequency_logprob(counts: jax.Array, mask: jax.Array) -> jax.Array:
    """LEVER's fallback P_LM when a pool has no log-probs: ``log(count / total count)`` of each
    distinct program in its row (0.0 on padding, which rerank ignores)."""
    counts = jnp.where(jnp.asarray(mask, bool), jnp.asarray(counts, jnp.float32), 0.0)
    total = jnp.sum(counts, axis=-1, keepdims=True)
    ok = jnp.asarray(mask, bool) & (total > 0)
    return jnp.where(ok, jnp.log(counts) - jnp.log(jnp.where(total > 0, total, 1.0)), 0.0)


# ----------------------------------------------------------------------------------------------
# numpy reference (plain loops over LEVER's greedy grouping; float64) for tests and benchmarks


def _logsumexp(values: list[float]) -> float:
    if not values:
        return -math.inf
    top = max(values)
    if top == -math.inf:
        return -math.inf
    return top + math.log(sum(math.exp(v - top) for v in values))


def rerank_reference(
    gen_logprob: np.ndarray,
    verifier_logprob: np.ndarray,
    result_ids: np.ndarray,
    mask: np.ndarray,
    *,
    gen_coef: float = 1.0,
    verifier_coef: float = 1.0,
    aggregate: bool = True,
    gate_threshold: float | None = None,
    voting: bool = False,
    tie_rtol: float = DEFAULT_TIE_RTOL,
) -> RerankOutput:
    """Loop implementation mirroring LEVER's greedy grouping, in float64, for ``[B, N]`` inputs.

    ``voting=True`` gives :func:`rerank_voting` (with ``gate_threshold`` as its threshold).
    Returns numpy arrays (float64 scores).
    """
    gen = np.asarray(gen_logprob, np.float64)
    ver = np.asarray(verifier_logprob, np.float64)
    ids = np.asarray(result_ids)
    mask = np.asarray(mask, bool)
    batch, width = mask.shape
    choice = np.full(batch, -1, np.int32)
    cand = np.full((batch, width), -math.inf)
    group_scores = np.full((batch, width), -math.inf)

    def term(coef: float, x: float) -> float:
        return 0.0 if coef == 0 else coef * x

    for b in range(batch):
        real = [n for n in range(width) if mask[b, n]]
        for n in real:
            if voting:
                cand[b, n] = term(gen_coef, gen[b, n])
            else:
                cand[b, n] = term(verifier_coef, ver[b, n]) + term(gen_coef, gen[b, n])
        if not real:
            continue
        if not aggregate:
            group_scores[b] = cand[b]
            if any(math.isnan(cand[b, n]) for n in real):
                continue
            best = real[0]
            for n in real[1:]:
                if cand[b, n] > cand[b, best]:
                    best = n
            choice[b] = best
            continue
        # LEVER: each program joins the first group whose first member has an equal result.
        groups: list[list[int]] = []
        for n in real:
            for group in groups:
                if ids[b, group[0]] == ids[b, n]:
                    group.append(n)
                    break
            else:
                groups.append([n])
        # float32 log-space gate, as the jitted version computes it
        with np.errstate(divide="ignore"):
            log_threshold = np.log(np.float32(gate_threshold or 0.0))
        passes = {n: not (np.float32(ver[b, n]) < log_threshold) for n in real}
        scores = [_logsumexp([cand[b, n] for n in g if passes[n]]) for g in groups]
        for g, score in zip(groups, scores):
            group_scores[b, g] = score
        if any(math.isnan(s) for s in scores):
            continue
        top = max(scores)
        slack = tie_rtol * max(1.0, abs(top)) if math.isfinite(top) else 0.0
        # groups are in order of their first member: the first near-best group wins
        choice[b] = next(g[0] for g, s in zip(groups, scores) if s >= top - slack)
    return RerankOutput(choice, cand, group_scores)
