"""HumanEval like for like: verifier inputs from what a deployed system has, never the hidden tests.

LEVER's verifier reads the return values of test calls. On MBPP those calls are the task's own
(visible) asserts; HumanEval's ``check`` is hidden, so feeding its calls to the verifier (and
grouping on their results) uses information a deployed reranker does not have. Here the calls
come from

* ``docstring``: the examples in the prompt's docstring (``>>> f(x)`` followed by the expected
  line, or ``f(x) ==> y`` / ``f(x) ➞ y`` / ``f(x) -> y`` / ``f(x) == y`` / ``f(x) = y`` /
  ``f(x) should return y``), falling back to ``codet`` for problems without any;
* ``codet``: CodeT's generated test cases (the bundled CodeT release,
  ``humaneval_pool/codet_test_cases.jsonl.gz``): the first call of the entry point in each assert;

at most :data:`MAX_CALLS` distinct calls per problem, written as ``assert <call> == <expected>``
(``None`` when the expected value is not a Python literal: only the return values are used).
:func:`execute_like_for_like` runs each candidate twice through the existing executors: the
visible calls through the MBPP test runner (result key, result text and per-call details: what
the verifier reads and what candidates are grouped on) and the hidden tests through the HumanEval
executor (``correct`` only, kept in ``details.hidden``). ``hidden`` (today's behaviour: the hidden
tests' calls feed the verifier) stays available as a labelled upper bound.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import re
from typing import Any, Iterable, Iterator, Mapping, Sequence

from lever_jax.data.schema import Execution, Problem

SOURCES = ("docstring", "codet", "hidden")
MAX_CALLS = 5
_ARROWS = re.compile(r"\s*(?:==>|=>|➞|->|==|=|\bshould return\b|\breturns?\b)\s*")


def _leading_call(text: str, entry_point: str) -> tuple[str, str] | None:
    """(call source, rest of the line) when ``text`` starts with a parseable ``entry_point(...)`` call."""
    text = text.strip()
    if not text.startswith(entry_point + "("):
        return None
    depth = 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth == 0 and ch == ")":
            call = text[: i + 1]
            try:
                node = ast.parse(call, mode="eval").body
            except SyntaxError:
                continue
            if isinstance(node, ast.Call):
                return call, text[i + 1:]
    return None


def _literal(text: str | None) -> str | None:
    """``text`` normalised as a Python literal, or None when it is not one."""
    if text is None:
        return None
    text = text.strip().rstrip(".,;").strip()
    try:
        return repr(ast.literal_eval(text))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _docstring(prompt: str, entry_point: str) -> str:
    """The docstring of ``entry_point`` in ``prompt`` ('' when the prompt does not parse or has none)."""
    try:
        tree = ast.parse(prompt)
    except (SyntaxError, ValueError):
        return ""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry_point:
            return ast.get_docstring(node, clean=False) or ""
    return ""


def docstring_calls(prompt: str, entry_point: str) -> list[tuple[str, str | None]]:
    """``[(call, expected literal or None)]`` from the examples in the entry point's docstring."""
    lines = _docstring(prompt, entry_point).split("\n")
    found: list[tuple[str, str | None]] = []
    for i, raw in enumerate(lines):
        line = raw.strip()
        doctest = line.startswith(">>>")
        if doctest:
            parsed = _leading_call(line[3:], entry_point)
        else:  # "Example: f(x) ==> y": the first parseable call of the entry point on the line
            starts = [m.start() for m in re.finditer(rf"(?<![\w.]){re.escape(entry_point)}\(", line)]
            parsed = next((c for c in (_leading_call(line[i:], entry_point) for i in starts) if c), None)
        if parsed is None:
            continue
        call, rest = parsed
        if doctest:
            following = next((ln.strip() for ln in lines[i + 1:] if ln.strip()), "")
            expected = None if following.startswith(">>>") else following
        else:
            match = _ARROWS.match(rest)
            expected = rest[match.end():] if match else None
        found.append((call, _literal(expected)))
    return found


def codet_calls(tests: Sequence[str], entry_point: str) -> list[tuple[str, str | None]]:
    """The first ``entry_point(...)`` call of each CodeT assert, with the other side of ``==``."""
    found: list[tuple[str, str | None]] = []
    for test in tests:
        try:
            stmt = ast.parse(test).body[0]
        except (SyntaxError, IndexError):
            continue
        if not isinstance(stmt, ast.Assert):
            continue
        calls = [n for n in ast.walk(stmt.test) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Name) and n.func.id == entry_point]
        if not calls:
            continue
        call, expected = calls[0], None
        if isinstance(stmt.test, ast.Compare) and len(stmt.test.comparators) == 1 and isinstance(stmt.test.ops[0], ast.Eq):
            sides = [stmt.test.left, stmt.test.comparators[0]]
            other = [s for s in sides if s is not call]
            expected = _literal(ast.unparse(other[0])) if len(other) == 1 else None
        found.append((ast.unparse(call), expected))
    return found


@functools.lru_cache(maxsize=1)
def load_codet_tests() -> dict[str, list[str]]:
    """``{problem_id: [assert, ...]}`` from the bundled CodeT release (empty when absent)."""
    from lever_jax.data.bundled import bundled_path
    from lever_jax.data.jsonl import iter_json_lines

    path = bundled_path("humaneval_pool", "codet_test_cases.jsonl.gz")
    if not path.exists():
        return {}
    return {str(obj["problem_id"]): [str(t) for t in obj.get("tests", [])] for _, obj in iter_json_lines(path)}


