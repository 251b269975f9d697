"""MBPP and HumanEval executors: run a program against assert tests, recording return values.

Each test is an ``assert`` statement. We parse it with :mod:`ast` (no tree-sitter), find the call
under test -- the left side of a comparison (``assert f(x) == y``), the first argument of an
``isclose``-style call, the operand of ``not``, or else the asserted expression itself --
evaluate that call once, then check the assert with the value substituted for the call, so the
function runs once per test (LEVER runs the program twice). Per test we record pass/fail and the
returned value's type, ``str`` and canonical key.

* correct iff the program ran and every test passed;
* result_key: the canonical key of the tuple of return values when every test call returned,
  else a unique error key (such programs never group, as in LEVER);
* result_text, as LEVER's MBPP verifier input: one ``# return: (type)=value`` line per test
  (``<object list>`` when the value's text mentions an object, ``ERROR: tracing failed`` when the
  call raised), or ``ERROR: ...`` when the program itself failed.

HumanEval: the asserts are derived from ``check(candidate)`` with ``candidate`` replaced by the
entry point; when ``check`` holds anything but asserts (loops, helpers), the whole
``check(<entry_point>)`` runs as one test.
"""
from __future__ import annotations

import ast
from typing import Any

from lever_jax.data.schema import Candidate, Execution, Problem
from lever_jax.execution.base import SandboxResult, Task
from lever_jax.execution.canonical import canonical_key, unique_error_key

VERSION = "pytests-1"
VALUE_CHARS = 300
_CLOSE_FUNCS = {"isclose", "allclose", "abs", "set", "sorted", "round", "float", "int", "str", "list", "tuple"}
_RET = "__lever_return_value__"


# -- test parsing (runs in the parent and again, defensively, in the child) ---------------------
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


class _Rename(ast.NodeTransformer):
    def __init__(self, old: str, new: str):
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.copy_location(ast.Name(id=self.new, ctx=node.ctx), node) if node.id == self.old else node


def humaneval_tests(test_source: str, entry_point: str) -> list[str]:
    """Asserts of ``check(candidate)`` with ``candidate`` -> entry point; [``check(...)`` call] if
    the function holds anything else than asserts (and docstrings / pass)."""
    tree = ast.parse(test_source)
    checks = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if len(checks) != 1:
        return [f"check({entry_point})"]
    check = checks[0]
    param = check.args.args[0].arg if check.args.args else "candidate"
    asserts = []
    for stmt in check.body:
        if isinstance(stmt, ast.Assert):
            mentions = any(isinstance(n, ast.Name) and n.id == param for n in ast.walk(stmt))
            if mentions:
                asserts.append(ast.unparse(_Rename(param, entry_point).visit(stmt)))
        elif isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            continue
        else:
            return [f"check({entry_point})"]
    return asserts or [f"check({entry_point})"]


# -- the sandbox task ---------------------------------------------------------------------------
def _type_name(value: Any) -> str:
    # LEVER: str(type(v)) "<class 'numpy.int64'>" -> "numpy.int64"
    return str(type(value)).split(" ")[-1].replace("'", "").replace(">", "")


def run(payload: dict[str, Any]) -> dict[str, Any]:
    """Sandbox task: program + setup + each test. Program errors propagate (status ``error``)."""
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    exec(compile(payload["program"], "<program>", "exec"), namespace)  # noqa: S102 - sandbox only
    setup = payload.get("setup") or ""
    if setup.strip():
        exec(compile(setup, "<setup>", "exec"), namespace)  # noqa: S102
    results = []
    for test in payload["tests"]:
        entry: dict[str, Any] = {"test": test, "passed": False, "returned": False}
        parts = split_assert(test)
        try:
            if parts is None:  # a bare statement such as check(f): run it, its value is None
                exec(compile(test, "<test>", "exec"), namespace)  # noqa: S102
                value: Any = None
                entry["returned"] = True
                entry["passed"] = True
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
            if entry["returned"]:
                text = str(value)
                entry.update(type=_type_name(value), value=text[:VALUE_CHARS], key=canonical_key(value))
        except MemoryError:
            raise
        except RecursionError as err:
            entry["error"] = f"RecursionError: {err}"[:VALUE_CHARS]
        except Exception as err:  # noqa: BLE001 - the program's own exceptions
            entry["error"] = f"{type(err).__name__}: {err}"[:VALUE_CHARS]
        results.append(entry)
    return {"tests": results}


def _return_line(entry: dict[str, Any]) -> str:
    if not entry.get("returned"):
        return "# return: ERROR: tracing failed"
    value = entry.get("value", "")
    if "object" in value:
        value = "<object list>"
    return f"# return: ({entry.get('type')})={value}"


class _TestsExecutor:
    dataset = ""
    version = VERSION

    def tests_for(self, problem: Problem) -> tuple[str, list[str]]:
        raise NotImplementedError

    def make_task(self, problem: Problem, candidate: Candidate) -> Task:
        setup, tests = self.tests_for(problem)
        return Task("lever_jax.execution.python_tests:run",
                    {"program": candidate.program, "setup": setup, "tests": tests})

    def to_execution(self, problem: Problem, candidate: Candidate, result: SandboxResult) -> Execution:
        error_key = unique_error_key(problem.problem_id, candidate.program)
        if result.status != "ok" or not result.value:
            error = result.error or result.status
            text = "ERROR: program is not parsable" if error.startswith("SyntaxError") else f"ERROR: {error}"
            return Execution(status=result.status, result_key=error_key, result_text=text[:500], error=result.error,
                             correct=False, details={"tests": []})
        tests = list(result.value.get("tests", []))
        all_returned = bool(tests) and all(t.get("returned") for t in tests)
        passed = bool(tests) and all(t.get("passed") for t in tests)
        key = canonical_key(tuple(t.get("key") for t in tests)) if all_returned else error_key
        text = "\n".join(_return_line(t) for t in tests)
        details = {"tests": [{k: t.get(k) for k in ("passed", "type", "value", "error")} for t in tests],
                   "passed": sum(bool(t.get("passed")) for t in tests)}
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

    def tests_for(self, problem: Problem) -> tuple[str, list[str]]:
        ctx = problem.context
        test_source = str(ctx["test"])
        return test_source, humaneval_tests(test_source, str(ctx["entry_point"]))
