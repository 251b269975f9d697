"""Canonical keys and the GSM8k / MBPP / HumanEval executors (through the real sandbox)."""
from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lever_jax.data.schema import Candidate, Problem
from lever_jax.execution.base import Limits
from lever_jax.data.result_keys import canonical_key, is_error_key, unique_error_key
from lever_jax.execution.judge import plan_test
from lever_jax.execution.python_tests import humaneval_tests, split_assert
from lever_jax.execution.registry import get_executor
from lever_jax.execution.runner import RunStats, execute_problems
from lever_jax.execution.sandbox import Sandbox

LIMITS = Limits(timeout_s=5, cpu_s=5, memory_mb=1024)


# -- canonical keys -------------------------------------------------------------------------------
def test_canonical_float_rules():
    assert canonical_key(3) == canonical_key(3.0) == canonical_key(3.0000000001) == "3"
    assert canonical_key(0.1 + 0.2) == canonical_key(0.3)
    assert canonical_key(-0.0) == canonical_key(0) == "0"
    assert canonical_key(1.5) != canonical_key(1.50001)
    assert canonical_key(float("nan")) == "nan"
    assert canonical_key(float("inf")) == "inf" and canonical_key(-math.inf) == "-inf"
    assert canonical_key(True) != canonical_key(1) != canonical_key("1")
    assert canonical_key([1, 2]) != canonical_key((1, 2))
    assert canonical_key({"b": 1, "a": 2}) == canonical_key({"a": 2, "b": 1})
    assert canonical_key({3, 1, 2}) == canonical_key({2, 3, 1})


def test_canonical_large_values_are_truncated_with_digest():
    big, other = list(range(10000)), list(range(10000))
    other[-1] = -1
    assert len(canonical_key(big)) < 600
    assert canonical_key(big) != canonical_key(other)
    assert "sha256" in canonical_key("x" * 10000)


def test_canonical_masks_addresses_and_survives_hostile_repr():
    class Thing:
        pass

    class Hostile:
        def __repr__(self):
            raise RuntimeError("no")

    assert canonical_key(Thing()) == canonical_key(Thing())
    assert "0x?" in canonical_key(Thing())
    assert canonical_key(Hostile()).startswith("<Hostile:")


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12))
def test_canonical_float_grid(x):
    assert canonical_key(x) == canonical_key(round(x, 6))
    assert canonical_key(x) == canonical_key(float(canonical_key(x)))


def test_canonical_key_is_deterministic_across_processes():
    value = "{'a', 'b', 'c', ('d', 1.25)}"
    code = f"from lever_jax.data.result_keys import canonical_key; print(canonical_key({value}))"
    outs = set()
    for seed in ("1", "2", "3"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout)
    assert len(outs) == 1


def test_unique_error_keys():
    keys = {unique_error_key("p", i) for i in range(100)}
    assert len(keys) == 100 and all(is_error_key(k) for k in keys)
    assert not is_error_key(canonical_key("x"))


# -- executors --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(workers=2, limits=LIMITS) as box:
        yield box


def run(sandbox, problems, dataset, **options):
    return list(execute_problems(problems, get_executor(dataset, options), sandbox, None, progress=False))


def gsm(pid, gold, *programs, source=None):
    return Problem(pid, "gsm8k", "q", {}, gold, tuple(Candidate(p, source=source) for p in programs))


def test_gsm8k_faithful_cot_conventions(sandbox):
    """The bundled pools' option (``convention=faithful_cot``); LEVER's default: test_gsm8k_lever.py."""
    problems = [
        gsm("a", 18.0, "eggs = 16 - 3 - 4\nanswer = eggs * 2", "answer = 18.0000001", "answer = 17.9",
            "def solution():\n    return 9 * 2", "x = 1", "answer = 1 / 0", "answer = sqrt(324)  #",
            "answer = lcm(6, 9)"),
        gsm("b", 2.0, "x = Symbol('x')\nsol = solve_it(Eq(3 * x + 1, 7), x)\nanswer = sol[x]"),
        gsm("c", 3.33, "import numpy as np\ndef solver():\n    return np.float64(10) / 3\nans = solver()",
            source="pot_codex_fewshot"),
        gsm("d", 14.0, "ans = (14.0, 15.0)", source="pot_codex_zeroshot"),
    ]
    a, b, c, d = run(sandbox, problems, "gsm8k", convention="faithful_cot")
    ex = [cand.execution for cand in a.candidates]
    assert [e.status for e in ex] == ["ok", "ok", "ok", "ok", "error", "error", "ok", "ok"]
    assert [e.correct for e in ex] == [True, True, False, True, False, False, True, True]
    assert ex[0].result_key == ex[1].result_key == ex[3].result_key == ex[6].result_key == "18"
    assert ex[7].details["answer"] == 18  # lcm from Faithful-CoT's prelude
    assert ex[0].result_text == "{'eggs': '9', 'answer': '18'}"  # prelude names and modules left out
    assert ex[4].result_text == "ERROR" and "no answer" in ex[4].error
    assert ex[5].result_key != ex[4].result_key and is_error_key(ex[5].result_key)
    assert b.candidates[0].execution.correct and b.candidates[0].execution.details["answer"] == 2.0
    assert c.candidates[0].execution.details["answer"] == 3.33 and c.candidates[0].execution.correct
    assert d.candidates[0].execution.correct  # PoT takes the first element of a tuple


