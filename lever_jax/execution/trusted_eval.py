"""A small evaluator over plain values for dataset code the judge runs itself, in the parent.

Two kinds of dataset code need evaluating outside the candidate's process: the body of a HumanEval
``check`` (:mod:`lever_jax.execution.check_unroll` turns it into plain asserts) and the prompt's
helper functions a check relies on (HumanEval/32's ``poly``, /38's ``encode_cyclic``, /50's
``encode_shift``). The program under test defines its own copies of those helpers and may change
them (``def poly(xs, x): return 0``); the judge uses :func:`trusted_helpers`, the *prompt's*
definitions (or the test module's), evaluated here by :class:`Evaluator` -- never ``exec``.

The evaluator knows literals, containers, arithmetic under the judge's size guards, comparisons,
subscripts and slices, conditional expressions, one-generator list comprehensions and generator
expressions, a few pure builtins (``range``, ``len``, ``enumerate``, ``chr``, ``ord``, ...),
``str.join``, ``list.append``, whitelisted members of ``math`` / ``random`` / ``string`` / ``copy``,
and statements ``=``, ``if``, ``for`` (bounded), ``return``. Anything else raises
:class:`Unsupported`; loops, comprehensions and nested helper calls share one step budget.
"""
from __future__ import annotations

import ast
import copy
import functools
import math
import random
import string
import types
from typing import Any, Callable, Mapping

from lever_jax.execution.judge import _BINOPS, _CMPOPS, _UNARY, _guard

MAX_ITEMS = 10_000  # longest sequence a loop or comprehension walks
MAX_STEPS = 100_000  # loop and comprehension iterations per evaluation, nested helper calls included
MAX_DEPTH = 16  # nested helper calls


class Unsupported(ValueError):
    """The code holds something the evaluator does not evaluate (or it ran out of budget)."""


class Module:
    """A whitelisted module (or seeded generator): only ``members`` are reachable."""

    def __init__(self, members: Mapping[str, Any]):
        self.members = dict(members)


def _bounded_range(*args: int) -> list[int]:
    if not all(type(a) is int for a in args):
        raise Unsupported("range of a non-int")
    values = range(*args)
    if len(values) > MAX_ITEMS:
        raise Unsupported("range too long")
    return list(values)


def _bounded_enumerate(values: Any, start: int = 0) -> list[tuple[int, Any]]:
    if type(values) not in (list, tuple, str) or len(values) > MAX_ITEMS or type(start) is not int:
        raise Unsupported("enumerate of a non-sequence")
    return list(enumerate(values, start))


PURE: dict[str, Callable[..., Any]] = {
    "range": _bounded_range, "list": list, "tuple": tuple, "sum": sum, "len": len, "str": str, "int": int,
    "float": float, "abs": abs, "min": min, "max": max, "sorted": sorted, "bool": bool, "round": round,
    "enumerate": _bounded_enumerate, "chr": chr, "ord": ord,
}
MATH = Module({name: getattr(math, name) for name in ("sqrt", "floor", "ceil", "fabs", "pow", "isclose", "pi", "e")})
METHODS = {str: ("join",), list: ("append",)}  # the only attributes of values the evaluator reads


def _seeded(seed: Any) -> Module:
    """``random.Random(seed)`` as a module of its drawing functions (int seeds only)."""
    if type(seed) is not int:
        raise Unsupported("random.Random with a non-int seed")
    rng = random.Random(seed)
    return Module({"randint": rng.randint, "choice": rng.choice, "random": rng.random})


def check_modules(seed: int) -> dict[str, Module]:
    """The modules a check body may import; ``random``'s functions draw from a generator seeded ``seed``."""
    rng = random.Random(seed)
    return {"random": Module({"randint": rng.randint, "choice": rng.choice, "random": rng.random, "Random": _seeded}),
            "math": MATH, "copy": Module({"deepcopy": copy.deepcopy}),
            "string": Module({name: getattr(string, name) for name in
                              ("ascii_lowercase", "ascii_uppercase", "ascii_letters", "digits")})}


