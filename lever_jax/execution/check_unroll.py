"""Unroll a HumanEval ``check(candidate)`` body into plain asserts the judge can split.

Most HumanEval checks are a list of asserts; a few mix in loops, helper variables, a bare
``print`` or random inputs (``for x in range(2, 8): assert candidate(x, x + 1) == str(x)``,
``lst = list(range(-99, 100, 2))``, ``x, y = random.randint(0, 1000), ...``). Run as one
``check(...)`` in the child, their verdict could be forged by the program. :func:`unroll_check`
evaluates such a body *here*, statically, with a small evaluator over plain values (literals,
containers, arithmetic under the judge's size guards, ``range``/``list``/``sum``/... and one-loop
list comprehensions, no attribute access but ``random.<fn>``) and emits one assert per executed
``assert``, with every bound name replaced by its value: ``assert add(3, 4) == 7``. Random inputs
come from a generator seeded with :data:`SEED` (fixed, so every candidate and every run gets the
same tests; HumanEval draws new ones each run). A body with anything else (a call of a helper
function, a candidate call outside an assert, a ``while``) is not unrolled: ``None``.
"""
from __future__ import annotations

import ast
import math
import random
from typing import Any, Callable

from lever_jax.execution.judge import _BINOPS, _CMPOPS, _UNARY, _guard

SEED = 0
MAX_ITEMS = 10_000  # longest range / comprehension unrolled
MAX_STEPS = 100_000  # loop and comprehension iterations per check, all together
MAX_ASSERTS = 2_000  # most asserts one check may unroll into


class Unsupported(ValueError):
    """The body holds something the unroller does not evaluate."""


def _bounded_range(*args: int) -> list[int]:
    values = range(*args)
    if len(values) > MAX_ITEMS:
        raise Unsupported("range too long")
    return list(values)


_PURE: dict[str, Callable[..., Any]] = {
    "range": _bounded_range, "list": list, "tuple": tuple, "sum": sum, "len": len, "str": str, "int": int,
    "float": float, "abs": abs, "min": min, "max": max, "sorted": sorted, "bool": bool, "round": round,
}