def test_gsm8k_identical_errored_programs_never_group(sandbox):
    (p,) = run(sandbox, [gsm("e", 1.0, "answer = undefined_name", "answer = undefined_name ", "answer = 1")], "gsm8k")
    keys = [c.execution.result_key for c in p.candidates]
    assert len(set(keys)) == 3


def mbpp(pid, tests, *programs, setup=""):
    ctx = {"test_list": tests, "test_setup_code": setup, "challenge_test_list": []}
    return Problem(pid, "mbpp", "q", ctx, programs[0], tuple(Candidate(p) for p in programs))


def test_split_assert():
    assert split_assert("assert f(1, 2) == 3") == ("f(1, 2)", "assert __lever_return_value__ == 3")
    assert split_assert("assert math.isclose(f(2), 4.0, rel_tol=1e-3)")[0] == "f(2)"
    assert split_assert("assert not is_odd(4)")[0] == "is_odd(4)"
    assert split_assert("assert set(f([1, 2])) == {1, 2}")[0] == "f([1, 2])"
    assert split_assert("assert abs(area(2) - 12.56) < 0.01")[0] == "area(2)"
    assert split_assert("x = 1") is None


def test_mbpp_returns_keys_and_text(sandbox):
    tests = ["assert add(1, 2) == 3", "assert add(2, 2) == 4"]
    problem = mbpp("m", tests, "def add(a, b):\n    return a + b", "def add(a, b):\n    return a * b",
                   "def add(a, b):\n    return b + a", "def add(a, b):\n    raise ValueError(a)", "def add(a, b) return")
    (p,) = run(sandbox, [problem], "mbpp")
    gold, times, swapped, raising, broken = [c.execution for c in p.candidates]
    assert gold.correct and swapped.correct and not times.correct
    assert gold.result_key == swapped.result_key != times.result_key
    assert gold.result_text == "# return: (int)=3\n# return: (int)=4"
    assert times.details["tests"][0]["passed"] is False and times.details["tests"][1]["passed"] is True
    assert raising.status == "error" and not raising.correct and is_error_key(raising.result_key)  # LEVER: a raising call
    assert raising.error == "test 0: ValueError: 1"
    assert raising.result_text == "# return: ERROR: tracing failed\n# return: ERROR: tracing failed"
    assert broken.status == "error" and broken.result_text == "ERROR: program is not parsable"


def test_mbpp_setup_code_and_sanitized_candidate(sandbox):
    p1 = mbpp("s", ["assert f() == 5"], "def f():\n    return BASE", setup="BASE = 5")
    ctx = {"test_list": ["assert candidate(2) == 4"], "test_setup_code": "", "challenge_test_list": [],
           "entry_point": "sq"}
    p2 = Problem("t", "mbpp", "q", ctx, "", (Candidate("def sq(x):\n    return x * x"),))
    a, b = run(sandbox, [p1, p2], "mbpp")
    assert a.candidates[0].execution.correct and b.candidates[0].execution.correct


