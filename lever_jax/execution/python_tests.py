"""MBPP and HumanEval executors: run a program against assert tests, judged outside its reach.

Each test is an ``assert`` statement. :func:`lever_jax.execution.judge.plan_test` splits it into
the *candidate calls* (``add(1, 2)`` in ``assert add(1, 2) == 3``) and a judge-side check
(``__c0 == 3``). The sandbox child gets the program, the setup code and only the calls -- never
the expected values -- and returns each call's value as plain data
(:mod:`lever_jax.execution.plain`; anything else, e.g. an object of a program-defined class, is a
failure). The parent decodes the values and evaluates the checks itself, and checks that exactly
one record came back per test; a record of the wrong shape is an ``error``. Nothing the program
can do in its own process (patch builtins or the harness, edit frames, write to the result pipe,
exit early) turns a failure into a pass: at most it changes its own answers. Tests that do not
split run the old way inside the child and are flagged (``details.tests[i].judge == "child"``,
``details.unverified_tests``). Each call runs once per test (LEVER runs the program twice).

* correct iff the program ran and every test passed;
* status ``error`` (LEVER's MBPP execution error) when the program fails, or when any test call
  raises (the first one in ``error``, every one in ``details.tests[i].error``); a call that returns
  a wrong value, or a value that is not plain data, is a failed test of an ``ok`` program;
* result_key: the canonical key of the tuple of return values when every test call returned,
  else a unique error key (such programs never group, as in LEVER);
* result_text, as LEVER's MBPP verifier input: one ``# return: (type)=value`` line per test
  (``<object list>`` when the value's text mentions an object, ``ERROR: tracing failed`` when the
  call raised), or ``ERROR: ...`` when the program itself failed.

HumanEval: the asserts are derived from ``check(candidate)`` with ``candidate`` replaced by the
entry point (the child's setup is the test module without ``check``); when ``check`` holds
anything but asserts, :mod:`lever_jax.execution.check_unroll` unrolls loops, variables and (seeded)
random inputs into plain asserts. Helper functions the check calls (HumanEval/32's ``poly``, /38's
``encode_cyclic``, /50's ``encode_shift``) are the *prompt's* definitions, evaluated by the judge
(:mod:`lever_jax.execution.trusted_eval`), never the program's own copies, which it may have
changed. A check it cannot unroll runs whole as one legacy test, ``check(<entry_point>)``; no
HumanEval problem needs that since ``pytests-5``.
"""
from __future__ import annotations

import ast
from typing import Any, Callable, Mapping

from lever_jax.data.schema import Candidate, Execution, Problem
from lever_jax.execution import plain
from lever_jax.execution.base import TIMEOUT_TEXT, SandboxResult, Task
from lever_jax.execution.check_unroll import humaneval_tests, without_check
from lever_jax.data.result_keys import canonical_key, unique_error_key
from lever_jax.execution.judge import TestPlan, judge, plan_test
from lever_jax.execution.trusted_eval import trusted_helpers

__all__ = ["HumanEvalExecutor", "MBPPExecutor", "humaneval_tests", "split_assert", "run"]

# 3: a test call that raises makes the execution an error (LEVER); 4: HumanEval checks with loops,
# variables and random inputs unrolled into judged asserts (check_unroll); 5 (HumanEval only): checks
# that call the prompt's helpers (HumanEval/32, /38, /50) judged with the prompt's definitions
VERSION = "pytests-4"
HUMANEVAL_VERSION = "pytests-5"
VALUE_CHARS = 300
_CLOSE_FUNCS = {"isclose", "allclose", "abs", "set", "sorted", "round", "float", "int", "str", "list", "tuple"}
_RET = "__lever_return_value__"


# -- legacy test parsing (for tests the judge cannot split) ---------------------
def _call_node(test: ast.expr) -> ast.expr:
    """The sub-expression whose value is "the return value of the call under test"."""
    node = test
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        node = node.operand
    if isinstance(node, ast.Compare):
        node = node.left
    elif isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in _CLOSE_FUNCS and node.args:
            node = node.args[0]
    # unwrap wrappers such as set(f(x)) == {...} / abs(f(x) - y) < eps
    while isinstance(node, ast.Call) and node.args and isinstance(node.args[0], (ast.Call, ast.BinOp)):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name not in _CLOSE_FUNCS:
            break
        node = node.args[0]
    if isinstance(node, ast.BinOp) and isinstance(node.left, ast.Call):
        node = node.left
    return node


