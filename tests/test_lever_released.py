"""LEVER's released files with ``--recorded-execution``: LEVER's rendering, keys and gold fields.

Fixtures (tests/fixtures/lever_released, see its README) follow the field layout of LEVER's
readers; the expected verifier inputs below are written from LEVER_NOTES' templates.
"""
from __future__ import annotations

import json
from pathlib import Path

from lever_jax.cli.main import main
from lever_jax.data.importers.lever import import_lever
from lever_jax.inputs.feeds import gold_to_add
from lever_jax.inputs.serialize import serialize

FIX = Path(__file__).parent / "fixtures" / "lever_released"


def _load(name: str):
    return list(import_lever(FIX / name, recorded_execution=True))


def test_spider_tight_dict_rendered_and_grouped_as_lever():
    (p,) = _load("spider_codex_verification_dev.jsonl")
    q = "-- question: What is the average, minimum, and maximum age of all singers from France?|-- SQL:|"
    inputs = [serialize(p, c) for c in p.candidates]
    assert inputs[0] == (q + "select avg(age), min(age), max(age) from singer where country = 'France'|-- exec result:|/*|"
                         " avg(Age)  min(Age)  max(Age)|     34.5        25        43|*/")
    assert inputs[1].endswith("where country = 'france'|-- exec result:|/*|avg(Age) min(Age) max(Age)|    None     None     None|*/")
    assert inputs[2].endswith("from singers where country = 'France'|-- exec result:|/*|ERROR|*/")
    assert inputs[3].endswith("/*|        Name|Justin Brown|  Rose White|John Nizinik| Tribal King|*/")
    ex = [c.execution for c in p.candidates]
    assert [e.correct for e in ex] == [True, False, False, False] and ex[2].status == "error"
    assert len({e.result_key for e in ex}) == 4 and [c.count for c in p.candidates] == [3, 1, 1, 1]
    assert p.candidates[0].gen_logprob == -3.2 and p.candidates[0].num_tokens == 20
    assert gold_to_add(p) == p.gold  # the gold's lower_code is not a candidate's: LEVER adds it


def test_wikitq_gold_split_gold_sql_and_month_result():
    first, second = _load("wikitq_codex_verification_test.jsonl")
    assert first.gold == ["September"] and first.context["gold_sql"].startswith("select date_month")
    assert serialize(first, first.candidates[0]).endswith("|-- exec result:|/*| date_month|          9|*/")
    assert serialize(first, first.candidates[1]).endswith("|/*|ERROR|*/")
    assert gold_to_add(first) is None  # sampled already (same lower_code)
    assert gold_to_add(second) == second.context["gold_sql"]
    assert first.candidates[0].gen_logprob is None and first.candidates[0].count == 2


def test_wikitq_gold_string_split_on_bar(tmp_path):
    line = {"metadata": {"db_id": "t", "question": "q", "original_answer": "Italy|Spain"}, "generated_programs": []}
    path = tmp_path / "wikitq_codex_verification_dev.jsonl"
    path.write_text(json.dumps(line) + "\n")
    (p,) = import_lever(path)
    assert p.gold == ["Italy", "Spain"] and "gold_sql" not in p.context


def test_gsm8k_state_dict_error_strings_and_answer_grouping():
    (p,) = _load("gsm8k_codex_verification_dev.jsonl")
    q = p.question
    want = [
        f"{q} | n_april = 48\nn_may = n_april / 2\nanswer = n_april + n_may | {{'n_april': '48', 'n_may': '24.0', 'answer': '72.0'}}",
        f"{q} | # clips in april\napril = 48\nanswer = april / 2 | {{'April': '48', 'answer': '24.0'}}",
        f"{q} | answer = clips * 2 | ERROR: program failed to execute",
        f"{q} | total = 48 + 24 | ERROR: no answer variable",
        f"{q} | answer = 48 + 48 / 2 | {{'answer': '72.0'}}",
    ]
    assert [serialize(p, c) for c in p.candidates] == want
    keys = [c.execution.result_key for c in p.candidates]
    assert keys[0] == keys[4] and len(set(keys)) == 4  # '72.0' answers group; errors never do
    assert [c.execution.correct for c in p.candidates] == [True, False, False, False, True]
    assert p.gold == 72.0


def test_mbpp_tracing_states_rendered_and_grouped_as_lever():
    (p,) = _load("mbpp_codex_verification_test.jsonl")
    assert p.problem_id == "mbpp-11" and p.gold.startswith("def remove_Occ(s,ch)")
    head = f"# description\n{p.question}\n\n# program\n"
    failed = "# return: ERROR: tracing failed\n\n" * 3
    want = [
        head + "def remove_Occ(s, ch):\n    return s.replace(ch, '')\n\n# execution\n"
               "# return: (str)=heo\n\n# return: (str)=bcd\n\n# return: (str)=H\n\n",
        head + "def remove_Occ(s, ch):\n    return s[1:-1]\n\n# execution\n"
               "# return: (str)=ell\n\n# return: (str)=bcd\n\n# return: (str)=H\n\n",
        head + "def remove_Occ(s, ch):\n    s.replace(ch, '')\n\n# execution\n" + failed,
        head + "def remove_Occ(s, ch):\n    return s.remove(ch)\n\n# execution\n" + failed,
        head + "def remove_Occ(s, ch)\n    return s\n\n# execution\nERROR: program is not parsable\n\n",
    ]
    assert [serialize(p, c) for c in p.candidates] == want
    ex = [c.execution for c in p.candidates]
    assert [e.correct for e in ex] == [True, False, False, False, False]
    assert len({e.result_key for e in ex}) == 5 and all(e.result_key.startswith("!err") for e in ex[2:])
    assert gold_to_add(p) == p.gold  # MBPP: always


def test_cli_import_recorded_then_inputs(tmp_path):
    executed = tmp_path / "mbpp.executed.jsonl"
    assert main(["import", "--format", "lever", "--input", str(FIX / "mbpp_codex_verification_test.jsonl"),
                 "--output", str(executed), "--recorded-execution"]) == 0
    out = tmp_path / "inputs.jsonl"
    assert main(["inputs", "--input", str(executed), "--output", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    (p,) = _load("mbpp_codex_verification_test.jsonl")
    assert [r["input"] for r in rows] == [serialize(p, c) for c in p.candidates]
    assert [r["target"] for r in rows] == ["yes", "no", "no", "no", "no"]
