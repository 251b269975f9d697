"""Gold programs in training (LEVER): which problems get one, and that it is executed, not copied."""
from __future__ import annotations

import pytest

from lever_jax.data.schema import Candidate, Execution, Problem
from lever_jax.execution.base import Limits
from lever_jax.execution.cache import ExecutionCache
from lever_jax.execution.python_tests import MBPPExecutor
from lever_jax.execution.sandbox import Sandbox
from lever_jax.inputs.feeds import append_gold, gold_to_add, with_gold

MBPP_CONTEXT = {"task_id": 7, "test_list": ["assert add(1, 2) == 3", "assert add(0, 0) == 0"], "test_setup_code": ""}


def _executed(program: str, correct: bool, key: str = "k") -> Candidate:
    return Candidate(program, execution=Execution("ok", key, "t", correct=correct))


def _spider(candidates, gold="SELECT Name FROM singer WHERE Country = 'France'"):
    return Problem("s1", "spider", "q", {"db_id": "concert_singer"}, gold, tuple(candidates))


def test_sql_gold_added_unless_its_lower_code_is_a_candidate():
    # lower_code equal (case of unquoted words, " vs ') -> not added, even though the text differs
    same = _spider([_executed('select name from SINGER where country = "France"', False)])
    assert gold_to_add(same) is None
    # a quoted value in another case is a different program -> added
    other = _spider([_executed("select name from singer where country = 'france'", False)])
    assert gold_to_add(other) == other.gold
    # WikiTQ reads its gold SQL from context["gold_sql"]; no SQL -> nothing
    wtq = Problem("w1", "wikitq", "q", {"table_id": "t", "gold_sql": "select c1 from w"}, ["x"], ())
    assert gold_to_add(wtq) == "select c1 from w"
    assert gold_to_add(wtq.replace(context={"table_id": "t"})) is None
    assert gold_to_add(Problem("g", "gsm8k", "q", {}, 3.0, ())) is None


def test_mbpp_gold_always_added():
    gold = "def add(a, b):\n    return a + b"
    p = Problem("mbpp-7", "mbpp", "add", MBPP_CONTEXT, gold, (_executed(gold, True),))
    assert gold_to_add(p) == gold  # LEVER appends it even when a sample is identical


def test_gold_is_executed_in_the_sandbox_even_without_a_correct_sample(tmp_path):
    gold = "def add(a, b):\n    return a + b"
    wrong = Candidate("def add(a, b):\n    return a - b",
                      execution=Execution("ok", "w", "# return: (int)=-1", correct=False))
    broken = Problem("mbpp-8", "mbpp", "add", dict(MBPP_CONTEXT, task_id=8), "def add(a, b):\n    return a +", ())
    p = Problem("mbpp-7", "mbpp", "add", MBPP_CONTEXT, gold, (wrong,))
    assert with_gold(p) == (p, False)  # the older copy mode cannot add it: no correct sample
    with Sandbox(workers=1, limits=Limits(timeout_s=10, cpu_s=5)) as box, ExecutionCache(tmp_path) as cache:
        out, added = append_gold([p, broken], "mbpp", MBPPExecutor(), box, cache)
    assert added == 2
    g = out[0].candidates[-1]
    assert g.program == gold and g.source == "gold" and len(out[0].candidates) == 2
    assert g.execution.correct and g.execution.status == "ok"
    assert [t["value"] for t in g.execution.details["tests"]] == ["3", "0"]  # really ran
    b = out[1].candidates[-1]  # a gold that fails is labelled by its own execution
    assert not b.execution.correct and b.execution.status != "ok"


def test_copy_mode_is_the_older_behaviour():
    p = _spider([_executed("SELECT 1", True)])
    q, added = with_gold(p)
    assert added and q.candidates[-1].execution is p.candidates[0].execution


def test_append_gold_without_work_needs_no_sandbox():
    p = Problem("g", "gsm8k", "q", {}, 3.0, (_executed("answer = 3", True),))
    assert append_gold([p]) == ([p], 0)
    with pytest.raises(ValueError, match="gold_mode"):
        from lever_jax.inputs.feeds import numpy_problems

        numpy_problems(None, None, 8, gold_mode="other")  # type: ignore[arg-type]
