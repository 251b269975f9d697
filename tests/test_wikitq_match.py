"""WikiTQ official denotation match and LEVER's post-processing."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lever_jax.execution import wikitq_match as wm


def test_normalize() -> None:
    assert wm.normalize("  Hello   World. ") == "hello world"
    assert wm.normalize("Café") == "cafe"
    assert wm.normalize("“Quoted”") == "quoted"
    assert wm.normalize("2001–02") == "2001-02"
    assert wm.normalize("Smith[1]") == "smith"
    assert wm.normalize("Paris (France)") == "paris"
    assert wm.normalize("(France)") == "(france)"


def test_values_and_matching() -> None:
    assert isinstance(wm.to_value("12"), wm.NumberValue)
    assert isinstance(wm.to_value("1990-xx-xx"), wm.NumberValue)
    assert isinstance(wm.to_value("1990-05-xx"), wm.DateValue)
    assert isinstance(wm.to_value("Italy"), wm.StringValue)
    assert wm.to_value("12,467", "12467.0").match(wm.to_value("12467"))
    assert not wm.to_value("12,467").match(wm.to_value("12467"))  # no canon: a string
    assert wm.to_value("3").match(wm.to_value("3.0000001"))
    assert wm.to_value("x", "2001-05-xx").match(wm.to_value("2001-05-xx"))


def test_denotation_lists_are_unordered_and_sized() -> None:
    t = wm.to_value_list(["a", "b"])
    assert wm.check_denotation(t, wm.to_value_list(["B", "a"]))
    assert not wm.check_denotation(t, wm.to_value_list(["a"]))
    assert not wm.check_denotation(t, wm.to_value_list(["a", "b", "c"]))
    # duplicates collapse (a set, as in the official code)
    assert wm.check_denotation(wm.to_value_list(["a"]), wm.to_value_list(["a", "a"]))


def test_sql_rows_and_postprocess() -> None:
    assert wm.denotation_match([[12467]], ["12,467"], ["12467.0"])
    assert wm.denotation_match([[2.0]], ["2"])
    assert wm.denotation_match([["Italy"], ["France"]], ["France", "Italy"])
    assert not wm.denotation_match([["Italy", "France"], ["Spain", "x"]], ["France", "Italy"])
    assert wm.denotation_match([[1]], ["yes"], question="is the total more than 5?")
    assert wm.denotation_match([[0]], ["below"], question="was it above or below 3?")
    assert wm.denotation_match([[3]], ["March"], question="which month had the most?")
    assert not wm.denotation_match([[1]], ["yes"], question="how many were there?")
    assert not wm.denotation_match([], ["x"])


def test_tsv_unescape_and_approx_canon() -> None:
    assert wm.tsv_unescape_list(r"a|b\pc|d\nE") == ["a", "b|c", "d\nE"]
    assert wm.approximate_canon("12,467") == "12467"
    assert wm.approximate_canon("1,234.5") == "1234.5"
    assert wm.approximate_canon("Smith, John") == "Smith, John"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=4))
def test_gold_targets_match_themselves(targets) -> None:
    """The gold-as-candidate check: target strings returned as a one-column result match."""
    canon = [wm.approximate_canon(t) for t in targets]
    assert wm.check_denotation(wm.to_value_list(targets, canon), wm.to_value_list(targets, canon))
    assert wm.denotation_match([[t] for t in targets[:1]], targets[:1], canon[:1])
