"""Verifier input strings: one hand-checked example per dataset, options, truncation sides."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lever_jax.data.schema import Candidate, Execution, Problem
from lever_jax.inputs.serialize import (
    SerializeOptions,
    cut,
    render_schema,
    serialize,
    target_text,
    truncation_side,
)


def _problem(dataset: str, question: str, context=None) -> Problem:
    return Problem("p0", dataset, question, context or {}, None, ())


def _cand(program: str, result_text: str, correct: bool = True) -> Candidate:
    return Candidate(program, execution=Execution("ok", "k", result_text, correct=correct))


def test_spider_hand_checked():
    p = _problem("spider", "How many singers do we have?")
    c = _cand("SELECT count(*) FROM singer", " count(*)\n        6")
    assert serialize(p, c) == (
        "-- question: How many singers do we have?|-- SQL:|select count(*) from singer"
        "|-- exec result:|/*| count(*)|        6|*/"
    )


def test_wikitq_hand_checked_and_left_cut_keeps_result():
    p = _problem("wikitq", "which country had the most cyclists finish within the top 10?")
    c = _cand("SELECT Country FROM main_table LIMIT 1", "country\n  Italy", correct=False)
    full = serialize(p, c)
    assert full == (
        "-- question: which country had the most cyclists finish within the top 10?|-- SQL:|"
        "select country from main_table limit 1|-- exec result:|/*|country|  Italy|*/"
    )
    short = serialize(p, c, SerializeOptions(max_chars=30))
    assert short == full[-30:] and short.endswith("|country|  Italy|*/")
    assert target_text(c) == "no"


def test_sql_result_capped_at_max_result_chars():
    p = _problem("spider", "q")
    c = _cand("select 1", "z" * 6000)
    text = serialize(p, c)
    assert text.count("z") == 5000  # LEVER: the rendered table is cut at 5,000 characters


def test_gsm8k_hand_checked():
    p = _problem("gsm8k", "A robe takes 2 bolts of blue fiber and half that much white fiber.  How many bolts in total does it take?")
    c = _cand("blue = 2\nwhite = blue / 2\nanswer = blue + white", "{'blue': 2, 'white': 1.0, 'answer': 3.0}")
    assert serialize(p, c) == (
        "A robe takes 2 bolts of blue fiber and half that much white fiber.  How many bolts in total does it take?"
        " | blue = 2\nwhite = blue / 2\nanswer = blue + white | {'blue': 2, 'white': 1.0, 'answer': 3.0}"
    )
    err = Candidate("answer = x", execution=Execution("error", "e1", "ERROR", error="NameError", correct=False))
    assert serialize(p, err).endswith(" | answer = x | ERROR") and target_text(err) == "no"


def test_mbpp_hand_checked_and_right_cut():
    p = _problem("mbpp", "Write a function to add two numbers.")
    c = _cand("def add(a, b):\n    return a + b", "# return: (int)=3\n# return: (int)=0")
    expected = (
        "# description\nWrite a function to add two numbers.\n\n"
        "# program\ndef add(a, b):\n    return a + b\n\n"
        "# execution\n# return: (int)=3\n# return: (int)=0"
    )
    assert serialize(p, c) == expected
    assert serialize(p, c, SerializeOptions(max_chars=20)) == expected[:20]


def test_humaneval_same_format_as_mbpp():
    p = _problem("humaneval", "Add two numbers x and y")
    c = _cand("def add(x, y):\n    return x + y\n", "# return: (int)=5")
    assert serialize(p, c) == (
        "# description\nAdd two numbers x and y\n\n# program\ndef add(x, y):\n    return x + y\n\n\n"
        "# execution\n# return: (int)=5"
    )


def test_ablation_options():
    p = _problem("spider", "q?", {"db_table_headers": {"singer": ["id", "name"], "concert": ["cid"]}})
    c = _cand("SELECT Name FROM singer", "name\nJoe")
    assert serialize(p, c, SerializeOptions(include_program=False)) == "-- question: q?|-- exec result:|/*|name|Joe|*/"
    assert serialize(p, c, SerializeOptions(include_execution=False)) == "-- question: q?|-- SQL:|select name from singer"
    with_schema = serialize(p, c, SerializeOptions(include_schema=True))
    assert with_schema.startswith("-- schema:|singer(id, name)|concert(cid)|-- question: q?|")
    g = _problem("gsm8k", "Q")
    gc = _cand("answer = 1", "{'answer': 1}")
    assert serialize(g, gc, SerializeOptions(include_program=False)) == "Q | {'answer': 1}"
    assert serialize(g, gc, SerializeOptions(include_execution=False)) == "Q | answer = 1"
    m = _problem("mbpp", "T")
    assert serialize(m, gc, SerializeOptions(include_execution=False)) == "# description\nT\n\n# program\nanswer = 1\n"
    assert serialize(m, gc, SerializeOptions(include_program=False)) == "# description\nT\n\n# execution\n{'answer': 1}"


def test_errors_and_dispatch():
    p = _problem("gsm8k", "q")
    with pytest.raises(ValueError, match="no execution"):
        serialize(p, Candidate("x = 1"))
    with pytest.raises(ValueError, match="no execution"):
        target_text(Candidate("x = 1"))
    with pytest.raises(ValueError, match="side"):
        cut("abc", 1, "middle")
    with pytest.raises(TypeError):
        render_schema(3)
    assert truncation_side("spider") == truncation_side("wikitq") == "left"
    assert truncation_side("mbpp") == truncation_side("gsm8k") == truncation_side("humaneval") == "right"


@given(st.text(max_size=50), st.integers(min_value=0, max_value=60), st.sampled_from(["left", "right"]))
def test_cut_keeps_the_requested_end(text, n, side):
    out = cut(text, n, side)
    assert len(out) == min(len(text), n)
    assert (text.endswith(out) if side == "left" else text.startswith(out))


def test_humaneval_description_is_the_docstring():
    prompt = 'from typing import List\n\n\ndef helper(x):\n    """Not this one."""\n\n\ndef add(x: int, y: int):\n    """Add two numbers x and y\n    >>> add(2, 3)\n    5\n    """\n'
    p = Problem("HumanEval/53", "humaneval", prompt, {"prompt": prompt, "entry_point": "add"}, None, ())
    c = _cand(prompt + "    return x + y\n", "# return: (int)=5")
    text = serialize(p, c)
    assert text.startswith("# description\nAdd two numbers x and y\n>>> add(2, 3)\n5\n\n# program\nfrom typing import List\n")
    assert text.count("Add two numbers") == 2  # once as description, once inside the program
    broken = Problem("h", "humaneval", "the question", {"prompt": "def f(:\n", "entry_point": "f"}, None, ())
    assert serialize(broken, c).startswith("# description\nthe question\n\n")


CONCERT_SINGER_SCHEMA = (
    "stadium: Stadium_ID, Location, Name, Capacity, Highest, Lowest, Average | "
    "singer: Singer_ID, Name, Country, Song_Name, Song_release_year, Age, Is_male | "
    "concert: concert_ID, concert_Name, Theme, Stadium_ID, Year | "
    "singer_in_concert: concert_ID, Singer_ID"
)


def test_spider_schema_from_bundled_tables_json():
    from lever_jax.data.datasets import spider

    problem = spider.load_problems("dev")[0]  # hand-checked against Spider's tables.json
    assert problem.context == {"db_id": "concert_singer", "schema": CONCERT_SINGER_SCHEMA}
    assert problem.question == "How many singers do we have?"
    c = _cand(str(problem.gold), " count(*)\n        6")
    plain = "-- question: How many singers do we have?|-- SQL:|select count(*) from singer|-- exec result:|/*| count(*)|        6|*/"
    assert serialize(problem, c) == plain
    assert "schema" not in serialize(problem, c) and "Stadium_ID" not in serialize(problem, c)
    assert serialize(problem, c, SerializeOptions(include_schema=True)) == f"-- schema:|{CONCERT_SINGER_SCHEMA}|{plain}"
    # files written before the loader added the schema: looked up by db_id
    older = problem.replace(context={"db_id": "concert_singer"})
    assert serialize(older, c, SerializeOptions(include_schema=True)) == f"-- schema:|{CONCERT_SINGER_SCHEMA}|{plain}"
    unknown = problem.replace(context={"db_id": "no_such_db"})
    assert serialize(unknown, c, SerializeOptions(include_schema=True)) == plain
    # left truncation drops the schema first, keeping the execution result
    cut_text = serialize(problem, c, SerializeOptions(include_schema=True, max_chars=len(plain)))
    assert cut_text == plain
    assert spider.load_problems("dev")[0].context == problem.context
    assert "schema" not in spider.problems_from_file(
        spider.bundled_path("spider", "dev.jsonl.gz"), "dev", with_schema=False)[0].context