class _Unroller:
    def __init__(self, param: str, entry_point: str):
        self.param = param
        self.entry_point = entry_point
        rng = random.Random(SEED)
        self.modules = {"random": {"randint": rng.randint, "choice": rng.choice, "random": rng.random},
                        "math": {name: getattr(math, name) for name in ("sqrt", "floor", "ceil", "fabs")}}
        self.env: dict[str, Any] = {}
        self.asserts: list[str] = []
        self.steps = 0

    def run(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.statement(stmt)

    def statement(self, stmt: ast.stmt) -> None:  # noqa: C901 - one case per statement type
        if isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr)
                                          and isinstance(stmt.value, (ast.Constant, ast.Name))):
            return  # docstrings, a bare `print`
        if isinstance(stmt, ast.Assert):
            if any(isinstance(n, ast.Name) and n.id == self.param for n in ast.walk(stmt.test)):
                self.emit(stmt.test)
            return
        if isinstance(stmt, ast.Import) and all(a.name in self.modules and not a.asname for a in stmt.names):
            self.env.update({a.name: self.modules[a.name] for a in stmt.names})
            return
        if isinstance(stmt, ast.ImportFrom) and stmt.module in self.modules and stmt.level == 0:
            for alias in stmt.names:
                if alias.name not in self.modules[stmt.module]:
                    raise Unsupported(f"from {stmt.module} import {alias.name}")
                self.env[alias.asname or alias.name] = self.modules[stmt.module][alias.name]
            return
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            self.bind(stmt.targets[0], self.value(stmt.value))
            return
        if isinstance(stmt, ast.For) and not stmt.orelse:
            for item in self.items(stmt.iter):
                self.bind(stmt.target, item)
                self.run(stmt.body)
            return
        raise Unsupported(type(stmt).__name__)

    def bind(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name) and target.id != self.param:
            self.env[target.id] = value
        elif isinstance(target, ast.Tuple) and type(value) in (tuple, list) and len(target.elts) == len(value):
            for t, v in zip(target.elts, value):
                self.bind(t, v)
        else:
            raise Unsupported("assignment target")

    def emit(self, test: ast.expr) -> None:
        if len(self.asserts) >= MAX_ASSERTS:
            raise Unsupported("too many asserts")
        self.asserts.append(ast.unparse(ast.Assert(test=_Substitute(self).visit(_copy(test)), msg=None)))

    def items(self, node: ast.expr) -> list[Any]:
        values = self.value(node)
        if type(values) not in (list, tuple, str) or len(values) > MAX_ITEMS:
            raise Unsupported("loop over a non-sequence")
        self.steps += len(values)
        if self.steps > MAX_STEPS:
            raise Unsupported("too many iterations")
        return list(values)

    def value(self, node: ast.expr) -> Any:  # noqa: C901 - one case per node type
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.env:
                return self.env[node.id]
            if node.id in _PURE:
                return _PURE[node.id]
            raise Unsupported(f"name {node.id!r}")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            module = self.env.get(node.value.id)
            if isinstance(module, dict) and node.attr in module:
                return module[node.attr]
            raise Unsupported("attribute")
        if isinstance(node, (ast.Tuple, ast.List)):
            items = [self.value(e) for e in node.elts]
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](self.value(node.operand))
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            left, right = self.value(node.left), self.value(node.right)
            _guard(node.op, left, right)
            return _BINOPS[type(node.op)](left, right)
        if isinstance(node, ast.BoolOp):
            result: Any = None
            for operand in node.values:
                result = self.value(operand)
                if isinstance(node.op, ast.And) != bool(result):
                    return result
            return result
        if isinstance(node, ast.Compare) and all(type(op) in _CMPOPS for op in node.ops):
            left = self.value(node.left)
            for op, comparator in zip(node.ops, node.comparators):
                right = self.value(comparator)
                if not _CMPOPS[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.Call) and not node.keywords:
            func = self.value(node.func)
            if not callable(func):
                raise Unsupported("call")
            return func(*[self.value(a) for a in node.args])
        if isinstance(node, ast.ListComp) and len(node.generators) == 1:
            return self.comprehension(node)
        raise Unsupported(type(node).__name__)

    def comprehension(self, node: ast.ListComp) -> list[Any]:
        gen = node.generators[0]
        if gen.is_async or not isinstance(gen.target, ast.Name):
            raise Unsupported("comprehension")
        saved = dict(self.env)
        out = []
        try:
            for item in self.items(gen.iter):
                self.env[gen.target.id] = item
                if all(self.value(cond) for cond in gen.ifs):
                    out.append(self.value(node.elt))
        finally:
            self.env = saved
        return out


class _Substitute(ast.NodeTransformer):
    """Bound names -> their values as literals; the parameter -> the entry point."""

    def __init__(self, unroller: _Unroller):
        self.u = unroller

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == self.u.param:
            return ast.copy_location(ast.Name(id=self.u.entry_point, ctx=node.ctx), node)
        if node.id in self.u.env and self.u.env[node.id] is self.u.modules.get(node.id):
            return node  # `math.isclose(...)` stays for the judge
        if node.id in self.u.env:
            return ast.copy_location(_literal(self.u.env[node.id]), node)
        return node


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


def unroll_check(check: ast.FunctionDef, param: str, entry_point: str) -> list[str] | None:
    """The asserts ``check``'s body executes, as plain statements (see the module doc); None when
    the body holds something else."""
    unroller = _Unroller(param, entry_point)
    try:
        unroller.run(check.body)
    except (Unsupported, ArithmeticError, TypeError, ValueError, IndexError, KeyError, RecursionError):
        return None
    return unroller.asserts or None
