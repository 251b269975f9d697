"""Unroll a HumanEval ``check(candidate)`` body into plain asserts the judge can split.

Most HumanEval checks are a list of asserts; a few mix in loops, helper variables, a bare
``print`` or random inputs (``for x in range(2, 8): assert candidate(x, x + 1) == str(x)``,
``lst = list(range(-99, 100, 2))``, ``x, y = random.randint(0, 1000), ...``). Run as one
``check(...)`` in the child, their verdict could be forged by the program. :func:`unroll_check`
evaluates such a body *here*, statically, with the evaluator of
:mod:`lever_jax.execution.trusted_eval` (plain values, size guards, no ``exec``) and emits one
assert per executed ``assert``, with every bound name replaced by its value:
``assert add(3, 4) == 7``. Random inputs come from a generator seeded with :data:`SEED` (fixed,
so every candidate and every run gets the same tests; HumanEval draws new ones each run; a
check's own ``random.Random(42)`` keeps its seed).

Values a check computes with a helper of the prompt (HumanEval/38's ``encode_cyclic(s)``, /50's
``encode_shift(s)``) come from the prompt's definitions (``trusted_helpers``), never the
program's. A candidate call bound to a name (HumanEval/32's ``solution = candidate(coeffs)``)
stays a call: the asserts that use the name get the call in its place
(``assert math.fabs(poly([...], find_zero([...]))) < 0.0001``), and the judge evaluates ``poly``
with the prompt's definition too. A body with anything else (an unknown function, a candidate
value used outside an assert, a ``while``) is not unrolled: ``None``.
"""
from __future__ import annotations

import ast
import copy
import functools
import math
from typing import Any, Mapping

from lever_jax.execution.judge import _is_safe_callee, plan_test
from lever_jax.execution.trusted_eval import (Budget, Evaluator, Module, TrustedFunction, Unsupported, check_modules,
                                              trusted_helpers)

SEED = 0
MAX_ASSERTS = 2_000  # most asserts one check may unroll into


class _Deferred:
    """The value of a candidate call bound to a name: only its call expression is known here."""

    def __init__(self, call: ast.Call):
        self.call = call


