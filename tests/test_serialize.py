"""Verifier input strings: one hand-checked example per dataset, options, truncation sides.

The LEVER-format expectations are written from LEVER_NOTES' rules (literal strings, and
:func:`_notes_lower_code`, an independent char-by-char reading of "a word touching a quote keeps
its case"), never by calling serialize.py's helpers.
"""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lever_jax.data.schema import Candidate, Execution, Problem
from lever_jax.inputs.serialize import (
    SerializeOptions,
    cut,
    render_schema,
    lower_code,
    serialize,
    target_text,
    truncation_side,
)

LEGACY = SerializeOptions(style="legacy", truncation="left_sql")


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _notes_lower_words(code: str) -> str:
    """Maximal runs of word characters are lower-cased unless a quote touches either end."""
    out, i = [], 0
    while i < len(code):
        if not _is_word(code[i]):
            out.append(code[i])
            i += 1
            continue
        j = i
        while j < len(code) and _is_word(code[j]):
            j += 1
        word = code[i:j]
        touches = (i > 0 and code[i - 1] == "'") or (j < len(code) and code[j] == "'")
        out.append(word if touches else word.lower())
        i = j
    return "".join(out)


def _notes_lower_code(program: str, dataset: str) -> str:
    if dataset == "gsm8k":
        kept = [line for line in program.split("\n") if line.strip() != ""]
        program = "\n".join(kept)
    else:
        program = program.split("\n\n")[0]
    return _notes_lower_words(program.strip().replace('"', "'"))


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


def test_wikitq_hand_checked_right_cut_and_legacy_left_cut():
    p = _problem("wikitq", "which country had the most cyclists finish within the top 10?")
    c = _cand("SELECT Country FROM main_table LIMIT 1", "country\n  Italy", correct=False)
    full = serialize(p, c)
    assert full == (
        "-- question: which country had the most cyclists finish within the top 10?|-- SQL:|"
        "select country from main_table limit 1|-- exec result:|/*|country|  Italy|*/"
    )
    assert serialize(p, c, SerializeOptions(max_chars=30)) == full[:30]  # LEVER cuts from the right
    short = serialize(p, c, SerializeOptions(max_chars=30, truncation="left_sql"))
    assert short == full[-30:] and short.endswith("|country|  Italy|*/")
    assert target_text(c) == "no"


NOTES_LOWER_CODE = [
    # (program, dataset, what LEVER_NOTES says lower_code gives)
    ("SELECT Name FROM country WHERE Name = 'France'", "spider", "select name from country where name = 'France'"),
    ('SELECT T1 FROM song WHERE title = "Party All Night"', "spider",
     "select t1 from song where title = 'Party all Night'"),
    ("SELECT count(*) FROM Products WHERE name LIKE '%Free%'", "spider",
     "select count(*) from products where name like '%free%'"),
    ("SELECT Country FROM main_table\n\nSELECT junk after the blank line", "wikitq", "select country from main_table"),
    ("  SELECT A FROM T  \n", "wikitq", "select a from t"),
    ("# Total Bolts\nBlue = 2\n\n   \nanswer = Blue + 1\n", "gsm8k", "# total bolts\nblue = 2\nanswer = blue + 1"),
    ('name = "Tom"\nanswer = len(name)', "gsm8k", "name = 'Tom'\nanswer = len(name)"),
]


@pytest.mark.parametrize("program,dataset,expected", NOTES_LOWER_CODE)
def test_lower_code_examples_from_the_notes(program, dataset, expected):
    assert _notes_lower_code(program, dataset) == expected  # the reference reading agrees with the notes
    assert lower_code(program, dataset) == expected


@given(st.text(alphabet=st.sampled_from(list("aB_9 '\"\n\t(),.=%xYzÉé")), max_size=60),
       st.sampled_from(["spider", "wikitq", "gsm8k"]))
def test_lower_code_matches_the_notes_rule(program, dataset):
    assert lower_code(program, dataset) == _notes_lower_code(program, dataset)


def test_lower_code_leaves_python_tests_programs_alone():
    assert lower_code('def F(x):\n    return "X"\n\n', "mbpp") == 'def F(x):\n    return "X"\n\n'


