"""WikiTableQuestions denotation match (the official ``evaluator.py`` of WikiTableQuestions 1.0.2).

Values are strings, numbers or dates; a predicted list matches the target list when both have the
same size and every target value matches some predicted value (unordered). Strings match after
normalisation (diacritics removed, quotes/dashes unified, citations / trailing parentheses /
outer quotes / final period removed, whitespace collapsed, lower-cased); numbers match within
1e-6; dates (``yyyy-mm-dd`` with ``xx`` wildcards) match on (year, month, day). Target values may
come with CoreNLP canonical forms (``targetCanon`` in the tagged files): the value's type is then
taken from the canonical form, its normalised string from the original.

SQL results are turned into predicted values by :func:`values_from_rows` (every cell, row-major,
as a string), after LEVER's WikiTQ post-processing of 0/1 answers to yes/no-style questions
(:func:`lever_postprocess`, from LEVER's ``post_process_wtq_exec_result``): :func:`denotation_match`.

LEVER's own, relaxed check (:func:`wtq_answer_eq`, :func:`relaxed_match`; the default correctness
for LEVER-comparable WikiTQ numbers -- the paper's appendix: 65.8 with it vs 62.9 with the official
evaluator): the gold string is split on ``|``; a one-row result contributes all its cells, a
multi-row result only its first column; cells are read with ``str()``; on a mismatch the gold is
retried once per rewrite (thousands commas dropped, a trailing unit from :data:`UNITS` dropped, a
leading ``$``/``£`` dropped, an ordinal ``th`` dropped). As in LEVER, the retry of a multi-row
result compares against no values at all (LEVER's generator of first cells is already consumed),
so it never succeeds. :func:`relabel` switches an executed WikiTQ file between the two checkers.

Bounds for crafted results (a candidate's SQL chooses its cells): the official suffix-stripping
loop of :func:`normalize` rescans the whole string each round, and its bracket pattern is
quadratic on a run of ``[`` -- a 200,000-character cell took 18 s, longer ones hours. So the loop
runs at most :data:`MAX_STRIP_ROUNDS` rounds and only on strings of at most
:data:`MAX_NORMALIZE_CHARS` characters (longer ones keep their suffixes), and a result whose
compared cells hold more than :data:`MAX_COMPARE_CHARS` characters in all is no match. None of
these is reached by any cell or whole table of the 2,108 WikiTQ tables (longest cell 2,009
characters, at most 3 rounds, largest table 63,553 characters).
"""
from __future__ import annotations

import math
import re
import unicodedata
from typing import Any, Sequence


MAX_NORMALIZE_CHARS = 2_500
MAX_STRIP_ROUNDS = 10
MAX_COMPARE_CHARS = 1_000_000


def normalize(x: str) -> str:
    x = "".join(c for c in unicodedata.normalize("NFKD", x) if unicodedata.category(c) != "Mn")
    x = re.sub(r"[‘’´`]", "'", x)
    x = re.sub(r"[“”]", '"', x)
    x = re.sub(r"[‐‑‒–—−]", "-", x)
    for _ in range(MAX_STRIP_ROUNDS if len(x) <= MAX_NORMALIZE_CHARS else 0):
        old_x = x
        x = re.sub(r"((?<!^)\[[^\]]*\]|\[\d+\]|[•♦†‡*#+])*$", "", x.strip())
        x = re.sub(r"(?<!^)( \([^)]*\))*$", "", x.strip())
        x = re.sub(r'^"([^"]*)"$', r"\1", x.strip())
        if x == old_x:
            break
    if x and x[-1] == ".":
        x = x[:-1]
    return re.sub(r"\s+", " ", x, flags=re.U).lower().strip()


class Value:
    normalized: str

    def match(self, other: "Value") -> bool:
        raise NotImplementedError


class StringValue(Value):
    def __init__(self, content: str):
        self.normalized = normalize(content)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StringValue) and self.normalized == other.normalized

    def __hash__(self) -> int:
        return hash(("s", self.normalized))

    def match(self, other: Value) -> bool:
        return self.normalized == other.normalized

    def __repr__(self) -> str:
        return f"S({self.normalized!r})"


class NumberValue(Value):
    def __init__(self, amount: float, original_string: str | None = None):
        self.amount: int | float = int(amount) if abs(amount - round(amount)) < 1e-6 else float(amount)
        self.normalized = normalize(original_string) if original_string else str(self.amount)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NumberValue) and self.amount == other.amount

    def __hash__(self) -> int:
        return hash(("n", self.amount))

    def match(self, other: Value) -> bool:
        if self.normalized == other.normalized:
            return True
        return isinstance(other, NumberValue) and abs(self.amount - other.amount) < 1e-6

    @staticmethod
    def parse(text: str) -> int | float | None:
        try:
            return int(text)
        except ValueError:
            try:
                amount = float(text)
            except ValueError:
                return None
            return None if math.isnan(amount) or math.isinf(amount) else amount

    def __repr__(self) -> str:
        return f"N({self.amount!r})"


