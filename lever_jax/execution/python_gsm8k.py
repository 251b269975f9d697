"""GSM8k executor: run a math-word-problem program, read its answer, compare with the gold number.

Conventions (LEVER_NOTES, "How the bundled real pools were produced"):

* every program runs after Faithful-CoT's solver prelude -- ``import math``, ``from math import *``
  and an ``lcm(a, b)`` helper; programs that use sympy names also get ``Symbol, Eq, simplify,
  solve`` and the ``solve_it(equation, variable)`` helper (they run through
  :mod:`lever_jax.execution.python_gsm8k_sympy`, whose sandbox zygote has sympy pre-imported,
  so that the sympy import never slows down the other programs; programs importing numpy run
  through :mod:`lever_jax.execution.python_gsm8k_numpy` likewise);
* a trailing ``#`` is stripped; the program runs in one namespace (functions see its globals);
* the answer is the ``answer`` variable, else the return value of ``solution()``, else ``ans``
  (Program-of-Thoughts). For PoT candidates (``source`` starting with ``pot_``) only ``ans`` is
  read, numpy/sympy values are rounded to 2 decimals and a list/tuple gives its first element,
  as PoT's reader does;
* correct iff the answer is a number with ``|answer - gold| <= 1e-4`` (the tolerance the bundled
  pool's recorded answers were scored with; LEVER tests ``float(answer) == gold``, which
  spuriously fails on float noise such as ``0.1 + 0.2``); grouping key: :func:`canonical_key` of
  the number (1e-6 grid, LEVER groups with a 1e-6 tolerance); a non-numeric answer groups by its
  text;
* result_text (what the verifier reads, as LEVER): ``str`` of the dict of the program's final
  variables (each value ``str``-ed), prelude names, modules, functions and classes left out (their
  reprs hold memory addresses), values cut at 200 characters, the whole at 2,000; ``ERROR`` when
  the program failed or has no answer.
"""
from __future__ import annotations

import math
import re
import types
from typing import Any

from lever_jax.data.schema import Candidate, Execution, Problem
from lever_jax.execution.base import SandboxResult, Task
from lever_jax.data.result_keys import canonical_key, unique_error_key

VERSION = "gsm8k-1"
TOLERANCE = 1e-4
VALUE_CHARS = 200
TEXT_CHARS = 2000
_SYMPY_NAMES = re.compile(r"\b(Symbol|symbols|Eq|simplify|solve|solve_it|sympy|Rational|nsimplify)\b")
_NUMPY_NAMES = re.compile(r"\bnp\.")
_NUMPY_IMPORT = re.compile(r"\bnumpy\b|\bnp\.")

PRELUDE = '''import math
from math import *


def lcm(a, b):  # for backwards compatibility with Python<3.9
    return (a * b) // math.gcd(a, b)
'''


_PRELUDE_NAMESPACE: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
exec(compile(PRELUDE, "<prelude>", "exec"), _PRELUDE_NAMESPACE)  # noqa: S102 - trusted; built once per zygote


def clean_program(program: str) -> str:
    text = program.rstrip()
    if text.endswith("#"):
        text = text[:-1]
    return text