def test_sql_lever_input_uses_lower_code_and_error():
    p = _problem("spider", "Songs titled Party All Night?")
    prog = 'SELECT Title FROM song WHERE title = "Party All Night"'
    c = _cand(prog, "Title\nParty All Night")
    assert serialize(p, c) == (
        "-- question: Songs titled Party All Night?|-- SQL:|select title from song where title = 'Party all Night'"
        "|-- exec result:|/*|Title|Party All Night|*/"
    )
    err = Candidate(prog, execution=Execution("error", "e", "ERROR: no such column: Title", error="no such column", correct=False))
    assert serialize(p, err).endswith("|-- exec result:|/*|ERROR|*/")
    legacy = serialize(p, err, LEGACY)
    assert "ERROR: no such column: Title" in legacy and '"party all night"' in legacy


def test_sql_result_capped_at_max_result_chars():
    p = _problem("spider", "q")
    c = _cand("select 1", "z" * 6000)
    text = serialize(p, c)
    assert text.count("z") == 5000  # LEVER: the rendered table is cut at 5,000 characters


def test_gsm8k_hand_checked():
    p = _problem("gsm8k", "A robe takes 2 bolts of blue fiber and half that much white fiber.  How many bolts in total does it take?")
    c = _cand("Blue = 2\n\nwhite = Blue / 2  # Half\nanswer = Blue + white", "{'Blue': '2', 'white': '1.0', 'answer': '3.0'}")
    assert serialize(p, c) == (
        "A robe takes 2 bolts of blue fiber and half that much white fiber.  How many bolts in total does it take?"
        " | blue = 2\nwhite = blue / 2  # half\nanswer = blue + white | {'Blue': '2', 'white': '1.0', 'answer': '3.0'}"
    )
    err = Candidate("answer = x", execution=Execution("error", "e1", "ERROR", error="NameError: x", correct=False))
    assert serialize(p, err).endswith(" | answer = x | ERROR: program failed to execute") and target_text(err) == "no"
    none = Candidate("x = 1", execution=Execution("error", "e2", "ERROR", error="the program defines no answer variable"))
    assert serialize(p, none).endswith(" | x = 1 | ERROR: no answer variable")
    forged = Candidate("raise Exception('no answer')",
                       execution=Execution("error", "e3", "ERROR", error="Exception: no answer"))
    assert serialize(p, forged).endswith("| ERROR: program failed to execute")  # the program's words decide nothing
    lever = Candidate("ans = 1", execution=Execution("error", "e4", "ERROR: no answer variable", error="whatever"))
    assert serialize(p, lever).endswith("| ERROR: no answer variable")  # LEVER convention: the executor's own text
    assert serialize(p, err, LEGACY).endswith(" | answer = x | ERROR")
    assert serialize(p, c, LEGACY).endswith(" | Blue = 2\n\nwhite = Blue / 2  # Half\nanswer = Blue + white | "
                                            "{'Blue': '2', 'white': '1.0', 'answer': '3.0'}")


def _tests_cand(program: str, tests, status: str = "ok", error=None, result_text: str = "") -> Candidate:
    details = {"tests": [dict(zip(("type", "value", "error", "passed"), t)) for t in tests]}
    return Candidate(program, execution=Execution(status, "k", result_text, error=error, correct=False, details=details))