class DateValue(Value):
    def __init__(self, year: int, month: int, day: int, original_string: str | None = None):
        self.ymd = (year, month, day)
        if original_string:
            self.normalized = normalize(original_string)
        else:
            # The official code compares day with the string '-1' here (a bug kept for fidelity).
            self.normalized = "{}-{}-{}".format(year if year != -1 else "xx", month if month != -1 else "xx", day)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DateValue) and self.ymd == other.ymd

    def __hash__(self) -> int:
        return hash(("d", self.ymd))

    def match(self, other: Value) -> bool:
        if self.normalized == other.normalized:
            return True
        return isinstance(other, DateValue) and self.ymd == other.ymd

    @staticmethod
    def parse(text: str) -> tuple[int, int, int] | None:
        try:
            ymd = text.lower().split("-")
            if len(ymd) != 3:
                return None
            year = -1 if ymd[0] in ("xx", "xxxx") else int(ymd[0])
            month = -1 if ymd[1] == "xx" else int(ymd[1])
            day = -1 if ymd[2] == "xx" else int(ymd[2])
        except ValueError:
            return None
        if year == month == day == -1 or not (month == -1 or 1 <= month <= 12) or not (day == -1 or 1 <= day <= 31):
            return None
        return year, month, day

    def __repr__(self) -> str:
        return f"D{self.ymd!r}"


def to_value(original_string: str, corenlp_value: str | None = None) -> Value:
    """The official ``to_value``: number, else date, else string (type read from the canon form)."""
    if not corenlp_value:
        corenlp_value = original_string
    amount = NumberValue.parse(corenlp_value)
    if amount is not None:
        return NumberValue(amount, original_string)
    ymd = DateValue.parse(corenlp_value)
    if ymd is not None:
        if ymd[1] == ymd[2] == -1:
            return NumberValue(ymd[0], original_string)
        return DateValue(ymd[0], ymd[1], ymd[2], original_string)
    return StringValue(original_string)


def to_value_list(original_strings: Sequence[str], corenlp_values: Sequence[str] | None = None) -> list[Value]:
    """Distinct values (a set, as in the official code), in first-seen order for determinism."""
    if corenlp_values is not None and len(corenlp_values) != len(original_strings):
        raise ValueError(f"{len(original_strings)} target values but {len(corenlp_values)} canonical values")
    pairs = zip(original_strings, corenlp_values) if corenlp_values is not None else ((s, None) for s in original_strings)
    return list(dict.fromkeys(to_value(s, c) for s, c in pairs))


def check_denotation(target_values: Sequence[Value], predicted_values: Sequence[Value]) -> bool:
    if len(target_values) != len(predicted_values):
        return False
    return all(any(t.match(p) for p in predicted_values) for t in target_values)


def tsv_unescape(x: str) -> str:
    return x.replace(r"\n", "\n").replace(r"\p", "|").replace("\\\\", "\\")


def tsv_unescape_list(x: str) -> list[str]:
    return [tsv_unescape(y) for y in x.split("|")]


_NUMBER_WITH_COMMAS = re.compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d+)?$")


def approximate_canon(value: str) -> str:
    """Stand-in for CoreNLP's ``targetCanon`` where the tagged file is missing (train/dev):
    thousands separators are dropped from numbers (``12,467`` -> ``12467``); all else is kept."""
    v = value.strip()
    return v.replace(",", "") if _NUMBER_WITH_COMMAS.match(v) else value


def cell_to_string(cell: Any) -> str:
    """An SQL cell as a predicted answer string (integral floats print without ``.0``)."""
    if cell is None:
        return "None"
    if isinstance(cell, float):
        if math.isfinite(cell) and cell == int(cell):
            return str(int(cell))
        return repr(cell)
    if isinstance(cell, bytes):
        return cell.decode("utf-8", errors="ignore")
    return str(cell)


_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]


def lever_postprocess(rows: Sequence[Sequence[Any]], question: str) -> list[list[Any]]:
    """LEVER's ``post_process_wtq_exec_result``: a first cell of 0/1 becomes below/above,
    less/more, after/before or no/yes by the question's wording; a month number in 1..12
    becomes its name for "which month" questions. Otherwise the rows are returned unchanged."""
    rows = [list(r) for r in rows]
    if not rows or not rows[0] or rows[0][0] is None:
        return rows
    first = rows[0][0]
    if isinstance(first, (int, float)) and first in (0, 1):  # LEVER: `in [0, 1]` (bools, 0.0 and 1.0 too)
        words = question.split(" ")
        if "above or below" in question or "below or above" in question:
            return [[["below", "above"][int(first)]]]
        if "more or less" in question:
            return [[["less", "more"][int(first)]]]
        if "before or after" in question:
            return [[["after", "before"][int(first)]]]
        if words and words[0] in ("is", "are", "does", "do", "was", "were"):
            return [[["no", "yes"][int(first)]]]
        return rows
    if "which month" in question and isinstance(first, (int, float)) and first in range(1, 13):
        return [[_MONTHS[int(first) - 1]]]
    return rows