def visible_asserts(problem: Problem, source: str = "docstring", codet: Mapping[str, Sequence[str]] | None = None,
                    max_calls: int = MAX_CALLS) -> list[str]:
    """The visible test asserts of a HumanEval problem (see the module doc); [] for ``hidden``."""
    return [_as_assert(call, expected) for call, expected in visible_calls(problem, source, codet, max_calls)]


def _as_assert(call: str, expected: str | None) -> str:
    """``assert <call> == <expected>`` (``None`` when the expected value is unknown: only the return is used)."""
    return f"assert {call} == {expected if expected is not None else 'None'}"


def visible_calls(problem: Problem, source: str = "docstring", codet: Mapping[str, Sequence[str]] | None = None,
                  max_calls: int = MAX_CALLS) -> list[tuple[str, str | None]]:
    """``[(call, expected literal or None)]`` behind :func:`visible_asserts`."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {', '.join(SOURCES)}, got {source!r}")
    if source == "hidden":
        return []
    entry_point = str(problem.context.get("entry_point", ""))
    calls: list[tuple[str, str | None]] = []
    if source == "docstring":
        calls = docstring_calls(str(problem.context.get("prompt", "")), entry_point)
    if not calls:
        tests = (codet if codet is not None else load_codet_tests()).get(problem.problem_id, [])
        calls = codet_calls(tests, entry_point)
    seen: dict[str, str | None] = {}
    for call, expected in calls:
        seen.setdefault(call, expected)
    return list(seen.items())[:max_calls]


def visible_problem(problem: Problem, asserts: Sequence[str]) -> Problem:
    """``problem`` as an MBPP-style problem whose tests are ``asserts`` (for the MBPP test runner)."""
    return problem.replace(dataset="mbpp", context={"test_list": list(asserts), "test_setup_code": ""})


def combine(hidden: Execution, visible: Execution, source: str, may_raise: frozenset[int] = frozenset()) -> Execution:
    """The visible run's status, key, text and per-call details with the hidden tests' verdict.

    The status is the visible run's (what a deployed system can see: a visible call that raises
    makes it ``error``, as LEVER's MBPP), except that calls in ``may_raise`` (examples whose
    documented outcome is not a value, e.g. ``f(0, 'a') ➞ error``) may raise in an ``ok`` program."""
    details = dict(visible.details or {})
    details["hidden"] = {"status": hidden.status, "correct": hidden.correct, "error": hidden.error,
                         "passed": (hidden.details or {}).get("passed")}
    details["verifier_inputs"] = source
    tests = details.get("tests") or []
    raised = [i for i, t in enumerate(tests) if isinstance(t, dict) and t.get("raised")]
    if visible.status == "error" and tests and raised and set(raised) <= may_raise:
        return dataclasses.replace(visible, status="ok", error=None, correct=hidden.correct, details=details)
    return dataclasses.replace(visible, correct=hidden.correct, details=details)


def execute_like_for_like(problems: Iterable[Problem], sandbox: Any, cache: Any = None, source: str = "docstring",
                          codet: Mapping[str, Sequence[str]] | None = None, progress: bool = False,
                          max_calls: int = MAX_CALLS, stats: Any = None,
                          reuse_hidden: bool = False) -> Iterator[Problem]:
    """Execute HumanEval problems: correctness from the hidden tests, everything the verifier and
    the grouping see from the visible calls (``source='hidden'``: the hidden tests for both).
    ``reuse_hidden``: problems already executed against the hidden tests keep those executions as
    the hidden verdicts (only the visible calls run)."""
    from lever_jax.execution.python_tests import HumanEvalExecutor, MBPPExecutor
    from lever_jax.execution.runner import execute_problems

    problems = list(problems)
    if reuse_hidden and all(p.is_executed for p in problems):  # executions already against the hidden tests
        hidden = problems
    else:
        hidden = list(execute_problems(problems, HumanEvalExecutor(), sandbox, cache, progress=progress, stats=stats))
    if source == "hidden":
        for problem in hidden:
            yield problem.replace(candidates=tuple(
                dataclasses.replace(c, execution=dataclasses.replace(
                    c.execution, details={**dict(c.execution.details or {}), "verifier_inputs": "hidden"}))
                for c in problem.candidates))
        return
    calls = [visible_calls(p, source, codet, max_calls) for p in problems]
    visible_in = [visible_problem(p, [_as_assert(c, e) for c, e in pc]) for p, pc in zip(problems, calls)]
    visible = execute_problems(visible_in, MBPPExecutor(), sandbox, cache, progress=progress, stats=stats)
    for original, h, v, pc in zip(problems, hidden, visible, calls):
        may_raise = frozenset(i for i, (_, expected) in enumerate(pc) if expected is None)
        candidates = tuple(dataclasses.replace(c, execution=combine(hc.execution, vc.execution, source, may_raise))
                           for c, hc, vc in zip(original.candidates, h.candidates, v.candidates))
        greedy = original.greedy  # the problem-level greedy program (data contract), judged alike
        if greedy is not None and h.greedy is not None and v.greedy is not None:
            greedy = dataclasses.replace(greedy, execution=combine(h.greedy.execution, v.greedy.execution, source,
                                                                   may_raise))
        yield original.replace(candidates=candidates, greedy=greedy)
