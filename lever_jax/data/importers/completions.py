"""Import OpenAI-style / vLLM completion outputs (with token log-probs) as a samples file.

Input: JSONL, one object per line, each naming the problem and holding a response:

    {"problem_id": "gsm8k-test-0000", "response": {"choices": [...]}}   # the server's JSON reply
    {"problem_id": "gsm8k-test-0000", "choices": [...]}                 # or the choices inline
    {"problem_id": "...", "outputs": [...]}                              # vLLM offline RequestOutput dump
    optional "stop": [..] per line (default: IMPORT_STOPS of the dataset; see "Stop sequences")

Several lines may name the same problem (e.g. repeated n=1 requests); their choices are pooled.
Choice layouts understood (field names as in the OpenAI / vLLM APIs):

- completions: ``choices[].text``, ``choices[].logprobs.tokens``, ``choices[].logprobs.token_logprobs``
  (optionally ``.text_offset``);
- chat completions: ``choices[].message.content``, ``choices[].logprobs.content[].token`` / ``.logprob``;
- vLLM offline: ``outputs[].text``, ``outputs[].cumulative_logprob``, ``outputs[].token_ids`` (the stop
  sequence is already applied by vLLM; the cumulative log-prob is used as is).

Transformations (each explicit, each counted in the ``stats`` the importer fills and
``lever-jax import`` prints):

1. **Fences** (``strip_fences=True``, default): a reply holding a Markdown code fence (chat models:
   ```` ```python ... ``` ````) is replaced by the first fenced block's body; text around it is
   dropped; an unclosed fence runs to the end. LEVER's Codex completions have no fences, so this is
   a no-op on them. ``strip_fences=False`` keeps replies as they are.
2. **Stop sequences**: the text is cut at the first stop sequence. Which stops: ``stops`` when given
   (``--stop``), else a line's own ``"stop"`` list, else :data:`IMPORT_STOPS` of the dataset. Those
   defaults cut only at the few-shot prompt's record separator (GSM8k ``"\n\n## "``, Spider/WikiTQ
   ``"\n\n-- Example:"``, MBPP ``"### Task End ###"``), so a program with blank lines is kept
   whole. LEVER *sampled* with stop ``"\n\n"`` (GSM8k, Spider, WikiTQ;
   :data:`lever_jax.data.prompts.STOP_SEQUENCES`, what ``lever-jax prompts`` writes), i.e. the
   server cut there; pass ``stops=STOP_SEQUENCES[dataset]`` (``--stop-preset lever``) to cut an
   uncut completion exactly as that generation did.
3. **Log-probs** (as LEVER's ``get_gen_logprob``): ``gen_logprob`` is the sum of the log-probs of
   the tokens overlapping the kept text (a token straddling a cut is included; a ``null``
   log-prob, e.g. the first token of an echoed prompt, is skipped), ``num_tokens`` their count.
   vLLM's ``cumulative_logprob`` covers the whole output and is used as is.
4. Programs are the kept text ``strip()``-ed (HumanEval: prompt + kept completion, right-stripped
   only); identical programs are merged with counts.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from lever_jax.data.importers.merge import merge_candidates
from lever_jax.data.jsonl import DataFileError, PathLike, iter_json_lines
from lever_jax.data.schema import Candidate, Problem

# Import-time stop sequences: the few-shot prompts' record separators (lever_jax.data.prompts), so
# that a blank line inside a program never cuts it. LEVER's generation stops are
# lever_jax.data.prompts.STOP_SEQUENCES (GSM8k "\n\n"); HumanEval uses the same list as there.
IMPORT_STOPS: dict[str, tuple[str, ...]] = {
    "gsm8k": ("\n\n## ",),
    "mbpp": ("### Task End ###",),
    "humaneval": ("\nclass", "\ndef", "\n#", "\nif", "\nprint"),
    "spider": ("\n\n-- Example:",),
    "wikitq": ("\n\n-- Example:",),
}
_FENCE = re.compile(r"```[ \t]*[\w.+-]*[^\n]*\n(?P<body>.*?)(?:\n[ \t]*```|\Z)", re.S)
STAT_KEYS = ("choices", "fences_stripped", "cut_at_stop")


def fenced_span(text: str) -> tuple[int, int] | None:
    """(start, end) of the first Markdown fenced block's body in ``text``; None without a fence."""
    match = _FENCE.search(text)
    return (match.start("body"), match.end("body")) if match else None


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
                   offsets: Sequence[int] | None = None, start: int = 0) -> tuple[float, int]:
    """Sum and count of the log-probs of tokens starting before character ``cut`` (and, when
    ``start`` > 0, ending after ``start``: the tokens overlapping the kept span)."""
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
    for begin, tok, lp in zip(offsets, tokens, token_logprobs):
        if begin >= cut:
            break
        if lp is None or (start > 0 and begin + len(tok) <= start):
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
                          source: str | None = "openai", strip: bool = True, strip_fences: bool = True,
                          stats: dict[str, int] | None = None) -> Candidate:
    """One choice -> one candidate: the first fenced block (``strip_fences``), cut at the first
    stop sequence; ``stats`` counts ``choices``, ``fences_stripped`` and ``cut_at_stop``."""
    text, cumulative, n_ids, has_token_logprobs = _choice_parts(choice)
    start, end = (fenced_span(text) if strip_fences else None) or (0, len(text))
    cut = start + cut_at_stop(text[start:end], stops)
    body = text[start:cut]
    if stats is not None:
        stats["choices"] = stats.get("choices", 0) + 1
        stats["fences_stripped"] = stats.get("fences_stripped", 0) + (end - start != len(text))
        stats["cut_at_stop"] = stats.get("cut_at_stop", 0) + (cut < end)
    program = prefix + (body.strip() if strip else body.rstrip())
    gen_logprob: float | None = cumulative
    num_tokens: int | None = n_ids
    if has_token_logprobs:
        tokens, values, offsets = _token_logprobs(choice)
        gen_logprob, num_tokens = logprob_prefix(tokens, values, cut, offsets, start)
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
                       source: str = "openai", strip_fences: bool = True,
                       stats: dict[str, int] | None = None) -> Iterator[Problem]:
    """Problems (in the order given) with candidates from the completion file at ``path``.

    ``stops``: overrides every line's ``"stop"`` and :data:`IMPORT_STOPS` (see the module doc).
    Problems that no line names are skipped; a line naming an unknown problem is an error.
    ``stats`` (optional) receives the counts of :data:`STAT_KEYS`.
    """
    by_id = {p.problem_id: p for p in problems}
    collected: dict[str, list[Candidate]] = {}
    for lineno, obj in iter_json_lines(path):
        if not isinstance(obj, Mapping):
            raise DataFileError(path, lineno, None, "expected a JSON object")
        pid = obj.get("problem_id")
        if pid not in by_id:
            raise DataFileError(path, lineno, "problem_id", f"unknown problem {pid!r} (wrong --dataset/--split?)")
        problem = by_id[pid]
        line_stops = stops if stops is not None else obj.get("stop", IMPORT_STOPS[problem.dataset])
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
                cand = candidate_from_choice(choice, line_stops, prefix, source, strip=not is_full_program,
                                             strip_fences=strip_fences, stats=stats)
            except (ValueError, KeyError, TypeError) as err:
                raise DataFileError(path, lineno, f"choices[{i}]", str(err)) from None
            collected.setdefault(pid, []).append(cand)
    for pid, problem in by_id.items():
        if pid in collected:
            yield problem.replace(candidates=merge_candidates(collected[pid]))


def default_source(path: PathLike) -> str:
    return "openai:" + Path(str(path)).name.split(".")[0]
