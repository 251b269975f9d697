"""LEVER-style few-shot prompt builders and the ``lever-jax prompts`` command."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from lever_jax.cli import main as cli_main
from lever_jax.data import prompts
from lever_jax.data.datasets import load_problems
from lever_jax.data.schema import Problem


def test_gsm8k_prompt_is_lever_file_plus_question() -> None:
    problem = load_problems("gsm8k", "test")[0]
    text = prompts.build_prompt(problem)
    assert text.startswith("## Cristina, John, Clarissa and Sarah")
    assert text.endswith("\n\n## " + problem.question)
    assert text.count("\n## ") == 8  # 8 exemplars + the target (the first has no leading newline)
    assert "answer = n_cds_now\n\n## Janet" in text


def test_assertion_to_call() -> None:
    assert prompts.assertion_to_call('assert remove_Occ("hello","l") == "heo"') == 'remove_Occ("hello","l")'
    assert prompts.assertion_to_call("assert f(1, [2, 3])==4") == "f(1, [2, 3])"
    for bad in ("assert x == 1", "x = f(1)", "assert f(1)", "assert (("):
        with pytest.raises(ValueError):
            prompts.assertion_to_call(bad)


def test_mbpp_prompt_layout() -> None:
    problem = load_problems("mbpp", "test")[0]
    text = prompts.build_prompt(problem)
    assert text.startswith(prompts.MBPP_TASK_DESCRIPTION + "### Task Start ###\n# These are the calls for your function:\n")
    assert text.count("### Task Start ###") == 4 and text.count("### Task End ###") == 3
    assert text.endswith('### Task Start ###\n# These are the calls for your function:\nremove_Occ("hello","l")\n\n'
                         '""" Write a python function to remove first and last occurrence of a given character from the string. """')
    assert "def similar_elements" in text and "def heap_queue_largest" in text
    full = prompts.build_prompt(problem, add_assertion_n=3, test_input_only=False)
    assert full.count("# These are the assertions for your function:") == 4
    assert 'assert remove_Occ("PHP","P") == "H"' in full
    none = prompts.build_prompt(problem, add_assertion_n=0)
    assert none.endswith('### Task Start ###\n""" Write a python function to remove first and last occurrence of a '
                         'given character from the string. """')


def test_humaneval_prompt_is_the_problem_prompt() -> None:
    problem = load_problems("humaneval", "test")[3]
    assert prompts.build_prompt(problem) == problem.context["prompt"]


def test_sql_prompts_with_explicit_headers() -> None:
    spider = Problem("spider-dev-0000", "spider", "How many singers?", {"db_id": "concert_singer"}, "SELECT 1", ())
    text = prompts.build_prompt(spider, table_headers=lambda db: {"singer": ["singer_id", "name"]})
    assert text.count("\n\n-- Example:\n\n") == 9
    assert text.endswith("-- Database concert_singer:\n--  Table singer: singer_id, name\n-- Question: How many singers?\n-- SQL:")
    assert "-- SQL:\nSELECT count(DISTINCT T1.injury)" in text
    wtq = Problem("wikitq-test-0000", "wikitq", "which is first?", {"table_id": "204_1"}, ["x"], ())
    text = prompts.build_prompt(wtq, table_headers=lambda db: {"main_table": ["id", "agg", "place"]})
    assert "--  Table main_table: id, agg, place, place_number" in text  # exemplar headers (dict repr parsed)
    assert text.endswith("-- Database 204_1:\n--  Table main_table: id, agg, place\n-- Question: which is first?\n-- SQL:")


def test_prompt_records_and_stops() -> None:
    problems = load_problems("gsm8k", "test")[:2] + load_problems("mbpp", "test")[:1]
    records = list(prompts.prompt_records(problems))
    assert [r["problem_id"] for r in records] == ["gsm8k-test-0000", "gsm8k-test-0001", "mbpp-11"]
    assert records[0]["stop"] == ["\n\n"] and records[2]["stop"] == ["### Task End ###"]


def test_unknown_dataset() -> None:
    with pytest.raises(ValueError):
        prompts.build_prompt(Problem("x", "imagenet", "q", {}, None, ()))  # type: ignore[arg-type]


def test_cli_prompts(tmp_path: Path, capsys) -> None:
    assert cli_main(["prompts", "--dataset", "mbpp", "--split", "validation", "--limit", "3"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3
    first = json.loads(lines[0])
    assert first["problem_id"] == "mbpp-511" and first["dataset"] == "mbpp" and "### Task Start ###" in first["prompt"]
    out = tmp_path / "p.jsonl.gz"
    assert cli_main(["prompts", "--dataset", "gsm8k", "--split", "train", "--limit", "2", "--output", str(out)]) == 0
    from lever_jax.data import jsonl

    rows = [o for _, o in jsonl.iter_json_lines(out)]
    assert [r["problem_id"] for r in rows] == ["gsm8k-train-0000", "gsm8k-train-0001"]


def test_sql_prompts_from_bundled_schemas() -> None:
    spider = load_problems("spider", "dev")[0]
    text = prompts.build_prompt(spider)
    assert text.endswith(f"-- Database concert_singer:\n--  Table stadium: Stadium_ID, Location, Name, Capacity, "
                         f"Highest, Lowest, Average\n--  Table singer: Singer_ID, Name, Country, Song_Name, "
                         f"Song_release_year, Age, Is_male\n--  Table concert: concert_ID, concert_Name, Theme, "
                         f"Stadium_ID, Year\n--  Table singer_in_concert: concert_ID, Singer_ID\n"
                         f"-- Question: {spider.question}\n-- SQL:")
    headers = prompts.wikitq_table_headers("204_126")["main_table"]
    exemplar = next(e for e in prompts.exemplars("wikitq") if e["db_id"] == "204_126")
    assert headers == prompts._exemplar_headers(exemplar)["main_table"]  # same renaming as LEVER's file