class _Unroller(Evaluator):
    def __init__(self, param: str, entry_point: str, helpers: Mapping[str, TrustedFunction]):
        super().__init__({}, helpers, Budget())
        self.param = param
        self.entry_point = entry_point
        self.modules = check_modules(SEED)
        self.asserts: list[str] = []

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Name):
            return  # a bare `print`
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and self.is_candidate_call(stmt.value):
            target = stmt.targets[0]
            if not isinstance(target, ast.Name) or target.id == self.param:
                raise Unsupported("a candidate call bound to a pattern")
            self.env[target.id] = _Deferred(self.candidate_call(stmt.value))
            return
        super().statement(stmt)

    def other(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Assert):
            if any(isinstance(n, ast.Name) and (n.id == self.param or isinstance(self.env.get(n.id), _Deferred))
                   for n in ast.walk(stmt.test)):
                self.emit(stmt.test)
            return
        if isinstance(stmt, ast.Import) and all(a.name in self.modules and not a.asname for a in stmt.names):
            self.env.update({a.name: self.modules[a.name] for a in stmt.names})
            return
        if isinstance(stmt, ast.ImportFrom) and stmt.module in self.modules and stmt.level == 0:
            members = self.modules[stmt.module].members
            for alias in stmt.names:
                if alias.name not in members:
                    raise Unsupported(f"from {stmt.module} import {alias.name}")
                self.env[alias.asname or alias.name] = members[alias.name]
            return
        raise Unsupported(type(stmt).__name__)

    def bind(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name) and target.id == self.param:
            raise Unsupported("assignment to the candidate")
        super().bind(target, value)

    def name(self, name: str) -> Any:
        found = super().name(name)
        if isinstance(found, _Deferred):
            raise Unsupported("a candidate's value used outside an assert")
        return found

    def is_candidate_call(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == self.param

    def candidate_call(self, node: ast.Call) -> ast.Call:
        """``node`` calling the entry point, each argument that calls or reads an attribute
        (``copy.deepcopy(coeffs)``) evaluated here to a literal, the others substituted."""
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise Unsupported("star arguments")

        def arg(expr: ast.expr) -> ast.expr:
            if any(isinstance(n, (ast.Call, ast.Attribute)) for n in ast.walk(expr)):
                return _literal(self.value(expr))
            return _Substitute(self).visit(_copy(expr))

        call = ast.Call(func=ast.Name(id=self.entry_point, ctx=ast.Load()), args=[arg(a) for a in node.args],
                        keywords=[ast.keyword(arg=k.arg, value=arg(k.value)) for k in node.keywords])
        return ast.fix_missing_locations(call)

    def emit(self, test: ast.expr) -> None:
        if len(self.asserts) >= MAX_ASSERTS:
            raise Unsupported("too many asserts")
        self.asserts.append(ast.unparse(ast.Assert(test=_Substitute(self).visit(_copy(test)), msg=None)))


class _Substitute(ast.NodeTransformer):
    """Bound names -> their values as literals (a bound candidate call -> the call); candidate
    calls -> calls of the entry point."""

    def __init__(self, unroller: _Unroller):
        self.u = unroller

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if self.u.is_candidate_call(node):
            return ast.copy_location(self.u.candidate_call(node), node)
        if not _is_safe_callee(node.func, tuple(self.u.helpers)):  # the judge would send it to the program
            raise Unsupported(f"a call of {ast.unparse(node.func)} in an assert")
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == self.u.param:
            raise Unsupported("the candidate used other than by a call")
        value = self.u.env.get(node.id, node)
        if value is node or isinstance(value, Module):
            return node  # `math.isclose(...)` stays for the judge, as do helper names (`poly`)
        if isinstance(value, _Deferred):
            return ast.copy_location(_copy(value.call), node)
        return ast.copy_location(_literal(value), node)


def _literal(value: Any) -> ast.expr:
    """``value`` as a literal expression (plain data only)."""
    if type(value) in (int, str, bool, bytes) or value is None or (type(value) is float and math.isfinite(value)):
        return ast.Constant(value)
    if type(value) in (list, tuple):
        elts = [_literal(v) for v in value]
        return ast.List(elts=elts, ctx=ast.Load()) if type(value) is list else ast.Tuple(elts=elts, ctx=ast.Load())
    raise Unsupported(f"a {type(value).__name__} is not a literal")


def _copy(node: ast.expr) -> ast.expr:
    return ast.parse(ast.unparse(node), mode="eval").body


def unroll_check(check: ast.FunctionDef, param: str, entry_point: str,
                 helpers: Mapping[str, TrustedFunction] | None = None) -> list[str] | None:
    """The asserts ``check``'s body executes, as plain statements (see the module doc); None when
    the body holds something else. ``helpers``: the prompt's functions (``trusted_helpers``)."""
    unroller = _Unroller(param, entry_point, helpers or {})
    try:
        unroller.run(check.body)
    except (Unsupported, ArithmeticError, TypeError, ValueError, IndexError, KeyError, RecursionError):
        return None
    return unroller.asserts or None


# -- HumanEval's check(candidate) as asserts ------------------------------------------------------
class _Rename(ast.NodeTransformer):
    def __init__(self, old: str, new: str):
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.copy_location(ast.Name(id=self.new, ctx=node.ctx), node) if node.id == self.old else node


def humaneval_tests(test_source: str, entry_point: str, prompt: str = "") -> list[str]:
    """Asserts of ``check(candidate)`` with ``candidate`` -> entry point, unrolled when the function
    holds anything else than asserts (trusted helpers: the functions of ``prompt`` and of the test
    module); [``check(...)`` call] when it cannot be."""
    return list(_humaneval_tests(test_source, entry_point, prompt))


@functools.lru_cache(maxsize=512)
def _humaneval_tests(test_source: str, entry_point: str, prompt: str) -> tuple[str, ...]:
    tree = ast.parse(test_source)
    checks = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if len(checks) != 1:
        return (f"check({entry_point})",)
    check = checks[0]
    param = check.args.args[0].arg if check.args.args else "candidate"
    asserts = []
    for stmt in check.body:
        if isinstance(stmt, ast.Assert):
            mentions = any(isinstance(n, ast.Name) and n.id == param for n in ast.walk(stmt))
            if mentions:
                asserts.append(ast.unparse(_Rename(param, entry_point).visit(copy.deepcopy(stmt))))
        elif isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            continue
        else:
            return _unrolled(check, param, entry_point, trusted_helpers(prompt, entry_point, test_source))
    return tuple(asserts) or (f"check({entry_point})",)


def _unrolled(check: ast.FunctionDef, param: str, entry_point: str,
              helpers: Mapping[str, TrustedFunction]) -> tuple[str, ...]:
    """A check with loops / variables / random inputs / the dataset's helpers as plain asserts when
    every one splits (``check_unroll``), else the whole ``check(...)`` call (run in the child)."""
    asserts = unroll_check(check, param, entry_point, helpers)
    if asserts and not any(plan_test(a, tuple(helpers)).legacy for a in asserts):
        return tuple(asserts)
    return (f"check({entry_point})",)


def without_check(test_source: str) -> str:
    """The HumanEval test module minus ``check`` (and ``METADATA``): the expected values stay here."""
    try:
        tree = ast.parse(test_source)
    except SyntaxError:
        return test_source

    def keep(node: ast.stmt) -> bool:
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            return False
        targets = node.targets if isinstance(node, ast.Assign) else []
        return not any(isinstance(t, ast.Name) and t.id == "METADATA" for t in targets)
    tree.body = [n for n in tree.body if keep(n)]
    return ast.unparse(tree)
