"""The assert judge: splits each test into what the candidate must answer and what the judge checks.

``plan_test("assert add(1, 2) == 3")`` finds the *candidate calls* -- every outermost call of a
function that is not one of the judge's own pure helpers (``abs``, ``set``, ``sorted``,
``math.isclose``, ...) -- and replaces each by a placeholder: the sandbox child evaluates only
``add(1, 2)`` (it never sees ``3``) and returns the value as plain data
(:mod:`lever_jax.execution.plain`); :func:`judge` then evaluates ``__c0 == 3`` here, in the
parent, with a small interpreter over plain data (literals, containers, arithmetic with size
guards, comparisons, subscripts, the helper calls). So ``math.isclose(f(x), y, rel_tol=...)``,
``abs(f(x) - y) < tol``, ``set(f(x)) == {...}``, ``sorted(f(x)) == [...]``, ``not f(x)``,
``f(x)[0] == y`` are all judged here. No candidate code, no ``__eq__`` of a program-defined class
and nothing the candidate's process produced other than plain values takes part.

Trusted helpers: ``plan_test(source, helpers=("poly",))`` also lets the check call those names
(``math.fabs(poly([1, 2], find_zero([1, 2]))) < 1e-4``: ``poly`` runs here, ``find_zero`` in the
child); :func:`judge` gets the functions themselves -- the prompt's definitions evaluated by
:mod:`lever_jax.execution.trusted_eval`, never the program's (HumanEval/32).

A test that does not fit (a comprehension, a name defined by the setup code, a lambda, no
candidate call at all, not a single ``assert``) gets ``check=None``: it runs the old way, inside
the child, and its outcome is flagged as ``judge: "child"`` (forgeable) in the result record.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import math
import operator
from typing import Any, Callable, Mapping

PLACEHOLDER = "__lever_call_{}__"
SAFE_FUNCS: dict[str, Callable[..., Any]] = {
    "abs": abs, "round": round, "len": len, "set": set, "frozenset": frozenset, "sorted": sorted, "list": list,
    "tuple": tuple, "dict": dict, "float": float, "int": int, "str": str, "bool": bool, "bytes": bytes, "sum": sum,
    "min": min, "max": max, "all": all, "any": any, "isinstance": isinstance, "type": type,
}
MATH_FUNCS: dict[str, Callable[..., Any]] = {
    name: getattr(math, name) for name in ("isclose", "fabs", "sqrt", "floor", "ceil", "trunc", "isnan", "isinf",
                                           "isfinite", "log", "exp")
}
MATH_CONSTS = {name: getattr(math, name) for name in ("pi", "e", "inf", "nan", "tau")}
_MAX_SEQ = 10_000_000
_MAX_BITS = 1_000_000
_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift,
    ast.RShift: operator.rshift, ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
}
_CMPOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not, ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.Not: operator.not_, ast.USub: operator.neg, ast.UAdd: operator.pos,
                                            ast.Invert: operator.invert}


class Unsupported(ValueError):
    """The test does not split into candidate calls + a judge-side check."""


@dataclasses.dataclass(frozen=True)
class TestPlan:
    """One test: ``calls`` (sources the child evaluates) and the judge-side ``check`` (None: legacy);
    ``helpers``: the trusted helper functions the check may call."""

    source: str
    calls: tuple[str, ...]
    check: ast.expr | None
    helpers: tuple[str, ...] = ()

    @property
    def legacy(self) -> bool:
        return self.check is None


def _is_safe_callee(func: ast.expr, helpers: tuple[str, ...] = ()) -> bool:
    if isinstance(func, ast.Name):
        return func.id in SAFE_FUNCS or func.id in helpers
    return (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "math"
            and func.attr in MATH_FUNCS)


class _Splitter(ast.NodeTransformer):
    """Replace candidate calls by placeholders; reject any node the judge cannot evaluate."""

    ALLOWED = (ast.Constant, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.UnaryOp, ast.BinOp, ast.BoolOp,
               ast.Compare, ast.Subscript, ast.Slice, ast.Load, ast.keyword, ast.IfExp,
               *(_BINOPS), *(_CMPOPS), *(_UNARY), ast.And, ast.Or)

    def __init__(self, helpers: tuple[str, ...] = ()) -> None:
        self.calls: list[str] = []
        self.helpers = helpers

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if _is_safe_callee(node.func, self.helpers):
            if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
                raise Unsupported("star arguments")
            node.args = [self.visit(a) for a in node.args]
            node.keywords = [self.visit(k) for k in node.keywords]
            return node
        name = PLACEHOLDER.format(len(self.calls))
        self.calls.append(ast.unparse(node))
        return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in SAFE_FUNCS or node.id.startswith("__lever_call_"):
            return node
        raise Unsupported(f"name {node.id!r}")

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id == "math" and node.attr in MATH_CONSTS:
            return node
        raise Unsupported("attribute access")

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if not isinstance(node, self.ALLOWED):
            raise Unsupported(type(node).__name__)
        return super().generic_visit(node)


@functools.lru_cache(maxsize=65536)
def plan_test(source: str, helpers: tuple[str, ...] = ()) -> TestPlan:
    """Split one test statement (see the module doc), ``helpers`` being names of trusted functions
    the check may call; never raises."""
    helpers = tuple(h for h in helpers if h not in SAFE_FUNCS and not h.startswith("__"))
    try:
        tree = ast.parse(source.strip())
    except SyntaxError:
        return TestPlan(source, (), None)
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
        return TestPlan(source, (), None)
    splitter = _Splitter(helpers)
    try:
        check = splitter.visit(tree.body[0].test)
    except (Unsupported, RecursionError):
        return TestPlan(source, (), None)
    if not splitter.calls:  # nothing for the candidate to answer: e.g. the function under test is named `sum`
        return TestPlan(source, (), None)
    used = tuple(sorted({n.func.id for n in ast.walk(check) if isinstance(n, ast.Call)
                         and isinstance(n.func, ast.Name) and n.func.id in helpers}))
    return TestPlan(source, tuple(splitter.calls), check, used)


def judge(plan: TestPlan, values: list[Any], helpers: Mapping[str, Callable[..., Any]] | None = None) -> bool:
    """Evaluate the check with the candidate's (decoded, plain) answers and the trusted ``helpers``
    the plan names; any error (a helper missing included) is a failure."""
    assert plan.check is not None
    env: dict[str, Any] = {name: (helpers or {})[name] for name in plan.helpers if name in (helpers or {})}
    env.update({PLACEHOLDER.format(i): v for i, v in enumerate(values)})
    try:
        return bool(_eval(plan.check, env))
    except Exception:  # noqa: BLE001 - a failed check (TypeError on a wrong type, ZeroDivisionError, ...)
        return False


def _eval(node: ast.AST, env: dict[str, Any]) -> Any:  # noqa: C901 - one case per node type
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env[node.id] if node.id in env else SAFE_FUNCS[node.id]
    if isinstance(node, ast.Attribute):
        return MATH_CONSTS[node.attr]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = [_eval(e, env) for e in node.elts]
        return {ast.Tuple: tuple, ast.List: list, ast.Set: set}[type(node)](items)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise Unsupported("dict unpacking")
        return {_eval(k, env): _eval(v, env) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, env))
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, env), _eval(node.right, env)
        _guard(node.op, left, right)
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.BoolOp):
        value: Any = None
        for operand in node.values:
            value = _eval(operand, env)
            if isinstance(node.op, ast.And) != bool(value):
                return value
        return value
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env)
        for op, comparator in zip(node.ops, node.comparators):
            right = _eval(comparator, env)
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body, env) if _eval(node.test, env) else _eval(node.orelse, env)
    if isinstance(node, ast.Subscript):
        return _eval(node.value, env)[_eval(node.slice, env)]
    if isinstance(node, ast.Slice):
        return slice(*(None if p is None else _eval(p, env) for p in (node.lower, node.upper, node.step)))
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name):  # a trusted helper (in env only when the plan names it) or a builtin
            func = env[node.func.id] if node.func.id in env else SAFE_FUNCS[node.func.id]
        else:
            func = MATH_FUNCS[node.func.attr]
        args = [_eval(a, env) for a in node.args]
        kwargs = {k.arg: _eval(k.value, env) for k in node.keywords}
        if func is sorted and "key" in kwargs:
            raise Unsupported("sorted(key=...)")
        return func(*args, **kwargs)
    raise Unsupported(type(node).__name__)


def _guard(op: ast.operator, left: Any, right: Any) -> None:
    """Refuse arithmetic whose result would be huge (the judge runs in the parent)."""
    ints = type(left) is int and type(right) is int
    if isinstance(op, ast.Pow) and ints and right > 0 and abs(left) > 1 and left.bit_length() * right > _MAX_BITS:
        raise OverflowError("power too large for the judge")
    if isinstance(op, ast.LShift) and ints and right > _MAX_BITS:
        raise OverflowError("shift too large for the judge")
    if isinstance(op, ast.Mult):
        for seq, n in ((left, right), (right, left)):
            if isinstance(seq, (str, bytes, list, tuple)) and type(n) is int and len(seq) * n > _MAX_SEQ:
                raise OverflowError("repetition too large for the judge")
