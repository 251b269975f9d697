"""Canonical, deterministic keys for execution results (used to group candidates).

``canonical_key(value)`` maps a Python value to a string such that equal results give equal keys,
in any process and any run (no ``hash()``, no memory addresses, sorted sets and dicts):

* floats are rounded to ``FLOAT_DECIMALS`` (6) decimal places -- LEVER groups GSM8k answers with a
  1e-6 tolerance; rounding to a 1e-6 grid is the deterministic (transitive) version of that.
  Integral floats print like ints (``3.0`` and ``3`` share a key, as ``3.0 == 3`` in Python),
  ``-0.0`` is ``0``, NaN is ``nan`` and infinities are ``inf`` / ``-inf``;
* bools, ``None``, ints and strings keep their type tag (``True`` != ``1`` != ``'1'``);
* lists, tuples, sets and dicts are tagged by type (a list and a tuple differ, as in LEVER's MBPP
  comparison of ``(type)=value``); sets and dict items are sorted by their keys;
* numpy / sympy scalars are converted to Python numbers, numpy arrays to tagged nested lists;
* any other object becomes ``<TypeName:repr>`` with memory addresses masked;
* a key longer than ``MAX_KEY_CHARS`` keeps its first characters plus the sha256 of the whole.
"""
from __future__ import annotations

import hashlib
import math
import re
from typing import Any

FLOAT_DECIMALS = 6
MAX_KEY_CHARS = 512
_PREFIX_CHARS = 200
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}")
ERROR_KEY_PREFIX = "!err:"


def canonical_float(value: float) -> str:
    """The documented float rounding: 1e-6 grid, integral values as ints, NaN/inf named."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    rounded = round(value, FLOAT_DECIMALS)
    if rounded == 0:
        return "0"
    if rounded.is_integer() and abs(rounded) < 2**63:
        return str(int(rounded))
    return repr(rounded)


def _numeric_scalar(value: Any) -> Any:
    """numpy / sympy / Decimal / Fraction numbers -> int or float (None when not numeric)."""
    module = type(value).__module__ or ""
    if module.startswith("numpy"):
        item = getattr(value, "item", None)
        if item is not None and getattr(value, "shape", None) == ():
            return item()
        return None
    if module.startswith("sympy"):
        try:
            if getattr(value, "is_Integer", False):
                return int(value)
            if getattr(value, "is_number", False) and getattr(value, "is_real", False):
                return float(value)
        except (TypeError, ValueError):
            return None
        return None
    if module in ("decimal", "fractions"):
        return float(value)
    return None


def _canon(value: Any, depth: int) -> str:
    if depth > 50:
        return "<deep>"
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        text = str(value) if value.bit_length() < 4000 else f"int#{_digest(hex(value))}"
        return text
    if isinstance(value, float):
        return canonical_float(value)
    if isinstance(value, complex):
        return f"complex({canonical_float(value.real)},{canonical_float(value.imag)})"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, (bytes, bytearray)):
        return "b" + repr(bytes(value))
    if isinstance(value, list):
        return "[" + ",".join(_canon(v, depth + 1) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ",".join(_canon(v, depth + 1) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, (set, frozenset)):
        return "{" + ",".join(sorted(_canon(v, depth + 1) for v in value)) + "}"
    if isinstance(value, dict):
        items = sorted((_canon(k, depth + 1), _canon(v, depth + 1)) for k, v in value.items())
        return "{" + ",".join(f"{k}:{v}" for k, v in items) + "}"
    scalar = _numeric_scalar(value)
    if scalar is not None:
        return _canon(scalar, depth)
    tolist = getattr(value, "tolist", None)
    if tolist is not None and type(value).__module__.startswith("numpy"):
        try:
            return "ndarray" + _canon(tolist(), depth + 1)
        except Exception:  # noqa: BLE001 - fall back to repr
            pass
    try:
        text = repr(value)
    except Exception as err:  # noqa: BLE001 - a hostile __repr__ must not break the key
        text = f"<unrepresentable {type(err).__name__}>"
    return f"<{type(value).__name__}:{_ADDRESS.sub('0x?', text)}>"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def canonical_key(value: Any) -> str:
    """Deterministic string key of ``value``; equal results <=> equal keys (see module doc)."""
    text = _canon(value, 0)
    if len(text) > MAX_KEY_CHARS:
        text = f"{text[:_PREFIX_CHARS]}...#sha256:{_digest(text)}"
    return text


def unique_error_key(problem_id: str, candidate_index_or_program: int | str) -> str:
    """A key no other candidate shares (errored programs never group, as in LEVER).

    Keys start with ``ERROR_KEY_PREFIX`` so that the runner can recognise them and re-derive them
    from the candidate index (identical errored programs must not group either).
    """
    return ERROR_KEY_PREFIX + _digest(f"{problem_id}\x00{candidate_index_or_program}")[:24]


def is_error_key(key: str) -> bool:
    return key.startswith(ERROR_KEY_PREFIX)
