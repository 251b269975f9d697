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

The official permutation constraint samples 20 random rows (``random.choice``) and then walks
the product of the remaining candidates (``num_cols ** num_cols`` orders when columns share their
values): a crafted prediction with nine such columns keeps it busy for hours. The constraints only
prune orders that cannot match, so any exact necessary condition gives the same answer; here a
gold column may take a prediction column only if their values are equal in order (ordered
results) or as multisets (bags), for bags every pair of columns must agree as a multiset of value
pairs and the rows' repeat counts must agree, and prediction columns with identical contents are
interchangeable (one of them is tried). The search is a depth-first one that stops after
``MAX_WORK`` (20 million) cells visited, judging "no match" -- a deviation from the official
script that only a crafted result (many distinct columns sharing their values and their pairwise
statistics) can reach.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Any, Iterator, Sequence

Row = tuple[Any, ...]
# Cells the column-permutation search may visit (columns compared, candidate orders checked):
# beyond that a crafted result with many interchangeable columns would make it exponential.
MAX_WORK = 20_000_000

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


class _OutOfBudget(Exception):
    """The permutation search spent ``MAX_WORK``."""


class _ColumnSearch:
    """Depth-first search for column orders (gold column i <- prediction column perm[i]).

    Pruned by exact necessary conditions: a gold column may take a prediction column only if
    their values are equal in order (ordered results) or as multisets (bags); for bags every pair
    of assigned columns must also agree as a multiset of value pairs. Of prediction columns with
    identical contents only one is tried at each position (swapping them changes nothing). Every
    column pass counts against ``MAX_WORK`` cells."""

    def __init__(self, r1: Sequence[Row], r2: Sequence[Row], ordered: bool):
        self.gold = [tuple(row[i] for row in r1) for i in range(len(r1[0]))]
        self.pred = [tuple(row[j] for row in r2) for j in range(len(r2[0]))]
        self.ordered = ordered
        self.work = 0
        self._pairs: dict[tuple[str, int, int], Counter[tuple[Any, Any]]] = {}

    def spend(self, cells: int) -> None:
        self.work += cells
        if self.work > MAX_WORK:
            raise _OutOfBudget

    def options(self) -> list[list[int]]:
        """For each gold column, the prediction columns with the same values (or multiset)."""
        sig = (lambda col: col) if self.ordered else Counter
        pred_sigs = [sig(col) for col in self.pred]
        self.spend(len(self.pred) * len(self.pred[0]) * (len(self.gold) + 1))
        return [[j for j, p in enumerate(pred_sigs) if p == sig(g)] for g in self.gold]

    def _pair(self, side: str, a: int, b: int) -> Counter[tuple[Any, Any]]:
        key = (side, a, b)
        if key not in self._pairs:
            cols = self.gold if side == "g" else self.pred
            self.spend(len(cols[a]))
            self._pairs[key] = Counter(zip(cols[a], cols[b]))
        return self._pairs[key]

    def fits(self, chosen: list[int], i: int, j: int) -> bool:
        if self.ordered:
            return True
        return all(self._pair("g", i2, i) == self._pair("p", j2, j) for i2, j2 in enumerate(chosen))

    def orders(self, options: list[list[int]]) -> Iterator[tuple[int, ...]]:
        chosen: list[int] = []

        def extend(i: int) -> Iterator[tuple[int, ...]]:
            if i == len(options):
                yield tuple(chosen)
                return
            tried: set[tuple[Any, ...]] = set()
            for j in options[i]:
                if j in chosen or self.pred[j] in tried or not self.fits(chosen, i, j):
                    continue
                tried.add(self.pred[j])
                chosen.append(j)
                yield from extend(i + 1)
                chosen.pop()

        return extend(0)


def result_eq(result1: Sequence[Sequence[Any]], result2: Sequence[Sequence[Any]], ordered: bool) -> bool:
    """test-suite ``result_eq``: result1 is the gold denotation, result2 the prediction's.

    The column-permutation search is pruned by exact necessary conditions and bounded by
    ``MAX_WORK`` (see the module doc): no match found within it is no match."""
    r1 = [tuple(r) for r in result1]
    r2 = [tuple(r) for r in result2]
    if not r1 and not r2:
        return True
    if len(r1) != len(r2):
        return False
    num_cols = len(r1[0])
    if len(r2[0]) != num_cols or any(len(r) != num_cols for r in r1 + r2):
        return False
    if not _quick_rej(r1, r2, ordered):
        return False
    if not ordered and sorted(Counter(r1).values()) != sorted(Counter(r2).values()):
        return False  # a column permutation keeps how often each row repeats
    search = _ColumnSearch(r1, r2, ordered)
    try:
        for perm in search.orders(search.options()):
            search.spend(len(r2) * num_cols)
            r2_perm = r2 if num_cols == 1 else [tuple(row[i] for i in perm) for row in r2]
            if ordered:
                if r1 == r2_perm:
                    return True
            elif set(r1) == set(r2_perm) and _multiset_eq(r1, r2_perm):
                return True
    except _OutOfBudget:
        return False
    return False
