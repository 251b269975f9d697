"""HumanEval like for like: visible calls only feed the verifier and the grouping; hidden tests judge."""
from __future__ import annotations

import pytest

from lever_jax.execution.humaneval_inputs import (codet_calls, docstring_calls, execute_like_for_like, visible_asserts)
from lever_jax.data.schema import Candidate, Problem
from lever_jax.execution.base import Limits
from lever_jax.execution.cache import ExecutionCache
from lever_jax.execution.sandbox import Sandbox
from lever_jax.inputs.serialize import serialize

PROMPT = '''def add(x: int, y: int):
    """Add two numbers x and y
    >>> add(2, 3)
    5
    >>> add(5, 7)
    12
    For example: add(1, 1) ==> 2
    add(0, 'a') ➞ error
    """
'''
HIDDEN = "def check(candidate):\n    assert candidate(100, 1) == 101\n    assert candidate(-4, 4) == 0\n"


def _problem(candidates=()):
    ctx = {"prompt": PROMPT, "entry_point": "add", "test": HIDDEN}
    return Problem("humaneval-53", "humaneval", "Add two numbers", ctx, None, tuple(candidates))


def test_docstring_and_codet_calls():
    assert docstring_calls(PROMPT, "add") == [("add(2, 3)", "5"), ("add(5, 7)", "12"), ("add(1, 1)", "2"),
                                              ("add(0, 'a')", None)]
    assert codet_calls(["assert add(1, 2) == 3", "assert _____ == add(4, 4)", "assert not_it(1) == 2",
                        "assert add(x) == y"], "add") == [("add(1, 2)", "3"), ("add(4, 4)", None), ("add(x)", None)]
    p = _problem()
    assert visible_asserts(p) == ["assert add(2, 3) == 5", "assert add(5, 7) == 12", "assert add(1, 1) == 2",
                                  "assert add(0, 'a') == None"]
    assert visible_asserts(p, "codet", codet={"humaneval-53": ["assert add(9, 9) == 18"]}) == ["assert add(9, 9) == 18"]
    bare = p.replace(context=dict(p.context, prompt="def add(x, y):\n    pass\n"))  # no examples: CodeT's
    assert visible_asserts(bare, codet={"humaneval-53": ["assert add(9, 9) == 18"]}) == ["assert add(9, 9) == 18"]
    assert visible_asserts(p, "hidden") == [] and len(visible_asserts(p, max_calls=2)) == 2
    with pytest.raises(ValueError, match="source"):
        visible_asserts(p, "tests")


def test_like_for_like_execution_never_shows_hidden_calls(tmp_path):
    right = PROMPT + "    return x + y\n"
    big = PROMPT + "    return x + y if x < 50 else 0\n"  # passes the visible examples, fails hidden
    p = _problem([Candidate(right), Candidate(big)])
    with Sandbox(workers=1, limits=Limits(timeout_s=10, cpu_s=5)) as box, ExecutionCache(tmp_path) as cache:
        (visible,) = execute_like_for_like([p], box, cache, max_calls=3)  # the raising example left out
        (raising,) = execute_like_for_like([p], box, cache)
        (upper,) = execute_like_for_like([p], box, cache, source="hidden")
    a, b = (c.execution for c in visible.candidates)
    assert a.correct and not b.correct  # judged by the hidden tests
    assert a.result_key == b.result_key  # grouped by the visible calls only: same results there
    assert a.details["hidden"]["correct"] and a.details["verifier_inputs"] == "docstring"
    text = serialize(visible, visible.candidates[1])
    assert text.endswith("# execution\n# return: (int)=5\n\n# return: (int)=12\n\n# return: (int)=2\n\n")
    r = serialize(raising, raising.candidates[0])
    assert r.endswith("# return: (int)=2\n\n# return: ERROR: tracing failed\n\n")  # a call that raised
    ra, rb = (c.execution for c in raising.candidates)
    assert ra.result_key != rb.result_key and ra.correct  # a raising call: no group (as LEVER's MBPP)
    assert "101" not in text.split("# execution")[1]
    ua, ub = (c.execution for c in upper.candidates)
    assert ua.result_key != ub.result_key and ua.details["verifier_inputs"] == "hidden"  # the upper bound sees them
    assert "(int)=101" in serialize(upper, upper.candidates[0])
