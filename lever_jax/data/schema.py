"""The lever-jax data contract: typed records for samples and executed files.

One JSON object per line, one line per problem (see docs/data_format.md). A *samples* file holds
problems with candidate programs; an *executed* file is the same with every candidate carrying an
``execution`` object. Validation errors name the field path so that the reader in ``jsonl.py``
can prefix file and line.
"""
from __future__ import annotations

import dataclasses
import difflib
import math
from typing import Any, Iterable, Mapping

SCHEMA_VERSION = 1
DATASETS = ("gsm8k", "mbpp", "humaneval", "spider", "wikitq", "wikitq_binder")
# "unsupported": the program cannot run here (e.g. a Binder program calling an LLM); never correct.
STATUSES = ("ok", "error", "timeout", "memory", "output_limit", "killed", "unsupported")
# Unknown keys are an error, not a warning: a typo (``logprob`` for ``gen_logprob``) would otherwise
# silently become a default value and change the result; ``schema_version`` covers extensions.
PROBLEM_KEYS = ("schema_version", "problem_id", "dataset", "question", "context", "gold", "candidates", "greedy")
CANDIDATE_KEYS = ("program", "gen_logprob", "num_tokens", "count", "source", "is_greedy", "execution")
# The problem-level greedy decode when it is not among the candidates (LEVER's ``generated_program``).
GREEDY_KEYS = ("program", "gen_logprob", "num_tokens", "source", "execution")
EXECUTION_KEYS = ("status", "result_key", "result_text", "error", "correct", "details")
MAX_COUNT = 10**6  # samples of one program / tokens of one program: more means a broken file (and int32 sums stay exact)
LOGPROB_SLACK = 1e-6  # a log-probability is <= 0; this much above 0 is tolerated as round-off


class SchemaError(ValueError):
    """A record does not follow the data contract; ``field`` is a dotted path into the record."""

    def __init__(self, field: str, message: str):
        super().__init__(f"field '{field}': {message}")
        self.field = field
        self.message = message


