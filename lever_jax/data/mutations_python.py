"""Synthetic candidate pools for Python datasets: deterministic AST-level mutants of gold programs.

Where no real LLM pool exists (MBPP), mutants of the gold solution give labelled pools that
exercise the whole pipeline (execution decides which mutants are still correct). Every mutant is
marked ``source="synthetic:<mutation>"`` (the gold copy ``synthetic:gold``): results on these
pools must never be reported as real-LLM results.

Mutations (each a small, local edit spliced into the original text, so formatting and comments
are kept; every mutant parses and differs from the gold AST):

- ``binary_operator``: ``+ <-> -``, ``* -> /, //``, ``/ <-> //``, ``% -> //``, ``** -> *``, ...
- ``comparison``: ``< <-> <=``, ``> <-> >=``, ``== <-> !=``, ``< <-> >``, ``in <-> not in``, ``is <-> is not``
- ``boolean``: ``and <-> or``, dropping ``not``, ``True <-> False``
- ``constant``: integer / float literal +1 or -1
- ``off_by_one``: ``range(...)`` bounds, subscript indices and slice bounds +1 / -1
- ``swap_arguments``: the first two positional arguments of a call, or the operands of a
  non-commutative operator (``a - b -> b - a``)

Deterministic: the same program, problem id and seed give the same mutants in the same order.
"""
from __future__ import annotations

import ast
import dataclasses
import random
from typing import Iterable, Iterator

from lever_jax.data.schema import Candidate, Problem

MUTATIONS = ("binary_operator", "comparison", "boolean", "constant", "off_by_one", "swap_arguments")

_BINOP_SWAPS: dict[type, tuple[type, ...]] = {
    ast.Add: (ast.Sub,), ast.Sub: (ast.Add,), ast.Mult: (ast.FloorDiv, ast.Add), ast.Div: (ast.FloorDiv, ast.Mult),
    ast.FloorDiv: (ast.Div, ast.Mod), ast.Mod: (ast.FloorDiv,), ast.Pow: (ast.Mult,),
    ast.BitAnd: (ast.BitOr,), ast.BitOr: (ast.BitAnd,), ast.LShift: (ast.RShift,), ast.RShift: (ast.LShift,),
}
_CMP_SWAPS: dict[type, tuple[type, ...]] = {
    ast.Lt: (ast.LtE, ast.Gt), ast.LtE: (ast.Lt,), ast.Gt: (ast.GtE, ast.Lt), ast.GtE: (ast.Gt,),
    ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,), ast.In: (ast.NotIn,), ast.NotIn: (ast.In,),
    ast.Is: (ast.IsNot,), ast.IsNot: (ast.Is,),
}
_NON_COMMUTATIVE = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift)

Edit = tuple[int, int, str]  # (start byte, end byte, replacement text)


@dataclasses.dataclass(frozen=True)
class Site:
    """One possible mutation: its kind, a short description and the text edits that apply it."""

    kind: str
    description: str
    edits: tuple[Edit, ...]


