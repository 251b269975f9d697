"""Trusted helpers: the prompt's helper functions, evaluated by the judge (no sandbox needed: fast)."""
from __future__ import annotations

import math

from lever_jax.data.schema import Candidate, Problem
from lever_jax.execution import plain
from lever_jax.execution.base import SandboxResult
from lever_jax.execution.judge import judge, plan_test
from lever_jax.execution.python_tests import HumanEvalExecutor
from lever_jax.execution.trusted_eval import trusted_helpers

POLY_PROMPT = '''import math


def poly(xs: list, x: float):
    """Evaluates polynomial with coefficients xs at point x."""
    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])


def find_zero(xs: list):
    """doc"""
'''
CYCLIC = '''def encode_cyclic(s: str):
    """doc"""
    # split string to groups. Each of length 3.
    groups = [s[(3 * i):min((3 * i + 3), len(s))] for i in range((len(s) + 2) // 3)]
    groups = [(group[1:] + group[0]) if len(group) == 3 else group for group in groups]
    return "".join(groups)


def twice(s: str):
    if not s:
        return s
    out = []
    for ch in encode_cyclic(s):
        out.append(ch)
    return encode_cyclic("".join(out))


def decode_cyclic(s: str):
    """doc"""
'''


def test_trusted_helpers_match_the_prompt_definitions():
    namespace: dict = {}
    exec(POLY_PROMPT + CYCLIC, namespace)  # noqa: S102 - the test's own reference
    helpers = trusted_helpers(POLY_PROMPT + CYCLIC, "find_zero")
    assert sorted(helpers) == ["decode_cyclic", "encode_cyclic", "poly", "twice"]
    for xs, x in (([1, 2], -0.5), ([-6, 11, -6, 1], 2.0), ([3], 7), ([1, 1], True)):
        assert helpers["poly"](xs, x) == namespace["poly"](xs, x)
    for s in ("", "a", "abcd", "hello world", "xyzxyzxyzq"):
        assert helpers["encode_cyclic"](s) == namespace["encode_cyclic"](s)
        assert helpers["twice"](s) == namespace["twice"](s)  # if, for, append, a nested helper call
    assert "find_zero" not in helpers  # the entry point is the candidate's


def test_helpers_the_evaluator_cannot_run_are_left_out():
    prompt = ("import os\n\n\ndef shell(x):\n    return os.system(x)\n\n\n"
              "def loop(x):\n    while x:\n        x -= 1\n    return x\n\n\n"
              "def kw(x, y=1):\n    return x + y\n\n\ndef ok(x):\n    return x + 1\n\n\ndef f(x):\n    pass\n")
    assert sorted(trusted_helpers(prompt, "f")) == ["ok"]
    calls = ("def a(x):\n    return b(x)\n\n\ndef b(x):\n    return g(x)\n\n\n"
             "def c(x):\n    return f(x)\n\n\ndef f(x):\n    pass\n")
    assert trusted_helpers(calls, "f") == {}  # b calls an unknown g, a calls b, c calls the candidate's f
    assert trusted_helpers("def broken(:\n", "f") == {}


def test_trusted_helpers_are_bounded():
    prompt = ("def big(n):\n    return [i for i in range(n)]\n\n\ndef rec(n):\n    return rec(n)\n\n\n"
              "def f(x):\n    pass\n")
    helpers = trusted_helpers(prompt, "f")
    assert helpers["big"](3) == [0, 1, 2]
    for call in (lambda: helpers["big"](10 ** 9), lambda: helpers["rec"](1)):
        try:
            call()
        except ValueError as err:  # Unsupported: too long / nested too deep
            assert "too" in str(err)
        else:
            raise AssertionError("an unbounded helper call returned")


def test_judge_calls_only_the_trusted_helper():
    helpers = trusted_helpers(POLY_PROMPT, "find_zero")
    plan = plan_test("assert math.fabs(poly([1, 2], find_zero([1, 2]))) < 0.0001", tuple(helpers))
    assert not plan.legacy and plan.calls == ("find_zero([1, 2])",) and plan.helpers == ("poly",)
    assert judge(plan, [-0.5], helpers) and not judge(plan, [0.0], helpers)
    assert not judge(plan, ["x"], helpers) and not judge(plan, [10 ** 400], helpers)
    assert not judge(plan, [-0.5], {})  # the helper missing: a failure, never a pass
    # without helpers the program would answer the whole poly(...) call: the unroller never emits that
    assert plan_test("assert math.fabs(poly([1, 2], find_zero([1, 2]))) < 0.0001").calls == (
        "poly([1, 2], find_zero([1, 2]))",)


def _answers(*values):
    return SandboxResult(status="ok", value={"tests": [{"answers": [{"v": plain.encode(v)}]} for v in values]})


def test_humaneval_check_with_a_prompt_helper_is_judged_in_the_parent():
    check = ("METADATA = {}\n\n\ndef check(candidate):\n    import math\n    import copy\n"
             "    for xs in [[1, 2], [4, -2]]:\n        solution = candidate(copy.deepcopy(xs))\n"
             "        assert math.fabs(poly(xs, solution)) < 1e-4\n")
    problem = Problem("h", "humaneval", "q", {"test": check, "entry_point": "find_zero", "prompt": POLY_PROMPT}, "", ())
    ex = HumanEvalExecutor()
    program = "def poly(xs, x):\n    return 0\n\ndef find_zero(xs):\n    return 0.0\n"
    task = ex.make_task(problem, Candidate(program))
    assert task.payload["tests"] == [{"calls": ["find_zero([1, 2])"]}, {"calls": ["find_zero([4, -2])"]}]
    assert "def check" not in task.payload["setup"] and "1e-4" not in repr(task.payload)
    assert not ex.to_execution(problem, Candidate(program), _answers(0.0, 0.0)).correct
    execution = ex.to_execution(problem, Candidate(program), _answers(-0.5, 2.0))
    assert execution.correct and execution.details["unverified_tests"] == 0
    assert math.isclose(float(execution.details["tests"][0]["value"]), -0.5)


def test_the_test_modules_definitions_win():
    """HumanEval appends the test module to the program: its functions replace the prompt's."""
    prompt = "def enc(s):\n    return s + 'p'\n\n\ndef dec(s):\n    pass\n"
    test = "def enc(s):\n    return s + 't'\n\n\ndef check(candidate):\n    assert candidate(enc('a')) == 'a'\n"
    assert trusted_helpers(prompt, "dec")["enc"]("x") == "xp"
    helpers = trusted_helpers(prompt, "dec", test)
    assert helpers["enc"]("x") == "xt" and "check" not in helpers
    unrunnable = "def enc(s):\n    while s:\n        pass\n\n\ndef check(candidate):\n    pass\n"
    assert "enc" not in trusted_helpers(prompt, "dec", unrunnable)  # never the prompt's in its place
