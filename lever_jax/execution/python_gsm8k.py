"""GSM8k executor: run a math-word-problem program, read its answer, compare with the gold number.

Two conventions (``GSM8kExecutor(convention=...)``; ``lever-jax execute --executor-option
convention=NAME``; the executor version names it, so caches and stamps keep them apart):

``lever`` (default) -- LEVER's ``MathExecutor`` (LEVER_NOTES, "Execution and correctness"):

* the program runs as is with separate, empty globals and locals dicts (``exec(program, {}, {})``):
  a function or (Python <= 3.11) a list comprehension that reads a top-level name fails, as in
  LEVER; no prelude; LEVER's 2 s wall-clock timeout (:attr:`GSM8kExecutor.default_timeout_s`);
* only the ``answer`` variable is read: a program without one (e.g. one that sets only ``ans``)
  is an error whose ``result_text`` is LEVER's ``ERROR: no answer variable``; a program that
  fails or times out reads ``ERROR: program failed to execute``;
* correct iff ``float(str(answer)) == float(gold)`` (LEVER's float equality: ``0.1 + 0.2`` is
  not ``0.3``, and ``True`` or ``10/3`` as text are not numbers); an answer that is not a number
  is an ``ok`` execution that groups by its text and is never correct.

``faithful_cot`` -- the bundled pools' conventions (LEVER_NOTES, "How the bundled real pools were
produced"; this executor's behaviour before LEVER's became the default, version ``gsm8k-1``):

* every program runs after Faithful-CoT's solver prelude -- ``import math``, ``from math import *``
  and an ``lcm(a, b)`` helper; programs that use sympy names also get ``Symbol, Eq, simplify,
  solve`` and the ``solve_it(equation, variable)`` helper;
* a trailing ``#`` is stripped; the program runs in one namespace (functions see its globals);
* the answer is the ``answer`` variable, else the return value of ``solution()``, else ``ans``
  (Program-of-Thoughts). For PoT candidates (``source`` starting with ``pot_``) only ``ans`` is
  read, numpy/sympy values are rounded to 2 decimals and a list/tuple gives its first element,
  as PoT's reader does;
* correct iff the answer is a number with ``|answer - gold| <= 1e-4`` (the tolerance the bundled
  pool's recorded answers were scored with); ``result_text`` of an error is ``ERROR``.

Both: programs that use sympy names run through :mod:`lever_jax.execution.python_gsm8k_sympy`,
programs importing numpy through :mod:`lever_jax.execution.python_gsm8k_numpy`, whose sandbox
zygotes have those modules pre-imported (only the import cost differs; under ``lever`` the
program's namespace stays empty). Grouping key: :func:`canonical_key` of the number (1e-6 grid;
LEVER groups with a 1e-6 tolerance); a non-numeric answer groups by its text. ``result_text`` of
an ``ok`` execution (what the verifier reads, as LEVER): ``str`` of the dict of the program's final
variables (each value ``str``-ed), prelude names, modules, functions and classes left out (their
reprs hold memory addresses and paths, which would make the text differ between runs; LEVER keeps
them), values cut at 200 characters, the whole at 2,000. The verdict is computed here, in the
parent, from the child's plain-data record; nothing the program touches decides it.
"""
from __future__ import annotations

import math
import re
import types
from typing import Any

from lever_jax.data.schema import Candidate, Execution, Problem
from lever_jax.execution.base import SandboxResult, Task
from lever_jax.data.result_keys import canonical_key, unique_error_key

VERSION = "gsm8k-2"  # the executor version is "<VERSION>-<convention>"
CONVENTIONS = ("lever", "faithful_cot")
DEFAULT_CONVENTION = "lever"
DEFAULT_TIMEOUT_S = {"lever": 2.0, "faithful_cot": 10.0}  # LEVER's 2 s; the pools were executed with 10 s
TOLERANCE = 1e-4  # faithful_cot only
LEVER_FAILED = "ERROR: program failed to execute"  # LEVER's exec_result strings
LEVER_NO_ANSWER = "ERROR: no answer variable"
NO_ANSWER_ERROR = "the program defines no answer variable"
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


def _lever_number(answer: Any) -> float | int | str | None:
    """LEVER's ``float(str(answer))`` (None when that fails; non-finite values as text)."""
    try:
        number = float(str(answer))
    except Exception:  # noqa: BLE001 - anything the program produced
        return None
    return number if math.isfinite(number) else str(number)