class Budget:
    """Steps and call depth shared by one evaluation and the helper calls it makes."""

    def __init__(self) -> None:
        self.steps = 0
        self.depth = 0

    def spend(self, n: int) -> None:
        self.steps += n
        if self.steps > MAX_STEPS:
            raise Unsupported("too many iterations")


class Return(Exception):
    """A ``return`` statement of a helper (carries the value)."""

    def __init__(self, value: Any):
        super().__init__()
        self.value = value


class Evaluator:
    """Evaluates expressions and simple statements over ``env`` (see the module doc)."""

    def __init__(self, env: dict[str, Any], helpers: Mapping[str, "TrustedFunction"], budget: Budget):
        self.env = env
        self.helpers = helpers
        self.budget = budget

    # -- statements -------------------------------------------------------------------------------
    def run(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.statement(stmt)

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            return  # docstrings
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            self.value(stmt.value)  # lst.append(x)
            return
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            self.bind(stmt.targets[0], self.value(stmt.value))
            return
        if isinstance(stmt, ast.If):
            self.run(stmt.body if self.value(stmt.test) else stmt.orelse)
            return
        if isinstance(stmt, ast.For) and not stmt.orelse:
            for item in self.items(stmt.iter):
                self.bind(stmt.target, item)
                self.run(stmt.body)
            return
        self.other(stmt)

    def other(self, stmt: ast.stmt) -> None:
        """A statement the base evaluator does not know (subclasses add some)."""
        raise Unsupported(type(stmt).__name__)

    def bind(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = value
        elif isinstance(target, ast.Tuple) and type(value) in (tuple, list) and len(target.elts) == len(value):
            for t, v in zip(target.elts, value):
                self.bind(t, v)
        else:
            raise Unsupported("assignment target")

    def items(self, node: ast.expr) -> list[Any]:
        values = self.value(node)
        if type(values) not in (list, tuple, str) or len(values) > MAX_ITEMS:
            raise Unsupported("loop over a non-sequence")
        self.budget.spend(len(values))
        return list(values)

    # -- expressions ------------------------------------------------------------------------------
    def name(self, name: str) -> Any:
        if name in self.env:
            return self.env[name]
        if name in self.helpers:  # a trusted helper shares this evaluation's budget
            return self.helpers[name].bound(self.budget)
        if name in PURE:
            return PURE[name]
        raise Unsupported(f"name {name!r}")

    def value(self, node: ast.expr) -> Any:  # noqa: C901 - one case per node type
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.name(node.id)
        if isinstance(node, ast.Attribute):
            return self.attribute(self.value(node.value), node.attr)
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
        if isinstance(node, ast.IfExp):
            return self.value(node.body) if self.value(node.test) else self.value(node.orelse)
        if isinstance(node, ast.Subscript):
            return self.value(node.value)[self.value(node.slice)]
        if isinstance(node, ast.Slice):
            return slice(*(None if p is None else self.value(p) for p in (node.lower, node.upper, node.step)))
        if isinstance(node, ast.Call) and not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args):
            func = self.value(node.func)
            if not callable(func):
                raise Unsupported("call of a non-function")
            return func(*[self.value(a) for a in node.args])
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)) and len(node.generators) == 1:
            return self.comprehension(node)
        raise Unsupported(type(node).__name__)

    def attribute(self, base: Any, attr: str) -> Any:
        if isinstance(base, Module) and attr in base.members:
            return base.members[attr]
        if attr in METHODS.get(type(base), ()):
            return getattr(base, attr)
        raise Unsupported(f"attribute {attr!r}")

    def comprehension(self, node: ast.ListComp | ast.GeneratorExp) -> list[Any]:
        gen = node.generators[0]
        if gen.is_async:
            raise Unsupported("async comprehension")
        saved = dict(self.env)
        out = []
        try:
            for item in self.items(gen.iter):
                self.bind(gen.target, item)
                if all(self.value(cond) for cond in gen.ifs):
                    out.append(self.value(node.elt))
        finally:
            self.env = saved
        return out