def values_from_rows(rows: Sequence[Sequence[Any]]) -> list[Value]:
    """Predicted values: every cell (row-major) as a string, then the official ``to_value_list``."""
    return to_value_list([cell_to_string(c) for row in rows for c in row])


def _too_large(cells: Sequence[str]) -> bool:
    """More than MAX_COMPARE_CHARS characters to normalise (see the module doc)."""
    return sum(len(c) for c in cells) > MAX_COMPARE_CHARS


def denotation_match(rows: Sequence[Sequence[Any]], targets: Sequence[str], target_canon: Sequence[str] | None = None, question: str = "") -> bool:
    """True when an SQL result denotes the target values (LEVER post-processing applied first)."""
    cells = [cell_to_string(c) for row in lever_postprocess(rows, question) for c in row]
    if _too_large(cells):
        return False
    target_values = to_value_list(list(targets), list(target_canon) if target_canon is not None else None)
    return check_denotation(target_values, to_value_list(cells))


UNITS = ("km", "years", "months", "days", "kg", "changes", "min", "miles", "points", "kW")
CHECKERS = ("lever", "official")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _gold_retry(gold: str) -> str | None:
    """The rewrite of the gold string LEVER retries after a mismatch (None: no retry)."""
    words = gold.split(" ")
    if "," in gold and _is_number(gold.replace(",", "")):
        return gold.replace(",", "")
    if len(words) == 2 and words[1] in UNITS and _is_number(words[0]):
        return words[0]
    if gold[:1] in ("$", "£"):
        return gold[1:]
    if gold.endswith("th") and _is_number(gold[:-2]):
        return gold[:-2]
    return None


def _predicted_cells(rows: Sequence[Sequence[Any]]) -> list[str]:
    if len(rows) == 1:
        return [str(c) for c in rows[0]]
    return [str(r[0]) for r in rows if len(r)]


def wtq_answer_eq(rows: Sequence[Sequence[Any]] | None, gold: str, allow_normalize: bool = True,
                  _cells: list[str] | None = None) -> bool:
    """LEVER's ``wtq_answer_eq(prediction, gold_answer)``: ``rows`` a result's rows, ``gold`` the
    target values joined by ``|`` (see the module doc for the rules, quirk included)."""
    if not rows or not gold:
        return False
    cells = _predicted_cells(rows) if _cells is None else _cells
    if _too_large(cells):
        return False
    targets = gold.split("|") if "|" in gold else [gold]
    if check_denotation(to_value_list(cells), to_value_list(targets)):
        return True
    if not allow_normalize:
        return False
    retry = _gold_retry(gold)
    if retry is None:
        return False
    # LEVER retries with the already-consumed generator of first cells when there are several rows
    return wtq_answer_eq(rows, retry, True, cells if len(rows) == 1 else [])


def relaxed_match(rows: Sequence[Sequence[Any]], targets: Sequence[str], question: str = "") -> bool:
    """LEVER's WikiTQ correctness: its 0/1 / month post-processing, then :func:`wtq_answer_eq`
    against the targets joined by ``|``."""
    return wtq_answer_eq(lever_postprocess(rows, question), "|".join(str(t) for t in targets))


def relabel(problems: Any, checker: str) -> list[Any]:
    """Executed WikiTQ problems with ``execution.correct`` taken from ``checker``'s verdict
    (``details.correct_lever`` / ``details.correct_official``, recorded by the WikiTQ executor);
    candidates without that verdict keep theirs."""
    import dataclasses

    if checker not in CHECKERS:
        raise ValueError(f"checker must be one of {', '.join(CHECKERS)}, got {checker!r}")
    field = f"correct_{checker}"
    out = []
    for problem in problems:
        cands = []
        for cand in problem.candidates:
            ex = cand.execution
            if ex is not None and isinstance((ex.details or {}).get(field), bool):
                cand = dataclasses.replace(cand, execution=dataclasses.replace(ex, correct=ex.details[field]))
            cands.append(cand)
        out.append(problem.replace(candidates=tuple(cands)))
    return out


def has_both_checkers(problems: Any) -> bool:
    """True when some candidate carries both checkers' verdicts (a WikiTQ file executed here)."""
    return any(isinstance((c.execution.details or {}).get("correct_official"), bool)
               for p in problems for c in p.candidates if c.execution is not None)