def split_assert(source: str) -> tuple[str, str] | None:
    """``(call_expression, assert_with_placeholder)`` for one assert statement, None if not one."""
    try:
        tree = ast.parse(source.strip())
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
        return None
    stmt = tree.body[0]
    target = _call_node(stmt.test)
    call_src = ast.unparse(target)

    class Swap(ast.NodeTransformer):
        done = False

        def visit(self, node: ast.AST) -> ast.AST:
            if not self.done and node is target:
                self.done = True
                return ast.copy_location(ast.Name(id=_RET, ctx=ast.Load()), node)
            return super().visit(node)

    swapped = Swap().visit(stmt)
    return call_src, ast.unparse(ast.fix_missing_locations(ast.Module(body=[swapped], type_ignores=[])))


# -- the sandbox task (runs in the child, with the candidate) -----------------------------------
def _text(value: Any) -> tuple[str, str]:
    """LEVER's (type, str) of a return value; guarded against hostile ``__str__``."""
    try:
        text = str(value)[:VALUE_CHARS]
    except Exception:  # noqa: BLE001
        text = "<unprintable object>"
    return plain.type_name(value), text


def _answer(call_src: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """Evaluate one candidate call; its value as plain data, or why there is none."""
    try:
        value = eval(compile(call_src, "<call>", "eval"), namespace)  # noqa: S307 - sandbox only
    except MemoryError:
        raise
    except Exception as err:  # noqa: BLE001 - the program's own exceptions, RecursionError included
        return {"error": _describe(err)}
    try:
        answer = {"v": plain.encode(value)}
        if type(value) in plain.DICT_LIKE:  # LEVER's return line shows the real type
            answer["type"], answer["value"] = _text(value)
        return answer
    except plain.NotPlain as err:
        kind, text = _text(value)
        try:
            key = canonical_key(value)
        except Exception:  # noqa: BLE001
            key = "unkeyable"
        return {"notplain": str(err)[:VALUE_CHARS], "type": kind, "value": text, "key": key}


def _legacy(test: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """The old way (flagged by the judge): the assert is checked here, in the candidate's process."""
    entry: dict[str, Any] = {"legacy": True, "passed": False, "returned": False}
    parts = split_assert(test)
    try:
        if parts is None:  # a bare statement such as check(f): run it, its value is None
            exec(compile(test, "<test>", "exec"), namespace)  # noqa: S102
            value: Any = None
            entry["returned"] = entry["passed"] = True
        else:
            call_src, check_src = parts
            value = eval(compile(call_src, "<call>", "eval"), namespace)  # noqa: S307
            entry["returned"] = True
            namespace[_RET] = value
            try:
                exec(compile(check_src, "<assert>", "exec"), namespace)  # noqa: S102
                entry["passed"] = True
            except AssertionError:
                entry["passed"] = False
        entry["type"], entry["value"] = _text(value)
        entry["key"] = canonical_key(value)
    except MemoryError:
        raise
    except Exception as err:  # noqa: BLE001 - the program's own exceptions
        entry["error"] = _describe(err)
    return entry


def _describe(err: BaseException) -> str:
    try:
        return f"{type(err).__name__}: {err}"[:VALUE_CHARS]
    except Exception:  # noqa: BLE001 - a hostile __str__
        return type(err).__name__


def run(payload: dict[str, Any]) -> dict[str, Any]:
    """Sandbox task: program + setup, then each test's candidate calls (or a legacy assert).

    The payload holds only the calls to answer, not the expected values (those stay with the
    judge in the parent). Program errors propagate (status ``error``).
    """
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    exec(compile(payload["program"], "<program>", "exec"), namespace)  # noqa: S102 - sandbox only
    setup = payload.get("setup") or ""
    if setup.strip():
        exec(compile(setup, "<setup>", "exec"), namespace)  # noqa: S102
    results = []
    for test in payload["tests"]:
        if "legacy" in test:
            results.append(_legacy(test["legacy"], namespace))
            continue
        answers = []
        for call_src in test["calls"]:
            answers.append(_answer(call_src, namespace))
            if "v" not in answers[-1]:
                break
        results.append({"answers": answers})
    return {"tests": results}


# -- the judge side (runs in the parent: no candidate code here) --------------------------------
def _return_line(entry: dict[str, Any]) -> str:
    if not entry.get("returned"):
        return "# return: ERROR: tracing failed"
    value = entry.get("value", "")
    if "object" in value:
        value = "<object list>"
    return f"# return: ({entry.get('type')})={value}"


class BadResult(ValueError):
    """The child's record does not have the shape the judge asked for."""


def _s(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise BadResult(f"{what} is not a string")
    return value[:VALUE_CHARS]


def judge_test(plan: TestPlan, entry: Any,
               helpers: Mapping[str, Callable[..., Any]] | None = None) -> dict[str, Any]:
    """One test's verdict and LEVER's return capture from the child's record (validated strictly);
    ``helpers``: the trusted functions the check may call."""
    if not isinstance(entry, dict):
        raise BadResult("a test record is not an object")
    if plan.legacy:
        if "legacy" not in entry or not isinstance(entry.get("passed"), bool) or not isinstance(entry.get("returned"), bool):
            raise BadResult("a legacy test record is malformed")
        out = {"passed": entry["passed"], "returned": entry["returned"], "judge": "child",
               "error": None if entry.get("error") is None else _s(entry.get("error"), "error")}
        # a bare ``check(f)`` failing its asserts is a failed test; any other exception is the program's
        out["raised"] = not entry["returned"] and out["error"] is not None and not out["error"].startswith("AssertionError")
        if entry["returned"]:
            out.update(type=_s(entry.get("type"), "type"), value=_s(entry.get("value"), "value"),
                       key=_s(entry.get("key"), "key"))
        return out
    answers = entry.get("answers")
    if not isinstance(answers, list) or not 1 <= len(answers) <= len(plan.calls):
        raise BadResult("a test record has the wrong number of answers")
    out: dict[str, Any] = {"passed": False, "returned": False, "judge": "parent", "error": None}
    values = []
    for i, answer in enumerate(answers):
        if not isinstance(answer, dict):
            raise BadResult("an answer is not an object")
        if "v" in answer:
            try:
                value = plain.decode(answer["v"])
            except plain.NotPlain as err:
                raise BadResult(f"an answer is not plain data: {err}") from None
            values.append(value)
            if i == 0:
                out.update(returned=True, type=plain.type_name(value), value=str(value)[:VALUE_CHARS], key=canonical_key(value))
                if "type" in answer:
                    out.update(type=_s(answer["type"], "type"), value=_s(answer.get("value"), "value"))
        elif "notplain" in answer:
            out["error"] = f"returned a {_s(answer.get('type'), 'type')}: {_s(answer['notplain'], 'notplain')}"
            if i == 0:
                out.update(returned=True, type=_s(answer.get("type"), "type"), value=_s(answer.get("value"), "value"),
                           key=_s(answer.get("key"), "key"))
            return out
        else:
            out.update(error=_s(answer.get("error"), "error"), raised=True)
            return out
    if len(values) != len(plan.calls):
        raise BadResult("a test record has the wrong number of answers")
    out["passed"] = judge(plan, values, helpers)
    return out


class _TestsExecutor:
    dataset = ""
    version = VERSION

    def tests_for(self, problem: Problem) -> tuple[str, list[str]]:
        raise NotImplementedError

    def helpers_for(self, problem: Problem) -> Mapping[str, Callable[..., Any]]:
        """The trusted helper functions the judge may call for ``problem`` (none for MBPP)."""
        return {}

    def plans_for(self, problem: Problem) -> tuple[str, list[TestPlan]]:
        setup, tests = self.tests_for(problem)
        names = tuple(self.helpers_for(problem))
        return setup, [plan_test(t, names) for t in tests]

    def child_setup(self, setup: str, plans: list[TestPlan]) -> str:
        """The setup code the child gets (HumanEval drops ``check`` when no test needs it)."""
        return setup

    def make_task(self, problem: Problem, candidate: Candidate) -> Task:
        setup, plans = self.plans_for(problem)
        wire = [{"legacy": p.source} if p.legacy else {"calls": list(p.calls)} for p in plans]
        return Task("lever_jax.execution.python_tests:run",
                    {"program": candidate.program, "setup": self.child_setup(setup, plans), "tests": wire})

    def to_execution(self, problem: Problem, candidate: Candidate, result: SandboxResult) -> Execution:
        error_key = unique_error_key(problem.problem_id, candidate.program)
        if result.status != "ok" or not result.value:
            error = result.error or result.status
            text = "ERROR: program is not parsable" if error.startswith("SyntaxError") else f"ERROR: {error}"
            text = TIMEOUT_TEXT if result.status == "timeout" else text
            return Execution(status=result.status, result_key=error_key, result_text=text[:500], error=result.error,
                             correct=False, details={"tests": []})
        plans = self.plans_for(problem)[1]
        helpers = self.helpers_for(problem)
        raw = result.value.get("tests")
        try:
            if not isinstance(raw, list) or len(raw) != len(plans):
                raise BadResult(f"the result holds {len(raw) if isinstance(raw, list) else 'no'} tests, "
                                f"expected {len(plans)}")
            tests = [judge_test(plan, entry, helpers) for plan, entry in zip(plans, raw)]
        except BadResult as err:
            message = f"invalid result record: {err}"
            return Execution(status="error", result_key=error_key, result_text=f"ERROR: {message}", error=message,
                             correct=False, details={"tests": []})
        all_returned = bool(tests) and all(t["returned"] for t in tests)
        passed = bool(tests) and all(t["passed"] for t in tests)
        key = canonical_key(tuple(t.get("key") for t in tests)) if all_returned else error_key
        text = "\n".join(_return_line(t) for t in tests)
        details = {"tests": [{**{k: t.get(k) for k in ("passed", "type", "value", "error", "judge")},
                              "raised": bool(t.get("raised"))} for t in tests],
                   "passed": sum(t["passed"] for t in tests),
                   "unverified_tests": sum(t["judge"] == "child" for t in tests)}
        raised = next((i for i, t in enumerate(tests) if t.get("raised")), None)
        if raised is not None:  # LEVER: a test call that raises makes the program's execution an error
            error = f"test {raised}: {tests[raised]['error']}"
            return Execution(status="error", result_key=error_key, result_text=text, error=error, correct=False,
                             details=details)
        return Execution(status="ok", result_key=key, result_text=text, error=None, correct=passed, details=details)


class MBPPExecutor(_TestsExecutor):
    """MBPP: program + ``test_setup_code`` + ``test_list`` asserts (challenge tests not run)."""

    dataset = "mbpp"

    def tests_for(self, problem: Problem) -> tuple[str, list[str]]:
        ctx = problem.context
        setup = str(ctx.get("test_setup_code") or "")
        if ctx.get("entry_point"):  # sanitized (HumanEval-format) tests call `candidate`
            setup = f"{setup}\ncandidate = {ctx['entry_point']}\n"
        return setup, [str(t) for t in ctx.get("test_list", [])]


class HumanEvalExecutor(_TestsExecutor):
    """HumanEval: the ``check(candidate)`` asserts, with the test module as setup code."""

    dataset = "humaneval"
    version = HUMANEVAL_VERSION

    def tests_for(self, problem: Problem) -> tuple[str, list[str]]:
        ctx = problem.context
        test_source = str(ctx["test"])
        return test_source, humaneval_tests(test_source, str(ctx["entry_point"]), str(ctx.get("prompt") or ""))

    def helpers_for(self, problem: Problem) -> Mapping[str, Callable[..., Any]]:
        """The prompt's (and test module's) helper functions (``poly``, ``encode_cyclic``, ...), never
        the program's."""
        ctx = problem.context
        return trusted_helpers(str(ctx.get("prompt") or ""), str(ctx["entry_point"]), str(ctx["test"]))

    def child_setup(self, setup: str, plans: list[TestPlan]) -> str:
        if any(p.legacy for p in plans):
            return setup
        return without_check(setup)