def test_humaneval_test_derivation():
    source = "METADATA = {}\n\ndef check(candidate):\n    assert candidate(1) == 2\n    assert True\n    assert abs(candidate(2) - 3) < 1e-6\n"
    assert humaneval_tests(source, "inc") == ["assert inc(1) == 2", "assert abs(inc(2) - 3) < 1e-06"]
    # loops, variables, comprehensions, a bare `print`, seeded random inputs: unrolled into plain asserts
    loop = ("def check(candidate):\n    print\n    for x in range(3):\n        assert candidate(x) == x + 1\n"
            "    lst = [i * i for i in range(4) if i % 2]\n    assert candidate(lst) == sum(lst), 'message'\n")
    assert humaneval_tests(loop, "inc") == ["assert inc(0) == 0 + 1", "assert inc(1) == 1 + 1", "assert inc(2) == 2 + 1",
                                            "assert inc([1, 9]) == sum([1, 9])"]
    rand = ("def check(candidate):\n    import random\n    for i in range(3):\n"
            "        x = random.randint(0, 9)\n        assert candidate(x) == x + 1\n")
    assert humaneval_tests(rand, "inc") == humaneval_tests(rand, "inc")  # the same every time (seeded)
    with_math = "def check(candidate):\n    import math\n    for x in range(2):\n        assert math.isclose(candidate(x), x / 3)\n"
    assert humaneval_tests(with_math, "f") == ["assert math.isclose(f(0), 0 / 3)", "assert math.isclose(f(1), 1 / 3)"]
    assert len(humaneval_tests(rand, "inc")) == 3 and humaneval_tests(rand, "inc")[0].startswith("assert inc(")
    # a helper the prompt defines (HumanEval/38, /50): evaluated here with the prompt's definition;
    # one nobody (or only the program) defines: the whole check runs in the child
    helper = "def check(candidate):\n    for x in range(3):\n        y = encode(x)\n        assert candidate(y) == x\n"
    prompt = 'def encode(x):\n    return [x * 2 for _ in range(x)]\n\n\ndef dec(y):\n    """doc"""\n'
    assert humaneval_tests(helper, "dec", prompt) == ["assert dec([]) == 0", "assert dec([2]) == 1",
                                                      "assert dec([4, 4]) == 2"]
    assert humaneval_tests(helper, "dec") == ["check(dec)"]
    # a candidate call bound to a name (HumanEval/32) stays a call in the asserts that use the name;
    # arguments that call something are evaluated here; a value used otherwise is not unrolled
    outside = ("def check(candidate):\n    import copy\n    xs = [1, 2]\n    y = candidate(copy.deepcopy(xs))\n"
               "    assert abs(y - 2) < 1e-6\n")
    assert humaneval_tests(outside, "inc") == ["assert abs(inc([1, 2]) - 2) < 1e-06"]
    used = "def check(candidate):\n    y = candidate(1)\n    z = y + 1\n    assert z == 3\n"
    assert humaneval_tests(used, "inc") == ["check(inc)"]
    # an assert calling a function the judge does not own would be answered by the program: not unrolled
    unknown = "def check(candidate):\n    x = 1\n    assert candidate(x) == encode(x)\n"
    assert humaneval_tests(unknown, "dec") == ["check(dec)"]
    assert humaneval_tests(unknown, "dec", prompt) == ["assert dec(1) == encode(1)"]
    # unrolling is bounded (the test file is data): 10,000 x 10,000 iterations are not unrolled
    nested = "def check(candidate):\n    x = [[j for j in range(10000)] for i in range(10000)]\n    assert candidate(x)\n"
    assert humaneval_tests(nested, "f") == ["check(f)"]


def test_unrolled_humaneval_problems_keep_gold_verdicts(sandbox):
    """HumanEval/44, /53, /129, /151 (a loop, random inputs, a bare print, helper variables) and
    /32, /38, /50 (the prompt's helpers, a candidate call bound to a name) split into judged asserts;
    their canonical solutions still pass, a wrong program still fails; no HumanEval test is judged
    in the child."""
    from lever_jax.data.datasets import gold_program, load_problems

    wanted = {"humaneval-44", "humaneval-53", "humaneval-129", "humaneval-151", "humaneval-32", "humaneval-38",
              "humaneval-50"}
    executor = get_executor("humaneval")
    everything = load_problems("humaneval", "test")
    assert [p.problem_id for p in everything if any(t.legacy for t in executor.plans_for(p)[1])] == []
    problems = [p for p in everything if p.problem_id in wanted]
    assert len(problems) == 7
    wrong = "def {}(*args):\n    return None\n"
    candidates = [p.replace(candidates=(Candidate(gold_program("humaneval", p)),
                                        Candidate(wrong.format(p.context["entry_point"])))) for p in problems]
    out = list(execute_problems(candidates, executor, sandbox, None, progress=False, stats=RunStats()))
    for problem in out:
        gold, bad = (c.execution for c in problem.candidates)
        assert gold.correct and gold.details["unverified_tests"] == 0, (problem.problem_id, gold.error)
        assert not bad.correct, problem.problem_id


def _bundled(dataset, split, n):
    from lever_jax.data.datasets import gold_program, load_problems

    problems = load_problems(dataset, split)  # bundled in the package: missing data fails
    return [p.replace(candidates=(Candidate(gold_program(dataset, p)),)) for p in problems[:n]]


def test_bundled_gold_programs_pass(sandbox):
    for dataset, split, n in (("humaneval", "test", 40), ("mbpp", "test", 40)):
        stats = RunStats()
        out = list(execute_problems(_bundled(dataset, split, n), get_executor(dataset), sandbox, None,
                                    progress=False, stats=stats))
        failed = [p.problem_id for p in out if not p.candidates[0].execution.correct]
        assert failed == [], (dataset, failed)
