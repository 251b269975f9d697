"""Import LEVER's released verification files (``<dataset>_codex_verification_<split>.jsonl``).

Layout assumed (the field names LEVER's verification readers and ``create_verification_examples``
use), one JSON object per line:

    {"metadata": {<the original example>},
     "gold_program":      {"code", "exec_result", "exec_match", ...},            # optional
     "generated_program": {"code" | "program", "exec_result",                    # greedy, optional
                           "exec_match" | "exec_acc", ...},
     "generated_programs": [{"code", "lower_code", "exec_result", "exec_match",
                             "program_count", "gen_prob", "norm_gen_prob"}, ...]}

- ``gen_prob`` = sum of token log-probs, ``norm_gen_prob`` = gen_prob / number of tokens, so
  ``num_tokens = round(gen_prob / norm_gen_prob)``.
- ``exec_result`` is a string (``"ERROR..."``) when execution failed, else the result (GSM8k: dict
  of final locals; Spider/WikiTQ: a pandas ``to_dict(orient="tight")`` frame; MBPP: per-test
  tracing states). ``exec_match`` is bool or 0/1 (MBPP: ``== 1`` means passed).
- The pre-dedup layout (``generated_k_programs`` with ``program`` instead of ``code``, no
  ``program_count``) and example fields at the top level instead of under ``metadata`` are read too.

``metadata`` fields used: GSM8k ``question``, ``answer`` (number, or ``original_answer`` /
``answer`` text ending in ``#### N``); MBPP ``task_id``, ``text``, ``code``, ``test_list``,
``test_setup_code``, ``challenge_test_list``; Spider ``db_id``, ``question``, ``query``; WikiTQ
(SQUALL) ``db_id`` (= table id), ``question``, ``query``, ``original_answer`` (target values).

WikiTQ's ``original_answer`` is LEVER's ``|``-joined string (split on ``|``; a list is kept). The
``gold_program`` dict (``code``, ``lower_code``, ...) gives WikiTQ its gold SQL
(``context["gold_sql"]``) and MBPP its gold program (else ``metadata.code``); Spider's gold is
``metadata.query``. Candidates are kept one per program dict, as LEVER's readers keep them (no
merging of equal programs; ``merge_duplicates=True`` merges identical texts, the older behaviour).

``generated_program`` is the greedy decode (LEVER's prediction files write it as
``{"program", "exec_result", "exec_acc", "exec_rate"}``; the ``code`` / ``exec_match`` spelling of
the sample dicts is read too). Candidates equal to it are marked ``is_greedy``; when none is, it
becomes the problem's ``greedy`` program (data contract: executed like a candidate, never
reranked), so the greedy baseline counts every problem that has a greedy decode.

By default only candidates are imported (samples file; re-execute with ``lever-jax execute``).
``recorded_execution=True`` also fills ``execution`` from ``exec_result``/``exec_match`` the way
LEVER's readers render and group them (:func:`lever_execution`; ``details.recorded = true``):
SQL tight dicts become the pandas ``to_string(index=False)`` table (first 5 rows, 5,000
characters) grouped on the flattened rows; GSM8k dicts become ``str(dict)`` grouped on ``answer``
(1e-6); MBPP tracing states become LEVER's ``# return: ...`` block grouped on the traced return
values (any failed call: no group); strings (``ERROR...``) pass through and never group.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any, Iterator, Mapping

from lever_jax.data.importers.merge import merge_candidates
from lever_jax.data.jsonl import DataFileError, PathLike, iter_json_lines
from lever_jax.data.schema import Candidate, Execution, Problem
from lever_jax.data.result_keys import canonical_key
from lever_jax.data.table_render import render_table

_FILE_NAME = re.compile(r"(?P<dataset>spider|wikitq|gsm8k|mbpp)_\w*verification_(?P<split>train|dev|test)")
MAX_KEY_CHARS = 512


def infer_dataset_split(path: PathLike) -> tuple[str | None, str | None]:
    """``mbpp_codex_verification_dev.jsonl`` -> ("mbpp", "dev")."""
    match = _FILE_NAME.search(Path(str(path)).name)
    return (match["dataset"], match["split"]) if match else (None, None)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(float(value)) else None
    text = str(value)
    if "####" in text:
        text = text.rsplit("####", 1)[1]
    try:
        return float(text.strip().replace(",", ""))
    except ValueError:
        return None


def _problem_fields(dataset: str, md: Mapping[str, Any], split: str, index: int,
                    gold: Any = None) -> tuple[str, str, dict, Any]:
    """(problem_id, question, context, gold) from a LEVER example (``gold``: its ``gold_program``)."""
    if dataset == "gsm8k":
        gold = _number(md.get("answer"))
        if gold is None:
            gold = _number(md.get("original_answer"))
        if gold is None:
            raise KeyError("answer")
        return f"gsm8k-{split}-{index:04d}", str(md["question"]), {}, gold
    if dataset == "mbpp":
        context = {
            "task_id": int(md["task_id"]),
            "test_list": list(md["test_list"]),
            "test_setup_code": md.get("test_setup_code") or "",
            "challenge_test_list": list(md.get("challenge_test_list") or []),
        }
        gold_code = gold.get("code") if isinstance(gold, Mapping) else None
        return f"mbpp-{int(md['task_id'])}", str(md["text"]), context, gold_code or md.get("code")
    if dataset == "spider":
        return f"spider-{split}-{index:04d}", str(md["question"]), {"db_id": str(md["db_id"])}, md.get("query")
    if dataset == "wikitq":
        target = md.get("original_answer", md.get("answer"))
        if isinstance(target, str):
            target = target.split("|")  # LEVER's wtq_answer_eq splits the gold on '|'
        context = {"table_id": str(md["db_id"])}
        gold_sql = gold.get("code") if isinstance(gold, Mapping) else None
        if isinstance(gold_sql, str) and gold_sql.strip():
            context["gold_sql"] = gold_sql
        targets = None if target is None else [str(t) for t in target]
        return f"wikitq-{split}-{index:04d}", str(md["question"]), context, targets
    raise ValueError(f"unknown dataset {dataset!r}")


def _json_key(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    if len(text) > MAX_KEY_CHARS:
        text = text[:200] + "...sha256:" + hashlib.sha256(text.encode()).hexdigest()
    return text


def _exec_match(value: Any) -> bool:
    return value is True or (not isinstance(value, bool) and value == 1)


def _lever_type(type_text: Any) -> str:
    """LEVER's ``"<class 'int'>".split(" ")[1]`` with quotes and ``>`` removed."""
    parts = str(type_text).split(" ")
    return (parts[1] if len(parts) > 1 else parts[0]).replace("'", "").replace(">", "")