def _numeric(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    try:
        number = float(value)
    except Exception:  # noqa: BLE001 - anything the program produced
        return None
    return number


def _pot_read(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    kind = str(type(value))
    if "numpy" in kind or "sympy" in kind:
        try:
            value = round(float(value), 2)
        except Exception:  # noqa: BLE001
            value = str(value)
    return value


def _state_text(namespace: dict[str, Any], prelude_names: set[str]) -> str:
    state = {}
    for name, value in namespace.items():
        if name.startswith("__") or name in prelude_names:
            continue
        if isinstance(value, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type)):
            continue
        try:
            text = str(value)
        except Exception:  # noqa: BLE001 - a hostile __str__
            text = f"<{type(value).__name__}>"
        state[name] = text[:VALUE_CHARS]
    return str(state)[:TEXT_CHARS]


def run_program(payload: dict[str, Any], extra_prelude: dict[str, Any] | None = None) -> dict[str, Any]:
    """Sandbox task: run the program; exceptions propagate (sandbox status ``error``)."""
    namespace = dict(_PRELUDE_NAMESPACE)  # a copy: the program may rebind prelude names
    if extra_prelude:
        namespace.update(extra_prelude)
    if payload.get("numpy"):
        import numpy

        namespace["np"] = numpy
    prelude_names = set(namespace)
    code = compile(clean_program(payload["program"]), "<program>", "exec")
    exec(code, namespace)  # noqa: S102 - runs only inside the sandbox child
    convention = payload.get("convention", "auto")
    found, answer, via = False, None, None
    if convention == "pot":
        if "ans" in namespace:
            found, answer, via = True, _pot_read(namespace["ans"]), "ans"
    else:
        if "answer" in namespace and "answer" not in prelude_names:
            found, answer, via = True, namespace["answer"], "answer"
        elif callable(namespace.get("solution")):
            found, answer, via = True, namespace["solution"](), "solution()"
        elif "ans" in namespace:
            found, answer, via = True, namespace["ans"], "ans"
    number = _numeric(answer) if found else None
    return {
        "found": found,
        "via": via,
        "number": number if number is None or math.isfinite(number) else str(number),
        "answer_text": None if not found else str(answer)[:VALUE_CHARS],
        "state": _state_text(namespace, prelude_names),
    }


def run(payload: dict[str, Any]) -> dict[str, Any]:
    return run_program(payload)


_VIA = (None, "answer", "solution()", "ans")


def _invalid_record(value: Any) -> str | None:
    """What is wrong with the child's record (None: it is plain data of the expected shape).

    The verdict is computed here from ``number`` alone; a program that tampers with the harness
    can at most change its own answer, and a record of any other shape is an error."""
    if not isinstance(value, dict) or set(value) != {"found", "via", "number", "answer_text", "state"}:
        return "unexpected fields"
    if type(value["found"]) is not bool or value["via"] not in _VIA:
        return "found/via"
    number = value["number"]
    if not (number is None or type(number) in (int, float) or number in ("inf", "-inf", "nan")):
        return "number is not a number"
    if not (value["answer_text"] is None or type(value["answer_text"]) is str) or type(value["state"]) is not str:
        return "answer_text/state are not strings"
    return None


class GSM8kExecutor:
    """DatasetExecutor for GSM8k (see the module doc for the conventions)."""

    dataset = "gsm8k"
    version = VERSION

    def make_task(self, problem: Problem, candidate: Candidate) -> Task:
        program = candidate.program
        sources = [s for s in (candidate.source or "").split(",") if s]
        pot = bool(sources) and all(s.startswith("pot_") for s in sources)
        # The module decides the sandbox zygote: heavy imports are paid once there, not per program.
        if _SYMPY_NAMES.search(program):
            function = "lever_jax.execution.python_gsm8k_sympy:run"
        elif _NUMPY_IMPORT.search(program):
            function = "lever_jax.execution.python_gsm8k_numpy:run"
        else:
            function = "lever_jax.execution.python_gsm8k:run"
        return Task(function, {"program": program, "convention": "pot" if pot else "auto",
                               "numpy": bool(_NUMPY_NAMES.search(program))})

    def to_execution(self, problem: Problem, candidate: Candidate, result: SandboxResult) -> Execution:
        error_key = unique_error_key(problem.problem_id, candidate.program)
        if result.status != "ok" or not result.value:
            return Execution(status=result.status, result_key=error_key, result_text="ERROR",
                             error=result.error, correct=False, details={"answer": None})
        value = result.value
        problem_with_record = _invalid_record(value)
        if problem_with_record:
            message = f"invalid result record: {problem_with_record}"
            return Execution(status="error", result_key=error_key, result_text="ERROR", error=message,
                             correct=False, details={"answer": None})
        if not value.get("found"):
            return Execution(status="error", result_key=error_key, result_text="ERROR",
                             error="the program defines no answer variable", correct=False, details={"answer": None})
        number = value.get("number")
        details = {"answer": number if number is not None else value.get("answer_text"), "via": value.get("via")}
        if isinstance(number, (int, float)):
            gold = _numeric(problem.gold)
            correct = gold is not None and abs(float(number) - gold) <= TOLERANCE
            key = canonical_key(float(number))
        else:
            correct = False
            key = canonical_key(str(value.get("answer_text")))
        return Execution(status="ok", result_key=key, result_text=str(value.get("state", "")), error=None,
                         correct=bool(correct), details=details)
