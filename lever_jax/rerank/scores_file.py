"""The one scores file (``lever-jax/scores/v2``): written by `eval`, `run` and `rerank --output`,
read by `rerank --verifier-scores`; plus the `eval` / training metrics of an ``EvalSet``.

Layout (documented in docs/data_format.md, "Scores file")::

    {"format": "lever-jax/scores/v2", "gen_normalize": "sum" | "mean",
     "methods": [method keys, lever_jax.rerank.table.METHODS order], ...metadata (task, ...),
     "problems": [{"problem_id": str,
                   "candidates": [{"candidate_index": int, "program_digest": str,
                                   "gen_logprob": float | null,
                                   "verifier_logprob": float | null, "group": int, "count": int,
                                   "correct": bool, "errored": bool (when known),
                                   "score": float | null, "group_score": float | null}],
                   "choices": {method: candidate_index or -1},
                   "choice_correct": {method: bool}}]}

``gen_logprob`` is the log P_LM LEVER's score used (after normalisation / count fallback);
``verifier_logprob``, ``score`` and ``group_score`` are present only with verifier scores; null
stands for -inf / NaN. ``program_digest`` (``data.arrays.program_digest``) pins each score to its
program: reading the file against an executed file checks digest, count, correct and gen_logprob
of every candidate (the ones a file has; older files have no digest) and refuses a mismatch. The reader also accepts v1 files (``lever-jax/scores/v1`` or no tag, with
``index`` instead of ``candidate_index``).
"""
from __future__ import annotations

import json
import math
import os
from typing import Any, Mapping, Optional

import numpy as np

from lever_jax.data import paths
from lever_jax.data.arrays import CandidateArrays
from lever_jax.data.jsonl import DataFileError
from lever_jax.rerank import scoring, statistics, table as table_lib

FORMAT = "lever-jax/scores/v2"
READABLE_FORMATS = (FORMAT, "lever-jax/scores/v1", None)


def default_gen_normalize(dataset: str) -> str:
    """LEVER's setting: per-token mean log-prob for GSM8k, summed elsewhere."""
    return "mean" if dataset == "gsm8k" else "sum"


def _normalize_flag(gen_normalize: Optional[str], dataset: str) -> str:
    gen_normalize = gen_normalize or default_gen_normalize(dataset)
    if gen_normalize not in ("sum", "mean"):
        raise ValueError(f"gen_normalize must be 'sum' or 'mean', got {gen_normalize!r}")
    return gen_normalize


def calibration_error(p_yes: np.ndarray, labels: np.ndarray, num_bins: int = 10) -> float:
    """Expected calibration error of P(yes) against the labels (`statistics.reliability`)."""
    p_yes = np.asarray(p_yes, np.float64).reshape(1, -1)
    if p_yes.size == 0:
        return float("nan")
    with np.errstate(divide="ignore"):
        logp = np.log(p_yes)
    return statistics.reliability(logp, np.asarray(labels, bool).reshape(1, -1),
                                  np.ones_like(p_yes, bool), num_bins).ece


def compute_metrics(eval_set: Any, verifier_logprob: np.ndarray,
                    gen_normalize: Optional[str] = None) -> dict[str, float]:
    """`table.lever_metrics` of an ``inputs.feeds.EvalSet`` scored with per-candidate log P(yes)
    (flat [N_total]): the dev metrics of training."""
    norm = _normalize_flag(gen_normalize, eval_set.dataset)
    return table_lib.lever_metrics(eval_set.arrays, eval_set.to_rows(verifier_logprob),
                                   normalize_gen=norm == "mean")


