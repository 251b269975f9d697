"""LEVER's relaxed WikiTQ answer check (``wtq_answer_eq`` in LEVER's WikiTQ execution helpers).

Differences from the official evaluator (:mod:`lever_jax.execution.wikitq_match`), as LEVER_NOTES
lists them: the gold string is split on ``|``; a one-row result contributes all its cells but a
multi-row result only its first column; cells are read with ``str()``; when the denotations do
not match, the gold is retried once more (recursively) after dropping thousands commas
(``12,467`` -> ``12467``), a unit from :data:`UNITS` (``17 years`` -> ``17``), a leading ``$``/``£``,
or an ordinal ``th`` (``5th`` -> ``5``). The paper's appendix: 65.8 (this check) vs 62.9 (official)
on WikiTQ test. LEVER applies its 0/1 post-processing (:func:`wikitq_match.lever_postprocess`)
before this check; :func:`relaxed_match` does the same.
"""
from __future__ import annotations

from typing import Any, Sequence

from lever_jax.execution.wikitq_match import check_denotation, lever_postprocess, to_value_list

UNITS = ("km", "years", "months", "days", "kg", "changes", "min", "miles", "points", "kW")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _retry_gold(gold: str) -> str | None:
    """The one rewrite of the gold string LEVER tries after a failed match (None: no retry)."""
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


def lever_answer_eq(rows: Sequence[Sequence[Any]] | None, gold: str, allow_normalize: bool = True) -> bool:
    """LEVER's ``wtq_answer_eq(prediction, gold_answer)``: ``rows`` as sqlite ``fetchall`` returns
    them, ``gold`` the target values joined by ``|``."""
    if not rows or not gold:
        return False
    cells = list(rows[0]) if len(rows) == 1 else [row[0] for row in rows if len(row)]
    predicted = to_value_list([str(c) for c in cells])
    target = to_value_list(gold.split("|") if "|" in gold else [gold])
    if check_denotation(predicted, target):
        return True
    if not allow_normalize:
        return False
    retry = _retry_gold(gold)
    return retry is not None and lever_answer_eq(rows, retry)


def relaxed_match(rows: Sequence[Sequence[Any]], targets: Sequence[str], question: str = "") -> bool:
    """LEVER's correctness for an SQL result: 0/1 post-processing, then :func:`lever_answer_eq`."""
    return lever_answer_eq(lever_postprocess(rows, question), "|".join(str(t) for t in targets))