@dataclasses.dataclass(frozen=True)
class Execution:
    """What running one candidate produced.

    result_key: equal keys <=> same execution result (used for grouping). Errored candidates get
      unique keys so that they never group, as in LEVER.
    result_text: the rendering of the result that the verifier reads.
    details: executor-specific extras (per-test outcomes, answer value, ...), JSON-serialisable.
    """

    status: str
    result_key: str
    result_text: str
    error: str | None = None
    correct: bool = False
    details: Mapping[str, Any] | None = None


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One sampled program. gen_logprob is the total log-prob of its tokens (None if unknown)."""

    program: str
    gen_logprob: float | None = None
    num_tokens: int | None = None
    count: int = 1
    source: str | None = None
    is_greedy: bool = False
    execution: Execution | None = None


@dataclasses.dataclass(frozen=True)
class Problem:
    """One problem with its candidates. ``context`` holds db_id / table_id / test_list / ...

    ``greedy``: the greedy decode when it is not among the candidates (executed like them, never
    reranked; the method table's ``greedy`` row reads it). A candidate marked ``is_greedy`` plays
    that role when it is; a problem has at most one of the two."""

    problem_id: str
    dataset: str
    question: str
    context: Mapping[str, Any]
    gold: Any
    candidates: tuple[Candidate, ...]
    greedy: Candidate | None = None

    @property
    def is_executed(self) -> bool:
        return all(c.execution is not None for c in self.candidates) and (
            self.greedy is None or self.greedy.execution is not None)

    def replace(self, **changes: Any) -> "Problem":
        return dataclasses.replace(self, **changes)


# ----------------------------------------------------------------------------------------------
# Validation helpers: each names the offending field path.


def _known_keys(obj: Mapping[str, Any], known: Iterable[str], path: str) -> None:
    known = tuple(known)
    for key in obj:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else f" (known: {', '.join(known)})"
            raise SchemaError(f"{path}{key}", f"unknown field{hint}")


def _require(obj: Mapping[str, Any], key: str, path: str) -> Any:
    if key not in obj:
        raise SchemaError(f"{path}{key}", "missing")
    return obj[key]


def _str(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise SchemaError(field, f"expected a string, got {type(value).__name__} {value!r:.60}")
    return value


def _opt_str(value: Any, field: str) -> str | None:
    return None if value is None else _str(value, field)


def _bool(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise SchemaError(field, f"expected true/false, got {value!r:.60}")
    return value


def _opt_float(value: Any, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SchemaError(field, f"expected a number or null, got {value!r:.60}")
    value = float(value)
    if math.isnan(value) or value > LOGPROB_SLACK:
        raise SchemaError(field, f"expected a log-probability (<= 0, or -inf), got {value}")
    return value


def _opt_int(value: Any, field: str, minimum: int = 0) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise SchemaError(field, f"expected an integer or null, got {value!r:.60}")
    if value < minimum or value > MAX_COUNT:
        raise SchemaError(field, f"expected an integer in [{minimum}, {MAX_COUNT}], got {value:.3g}"
                          if value > MAX_COUNT else f"expected an integer >= {minimum}, got {value}")
    return value


def execution_from_dict(obj: Any, path: str = "execution") -> Execution:
    if not isinstance(obj, Mapping):
        raise SchemaError(path, f"expected an object, got {type(obj).__name__}")
    _known_keys(obj, EXECUTION_KEYS, path + ".")
    status = _str(_require(obj, "status", path + "."), path + ".status")
    if status not in STATUSES:
        raise SchemaError(path + ".status", f"expected one of {', '.join(STATUSES)}, got {status!r}")
    details = obj.get("details")
    if details is not None and not isinstance(details, Mapping):
        raise SchemaError(path + ".details", "expected an object or null")
    return Execution(
        status=status,
        result_key=_str(_require(obj, "result_key", path + "."), path + ".result_key"),
        result_text=_str(_require(obj, "result_text", path + "."), path + ".result_text"),
        error=_opt_str(obj.get("error"), path + ".error"),
        correct=_bool(_require(obj, "correct", path + "."), path + ".correct"),
        details=details,
    )


def candidate_from_dict(obj: Any, path: str, require_execution: bool = False) -> Candidate:
    if not isinstance(obj, Mapping):
        raise SchemaError(path, f"expected an object, got {type(obj).__name__}")
    _known_keys(obj, CANDIDATE_KEYS, path + ".")
    program = _str(_require(obj, "program", path + "."), path + ".program")
    execution = obj.get("execution")
    if execution is None and require_execution:
        raise SchemaError(path + ".execution", "missing (an executed file needs every candidate executed)")
    count = _opt_int(obj.get("count", 1), path + ".count", minimum=1)
    return Candidate(
        program=program,
        gen_logprob=_opt_float(obj.get("gen_logprob"), path + ".gen_logprob"),
        num_tokens=_opt_int(obj.get("num_tokens"), path + ".num_tokens"),
        count=1 if count is None else count,
        source=_opt_str(obj.get("source"), path + ".source"),
        is_greedy=_bool(obj.get("is_greedy", False), path + ".is_greedy"),
        execution=None if execution is None else execution_from_dict(execution, path + ".execution"),
    )


def problem_from_dict(obj: Any, require_execution: bool = False) -> Problem:
    """Validate one decoded JSON line and build a :class:`Problem` (raises :class:`SchemaError`)."""
    if not isinstance(obj, Mapping):
        raise SchemaError("<record>", f"expected a JSON object, got {type(obj).__name__}")
    _known_keys(obj, PROBLEM_KEYS, "")
    version = obj.get("schema_version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise SchemaError("schema_version", f"this reader understands version {SCHEMA_VERSION}, got {version!r}")
    dataset = _str(_require(obj, "dataset", ""), "dataset")
    if dataset not in DATASETS:
        raise SchemaError("dataset", f"expected one of {', '.join(DATASETS)}, got {dataset!r}")
    context = obj.get("context", {})
    if not isinstance(context, Mapping):
        raise SchemaError("context", f"expected an object, got {type(context).__name__}")
    _check_dataset_fields(dataset, context, obj.get("gold"))
    raw_candidates = _require(obj, "candidates", "")
    if not isinstance(raw_candidates, list):
        raise SchemaError("candidates", f"expected a list, got {type(raw_candidates).__name__}")
    candidates = tuple(
        candidate_from_dict(c, f"candidates[{i}]", require_execution) for i, c in enumerate(raw_candidates))
    greedy = greedy_from_dict(obj.get("greedy"), candidates, require_execution)
    return Problem(
        problem_id=_str(_require(obj, "problem_id", ""), "problem_id"),
        dataset=dataset,
        question=_str(_require(obj, "question", ""), "question"),
        context=dict(context),
        gold=obj.get("gold"),
        candidates=candidates,
        greedy=greedy,
    )


def greedy_from_dict(obj: Any, candidates: tuple[Candidate, ...], require_execution: bool = False) -> Candidate | None:
    """The problem-level ``greedy`` object (None when absent); an error when a candidate is also
    marked ``is_greedy`` (two greedy decodes would make the greedy row ambiguous)."""
    if obj is None:
        return None
    if not isinstance(obj, Mapping):
        raise SchemaError("greedy", f"expected an object or null, got {type(obj).__name__}")
    _known_keys(obj, GREEDY_KEYS, "greedy.")
    marked = [i for i, c in enumerate(candidates) if c.is_greedy]
    if marked:
        raise SchemaError("greedy", f"given while candidates[{marked[0]}] is marked is_greedy; "
                          "a problem has one greedy decode (a candidate's is_greedy or this field)")
    return candidate_from_dict(obj, "greedy", require_execution)


def _str_list(value: Any, field: str, allow_empty: bool = False) -> None:
    if isinstance(value, str):
        raise SchemaError(field, "expected a list of strings, got one string (it would run character by character)")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SchemaError(field, f"expected a list of strings, got {value!r:.60}")
    if not value and not allow_empty:
        raise SchemaError(field, "expected at least one test, got an empty list")


def _check_dataset_fields(dataset: str, context: Mapping[str, Any], gold: Any) -> None:
    """What each executor needs to mean anything (a missing test list would make every candidate
    "ok, incorrect"; a text GSM8k gold could never be matched)."""
    if dataset == "gsm8k":
        if gold is not None:
            if isinstance(gold, bool) or not isinstance(gold, (int, float, str)):
                raise SchemaError("gold", f"expected a number (or null), got {gold!r:.60}")
            try:
                number = float(gold)
            except ValueError:
                raise SchemaError("gold", f"expected a number (or null), got {gold!r:.60}") from None
            if not math.isfinite(number):
                raise SchemaError("gold", f"expected a finite number, got {gold!r:.60}")
    elif dataset == "mbpp":
        if "test_list" not in context:
            raise SchemaError("context.test_list", "missing (MBPP candidates are judged by these asserts)")
        _str_list(context["test_list"], "context.test_list")
        for key in ("test_setup_code", "entry_point"):
            if context.get(key) is not None and not isinstance(context[key], str):
                raise SchemaError(f"context.{key}", f"expected a string or null, got {context[key]!r:.60}")
    elif dataset == "humaneval":
        for key in ("test", "entry_point"):
            if not isinstance(context.get(key), str) or not context[key].strip():
                raise SchemaError(f"context.{key}", "missing or not a non-empty string (HumanEval needs it to judge)")
    elif dataset == "spider":
        if not isinstance(context.get("db_id"), str):
            raise SchemaError("context.db_id", "missing or not a string")
        if gold is not None and not isinstance(gold, str):
            raise SchemaError("gold", f"expected the gold SQL string (or null), got {gold!r:.60}")
    elif dataset == "wikitq":
        if not isinstance(context.get("table_id"), str):
            raise SchemaError("context.table_id", "missing or not a string")
        if isinstance(gold, list):
            _str_list(gold, "gold", allow_empty=True)
        elif gold is not None and not isinstance(gold, str):
            raise SchemaError("gold", f"expected a list of answer strings (or null), got {gold!r:.60}")


def execution_to_dict(execution: Execution) -> dict[str, Any]:
    out: dict[str, Any] = {
        "status": execution.status,
        "result_key": execution.result_key,
        "result_text": execution.result_text,
        "error": execution.error,
        "correct": execution.correct,
    }
    if execution.details is not None:
        out["details"] = dict(execution.details)
    return out


def candidate_to_dict(candidate: Candidate) -> dict[str, Any]:
    out: dict[str, Any] = {
        "program": candidate.program,
        "gen_logprob": candidate.gen_logprob,
        "num_tokens": candidate.num_tokens,
        "count": candidate.count,
        "source": candidate.source,
    }
    if candidate.is_greedy:
        out["is_greedy"] = True
    if candidate.execution is not None:
        out["execution"] = execution_to_dict(candidate.execution)
    return out


def problem_to_dict(problem: Problem) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "problem_id": problem.problem_id,
        "dataset": problem.dataset,
        "question": problem.question,
        "context": dict(problem.context),
        "gold": problem.gold,
        "candidates": [candidate_to_dict(c) for c in problem.candidates],
        **({} if problem.greedy is None else {"greedy": greedy_to_dict(problem.greedy)}),
    }


def greedy_to_dict(greedy: Candidate) -> dict[str, Any]:
    """The problem-level ``greedy`` object (GREEDY_KEYS; count and is_greedy do not apply)."""
    out = candidate_to_dict(greedy)
    out.pop("count", None)
    out.pop("is_greedy", None)
    return out
