"""``lever-jax inputs``: per candidate, the exact verifier input and label, for every dataset.

Expected strings are built here from LEVER_NOTES' rules (templates + ``_notes_lower_code`` from
test_serialize, an independent reading of the lower_code rule), not by calling serialize.py.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from lever_jax.cli.main import main
from tests.test_serialize import _notes_lower_code

FIXTURES = Path(__file__).parent / "fixtures" / "executed"


def _ex(status="ok", text="", correct=False, error=None, details=None):
    out = {"status": status, "result_key": f"k{abs(hash((status, text, error))) % 10**6}", "result_text": text,
           "error": error, "correct": correct}
    if details is not None:
        out["details"] = details
    return out


def _problem(pid, dataset, question, context, gold, candidates):
    return {"schema_version": 1, "problem_id": pid, "dataset": dataset, "question": question, "context": context,
            "gold": gold, "candidates": [{"program": p, "execution": e} for p, e in candidates]}


SQL_OK = 'SELECT Name FROM singer WHERE Country = "France"\n\nSELECT junk'
SQL_ERR = "SELECT Nme FROM Singer"
GSM_OK = 'Eggs = 16 - 3\n\n# Sell "Each" egg\nanswer = Eggs * 2\n'
MBPP_TESTS = ["assert f(1) == 1", "assert f(2) == 4"]

CASES = {
    "spider": [_problem("s0", "spider", "Names of French singers?", {"db_id": "concert_singer"}, "SELECT 1", [
        (SQL_OK, _ex(text="Name\n Joe", correct=True)),
        (SQL_ERR, _ex("error", "ERROR: no such column: Nme", error="no such column: Nme")),
    ])],
    "wikitq": [_problem("w0", "wikitq", "which country?", {"table_id": "t"}, ["Italy"], [
        ("SELECT Country FROM main_table WHERE Name = 'Party All Night'", _ex(text="country\nItaly", correct=True)),
        ("SELECT", _ex("timeout", "ERROR: timeout", error="timeout")),
    ])],
    "gsm8k": [_problem("g0", "gsm8k", "How much?", {}, 26.0, [
        (GSM_OK, _ex(text="{'Eggs': '13', 'answer': '26'}", correct=True)),
        ("answer = x", _ex("error", "ERROR", error="NameError: name 'x' is not defined")),
        ("x = 1", _ex("error", "ERROR", error="the program defines no answer variable")),
    ])],
    "mbpp": [_problem("m0", "mbpp", "Square a number.", {"test_list": MBPP_TESTS}, "def f(x): return x*x", [
        ("def f(x):\n    return x * x", _ex(text="# return: (int)=1\n# return: (int)=4", correct=True, details={
            "tests": [{"passed": True, "type": "int", "value": "1", "error": None},
                      {"passed": True, "type": "int", "value": "4", "error": None}]})),
        ("def f(x):\n    print(x)", _ex(text="x", details={
            "tests": [{"passed": False, "type": "NoneType", "value": "None", "error": None},
                      {"passed": False, "type": None, "value": None, "error": "ValueError: v"}]})),
        ("def f(x:\n", _ex("error", "ERROR: SyntaxError", error="SyntaxError: invalid syntax")),
    ])],
    # HumanEval (not in LEVER): MBPP's layout, the entry point's docstring as the description
    "humaneval": [_problem("humaneval-0", "humaneval", "unused when the prompt has a docstring",
                           {"prompt": 'def f(x):\n    """Square x.\n    >>> f(2)\n    4\n    """\n', "entry_point": "f",
                            "test": "def check(candidate):\n    assert candidate(3) == 9\n"}, None, [
        ('def f(x):\n    """Square x.\n    >>> f(2)\n    4\n    """\n    return x * x\n',
         _ex(text="# return: (int)=4", correct=True, details={"tests": [{"passed": True, "type": "int", "value": "4",
                                                                          "error": None}]})),
    ])],
}
HUMANEVAL_DESCRIPTION = "Square x.\n>>> f(2)\n4"


def _notes_expected(dataset: str, question: str, program: str, ex: dict, test_list: list[str]) -> str:
    """The verifier input, written from LEVER_NOTES "Verifier inputs"."""
    if dataset in ("spider", "wikitq"):
        result = ex["result_text"] if ex["status"] == "ok" else "ERROR"
        text = f"-- question: {question}\n-- SQL:\n{_notes_lower_code(program, dataset)}\n-- exec result:\n/*\n{result}\n*/"
        return text.replace("\n", "|")
    if dataset == "gsm8k":
        if ex["status"] == "ok":
            result = ex["result_text"]
        elif "no answer" in ex["error"]:
            result = "ERROR: no answer variable"
        else:
            result = "ERROR: program failed to execute"
        return f"{question} | {_notes_lower_code(program, dataset)} | {result}"
    description = HUMANEVAL_DESCRIPTION if dataset == "humaneval" else question
    head = f"# description\n{description}\n\n# program\n{program}\n\n# execution\n"
    if ex["status"] != "ok":
        return head + "ERROR: program is not parsable\n\n"
    lines = []
    for t in ex["details"]["tests"]:
        value = "ERROR: tracing failed" if t["type"] in (None, "NoneType") else f"({t['type']})={t['value']}"
        lines.append(f"# return: {value}\n\n")
    return head + "".join(lines)


@pytest.mark.parametrize("dataset", sorted(CASES))
def test_inputs_match_the_notes(dataset, tmp_path):
    src = tmp_path / "executed.jsonl"
    src.write_text("".join(json.dumps(p) + "\n" for p in CASES[dataset]))
    out = tmp_path / "inputs.jsonl"
    assert main(["inputs", "--input", str(src), "--output", str(out)]) == 0
    got = [json.loads(line) for line in out.read_text().splitlines()]
    want = []
    for problem in CASES[dataset]:
        for index, cand in enumerate(problem["candidates"]):
            ex = cand["execution"]
            want.append({"problem_id": problem["problem_id"], "candidate_index": index,
                         "input": _notes_expected(dataset, problem["question"], cand["program"], ex,
                                                  problem["context"].get("test_list", [])),
                         "target": "yes" if ex["correct"] else "no"})
    assert got == want


def test_inputs_on_every_fixture_and_options(tmp_path):
    for path in sorted(FIXTURES.glob("*/*.executed.jsonl")):
        out = tmp_path / f"{path.parent.name}.jsonl"
        assert main(["inputs", "--input", str(path), "--output", str(out)]) == 0
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        n = sum(len(json.loads(line)["candidates"]) for line in path.read_text().splitlines() if line.strip())
        assert len(rows) == n and {r["target"] for r in rows} <= {"yes", "no"}
    spider = FIXTURES / "spider" / "dev.executed.jsonl"
    out = tmp_path / "cut.jsonl"
    assert main(["inputs", "--input", str(spider), "--output", str(out), "--max-chars", "12",
                 "--truncation", "left_sql", "--style", "legacy"]) == 0
    assert all(json.loads(line)["input"].endswith("*/") and len(json.loads(line)["input"]) == 12
               for line in out.read_text().splitlines())


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    src = tmp_path / "bad.jsonl"
    good = json.dumps(CASES["gsm8k"][0])
    broken = CASES["gsm8k"][0] | {"problem_id": "g1"}
    broken = json.loads(json.dumps(broken))
    del broken["candidates"][0]["execution"]
    src.write_text(good + "\n" + json.dumps(broken) + "\n")
    out = tmp_path / "inputs.jsonl"
    assert main(["inputs", "--input", str(src), "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{src}:2:" in err[0] and "candidates[0].execution" in err[0]
    assert not out.exists()  # atomic: nothing half-written
