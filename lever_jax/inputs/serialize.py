"""Verifier input strings: (problem, executed candidate) -> the text LEVER's verifier reads.

One function per dataset, faithful to LEVER's released readers (see LEVER_NOTES "Verifier inputs"):

- Spider / WikiTQ: ``-- question: {q}\\n-- SQL:\\n{sql lower-cased}\\n-- exec result:\\n/*\\n{result}\\n*/``
  with every newline then replaced by ``|``; too-long inputs are cut from the LEFT so that the
  execution result survives.
- GSM8k: ``{question} | {program} | {result_text}`` where ``result_text`` is the executor's
  ``str(dict of final locals)`` or ``ERROR``.
- MBPP / HumanEval: ``# description\\n{text}\\n\\n# program\\n{code}\\n\\n# execution\\n{result_text}``
  (``result_text`` = one ``# return: (type)=value`` line per test call); cut from the RIGHT. For
  HumanEval (not in LEVER) ``text`` is the entry point's docstring, since the program is the full
  prompt + completion.

The ablations of the paper are options (:class:`SerializeOptions`): drop the program, drop the
execution result, add the database schema (Spider). Character truncation here is LEVER-style;
token-level truncation (same side) is done by the pipelines (``truncation_side``).
Pure python: no TF, no jax.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
from typing import Any, Callable, Mapping

from lever_jax.data.schema import Candidate, Problem

YES, NO = "yes", "no"
SQL_DATASETS = ("spider", "wikitq")


@dataclasses.dataclass(frozen=True)
class SerializeOptions:
    """Switches for the verifier input (LEVER's ablations) and LEVER-style character limits.

    include_program / include_execution: keep the program text / the execution result.
    include_schema: (Spider/WikiTQ) prepend ``-- schema: ...`` lines, read from
      ``problem.context["schema"]`` (a string, or a mapping table -> column list) or
      ``problem.context["db_table_headers"]``; for Spider, else from the bundled ``tables.json``
      by ``db_id`` (:func:`schema_of`); absent schemas are silently skipped. Spider's string is
      ``table: col1, col2 | table2: ...`` (set by the Spider loader).
    max_result_chars: cap on the execution-result text (LEVER: 5,000 characters for SQL tables).
    max_chars: cap on the whole input, applied on the dataset's truncation side (None: no cap).
    """

    include_program: bool = True
    include_execution: bool = True
    include_schema: bool = False
    max_result_chars: int | None = 5000
    max_chars: int | None = None


DEFAULT_OPTIONS = SerializeOptions()


def truncation_side(dataset: str) -> str:
    """'left' for SQL datasets (keep the execution result at the end), else 'right'."""
    return "left" if dataset in SQL_DATASETS else "right"


def cut(text: str, max_chars: int | None, side: str) -> str:
    """Keep at most ``max_chars`` characters, dropping from ``side`` ('left' or 'right')."""
    if max_chars is None or len(text) <= max_chars:
        return text
    if side == "left":
        return text[len(text) - max_chars:] if max_chars > 0 else ""
    if side == "right":
        return text[:max_chars]
    raise ValueError(f"side must be 'left' or 'right', got {side!r}")


def _result_text(candidate: Candidate, options: SerializeOptions) -> str:
    if candidate.execution is None:
        raise ValueError("candidate has no execution: serialize executed candidates only")
    return cut(candidate.execution.result_text, options.max_result_chars, "right")


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


def serialize_sql(problem: Problem, candidate: Candidate, options: SerializeOptions = DEFAULT_OPTIONS) -> str:
    """Spider / WikiTQ verifier input (newlines -> ``|``, cut from the left)."""
    parts = []
    schema = schema_of(problem) if options.include_schema else None
    if schema:
        parts.append(f"-- schema:\n{render_schema(schema)}\n")
    parts.append(f"-- question: {problem.question}\n")
    if options.include_program:
        parts.append(f"-- SQL:\n{candidate.program.lower()}\n")
    if options.include_execution:
        parts.append(f"-- exec result:\n/*\n{_result_text(candidate, options)}\n*/")
    text = "".join(parts).rstrip("\n").replace("\n", "|")
    return cut(text, options.max_chars, "left")


serialize_spider = serialize_sql
serialize_wikitq = serialize_sql


def serialize_gsm8k(problem: Problem, candidate: Candidate, options: SerializeOptions = DEFAULT_OPTIONS) -> str:
    """GSM8k verifier input: ``question | program | final locals (or ERROR)``, cut from the right."""
    parts = [problem.question]
    if options.include_program:
        parts.append(candidate.program)
    if options.include_execution:
        parts.append(_result_text(candidate, options))
    return cut(" | ".join(parts), options.max_chars, "right")


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


def serialize_python_tests(problem: Problem, candidate: Candidate, options: SerializeOptions = DEFAULT_OPTIONS) -> str:
    """MBPP / HumanEval verifier input (``# description / # program / # execution``), cut from the right."""
    text = f"# description\n{_description(problem)}\n"
    if options.include_program:
        text += f"\n# program\n{candidate.program}\n"
    if options.include_execution:
        text += f"\n# execution\n{_result_text(candidate, options)}"
    return cut(text, options.max_chars, "right")


serialize_mbpp = serialize_python_tests
serialize_humaneval = serialize_python_tests

SERIALIZERS: dict[str, Callable[[Problem, Candidate, SerializeOptions], str]] = {
    "spider": serialize_spider,
    "wikitq": serialize_wikitq,
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