def _traced_return(state: Any) -> Mapping[str, Any] | None:
    """The ``_return_val`` record of one MBPP test's tracing state (None: tracing failed)."""
    if not isinstance(state, Mapping):
        return None
    trace = state.get("tracing_local_list")
    if not isinstance(trace, list) or not trace or not isinstance(trace[-1], Mapping):
        return None
    value = trace[-1].get("_return_val")
    return value if isinstance(value, Mapping) else None


def _mbpp_recorded(states: list[Any], error_key: str, correct: bool) -> Execution:
    lines, key_parts, details = [], [], []
    for state in states:
        ret = _traced_return(state)
        if ret is None:
            lines.append("# return: ERROR: tracing failed\n\n")
            details.append({"type": None, "value": None, "error": "tracing failed"})
        else:
            value = str(ret.get("str_value", ""))
            kind = _lever_type(ret.get("type", ""))
            lines.append(f"# return: ({kind})={'<object list>' if 'object' in value else value}\n\n")
            details.append({"type": kind, "value": value, "error": None})
        key_parts.append(None if ret is None else [str(ret.get("type")), str(ret.get("str_value"))])
    groups = all(isinstance(s, Mapping) and s.get("result") == "passed" for s in states) and None not in key_parts
    return Execution("ok", _json_key(key_parts) if groups else error_key, "".join(lines), correct=correct,
                     details={"recorded": True, "tests": details})


def lever_execution(dataset: str, pid: str, index: int | str, exec_result: Any, exec_match: Any) -> Execution:
    """An :class:`Execution` from LEVER's recorded ``exec_result`` / ``exec_match``, rendered as
    LEVER's verifier readers render it and keyed as its ``exec_result_eq`` groups (module doc)."""
    correct = _exec_match(exec_match)
    error_key = f"!err:{pid}:{index}"
    if isinstance(exec_result, str) or exec_result is None:
        text = "ERROR" if exec_result is None else exec_result[:5000]
        return Execution("error", error_key, text, error=text[:500], correct=False, details={"recorded": True})
    if dataset in ("spider", "wikitq") and isinstance(exec_result, Mapping) and "data" in exec_result:
        rows = [list(r) if isinstance(r, (list, tuple)) else [r] for r in exec_result.get("data") or []]
        columns = [str(c) for c in exec_result.get("columns") or []]
        flat = [cell for row in rows for cell in row]
        return Execution("ok", canonical_key(flat), render_table(columns, rows), correct=correct,
                         details={"recorded": True})
    if dataset == "gsm8k" and isinstance(exec_result, Mapping):
        if "answer" not in exec_result:  # LEVER's reader: ERROR; never groups
            return Execution("error", error_key, "ERROR", error="no answer variable", correct=False,
                             details={"recorded": True})
        number = _number(exec_result["answer"])
        key = canonical_key(number) if number is not None else canonical_key(str(exec_result["answer"]))
        return Execution("ok", key, str(dict(exec_result)), correct=correct, details={"recorded": True})
    if dataset == "mbpp" and isinstance(exec_result, list):
        return _mbpp_recorded(exec_result, error_key, correct)
    return Execution("ok", _json_key(exec_result), str(exec_result)[:5000], correct=correct,
                     details={"recorded": True})


