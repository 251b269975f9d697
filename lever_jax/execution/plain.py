"""Plain data across the sandbox boundary: what a candidate's answer may be.

A candidate's return value crosses from the child to the judge (the parent) only as *plain data*:
None, bool, int, float, complex, str, bytes and list / tuple / dict / set / frozenset of those. The child
encodes with exact type checks (``type(v) is int``, never ``isinstance``: an ``int`` subclass with
an always-true ``__eq__`` is not plain; ``Counter`` / ``OrderedDict`` / ``defaultdict`` travel as
the dict of their items); the parent decodes strictly and rebuilds genuine builtin
objects, so nothing the candidate defined (a class, an ``__eq__``, a ``__hash__``) reaches the
comparison. Whatever the child sends is at worst *an answer* -- a tampered encoder can only make
the candidate answer something else, never decide the verdict.

Wire form (JSON): None/bool/str as themselves; ``{"i": hex}``, ``{"f": repr}``, ``{"c": [re, im]}``, ``{"b": hex}``,
``{"l": [...]}``, ``{"t": [...]}``, ``{"s": [...]}``, ``{"z": [...]}`` (frozenset),
``{"d": [[k, v], ...]}``.
"""
from __future__ import annotations

import collections
from typing import Any

# Standard-library dict subclasses that compare equal to a dict with the same items: sent as a
# dict (their contents only; captured before any candidate code runs, matched by exact type).
DICT_LIKE = (collections.Counter, collections.OrderedDict, collections.defaultdict)
MAX_DEPTH = 64
MAX_ITEMS = 1_000_000


class NotPlain(ValueError):
    """The value (or the wire form) is not plain data."""


def encode(value: Any) -> Any:
    """Wire form of ``value``; raises :class:`NotPlain` for anything else (runs in the child)."""
    budget = [MAX_ITEMS]
    return _encode(value, 0, budget)


def _encode(value: Any, depth: int, budget: list[int]) -> Any:
    budget[0] -= 1
    if depth > MAX_DEPTH or budget[0] < 0:
        raise NotPlain("too deep or too large")
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:
        return {"i": format(value, "x")}
    if kind is float:
        return {"f": repr(value)}
    if kind is complex:
        return {"c": [repr(value.real), repr(value.imag)]}
    if kind is bytes:
        return {"b": bytes.hex(value)}
    if kind is list or kind is tuple or kind is set or kind is frozenset:
        tag = {list: "l", tuple: "t", set: "s", frozenset: "z"}[kind]
        return {tag: [_encode(v, depth + 1, budget) for v in value]}
    if kind is dict or kind in DICT_LIKE:
        return {"d": [[_encode(k, depth + 1, budget), _encode(v, depth + 1, budget)]
                      for k, v in dict.items(value)]}
    raise NotPlain(f"a {type_name(value)} is not plain data")


def decode(wire: Any) -> Any:
    """Rebuild the plain value from its wire form; raises :class:`NotPlain` (runs in the judge)."""
    return _decode(wire, 0)


def _decode(wire: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise NotPlain("too deep")
    if wire is None or type(wire) is bool or type(wire) is str:
        return wire
    if type(wire) is not dict or len(wire) != 1:
        raise NotPlain(f"bad wire form {type(wire).__name__}")
    ((tag, body),) = wire.items()
    try:
        if tag == "i" and type(body) is str:
            return int(body, 16)
        if tag == "f" and type(body) is str and len(body) < 40:
            return float(body)
        if tag == "c" and type(body) is list and len(body) == 2 and all(type(p) is str and len(p) < 40 for p in body):
            return complex(float(body[0]), float(body[1]))
        if tag == "b" and type(body) is str:
            return bytes.fromhex(body)
        if tag in ("l", "t", "s", "z") and type(body) is list:
            items = [_decode(v, depth + 1) for v in body]
            return {"l": list, "t": tuple, "s": set, "z": frozenset}[tag](items)
        if tag == "d" and type(body) is list:
            pairs = []
            for pair in body:
                if type(pair) is not list or len(pair) != 2:
                    raise NotPlain("bad dict item")
                pairs.append((_decode(pair[0], depth + 1), _decode(pair[1], depth + 1)))
            return dict(pairs)
    except (TypeError, ValueError) as err:  # unhashable set member / dict key, bad number
        raise NotPlain(f"bad wire form: {err}") from None
    raise NotPlain(f"bad wire tag {tag!r}")


def type_name(value: Any) -> str:
    # LEVER: str(type(v)) "<class 'numpy.int64'>" -> "numpy.int64"
    try:
        return str(type(value)).split(" ")[-1].replace("'", "").replace(">", "")
    except Exception:  # noqa: BLE001 - a hostile metaclass
        return "object"
