"""Spider execution match with the test-suite semantics (test-suite-sql-eval's ``eval_exec_match``).

What the official script does, and this module reproduces on one database:
* ``postprocess``: ``'> ='`` -> ``'>='`` (also ``<`` and ``!``) in both queries;
* ``remove_distinct``: the DISTINCT keyword is dropped from both queries before executing
  (``keep_distinct=False``, LEVER's setting); sqlparse tokens equal to "distinct" are removed --
  here a tokenizer that skips string literals and quoted identifiers does the same;
* ``order_matters = 'order by' in gold.lower()``;
* ``result_eq``: equal if both are empty; else same row count and column count, a quick
  rejection on rows with their cells sorted, then a search over column permutations (constrained
  by which values occur in which column) for one under which the results are equal as lists
  (order matters) or as bags (multisets) of rows;
* an execution error of the prediction is wrong.

The official permutation constraint samples 20 random rows (``random.choice``); the sampling only
prunes permutations that cannot match, so the answer does not depend on it. We sample with a
fixed seed so that runs are deterministic.
"""
from __future__ import annotations

import random
import re
from collections import Counter
from itertools import product
from typing import Any, Iterable, Sequence

Row = tuple[Any, ...]

# A quoted segment ('..', "..", `..`, [..]) or a word; only bare words are candidates for removal.
_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\[[^\]]*\]|[A-Za-z_][A-Za-z0-9_$]*|.", re.S)


def postprocess(query: str) -> str:
    """The official whitespace fix for split comparison operators."""
    return query.replace("> =", ">=").replace("< =", "<=").replace("! =", "!=")


def remove_distinct(query: str) -> str:
    """Drop every bare DISTINCT keyword (case-insensitive), leaving literals and identifiers."""
    return "".join(t for t in _TOKEN.findall(query) if t.lower() != "distinct")


def order_matters(gold_query: str) -> bool:
    return "order by" in gold_query.lower()


def prepare_queries(pred: str, gold: str, keep_distinct: bool = False) -> tuple[str, str]:
    """The (prediction, gold) pair as the official script executes them."""
    pred, gold = postprocess(pred), postprocess(gold)
    if not keep_distinct:
        pred, gold = remove_distinct(pred), remove_distinct(gold)
    return pred, gold


def _sort_key(x: Any) -> str:
    return str(x) + str(type(x))


def _unorder_row(row: Sequence[Any]) -> Row:
    return tuple(sorted(row, key=_sort_key))


def _quick_rej(result1: Sequence[Row], result2: Sequence[Row], ordered: bool) -> bool:
    s1 = [_unorder_row(r) for r in result1]
    s2 = [_unorder_row(r) for r in result2]
    return s1 == s2 if ordered else set(s1) == set(s2)


def _multiset_eq(l1: Sequence[Row], l2: Sequence[Row]) -> bool:
    return len(l1) == len(l2) and Counter(l1) == Counter(l2)


def _constraint_permutations(tab1_sets: list[set[Any]], result2: Sequence[Row], seed: int = 0) -> Iterable[tuple[int, ...]]:
    num_cols = len(result2[0])
    constraints = [set(range(num_cols)) for _ in range(num_cols)]
    if num_cols <= 3:
        return product(*constraints)
    rng = random.Random(seed)
    for _ in range(20):
        row = rng.choice(result2)
        for col1 in range(num_cols):
            for col2 in set(constraints[col1]):
                if row[col2] not in tab1_sets[col1]:
                    constraints[col1].remove(col2)
    return product(*constraints)


def result_eq(result1: Sequence[Sequence[Any]], result2: Sequence[Sequence[Any]], ordered: bool) -> bool:
    """test-suite ``result_eq``: result1 is the gold denotation, result2 the prediction's."""
    r1 = [tuple(r) for r in result1]
    r2 = [tuple(r) for r in result2]
    if not r1 and not r2:
        return True
    if len(r1) != len(r2):
        return False
    num_cols = len(r1[0])
    if len(r2[0]) != num_cols:
        return False
    if not _quick_rej(r1, r2, ordered):
        return False
    tab1_sets = [{row[i] for row in r1} for i in range(num_cols)]
    for perm in _constraint_permutations(tab1_sets, r2):
        if len(perm) != len(set(perm)):
            continue
        r2_perm = r2 if num_cols == 1 else [tuple(row[i] for i in perm) for row in r2]
        if ordered:
            if r1 == r2_perm:
                return True
        elif set(r1) == set(r2_perm) and _multiset_eq(r1, r2_perm):
            return True
    return False