def scores_document(
    arrays: CandidateArrays,
    verifier_logprob: Optional[np.ndarray] = None,
    *,
    normalize_gen: bool = False,
    use_gen_prob: bool = True,
    choices: Optional[Mapping[str, Optional[np.ndarray]]] = None,
    metadata: Optional[Mapping[str, Any]] = None,
    reranked: Optional[scoring.RerankOutput] = None,
) -> dict[str, Any]:
    """The v2 scores document of a pool (see the module docstring). ``choices`` (method -> choice)
    defaults to every method of the table; ``reranked``: LEVER's rerank of these scores when the
    caller has it (its candidate and group scores are written, not computed again)."""
    if choices is None:
        choices = {k: c for k, (_, c) in table_lib.per_problem(
            arrays, verifier_logprob, normalize_gen=normalize_gen, use_gen_prob=use_gen_prob).items()}
    picked = {k: np.asarray(c) for k, c in choices.items() if c is not None}
    gen = table_lib.gen_logprob_for_rerank(arrays, normalize_gen)
    ver = cand_scores = group_scores = None
    if verifier_logprob is not None:
        ver = np.asarray(verifier_logprob, np.float32)
        out = reranked if reranked is not None else scoring.rerank(
            gen if use_gen_prob else np.zeros_like(gen), ver, arrays.result_ids, arrays.mask, ids_are_dense=True)
        cand_scores, group_scores = np.asarray(out.candidate_scores), np.asarray(out.group_scores)
    problems = []
    for row, problem_id in enumerate(arrays.problem_ids):
        candidates = []
        for col in np.flatnonzero(arrays.mask[row]):
            entry: dict[str, Any] = {
                "candidate_index": int(col),
                "gen_logprob": _finite_or_none(gen[row, col]),
                "group": int(arrays.result_ids[row, col]),
                "count": int(arrays.counts[row, col]),
                "correct": bool(arrays.correct[row, col]),
            }
            if arrays.errored_known:
                entry["errored"] = bool(arrays.errored[row, col])
            if arrays.digests is not None:
                entry["program_digest"] = str(arrays.digests[row, col])
            if ver is not None:
                entry["verifier_logprob"] = _finite_or_none(ver[row, col])
                entry["score"] = _finite_or_none(cand_scores[row, col])  # type: ignore[index]
                entry["group_score"] = _finite_or_none(group_scores[row, col])  # type: ignore[index]
            candidates.append(entry)
        chosen = {k: int(c[row]) for k, c in picked.items()}
        problems.append({
            "problem_id": problem_id,
            "candidates": candidates,
            "choices": chosen,
            "choice_correct": {k: bool(c >= 0 and arrays.correct[row, c]) for k, c in chosen.items()},
        })
    doc: dict[str, Any] = {"format": FORMAT, **(metadata or {}),
                           "gen_normalize": "mean" if normalize_gen else "sum",
                           "methods": list(picked), "problems": problems}
    return doc


def eval_outputs(eval_set: Any, verifier_logprob: np.ndarray, gen_normalize: Optional[str] = None,
                 **metadata: Any) -> tuple[dict[str, float], dict[str, Any]]:
    """What `lever-jax eval` writes, from one method table: (the metrics of
    :func:`compute_metrics`, the v2 scores document of the EvalSet; ``metadata``: task, step, ...)."""
    norm = _normalize_flag(gen_normalize, eval_set.dataset)
    arrays, ver = eval_set.arrays, np.asarray(eval_set.to_rows(verifier_logprob), np.float32)
    gen = table_lib.gen_logprob_for_rerank(arrays, norm == "mean")
    reranked = scoring.rerank(gen, ver, arrays.result_ids, arrays.mask, ids_are_dense=True)  # the one rerank
    found = table_lib.per_problem(arrays, ver, normalize_gen=norm == "mean",
                                  chosen={"lever": np.asarray(reranked.choice)})
    metrics = table_lib.lever_metrics(arrays, ver, found)
    document = scores_document(arrays, ver, normalize_gen=norm == "mean", metadata=metadata,
                               choices={k: c for k, (_, c) in found.items()}, reranked=reranked)
    return metrics, document


def eval_scores_document(eval_set: Any, verifier_logprob: np.ndarray, gen_normalize: Optional[str] = None,
                         **metadata: Any) -> dict[str, Any]:
    """The scores document of :func:`eval_outputs` alone."""
    return eval_outputs(eval_set, verifier_logprob, gen_normalize, **metadata)[1]


def score_records(eval_set: Any, verifier_logprob: np.ndarray,
                  gen_normalize: Optional[str] = None) -> list[dict[str, Any]]:
    """The ``problems`` list of :func:`eval_scores_document` (kept for callers that wrap it)."""
    return eval_scores_document(eval_set, verifier_logprob, gen_normalize)["problems"]


# ----------------------------------------------------------------------------------------------
# Reading