class _Spans:
    """Byte offsets of AST node spans (col_offset is in UTF-8 bytes)."""

    def __init__(self, source: str):
        self.data = source.encode("utf-8")
        self.line_starts = [0]
        for line in self.data.splitlines(keepends=True):
            self.line_starts.append(self.line_starts[-1] + len(line))

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.line_starts[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]
        end = self.line_starts[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]
        return start, end

    def text(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.data[start:end].decode("utf-8")


def _paren(text: str) -> str:
    return f"({text})"


def _docstring_nodes(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = getattr(node, "body", [])
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def mutation_sites(source: str) -> list[Site]:
    """Every mutation applicable to ``source`` (deterministic order: ``ast.walk`` order)."""
    tree = ast.parse(source)
    spans = _Spans(source)
    docstrings = _docstring_nodes(tree)
    sites: list[Site] = []

    def replace(node: ast.AST, new_node: ast.AST, kind: str, what: str, wrap: bool = True) -> None:
        text = ast.unparse(new_node)
        start, end = spans.span(node)
        sites.append(Site(kind, what, ((start, end, _paren(text) if wrap else text),)))

    def shift(node: ast.expr, delta: int, kind: str, what: str) -> None:
        start, end = spans.span(node)
        text = spans.text(node)
        sites.append(Site(kind, what, ((start, end, f"({text}) {'+' if delta > 0 else '-'} 1"),)))

    for node in ast.walk(tree):
        if not hasattr(node, "lineno"):
            continue
        if isinstance(node, ast.BinOp):
            for new_op in _BINOP_SWAPS.get(type(node.op), ()):
                replace(node, ast.BinOp(node.left, new_op(), node.right), "binary_operator",
                        f"{type(node.op).__name__} -> {new_op.__name__}")
            if isinstance(node.op, _NON_COMMUTATIVE):
                replace(node, ast.BinOp(node.right, node.op, node.left), "swap_arguments", "swap operands")
        elif isinstance(node, ast.Compare) and len(node.ops) == 1:
            for new_op in _CMP_SWAPS.get(type(node.ops[0]), ()):
                replace(node, ast.Compare(node.left, [new_op()], node.comparators), "comparison",
                        f"{type(node.ops[0]).__name__} -> {new_op.__name__}")
        elif isinstance(node, ast.BoolOp):
            other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            replace(node, ast.BoolOp(other, node.values), "boolean", f"{type(node.op).__name__} -> {type(other).__name__}")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            replace(node, node.operand, "boolean", "drop not")
        elif isinstance(node, ast.Constant) and id(node) not in docstrings:
            if isinstance(node.value, bool):
                replace(node, ast.Constant(not node.value), "boolean", f"{node.value} -> {not node.value}", wrap=False)
            elif isinstance(node.value, (int, float)):
                for delta in (1, -1):
                    value = node.value + delta
                    replace(node, ast.Constant(value), "constant", f"{node.value!r} -> {value!r}", wrap=value < 0)
        elif isinstance(node, ast.Call):
            positional = [a for a in node.args if not isinstance(a, ast.Starred)]
            if isinstance(node.func, ast.Name) and node.func.id == "range" and node.args:
                bound = node.args[min(len(node.args), 2) - 1]  # stop (or the only argument)
                for delta in (1, -1):
                    shift(bound, delta, "off_by_one", f"range bound {delta:+d}")
            if len(positional) >= 2 and positional[0] is node.args[0] and positional[1] is node.args[1]:
                a, b = node.args[0], node.args[1]
                (sa, ea), (sb, eb) = spans.span(a), spans.span(b)
                if spans.text(a) != spans.text(b):
                    sites.append(Site("swap_arguments", "swap first two arguments",
                                      ((sb, eb, spans.text(a)), (sa, ea, spans.text(b)))))
        elif isinstance(node, ast.Subscript):
            index = node.slice
            if isinstance(index, ast.Slice):
                for bound in (index.lower, index.upper):
                    if bound is not None:
                        for delta in (1, -1):
                            shift(bound, delta, "off_by_one", f"slice bound {delta:+d}")
            elif not isinstance(index, (ast.Tuple, ast.Constant)) or (
                    isinstance(index, ast.Constant) and isinstance(index.value, int) and not isinstance(index.value, bool)):
                if isinstance(index, ast.Constant):
                    continue  # integer literal indices are already covered by ``constant``
                for delta in (1, -1):
                    shift(index, delta, "off_by_one", f"index {delta:+d}")
    return sites


def apply_site(source: str, site: Site) -> str:
    data = source.encode("utf-8")
    for start, end, text in sorted(site.edits, reverse=True):
        data = data[:start] + text.encode("utf-8") + data[end:]
    return data.decode("utf-8")


def mutants(source: str, n: int, seed: int | str = 0, kinds: Iterable[str] = MUTATIONS) -> list[tuple[str, str]]:
    """Up to ``n`` distinct ``(kind, program)`` mutants of ``source``, deterministic in ``seed``.

    Kinds are drawn round-robin (in a seeded order) so that every applicable kind appears before
    any repeats; mutants that fail to parse or equal the original AST are skipped.
    """
    kinds = tuple(kinds)
    unknown = set(kinds) - set(MUTATIONS)
    if unknown:
        raise ValueError(f"unknown mutation kinds {sorted(unknown)}; known: {', '.join(MUTATIONS)}")
    try:
        original = ast.dump(ast.parse(source))
        sites = mutation_sites(source)
    except (SyntaxError, ValueError):
        return []
    rng = random.Random(f"{seed}")
    by_kind: dict[str, list[Site]] = {k: [] for k in kinds}
    for site in sites:
        if site.kind in by_kind:
            by_kind[site.kind].append(site)
    for group in by_kind.values():
        rng.shuffle(group)
    order = [k for k in kinds if by_kind[k]]
    rng.shuffle(order)
    out: list[tuple[str, str]] = []
    seen = {original}
    while len(out) < n and any(by_kind[k] for k in order):
        for kind in order:
            if len(out) >= n or not by_kind[kind]:
                continue
            program = apply_site(source, by_kind[kind].pop())
            try:
                dumped = ast.dump(ast.parse(program))
            except SyntaxError:
                continue
            if dumped in seen:
                continue
            seen.add(dumped)
            out.append((kind, program))
    return out


def synthetic_problem(problem: Problem, n: int = 8, seed: int = 0, include_gold: bool = True) -> Problem:
    """``problem`` with candidates = (gold copy +) up to ``n`` mutants of its gold program."""
    gold = problem.gold if isinstance(problem.gold, str) else None
    candidates: list[Candidate] = []
    if gold is not None:
        if include_gold:
            candidates.append(Candidate(program=gold, source="synthetic:gold"))
        for kind, program in mutants(gold, n, seed=f"{seed}:{problem.problem_id}"):
            candidates.append(Candidate(program=program, source=f"synthetic:{kind}"))
    return problem.replace(candidates=tuple(candidates))


def synthetic_problems(problems: Iterable[Problem], n: int = 8, seed: int = 0,
                       include_gold: bool = True) -> Iterator[Problem]:
    for problem in problems:
        yield synthetic_problem(problem, n, seed, include_gold)