def _program_dicts(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    programs = obj.get("generated_programs", obj.get("generated_k_programs"))
    if not isinstance(programs, list):
        raise KeyError("generated_programs")
    return programs


def _code(program: Any) -> str:
    if isinstance(program, str):  # very old layout: a bare list of strings
        return program
    code = program.get("code", program.get("program"))
    if not isinstance(code, str):
        raise KeyError("code")
    return code


def import_lever(path: PathLike, dataset: str | None = None, split: str | None = None,
                 recorded_execution: bool = False, source: str | None = None,
                 ids_by_question: Mapping[str, str] | None = None,
                 merge_duplicates: bool = False) -> Iterator[Problem]:
    """Stream problems from a LEVER verification file (see the module docstring for the layout).

    Problem ids: ``mbpp-<task_id>``; otherwise ``ids_by_question[question]`` when given (e.g. the
    bundled GSM8k ids, so imported pools line up with ``gsm8k-test-0000``...), else
    ``<dataset>-<split>-<line index>``.
    """
    inferred_dataset, inferred_split = infer_dataset_split(path)
    dataset = dataset or inferred_dataset
    split = split or inferred_split or "unknown"
    if dataset is None:
        raise ValueError(f"cannot tell the dataset of {path}; pass dataset=")
    source = source or "lever:" + Path(str(path)).name.split(".")[0]
    record = recorded_execution
    for index, (lineno, obj) in enumerate(iter_json_lines(path)):
        if not isinstance(obj, Mapping):
            raise DataFileError(path, lineno, None, "expected a JSON object")
        md = obj.get("metadata", obj)
        try:
            pid, question, context, gold = _problem_fields(dataset, md, split, index, obj.get("gold_program"))
        except (KeyError, TypeError, ValueError) as err:
            raise DataFileError(path, lineno, f"metadata.{err.args[0] if err.args else '?'}",
                                "missing or malformed") from None
        if ids_by_question is not None and dataset != "mbpp" and question in ids_by_question:
            pid = ids_by_question[question]
        greedy = obj.get("generated_program")
        greedy_code = _code(greedy).strip() if isinstance(greedy, Mapping) and ("code" in greedy or "program" in greedy) else None
        try:
            programs = _program_dicts(obj)
        except KeyError:
            raise DataFileError(path, lineno, "generated_programs", "missing (or generated_k_programs)") from None
        candidates = []
        for i, program in enumerate(programs):
            field = f"generated_programs[{i}]"
            try:
                code = _code(program).strip()
            except (KeyError, AttributeError):
                raise DataFileError(path, lineno, field + ".code", "missing (or 'program')") from None
            info = program if isinstance(program, Mapping) else {}
            gen, norm = info.get("gen_prob"), info.get("norm_gen_prob")
            num_tokens = None
            if isinstance(gen, (int, float)) and isinstance(norm, (int, float)) and norm != 0:
                num_tokens = max(1, round(gen / norm))
            count = info.get("program_count", 1)
            if not isinstance(count, int) or count < 1:
                raise DataFileError(path, lineno, field + ".program_count", f"expected an integer >= 1, got {count!r}")
            execution = None
            if record:
                if "exec_result" not in info or "exec_match" not in info:
                    raise DataFileError(path, lineno, field + ".exec_result", "missing (needed for recorded execution)")
                execution = lever_execution(dataset, pid, i, info["exec_result"], info["exec_match"])
            candidates.append(Candidate(
                program=code,
                gen_logprob=None if gen is None else float(gen),
                num_tokens=num_tokens,
                count=count,
                source=source,
                is_greedy=greedy_code is not None and code == greedy_code,
                execution=execution,
            ))
        outside = None
        if greedy_code is not None and not any(c.is_greedy for c in candidates):
            outside = _greedy_program(greedy, greedy_code, dataset, pid, source, record, path, lineno)
        yield Problem(pid, dataset, question, context, gold,
                      merge_candidates(candidates) if merge_duplicates else tuple(candidates), greedy=outside)


def _greedy_program(info: Mapping[str, Any], code: str, dataset: str, pid: str, source: str, record: bool,
                    path: PathLike, lineno: int) -> Candidate:
    """The problem-level greedy program from ``generated_program`` (not among the samples)."""
    gen, norm = info.get("gen_prob"), info.get("norm_gen_prob")
    num_tokens = max(1, round(gen / norm)) if isinstance(gen, (int, float)) and isinstance(norm, (int, float)) \
        and norm != 0 else None
    execution = None
    if record:
        match = info.get("exec_match", info.get("exec_acc"))
        if "exec_result" not in info or match is None:
            raise DataFileError(path, lineno, "generated_program.exec_result",
                                "missing (or exec_match / exec_acc; needed for recorded execution)")
        execution = lever_execution(dataset, pid, "greedy", info["exec_result"], match)
    return Candidate(program=code, gen_logprob=None if not isinstance(gen, (int, float)) else float(gen),
                     num_tokens=num_tokens, source=source, execution=execution)