def load_scores(path: str | os.PathLike) -> dict[str, Any]:
    """Read and check a scores file; DataFileError (one line: file, field) on anything malformed."""
    path = paths.location(path)  # a local path or a URL (gs://...)
    if paths.isdir(path):
        raise DataFileError(path, None, None, "is a directory, expected a scores JSON file")
    try:
        text = paths.read_text(path)
    except FileNotFoundError:
        raise DataFileError(path, None, None, "no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise DataFileError(path, None, None, f"cannot read: {err}") from None
    if not text.strip():
        raise DataFileError(path, None, None, "empty file, expected a scores JSON document")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise DataFileError(path, err.lineno, None, f"not JSON: {err.msg}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("problems"), list):
        raise DataFileError(path, None, "problems", "expected an object with a 'problems' list")
    if doc.get("format") not in READABLE_FORMATS:
        raise DataFileError(path, None, "format", f"unknown format {doc.get('format')!r} "
                            f"(readable: {', '.join(f for f in READABLE_FORMATS if f)})")
    return doc


def read_verifier_scores(path: str | os.PathLike, arrays: CandidateArrays,
                         source: str = "the executed file") -> tuple[np.ndarray, np.ndarray]:
    """Verifier log-probs aligned to ``arrays`` -> (f32[P, N] log P(yes), bool[P] problems covered).

    Problems absent from the file are not covered (the caller reranks the covered subset); a
    covered problem must score every one of its candidates, and every candidate's stored
    program_digest / count / correct / gen_logprob must match ``arrays`` (read from ``source``):
    scores of a reordered or edited pool are refused, never applied to the wrong programs."""
    doc = load_scores(path)
    gen = table_lib.gen_logprob_for_rerank(arrays, doc.get("gen_normalize") == "mean")
    out = np.full(arrays.shape, np.nan, np.float32)
    row_of = {pid: i for i, pid in enumerate(arrays.problem_ids)}
    covered = np.zeros(arrays.num_problems, bool)
    for k, problem in enumerate(doc["problems"]):
        where = f"problems[{k}]"
        if not isinstance(problem, dict) or not isinstance(problem.get("candidates"), list):
            raise DataFileError(path, None, where, "expected an object with 'problem_id' and 'candidates'")
        row = row_of.get(problem.get("problem_id"))
        if row is None:
            continue
        covered[row] = True
        for j, cand in enumerate(problem["candidates"]):
            col = cand.get("candidate_index", cand.get("index")) if isinstance(cand, dict) else None
            if not isinstance(col, int) or isinstance(col, bool):
                raise DataFileError(path, None, f"{where}.candidates[{j}].candidate_index", "missing or not an integer")
            if not 0 <= col < arrays.shape[1] or not arrays.mask[row, col]:
                raise DataFileError(path, None, f"{where}.candidates[{j}].candidate_index",
                                    f"{col} is not a candidate of problem {problem['problem_id']!r} in the executed file")
            _check_same_candidate(path, f"{where}.candidates[{j}]", cand, arrays, row, col, gen, source)
            value = cand.get("verifier_logprob", math.nan)
            if value is None:
                value = -math.inf
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value > 0:
                raise DataFileError(path, None, f"{where}.candidates[{j}].verifier_logprob",
                                    f"expected a log-probability <= 0 or null, got {value!r}")
            out[row, col] = value
    missing = arrays.mask & covered[:, None] & np.isnan(out)
    if missing.any():
        row, col = map(int, np.argwhere(missing)[0])
        raise DataFileError(path, None, "verifier_logprob",
                            f"missing for {int(missing.sum())} candidates (first: {arrays.problem_ids[row]!r} #{col})")
    return np.where(arrays.mask, out, -np.inf).astype(np.float32), covered


def _stored_vs_executed(cand: Mapping[str, Any], arrays: CandidateArrays, row: int, col: int,
                        gen: np.ndarray) -> Optional[tuple[str, Any, Any]]:
    """The first of program_digest / count / correct / gen_logprob that the scores file stores
    for this candidate and that differs from the executed pool: (field, stored, executed)."""
    if "program_digest" in cand and arrays.digests is not None and cand["program_digest"] != arrays.digests[row, col]:
        return "program_digest", cand["program_digest"], str(arrays.digests[row, col])
    for field, executed in (("count", int(arrays.counts[row, col])), ("correct", bool(arrays.correct[row, col]))):
        if field in cand and cand[field] != executed:
            return field, cand[field], executed
    if "gen_logprob" in cand:
        stored, executed_lp = cand["gen_logprob"], _finite_or_none(gen[row, col])
        if not isinstance(stored, (int, float, type(None))) or isinstance(stored, bool):
            return "gen_logprob", stored, executed_lp
        if (stored is None) != (executed_lp is None) or (
                stored is not None and not math.isclose(stored, executed_lp, rel_tol=1e-5, abs_tol=1e-4)):
            return "gen_logprob", stored, executed_lp
    return None


def _check_same_candidate(path: str | os.PathLike, where: str, cand: Mapping[str, Any], arrays: CandidateArrays,
                          row: int, col: int, gen: np.ndarray, source: str) -> None:
    """DataFileError naming problem, candidate and field when the scored candidate is not the executed one."""
    differs = _stored_vs_executed(cand, arrays, row, col, gen)
    if differs is not None:
        field, stored, executed = differs
        raise DataFileError(path, None, f"{where}.{field}",
                            f"problem {arrays.problem_ids[row]!r} candidate {col}: {field} is {stored!r} here but "
                            f"{executed!r} in {source}: these scores were written for another version of it (candidates "
                            f"reordered, edited or re-executed); score this executed file again")


def _finite_or_none(value: float) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None