def run_lever(payload: dict[str, Any]) -> dict[str, Any]:
    """Sandbox task, LEVER's convention: ``exec(program, {}, {})``, read ``answer`` from the locals."""
    globals_: dict[str, Any] = {}
    locals_: dict[str, Any] = {}
    exec(compile(payload["program"], "<program>", "exec"), globals_, locals_)  # noqa: S102 - sandbox child only
    found = "answer" in locals_
    answer = locals_.get("answer")
    return {
        "found": found,
        "via": "answer" if found else None,
        "number": _lever_number(answer) if found else None,
        "answer_text": None if not found else str(answer)[:VALUE_CHARS],
        "state": _state_text(locals_, set()),
    }


def run_program(payload: dict[str, Any], extra_prelude: dict[str, Any] | None = None) -> dict[str, Any]:
    """Sandbox task: run the program; exceptions propagate (sandbox status ``error``). A payload
    without ``convention`` runs the faithful_cot way (``auto``)."""
    if payload.get("convention") == "lever":
        return run_lever(payload)
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
    can at most change its own answer, and a record of any other shape is an error -- also one the
    child never writes: ``number`` is always a float (an int of 4,000 digits has none), the texts
    are capped at VALUE_CHARS / TEXT_CHARS (a forged 60 MiB state must not reach the executed file)."""
    if not isinstance(value, dict) or set(value) != {"found", "via", "number", "answer_text", "state"}:
        return "unexpected fields"
    if type(value["found"]) is not bool or value["via"] not in _VIA:
        return "found/via"
    number = value["number"]
    if not (number is None or type(number) is float or number in ("inf", "-inf", "nan")):
        return "number is not a number"
    text, state = value["answer_text"], value["state"]
    if not (text is None or type(text) is str) or type(state) is not str:
        return "answer_text/state are not strings"
    if (text is not None and len(text) > VALUE_CHARS) or len(state) > TEXT_CHARS:
        return "answer_text/state longer than the child writes"
    return None


class GSM8kExecutor:
    """DatasetExecutor for GSM8k (see the module doc for the two conventions)."""

    dataset = "gsm8k"

    def __init__(self, convention: str = DEFAULT_CONVENTION):
        if convention not in CONVENTIONS:
            raise ValueError(f"convention must be one of {', '.join(CONVENTIONS)}, got {convention!r}")
        self.convention = convention
        self.version = f"{VERSION}-{convention}"
        self.default_timeout_s = DEFAULT_TIMEOUT_S[convention]

    def make_task(self, problem: Problem, candidate: Candidate) -> Task:
        program = candidate.program
        # The module decides the sandbox zygote: heavy imports are paid once there, not per program.
        if _SYMPY_NAMES.search(program):
            function = "lever_jax.execution.python_gsm8k_sympy:run"
        elif _NUMPY_IMPORT.search(program):
            function = "lever_jax.execution.python_gsm8k_numpy:run"
        else:
            function = "lever_jax.execution.python_gsm8k:run"
        if self.convention == "lever":
            return Task(function, {"program": program, "convention": "lever"})
        sources = [s for s in (candidate.source or "").split(",") if s]
        pot = bool(sources) and all(s.startswith("pot_") for s in sources)
        return Task(function, {"program": program, "convention": "pot" if pot else "auto",
                               "numpy": bool(_NUMPY_NAMES.search(program))})

    def _error(self, status: str, key: str, error: str | None, no_answer: bool = False) -> Execution:
        text = "ERROR" if self.convention != "lever" else (LEVER_NO_ANSWER if no_answer else LEVER_FAILED)
        return Execution(status=status, result_key=key, result_text=text, error=error, correct=False,
                         details={"answer": None})

    def _correct(self, number: float, gold: Any) -> bool:
        gold_number = _numeric(gold)
        if gold_number is None:
            return False
        if self.convention == "lever":
            return float(number) == gold_number  # LEVER: float(answer) == gold
        return abs(float(number) - gold_number) <= TOLERANCE

    def to_execution(self, problem: Problem, candidate: Candidate, result: SandboxResult) -> Execution:
        error_key = unique_error_key(problem.problem_id, candidate.program)
        if result.status != "ok" or not result.value:
            return self._error(result.status, error_key, result.error)
        value = result.value
        problem_with_record = _invalid_record(value)
        if problem_with_record:
            return self._error("error", error_key, f"invalid result record: {problem_with_record}")
        if not value.get("found"):
            return self._error("error", error_key, NO_ANSWER_ERROR, no_answer=True)
        number = value.get("number")
        details = {"answer": number if number is not None else value.get("answer_text"), "via": value.get("via")}
        if isinstance(number, (int, float)):
            correct = self._correct(number, problem.gold)
            key = canonical_key(float(number))
        else:
            correct = False
            key = canonical_key(str(value.get("answer_text")))
        return Execution(status="ok", result_key=key, result_text=str(value.get("state", "")), error=None,
                         correct=bool(correct), details=details)