def test_mbpp_hand_checked_and_right_cut():
    p = _problem("mbpp", "Write a function to add two numbers.", {"test_list": ["assert add(1, 2) == 3"] * 3})
    c = _tests_cand("def add(a, b):\n    return a + b",
                    [("int", "3", None, True), ("NoneType", "None", None, False), (None, None, "ZeroDivisionError", False),
                     ("list", "[<__main__.P object at 0x7f>]", None, False)],
                    result_text="# return: (int)=3\n# return: (NoneType)=None")
    expected = (
        "# description\nWrite a function to add two numbers.\n\n"
        "# program\ndef add(a, b):\n    return a + b\n\n"
        "# execution\n# return: (int)=3\n\n# return: ERROR: tracing failed\n\n# return: ERROR: tracing failed\n\n"
        "# return: (list)=<object list>\n\n"
    )
    assert serialize(p, c) == expected
    assert serialize(p, c, SerializeOptions(max_chars=20)) == expected[:20]
    syntax = _tests_cand("def add(a, b:\n", [], status="error", error="SyntaxError: invalid syntax")
    assert serialize(p, syntax).endswith("# execution\nERROR: program is not parsable\n\n")
    crash = _tests_cand("import nothing_here\n", [], status="error", error="ModuleNotFoundError: nothing_here")
    assert serialize(p, crash).endswith("# execution\n" + "# return: ERROR: tracing failed\n\n" * 3)
    assert serialize(p, c, LEGACY).endswith("# execution\n# return: (int)=3\n# return: (NoneType)=None")


def test_humaneval_same_format_as_mbpp():
    p = _problem("humaneval", "Add two numbers x and y")
    c = _cand("def add(x, y):\n    return x + y\n", "# return: (int)=5")
    assert serialize(p, c) == (
        "# description\nAdd two numbers x and y\n\n# program\ndef add(x, y):\n    return x + y\n\n\n"
        "# execution\n# return: (int)=5\n\n"
    )


def test_ablation_options():
    p = _problem("spider", "q?", {"db_table_headers": {"singer": ["id", "name"], "concert": ["cid"]}})
    c = _cand("SELECT Name FROM singer", "name\nJoe")
    assert serialize(p, c, SerializeOptions(include_program=False)) == "-- question: q?|-- exec result:|/*|name|Joe|*/"
    # LEVER keeps the empty result block when the execution is ablated
    assert serialize(p, c, SerializeOptions(include_execution=False)) == "-- question: q?|-- SQL:|select name from singer|-- exec result:|/*||*/"
    assert serialize(p, c, SerializeOptions(include_execution=False, style="legacy")) == "-- question: q?|-- SQL:|select name from singer"
    with_schema = serialize(p, c, SerializeOptions(include_schema=True))
    assert with_schema.startswith("-- schema:|singer(id, name)|concert(cid)|-- question: q?|")
    g = _problem("gsm8k", "Q")
    gc = _cand("answer = 1", "{'answer': 1}")
    assert serialize(g, gc, SerializeOptions(include_program=False)) == "Q | {'answer': 1}"
    assert serialize(g, gc, SerializeOptions(include_execution=False)) == "Q | answer = 1"
    m = _problem("mbpp", "T")
    assert serialize(m, gc, SerializeOptions(include_execution=False)) == "# description\nT\n\n# program\nanswer = 1\n\n"
    assert serialize(m, gc, SerializeOptions(include_program=False)) == "# description\nT\n\n# execution\n{'answer': 1}\n\n"
    assert serialize(m, gc, SerializeOptions(include_execution=False, style="legacy")) == "# description\nT\n\n# program\nanswer = 1\n"


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
    assert {truncation_side(d) for d in ("spider", "wikitq", "mbpp", "gsm8k", "humaneval")} == {"right"}
    assert truncation_side("spider", LEGACY) == truncation_side("wikitq", LEGACY) == "left"
    assert truncation_side("mbpp", LEGACY) == truncation_side("gsm8k", LEGACY) == "right"
    assert truncation_side("gsm8k", SerializeOptions(truncation="left")) == "left"
    with pytest.raises(ValueError, match="truncation"):
        SerializeOptions(truncation="middle")
    with pytest.raises(ValueError, match="style"):
        SerializeOptions(style="other")


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
    assert text.endswith("# execution\n# return: (int)=5\n\n")
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
    # the older left truncation drops the schema first, keeping the execution result
    cut_text = serialize(problem, c, SerializeOptions(include_schema=True, max_chars=len(plain), truncation="left_sql"))
    assert cut_text == plain
    assert spider.load_problems("dev")[0].context == problem.context
    assert "schema" not in spider.problems_from_file(
        spider.bundled_path("spider", "dev.jsonl.gz"), "dev", with_schema=False)[0].context