class TrustedFunction:
    """A helper function of the prompt, evaluated by :class:`Evaluator` (positional arguments only)."""

    def __init__(self, node: ast.FunctionDef, helpers: Mapping[str, "TrustedFunction"]):
        self.node = node
        self.params = [a.arg for a in node.args.args]
        self.helpers = helpers  # the other trusted helpers of the same prompt (looked up at call time)

    def __call__(self, *args: Any) -> Any:
        return self.invoke(args, Budget())

    def bound(self, budget: Budget) -> Callable[..., Any]:
        """This function as called from inside another evaluation (sharing its budget)."""
        return lambda *args: self.invoke(args, budget)

    def invoke(self, args: tuple[Any, ...], budget: Budget) -> Any:
        if len(args) != len(self.params):
            raise TypeError(f"{self.node.name}() takes {len(self.params)} arguments")
        if budget.depth >= MAX_DEPTH:
            raise Unsupported("helper calls nested too deep")
        budget.depth += 1
        try:
            _HelperEvaluator(dict(zip(self.params, args)), self.helpers, budget).run(self.node.body)
        except Return as done:
            return done.value
        finally:
            budget.depth -= 1
        return None


class _HelperEvaluator(Evaluator):
    def name(self, name: str) -> Any:
        if name == "math" and name not in self.env:
            return MATH
        return super().name(name)

    def other(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Return):
            raise Return(None if stmt.value is None else self.value(stmt.value))
        raise Unsupported(type(stmt).__name__)


_ALLOWED_NODES = (
    ast.FunctionDef, ast.arguments, ast.arg, ast.Expr, ast.Constant, ast.Name, ast.Load, ast.Store, ast.Assign,
    ast.Return, ast.If, ast.For, ast.Pass, ast.Attribute, ast.Call, ast.Tuple, ast.List, ast.UnaryOp, ast.BinOp,
    ast.BoolOp, ast.Compare, ast.IfExp, ast.Subscript, ast.Slice, ast.ListComp, ast.GeneratorExp, ast.comprehension,
    ast.And, ast.Or, *_BINOPS, *_CMPOPS, *_UNARY,
)


def _evaluable(node: ast.FunctionDef, functions: set[str]) -> bool:
    """Whether every statement, name and attribute of ``node`` is one the evaluator knows (checked
    up front, so that a correct candidate never fails on a helper the judge cannot evaluate);
    ``functions``: the other helpers it may call."""
    args = node.args
    if node.decorator_list or args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.posonlyargs:
        return False
    body = [n for stmt in node.body for n in ast.walk(stmt)]
    if not all(isinstance(n, _ALLOWED_NODES) for n in body) or any(isinstance(n, ast.FunctionDef) for n in body):
        return False
    local = {n.id for n in body if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    known = {a.arg for a in args.args} | local | set(PURE) | functions | {"math"}
    methods = {m for names in METHODS.values() for m in names}
    for n in body:
        if isinstance(n, ast.Name) and n.id not in known:
            return False
        math_member = isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "math" \
            and n.attr in MATH.members
        if isinstance(n, ast.Attribute) and n.attr not in methods and not math_member:
            return False
    return True


@functools.lru_cache(maxsize=256)
def trusted_helpers(prompt: str, entry_point: str, test_source: str = "") -> Mapping[str, TrustedFunction]:
    """``{name: function}`` for the top-level functions of the prompt and of the test module
    (``test_source``, minus ``check``; its definitions win, as when HumanEval appends it to the
    program) other than ``entry_point`` that the evaluator can run (none from a source that does
    not parse)."""
    functions: dict[str, ast.FunctionDef] = {}
    for source in (prompt, test_source):
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return types.MappingProxyType({})
        functions.update({n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name != "check"})
    functions = {name: node for name, node in functions.items()
                 if name != entry_point and name not in PURE and not name.startswith("__")}
    while True:  # drop helpers that call one the evaluator cannot run, until none does
        keep = {name for name, node in functions.items() if _evaluable(node, set(functions))}
        if keep == set(functions):
            break
        functions = {name: node for name, node in functions.items() if name in keep}
    helpers: dict[str, TrustedFunction] = {}
    helpers.update({name: TrustedFunction(node, helpers) for name, node in functions.items()})
    return types.MappingProxyType(helpers)
