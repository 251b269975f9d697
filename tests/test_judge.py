"""The assert judge and the plain-data boundary (no sandbox needed: fast)."""
from __future__ import annotations

import collections
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lever_jax.data.schema import Problem
from lever_jax.execution import plain
from lever_jax.execution.base import SandboxResult
from lever_jax.execution.judge import judge, plan_test
from lever_jax.execution.check_unroll import without_check
from lever_jax.execution.python_tests import MBPPExecutor

_scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text() | st.binary()
            | st.complex_numbers(allow_nan=False))
_hashable = st.recursive(_scalars, lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3),
                         max_leaves=8)
_plain = st.recursive(
    _scalars,
    lambda inner: (st.lists(inner, max_size=4) | st.tuples(inner, inner) | st.sets(_hashable, max_size=4)
                   | st.dictionaries(_hashable, inner, max_size=4)),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(_plain)
def test_plain_round_trip_keeps_value_and_type(value):
    back = plain.decode(plain.encode(value))
    assert back == value and type(back) is type(value)


def test_plain_rejects_program_objects():
    class Int(int):
        def __eq__(self, other):
            return True

    class Yes:
        def __eq__(self, other):
            return True

    class Sneaky(collections.Counter):
        pass

    for value in (Int(3), Yes(), [1, Yes()], {"a": Int(1)}, (x for x in []), Sneaky(), object(), range(3), {1: {2: map}}):
        with pytest.raises(plain.NotPlain):
            plain.encode(value)
    assert plain.decode(plain.encode(collections.Counter("aab"))) == {"a": 2, "b": 1}  # stdlib dict kinds: content only
    deep: list = []
    for _ in range(100):
        deep = [deep]
    with pytest.raises(plain.NotPlain):
        plain.encode(deep)


@pytest.mark.parametrize("wire", [{"x": 1}, {"i": 3}, {"i": "zz"}, {"s": [{"l": []}]}, {"d": [[1]]}, [1], 1.5, 3,
                                  {"f": "1" * 100}, {"i": "1", "f": "2"}])
def test_plain_decode_is_strict(wire):
    with pytest.raises(plain.NotPlain):
        plain.decode(wire)


@pytest.mark.parametrize("test,calls,values,verdict", [
    ("assert add(1, 2) == 3", ["add(1, 2)"], [3], True),
    ("assert add(1, 2) == 3", ["add(1, 2)"], [4], False),
    ("assert add(1, 2) == 3", ["add(1, 2)"], [3.0], True),
    ("assert math.isclose(f(0.1), 0.3, rel_tol=1e-9)", ["f(0.1)"], [0.1 + 0.2], True),
    ("assert math.isclose(f(0.1), 0.3)", ["f(0.1)"], [0.31], False),
    ("assert abs(f(2) - 1.414) < 0.01", ["f(2)"], [math.sqrt(2)], True),
    ("assert set(f([1, 1, 2])) == {1, 2}", ["f([1, 1, 2])"], [[2, 1, 1]], True),
    ("assert sorted(f(x=[3, 1])) == [1, 3]", ["f(x=[3, 1])"], [(3, 2)], False),
    ("assert sorted(f(x=[3, 1])) == [1, 3]", ["f(x=[3, 1])"], [[3, 1]], True),
    ("assert not f(3)", ["f(3)"], [False], True),
    ("assert f(1)[0] == 'a'", ["f(1)"], [["a"]], True),
    ("assert f(1) == g(2)", ["f(1)", "g(2)"], [5, 5], True),
    ("assert f(g(2)) == 1", ["f(g(2))"], [1], True),
    ("assert f('x').count(1) == 2", ["f('x').count(1)"], [2], True),
    ("assert isinstance(f(1), int) and f(1) == 2", ["f(1)", "f(1)"], [2, 2], True),
    ("assert f(1) == float('inf')", ["f(1)"], [math.inf], True),
    ("assert f(1) == [1] * 3", ["f(1)"], [[1, 1, 1]], True),
    ("assert f(1) == 2 ** 10", ["f(1)"], [1024], True),
    ("assert f(2) == (-2+3j)", ["f(2)"], [complex(-2, 3)], True),
    ("assert f(1) == 2 ** 10 ** 10", ["f(1)"], [1], False),  # refused: too big for the judge
])
def test_judge_splits_and_judges(test, calls, values, verdict):
    plan = plan_test(test)
    assert not plan.legacy and list(plan.calls) == calls
    assert judge(plan, values) is verdict


@pytest.mark.parametrize("test", [
    "assert all(f(x) == x for x in range(3))",   # comprehension
    "assert f(1) == EXPECTED",                   # a name from the setup code
    "assert sum([1, 2]) == 3",                   # no candidate call: the function under test shadows a helper
    "check(f)",                                   # not an assert
    "assert f(1) == 1\nassert f(2) == 2",         # two statements
    "assert sorted(f(1), key=lambda v: -v) == [1]",
    "assert f(1) == [i for i in range(3)]",     # a comprehension on the expected side
])
def test_unsplittable_tests_are_legacy(test):
    assert plan_test(test).legacy


def _mbpp_result(tests):
    return SandboxResult(status="ok", value={"tests": tests})


def test_parent_rejects_records_of_the_wrong_shape():
    ex = MBPPExecutor()
    problem = Problem("p", "mbpp", "q", {"test_list": ["assert f(1) == 1", "assert f(2) == 2"]}, "", ())
    from lever_jax.data.schema import Candidate

    cand = Candidate("def f(x):\n    return x")
    good = [{"answers": [{"v": plain.encode(1)}]}, {"answers": [{"v": plain.encode(2)}]}]
    assert ex.to_execution(problem, cand, _mbpp_result(good)).correct
    forged = [
        good[:1],                                                          # one result missing
        good + good[:1],                                                   # one too many
        [],                                                                # none at all
        [{"legacy": True, "passed": True, "returned": True}] * 2,          # "trust me" records
        [{"answers": [{"v": 1}]}, good[1]],                                # not the wire form
        [{"answers": [{"v": plain.encode(1)}, {"v": plain.encode(1)}]}, good[1]],  # extra answers
        [{"answers": []}, good[1]],
        [{"passed": True}, good[1]],
    ]
    for tests in forged:
        execution = ex.to_execution(problem, cand, _mbpp_result(tests))
        assert not execution.correct and execution.status == "error", tests
        assert "invalid result record" in execution.error
    wrong = [{"answers": [{"v": plain.encode(1)}]}, {"answers": [{"v": plain.encode(3)}]}]
    assert not ex.to_execution(problem, cand, _mbpp_result(wrong)).correct


def test_legacy_tests_are_flagged():
    ex = MBPPExecutor()
    problem = Problem("p", "mbpp", "q", {"test_list": ["assert all(f(x) == x for x in range(3))"]}, "", ())
    from lever_jax.data.schema import Candidate

    task = ex.make_task(problem, Candidate("def f(x):\n    return x"))
    assert task.payload["tests"] == [{"legacy": "assert all(f(x) == x for x in range(3))"}]
    record = {"legacy": True, "passed": True, "returned": True, "type": "NoneType", "value": "None", "key": "None"}
    execution = ex.to_execution(problem, Candidate("x"), _mbpp_result([record]))
    assert execution.details["unverified_tests"] == 1 and execution.details["tests"][0]["judge"] == "child"


def test_child_payload_holds_no_expected_values():
    ex = MBPPExecutor()
    problem = Problem("p", "mbpp", "q", {"test_list": ["assert add(1, 2) == 31337"]}, "", ())
    from lever_jax.data.schema import Candidate

    task = ex.make_task(problem, Candidate("def add(a, b):\n    return a - b"))
    assert "31337" not in repr(task.payload)
    module = "METADATA = {'x': 1}\n\nimport math\n\ndef check(candidate):\n    assert candidate(1) == 4242\n"
    assert "4242" not in without_check(module) and "import math" in without_check(module)
