"""`status` follows LEVER's definition: an MBPP / HumanEval program whose test call raises is an
execution error, so ML + EP (the most likely program among those that execute without error)
prunes it -- through `lever-jax execute` and `lever-jax rerank`, the commands a user runs."""
from __future__ import annotations

import json

import pytest

from lever_jax.cli.main import main as cli_main
from lever_jax.data.jsonl import read_problems

RAISES = "def add(a, b):\n    raise ValueError(a)"
RIGHT = "def add(a, b):\n    return a + b"
WRONG = "def add(a, b):\n    return a * b"
HALF = "def add(a, b):\n    return 10 // (a - 1)"  # the first call raises, the second returns 10


def _mbpp(pid: str) -> dict:
    return {"problem_id": pid, "dataset": "mbpp", "question": "Add two numbers.",
            "context": {"test_list": ["assert add(1, 2) == 3", "assert add(2, 5) == 7"], "test_setup_code": ""},
            "gold": RIGHT,
            "candidates": [{"program": RAISES, "gen_logprob": -1.0}, {"program": RIGHT, "gen_logprob": -3.0},
                           {"program": WRONG, "gen_logprob": -5.0}, {"program": HALF, "gen_logprob": -2.0}]}


def _execute(tmp_path, dataset: str, rows: list[dict], *extra: str) -> list:
    samples, out = tmp_path / "samples.jsonl", tmp_path / f"{dataset}.executed.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli_main(["execute", "--dataset", dataset, "--input", str(samples), "--output", str(out),
                     "--cache-dir", str(tmp_path / "cache"), "--no-progress", "--workers", "1", *extra]) == 0
    return list(read_problems(out, require_execution=True))


def test_mbpp_raising_calls_are_an_execution_error_that_ml_ep_prunes(tmp_path, capsys):
    problems = _execute(tmp_path, "mbpp", [_mbpp("m0"), _mbpp("m1")])
    raises, right, wrong, half = (c.execution for c in problems[0].candidates)
    assert raises.status == "error" and "ValueError: 1" in raises.error and not raises.correct
    assert raises.result_text == "# return: ERROR: tracing failed\n# return: ERROR: tracing failed"  # LEVER's input
    assert right.status == "ok" and right.correct and right.error is None
    assert wrong.status == "ok" and not wrong.correct  # a wrong value is a failed test, not an error
    assert half.status == "error" and half.error == "test 0: ZeroDivisionError: integer division or modulo by zero"
    # the verifier still reads LEVER's per-call lines: the call that returned shows its value
    inputs = tmp_path / "inputs.jsonl"
    assert cli_main(["inputs", "--input", str(tmp_path / "mbpp.executed.jsonl"), "--output", str(inputs)]) == 0
    rows = [json.loads(line) for line in inputs.read_text().splitlines()]
    assert rows[3]["input"].endswith("# execution\n# return: ERROR: tracing failed\n\n# return: (int)=10\n\n"), rows[3]
    metrics = tmp_path / "m.json"
    assert cli_main(["rerank", "--input", str(tmp_path / "mbpp.executed.jsonl"), "--metrics", str(metrics),
                     "--bootstrap", "20"]) == 0
    got = {k: v["accuracy"] for k, v in json.loads(metrics.read_text()).items()}
    assert got["max_gen_prob"] == 0.0 and got["ml_ep"] == 1.0


HUMANEVAL_PROMPT = '''def add(x: int, y: int):
    """Add two numbers x and y
    >>> add(2, 3)
    5
    add(0, 'a') ➞ error
    """
'''


@pytest.mark.parametrize("inputs", ["docstring", "hidden"])
def test_humaneval_raising_calls_are_an_execution_error(tmp_path, capsys, inputs):
    row = {"problem_id": "humaneval-53", "dataset": "humaneval", "question": "Add two numbers",
           "context": {"prompt": HUMANEVAL_PROMPT, "entry_point": "add",
                       "test": "def check(candidate):\n    assert candidate(100, 1) == 101\n"},
           "candidates": [{"program": HUMANEVAL_PROMPT + "    raise ValueError(x)\n"},
                          {"program": HUMANEVAL_PROMPT + "    return x + y\n"}]}
    (problem,) = _execute(tmp_path, "humaneval", [row], "--humaneval-inputs", inputs)
    raises, right = (c.execution for c in problem.candidates)
    assert raises.status == "error" and "ValueError" in raises.error and not raises.correct
    # the right program raises only on the example documented as an error: it executes without error
    assert right.status == "ok" and right.correct and right.error is None


def test_a_timeout_reads_the_same_whichever_limit_fired(tmp_path, capsys):
    """The wall clock or the CPU limit fires first depending on the machine's load: the verifier's
    input (result_text) is the same for both, so training does not depend on load; `error` says
    which (the same MBPP pool run twice on this machine differed only there, and so did its verifier)."""
    from lever_jax.data.schema import problem_from_dict
    from lever_jax.execution.base import TIMEOUT_TEXT, SandboxResult
    from lever_jax.execution.python_tests import HumanEvalExecutor, MBPPExecutor
    from lever_jax.execution.sql import SpiderExecutor

    sleeps = {**_mbpp("t0"), "candidates": [{"program": "import time\ndef add(a, b):\n    time.sleep(30)",
                                             "gen_logprob": -1.0}]}
    (ran,) = _execute(tmp_path, "mbpp", [sleeps], "--timeout", "1")[0].candidates
    assert ran.execution.status == "timeout" and ran.execution.result_text == TIMEOUT_TEXT
    assert "wall-clock limit" in ran.execution.error
    problem = problem_from_dict(sleeps)
    for executor in (MBPPExecutor(), HumanEvalExecutor(), SpiderExecutor()):
        seen = {executor.to_execution(problem, problem.candidates[0], SandboxResult("timeout", error=e)).result_text
                for e in ("wall-clock limit of 10.0 s", "CPU limit of 10 s")}
        assert seen == {TIMEOUT_TEXT}, (type(executor).__name__, seen)
