"""Verifier input strings: (problem, executed candidate) -> the text LEVER's verifier reads.

One function per dataset, faithful to LEVER's released readers (LEVER_NOTES "Verifier inputs"):

- Spider / WikiTQ: ``-- question: {q}\\n-- SQL:\\n{lower_code}\\n-- exec result:\\n/*\\n{result}\\n*/``
  with every newline then replaced by ``|``; an errored execution reads ``ERROR``.
- GSM8k: ``{question} | {lower_code} | {result}`` where ``result`` is the executor's ``str(dict of
  final locals)``, or LEVER's ``ERROR: program failed to execute`` / ``ERROR: no answer variable``.
- MBPP / HumanEval: ``# description\\n{text}\\n\\n# program\\n{code}\\n\\n# execution\\n`` then one
  ``# return: (type)=value`` line per test call, each followed by a blank line (``ERROR: tracing
  failed`` for a call that raised or returned nothing, ``ERROR: program is not parsable`` for a
  syntax error). HumanEval (not in LEVER): ``text`` is the entry point's docstring.

``lower_code`` (NLP4Code's preprocessing, :func:`lower_code`): SQL keeps the text before the first
blank line, GSM8k drops blank lines; both strip, turn ``"`` into ``'`` and lower-case every word
matched by ``\\b(?<!')(\\w+)(?!')\\b`` (a word touching a quote keeps its case).

Truncation is from the RIGHT for every dataset (what LEVER's ``tokenizer(..., truncation=True)``
does; the "cut from the left" slice after it is a no-op). Options (:class:`SerializeOptions`):
``truncation="left_sql"`` restores the older left cut for Spider/WikiTQ; ``style="legacy"``
restores the older strings (SQL ``.lower()``, raw GSM8k program, the executor's error texts,
MBPP lines without blank lines); the paper's ablations drop the program / the execution result;
``include_schema`` adds the database schema. Pure python: no TF, no jax.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import re
from typing import Any, Callable, Mapping

from lever_jax.data.schema import Candidate, Execution, Problem
from lever_jax.execution.python_gsm8k import NO_ANSWER_ERROR

YES, NO = "yes", "no"
SQL_DATASETS = ("spider", "wikitq", "wikitq_binder")
STYLES = ("lever", "legacy")
TRUNCATIONS = ("right", "left", "left_sql")
_WORD = re.compile(r"\b(?<!')(\w+)(?!')\b")
SQL_ERROR = "ERROR"
GSM8K_FAILED = "ERROR: program failed to execute"
GSM8K_NO_ANSWER = "ERROR: no answer variable"
MBPP_TRACING_FAILED = "ERROR: tracing failed"
MBPP_NOT_PARSABLE = "ERROR: program is not parsable"
MBPP_TIMEOUT = "ERROR: Timeout"


@dataclasses.dataclass(frozen=True)
class SerializeOptions:
    """Switches for the verifier input (LEVER's ablations) and LEVER-style character limits.

    include_program / include_execution: keep the program text / the execution result (LEVER's
      ablation layout: an SQL input without execution keeps an empty ``/*||*/`` block).
    include_schema: (Spider/WikiTQ) prepend ``-- schema: ...`` lines, read from
      ``problem.context["schema"]`` (a string, or a mapping table -> column list) or
      ``problem.context["db_table_headers"]``; for Spider, else from the bundled ``tables.json``
      by ``db_id`` (:func:`schema_of`); absent schemas are silently skipped. Not LEVER's.
    max_result_chars: cap on the execution-result text (LEVER: 5,000 characters for SQL tables).
    max_chars: cap on the whole input, applied on the truncation side (None: no cap).
    style: 'lever' (default) or 'legacy' (lever-jax's strings before issue 13, see module doc).
    truncation: 'right' (LEVER, default), 'left' (every dataset), 'left_sql' (left for
      Spider/WikiTQ only: the older default, keeps the execution result of long SQL inputs).
    """

    include_program: bool = True
    include_execution: bool = True
    include_schema: bool = False
    max_result_chars: int | None = 5000
    max_chars: int | None = None
    style: str = "lever"
    truncation: str = "right"

    def __post_init__(self) -> None:
        if self.style not in STYLES:
            raise ValueError(f"style must be one of {', '.join(STYLES)}, got {self.style!r}")
        if self.truncation not in TRUNCATIONS:
            raise ValueError(f"truncation must be one of {', '.join(TRUNCATIONS)}, got {self.truncation!r}")


DEFAULT_OPTIONS = SerializeOptions()


def truncation_side(dataset: str, options: SerializeOptions = DEFAULT_OPTIONS) -> str:
    """The side ('left' or 'right') that too-long inputs of ``dataset`` are cut from."""
    if options.truncation == "left_sql":
        return "left" if dataset in SQL_DATASETS else "right"
    return options.truncation


def cut(text: str, max_chars: int | None, side: str) -> str:
    """Keep at most ``max_chars`` characters, dropping from ``side`` ('left' or 'right')."""
    if max_chars is None or len(text) <= max_chars:
        return text
    if side == "left":
        return text[len(text) - max_chars:] if max_chars > 0 else ""
    if side == "right":
        return text[:max_chars]
    raise ValueError(f"side must be 'left' or 'right', got {side!r}")


def lower_words(code: str) -> str:
    """Lower-case every word matched by LEVER's ``\\b(?<!')(\\w+)(?!')\\b`` (words touching a quote keep their case)."""
    return _WORD.sub(lambda match: match.group(1).lower(), code)


def lower_code(program: str, dataset: str) -> str:
    """LEVER's ``lower_code`` of a program (NLP4Code preprocessing): SQL keeps the text before the
    first blank line, GSM8k drops blank lines; then strip, ``"`` -> ``'``, :func:`lower_words`.
    Other datasets: the program unchanged (LEVER's MBPP reader uses the raw ``code``)."""
    if dataset in SQL_DATASETS:
        code = program.split("\n\n")[0].strip()
    elif dataset == "gsm8k":
        code = "\n".join(line for line in program.split("\n") if line.strip()).strip()
    else:
        return program
    return lower_words(code.replace('"', "'"))


def _execution(candidate: Candidate) -> Execution:
    if candidate.execution is None:
        raise ValueError("candidate has no execution: serialize executed candidates only")
    return candidate.execution


def _result_text(candidate: Candidate, options: SerializeOptions) -> str:
    return cut(_execution(candidate).result_text, options.max_result_chars, "right")


def _recorded(execution: Execution) -> bool:
    """An execution imported from LEVER's files: its text is already LEVER's rendering."""
    return bool((execution.details or {}).get("recorded"))


def _sql_result(candidate: Candidate, options: SerializeOptions) -> str:
    execution = _execution(candidate)
    if options.style == "lever" and execution.status != "ok" and not _recorded(execution):
        return SQL_ERROR
    return _result_text(candidate, options)


def _gsm8k_result(candidate: Candidate, options: SerializeOptions) -> str:
    execution = _execution(candidate)
    if options.style == "lever" and execution.status != "ok":
        if _recorded(execution):  # LEVER's own string
            return execution.result_text
        if execution.result_text in (GSM8K_NO_ANSWER, GSM8K_FAILED):  # the executor's LEVER convention
            return execution.result_text
        # The executor writes this exact error itself; a raised exception's message carries its type
        # ("Exception: ..."), so a program cannot pass for "no answer" by raising the same words.
        return GSM8K_NO_ANSWER if execution.error == NO_ANSWER_ERROR else GSM8K_FAILED
    return _result_text(candidate, options)


def render_schema(schema: Any) -> str:
    """Render a schema (string, or mapping table -> columns) as ``-- schema:`` comment lines."""
    if isinstance(schema, str):
        return schema.strip()
    if isinstance(schema, Mapping):
        lines = [f"{table}({', '.join(str(c) for c in columns)})" for table, columns in schema.items()]
        return "\n".join(lines)
    raise TypeError(f"schema must be a string or a mapping table -> columns, got {type(schema).__name__}")


def schema_of(problem: Problem) -> Any:
    """The schema the ``include_schema`` option prepends: ``context["schema"]``, else
    ``context["db_table_headers"]``, else (Spider) the bundled ``tables.json`` schema of
    ``context["db_id"]`` (:func:`lever_jax.data.datasets.spider.schema_text`, for files written
    before the loader added the schema); None when there is none."""
    schema = problem.context.get("schema", problem.context.get("db_table_headers"))
    if schema is None and problem.dataset == "spider" and isinstance(problem.context.get("db_id"), str):
        from lever_jax.data.datasets.spider import schema_text  # lazy: reads tables.json once

        schema = schema_text(problem.context["db_id"])
    return schema


def program_text(problem: Problem, candidate: Candidate, options: SerializeOptions = DEFAULT_OPTIONS) -> str:
    """The program as the verifier reads it: LEVER's :func:`lower_code` (SQL, GSM8k), or with
    ``style='legacy'`` the older form (SQL ``.lower()``, other programs unchanged)."""
    if options.style == "legacy":
        return candidate.program.lower() if problem.dataset in SQL_DATASETS else candidate.program
    return lower_code(candidate.program, problem.dataset)


def serialize_sql(problem: Problem, candidate: Candidate, options: SerializeOptions = DEFAULT_OPTIONS) -> str:
    """Spider / WikiTQ verifier input (newlines -> ``|``)."""
    parts = []
    schema = schema_of(problem) if options.include_schema else None
    if schema:
        parts.append(f"-- schema:\n{render_schema(schema)}\n")
    parts.append(f"-- question: {problem.question}\n")
    if options.include_program:
        parts.append(f"-- SQL:\n{program_text(problem, candidate, options)}\n")
    if options.style == "lever":  # LEVER keeps the (empty) result block when the result is ablated
        result = _sql_result(candidate, options) if options.include_execution else ""
        parts.append(f"-- exec result:\n/*\n{result}\n*/")
        text = "".join(parts)
    else:
        if options.include_execution:
            parts.append(f"-- exec result:\n/*\n{_result_text(candidate, options)}\n*/")
        text = "".join(parts).rstrip("\n")
    return cut(text.replace("\n", "|"), options.max_chars, truncation_side(problem.dataset, options))


serialize_spider = serialize_sql
serialize_wikitq = serialize_sql


def serialize_gsm8k(problem: Problem, candidate: Candidate, options: SerializeOptions = DEFAULT_OPTIONS) -> str:
    """GSM8k verifier input: ``question | lower_code | final locals (or LEVER's error string)``."""
    parts = [problem.question]
    if options.include_program:
        parts.append(program_text(problem, candidate, options))
    if options.include_execution:
        parts.append(_gsm8k_result(candidate, options))
    return cut(" | ".join(parts), options.max_chars, truncation_side(problem.dataset, options))


@functools.lru_cache(maxsize=4096)
def prompt_docstring(prompt: str, entry_point: str | None = None) -> str | None:
    """The docstring of ``entry_point`` (else of the last function) in a HumanEval prompt; None
    when the prompt does not parse or has none."""
    try:
        tree = ast.parse(prompt)
    except (SyntaxError, ValueError):
        return None
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    named = [f for f in functions if f.name == entry_point]
    for fn in named or functions[::-1]:
        doc = ast.get_docstring(fn, clean=True)
        if doc:
            return doc
    return None


def _description(problem: Problem) -> str:
    """MBPP: the task text. HumanEval: the entry point's docstring (the program already holds the
    whole prompt, so repeating it would only double the input); the question when there is none."""
    if problem.dataset == "humaneval" and isinstance(problem.context.get("prompt"), str):
        doc = prompt_docstring(problem.context["prompt"], problem.context.get("entry_point"))
        if doc:
            return doc
    return problem.question


def _return_value(test: Mapping[str, Any]) -> str:
    """One test call's value as LEVER renders it: ``(type)=value`` (``<object list>`` when the text
    mentions an object), or ``ERROR: tracing failed`` when the call raised or returned None
    (LEVER's tracer records no return value then)."""
    kind = test.get("type")
    if not kind or kind == "NoneType" or test.get("error"):
        return MBPP_TRACING_FAILED
    value = str(test.get("value", ""))
    return f"({kind})={'<object list>' if 'object' in value else value}"


def python_execution_text(problem: Problem, candidate: Candidate) -> str:
    """LEVER's MBPP execution block body: ``# return: ...`` + blank line per test call, or
    ``ERROR: ...`` + blank line when the program as a whole did not run."""
    execution = _execution(candidate)
    if _recorded(execution):  # imported from LEVER's files: already LEVER's block
        return execution.result_text if execution.status == "ok" else f"{execution.result_text}\n\n"
    tests = (execution.details or {}).get("tests")
    # per call, also when a call raised (status error since pytests-3: the program itself ran)
    if execution.status in ("ok", "error") and isinstance(tests, list) and tests:
        return "".join(f"# return: {_return_value(t)}\n\n" for t in tests)
    if execution.status == "ok":  # no per-test details (older files): the executor's lines
        lines = [line for line in execution.result_text.split("\n") if line.strip()]
        return "".join(f"{line}\n\n" for line in lines)
    error = execution.error or execution.result_text or ""
    if "SyntaxError" in error or execution.result_text == MBPP_NOT_PARSABLE:
        return f"{MBPP_NOT_PARSABLE}\n\n"
    if execution.status == "timeout":
        return f"{MBPP_TIMEOUT}\n\n"
    # LEVER traces each test call separately: a program that fails as a whole fails every trace
    calls = max(1, len(problem.context.get("test_list") or []))
    return f"# return: {MBPP_TRACING_FAILED}\n\n" * calls


def serialize_python_tests(problem: Problem, candidate: Candidate, options: SerializeOptions = DEFAULT_OPTIONS) -> str:
    """MBPP / HumanEval verifier input (``# description / # program / # execution``)."""
    side = truncation_side(problem.dataset, options)
    if options.style == "legacy":
        text = f"# description\n{_description(problem)}\n"
        if options.include_program:
            text += f"\n# program\n{candidate.program}\n"
        if options.include_execution:
            text += f"\n# execution\n{_result_text(candidate, options)}"
        return cut(text, options.max_chars, side)
    text = f"# description\n{_description(problem)}\n\n"
    if options.include_program:
        text += f"# program\n{candidate.program}\n\n"
    if options.include_execution:
        text += "# execution\n" + cut(python_execution_text(problem, candidate), options.max_result_chars, "right")
    return cut(text, options.max_chars, side)


serialize_mbpp = serialize_python_tests
serialize_humaneval = serialize_python_tests

SERIALIZERS: dict[str, Callable[[Problem, Candidate, SerializeOptions], str]] = {
    "spider": serialize_spider,
    "wikitq": serialize_wikitq,
    "wikitq_binder": serialize_wikitq,
    "gsm8k": serialize_gsm8k,
    "mbpp": serialize_mbpp,
    "humaneval": serialize_humaneval,
}


def serialize(problem: Problem, candidate: Candidate, options: SerializeOptions = DEFAULT_OPTIONS) -> str:
    """The verifier input for ``candidate`` of ``problem`` (dispatch on ``problem.dataset``)."""
    try:
        fn = SERIALIZERS[problem.dataset]
    except KeyError:
        raise ValueError(f"no serializer for dataset {problem.dataset!r}; known: {', '.join(SERIALIZERS)}") from None
    return fn(problem, candidate, options)


def target_text(candidate: Candidate) -> str:
    """``yes`` when the execution matches the gold (``execution.correct``), else ``no``."""
    if candidate.execution is None:
        raise ValueError("candidate has no execution: cannot label it")
    return YES if candidate.execution.correct else NO
