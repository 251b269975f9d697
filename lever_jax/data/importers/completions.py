"""Import OpenAI-style / vLLM completion outputs (with token log-probs) as a samples file.

Input: JSONL, one object per line, each naming the problem and holding a response:

    {"problem_id": "gsm8k-test-0000", "response": {"choices": [...]}}   # the server's JSON reply
    {"problem_id": "gsm8k-test-0000", "choices": [...]}                 # or the choices inline
    {"problem_id": "...", "outputs": [...]}                              # vLLM offline RequestOutput dump
    optional "stop": [..] per line (default: the dataset's LEVER stop sequences, lever_jax.data.prompts)

Several lines may name the same problem (e.g. repeated n=1 requests); their choices are pooled.
Choice layouts understood (field names as in the OpenAI / vLLM APIs):

- completions: ``choices[].text``, ``choices[].logprobs.tokens``, ``choices[].logprobs.token_logprobs``
  (optionally ``.text_offset``);
- chat completions: ``choices[].message.content``, ``choices[].logprobs.content[].token`` / ``.logprob``;
- vLLM offline: ``outputs[].text``, ``outputs[].cumulative_logprob``, ``outputs[].token_ids`` (the stop
  sequence is already applied by vLLM; the cumulative log-prob is used as is).

As LEVER did (``get_gen_logprob``): the text is cut at the first stop sequence and ``gen_logprob``
is the sum of the log-probs of the tokens that start before the cut, ``num_tokens`` their count
(a token straddling the cut is included; a ``null`` log-prob, e.g. the first token of an echoed
prompt, is skipped). Programs are the cut text (``strip()``-ed; HumanEval: prompt + cut completion,
right-stripped only). Identical programs are merged with counts.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from lever_jax.data.importers.merge import merge_candidates
from lever_jax.data.jsonl import DataFileError, PathLike, iter_json_lines
from lever_jax.data.schema import Candidate, Problem


def cut_at_stop(text: str, stops: Sequence[str]) -> int:
    """Index of the earliest stop sequence in ``text`` (``len(text)`` when none occurs)."""
    cut = len(text)
    for stop in stops:
        if stop:
            at = text.find(stop)
            if at != -1:
                cut = min(cut, at)
    return cut


def logprob_prefix(tokens: Sequence[str], token_logprobs: Sequence[float | None], cut: int,
                   offsets: Sequence[int] | None = None) -> tuple[float, int]:
    """Sum and count of the log-probs of tokens starting before character ``cut``."""
    if len(tokens) != len(token_logprobs):
        raise ValueError(f"{len(tokens)} tokens but {len(token_logprobs)} log-probs")
    if offsets is None:
        offsets, pos = [], 0
        for tok in tokens:
            offsets.append(pos)
            pos += len(tok)
    else:
        base = offsets[0] if offsets else 0
        offsets = [o - base for o in offsets]
    total, n = 0.0, 0
    for start, lp in zip(offsets, token_logprobs):
        if start >= cut:
            break
        if lp is None:
            continue
        total += float(lp)
        n += 1
    return total, n


def _choice_parts(choice: Mapping[str, Any]) -> tuple[str, float | None, int | None, bool]:
    """(text, precomputed logprob or None, precomputed token count or None, has per-token logprobs)."""
    if "message" in choice:  # chat completions
        text = (choice.get("message") or {}).get("content") or ""
    else:
        text = choice.get("text")
        if not isinstance(text, str):
            raise ValueError("choice has no 'text' (or 'message.content')")
    if "cumulative_logprob" in choice:  # vLLM offline output
        lp = choice.get("cumulative_logprob")
        ids = choice.get("token_ids")
        return text, None if lp is None else float(lp), None if ids is None else len(ids), False
    return text, None, None, bool(choice.get("logprobs"))


def _token_logprobs(choice: Mapping[str, Any]) -> tuple[list[str], list[float | None], list[int] | None]:
    logprobs = choice["logprobs"]
    if isinstance(logprobs.get("content"), list):  # chat layout
        content = logprobs["content"]
        return [c["token"] for c in content], [c.get("logprob") for c in content], None
    tokens = logprobs.get("tokens")
    values = logprobs.get("token_logprobs")
    if tokens is None or values is None:
        raise ValueError("logprobs needs 'tokens' and 'token_logprobs'")
    return list(tokens), list(values), logprobs.get("text_offset")


def candidate_from_choice(choice: Mapping[str, Any], stops: Sequence[str], prefix: str = "",
                          source: str | None = "openai", strip: bool = True) -> Candidate:
    """One choice -> one candidate (program cut at the first stop sequence)."""
    text, cumulative, n_ids, has_token_logprobs = _choice_parts(choice)
    cut = cut_at_stop(text, stops)
    body = text[:cut]
    program = prefix + (body.strip() if strip else body.rstrip())
    gen_logprob: float | None = cumulative
    num_tokens: int | None = n_ids
    if has_token_logprobs:
        tokens, values, offsets = _token_logprobs(choice)
        gen_logprob, num_tokens = logprob_prefix(tokens, values, cut, offsets)
    if gen_logprob is not None and (math.isnan(gen_logprob) or gen_logprob > 0):
        raise ValueError(f"log-probability {gen_logprob} is not <= 0")
    return Candidate(program=program, gen_logprob=gen_logprob, num_tokens=num_tokens, source=source)


def _choices(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    response = obj.get("response", obj)
    if not isinstance(response, Mapping):
        raise ValueError("'response' is not an object")
    choices = response.get("choices", response.get("outputs"))
    if not isinstance(choices, list):
        raise ValueError("no 'choices' (or vLLM 'outputs') list")
    return choices


def import_completions(path: PathLike, problems: Iterable[Problem], stops: Sequence[str] | None = None,
                       source: str = "openai") -> Iterator[Problem]:
    """Problems (in the order given) with candidates from the completion file at ``path``.

    Problems that no line names are skipped; a line naming an unknown problem is an error.
    """
    from lever_jax.data.prompts import STOP_SEQUENCES  # same layer; imported lazily

    by_id = {p.problem_id: p for p in problems}
    collected: dict[str, list[Candidate]] = {}
    for lineno, obj in iter_json_lines(path):
        if not isinstance(obj, Mapping):
            raise DataFileError(path, lineno, None, "expected a JSON object")
        pid = obj.get("problem_id")
        if pid not in by_id:
            raise DataFileError(path, lineno, "problem_id", f"unknown problem {pid!r} (wrong --dataset/--split?)")
        problem = by_id[pid]
        line_stops = obj.get("stop", stops if stops is not None else STOP_SEQUENCES[problem.dataset])
        if isinstance(line_stops, str):
            line_stops = [line_stops]
        is_full_program = problem.dataset == "humaneval"
        prefix = str(problem.context.get("prompt", "")) if is_full_program else ""
        try:
            choices = _choices(obj)
        except ValueError as err:
            raise DataFileError(path, lineno, "response", str(err)) from None
        for i, choice in enumerate(choices):
            try:
                cand = candidate_from_choice(choice, line_stops, prefix, source, strip=not is_full_program)
            except (ValueError, KeyError, TypeError) as err:
                raise DataFileError(path, lineno, f"choices[{i}]", str(err)) from None
            collected.setdefault(pid, []).append(cand)
    for pid, problem in by_id.items():
        if pid in collected:
            yield problem.replace(candidates=merge_candidates(collected[pid]))


def default_source(path: PathLike) -> str:
    return "openai:" + Path(str(path)).name.split(".")[0]
