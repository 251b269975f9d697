"""GSM8k execution as LEVER by default (``exec(program, {}, {})``, ``answer`` only, float equality,
2 s) and the bundled pools' ``faithful_cot`` option; the option in the executor identity (cache key,
``lever-jax run`` stamp, POOLS) and through ``lever-jax execute``."""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest

from lever_jax.cli import main as cli_main
from lever_jax.data import jsonl
from lever_jax.data.result_keys import is_error_key
from lever_jax.data.schema import Candidate, Problem
from lever_jax.execution import python_gsm8k, registry, wikitq_match
from lever_jax.execution.base import Limits
from lever_jax.execution.cache import ExecutionCache, executor_key
from lever_jax.execution.runner import execute_problems
from lever_jax.execution.sandbox import Sandbox

LIMITS = Limits(timeout_s=5, cpu_s=5, memory_mb=1024)
LIST_COMPREHENSION = "rate = 2\nitems = [9]\nanswer = sum([x * rate for x in items])"
FUNCTION_READS_TOP_LEVEL = "rate = 2\ndef f():\n    return 9 * rate\nanswer = f()"


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(workers=2, limits=LIMITS) as box:
        yield box


def _run(sandbox, gold, programs, source=None, **options):
    problem = Problem("p", "gsm8k", "q", {}, gold, tuple(Candidate(p, source=source) for p in programs))
    (out,) = execute_problems([problem], registry.get_executor("gsm8k", options), sandbox, None, progress=False)
    return [c.execution for c in out.candidates]


def test_default_is_lever():
    executor = registry.get_executor("gsm8k")
    assert executor.convention == "lever" and executor.version == "gsm8k-2-lever"
    assert executor.default_timeout_s == 2.0  # LEVER's timeout
    faithful = registry.get_executor("gsm8k", {"convention": "faithful_cot"})
    assert faithful.version == "gsm8k-2-faithful_cot" and faithful.default_timeout_s == 10.0


def test_lever_reads_only_answer(sandbox):
    programs = ["n = 9\nanswer = n * 2", "ans = 18", "def solution():\n    return 18"]
    lever = _run(sandbox, 18, programs)
    assert [e.status for e in lever] == ["ok", "error", "error"]
    assert [e.correct for e in lever] == [True, False, False]
    assert lever[0].result_text == "{'n': '9', 'answer': '18'}"
    assert lever[1].result_text == lever[2].result_text == "ERROR: no answer variable"  # LEVER's string
    assert "no answer" in lever[1].error and is_error_key(lever[1].result_key)
    faithful = _run(sandbox, 18, programs, convention="faithful_cot")
    assert [e.correct for e in faithful] == [True, True, True]
    assert [e.details["via"] for e in faithful] == ["answer", "ans", "solution()"]


def test_lever_separate_globals_and_locals(sandbox):
    lever = _run(sandbox, 18, [FUNCTION_READS_TOP_LEVEL, LIST_COMPREHENSION, "answer = sqrt(324)",
                               "import math\nanswer = math.sqrt(324)"])
    assert lever[0].status == "error" and "NameError" in lever[0].error  # f() looks `rate` up in globals
    assert lever[0].result_text == "ERROR: program failed to execute"
    if sys.version_info < (3, 12):  # PEP 709 inlines comprehensions from 3.12 on; LEVER ran <= 3.11
        assert lever[1].status == "error" and "NameError" in lever[1].error
    assert lever[2].status == "error"  # no Faithful-CoT prelude
    assert lever[3].correct and lever[3].result_text == "{'answer': '18.0'}"  # the module is left out
    faithful = _run(sandbox, 18, [FUNCTION_READS_TOP_LEVEL, LIST_COMPREHENSION, "answer = sqrt(324)"],
                    convention="faithful_cot")
    assert [e.correct for e in faithful] == [True, True, True]


def test_lever_float_equality(sandbox):
    programs = ["answer = 0.1 + 0.2", "answer = 0.3", "answer = True", "answer = '0.3'", "answer = 3 / 10"]
    lever = _run(sandbox, 0.3, programs)
    assert [e.status for e in lever] == ["ok"] * 5
    assert [e.correct for e in lever] == [False, True, False, True, True]  # float(str(answer)) == gold
    assert lever[0].result_key == lever[1].result_key  # grouping keeps LEVER's 1e-6 tolerance
    assert lever[2].result_key != lever[1].result_key  # 'True' is text, not a number
    faithful = _run(sandbox, 0.3, programs[:3], convention="faithful_cot")
    assert [e.correct for e in faithful] == [True, True, False]  # |x - gold| <= 1e-4; True is 1.0


def test_lever_ignores_pot_source_and_prelude(sandbox):
    pot = "import numpy as np\nans = np.float64(10) / 3"
    assert _run(sandbox, 3.33, [pot], source="pot_codex_fewshot")[0].result_text == "ERROR: no answer variable"
    assert _run(sandbox, 3.33, [pot], source="pot_codex_fewshot", convention="faithful_cot")[0].correct
    sympy = "x = Symbol('x')\nanswer = solve_it(Eq(3 * x + 1, 7), x)[x]"
    assert _run(sandbox, 2, [sympy])[0].status == "error"  # no solver prelude under LEVER's convention
    assert _run(sandbox, 2, [sympy], convention="faithful_cot")[0].correct


def test_lever_record_tampering_is_an_error(sandbox):
    tamper = ("import sys\nfor m in list(sys.modules.values()):\n"
              "    if getattr(m, '__name__', '') == 'lever_jax.execution.python_gsm8k':\n"
              "        m._state_text = lambda *a: {'not': 'a string'}\nanswer = 1")
    (ex,) = _run(sandbox, 1, [tamper])
    assert ex.status == "error" and not ex.correct and "invalid result record" in ex.error


def test_options_are_checked():
    assert registry.EXECUTOR_OPTIONS["gsm8k"]["convention"] == python_gsm8k.CONVENTIONS
    assert registry.EXECUTOR_OPTIONS["wikitq"]["checker"] == tuple(wikitq_match.CHECKERS)
    assert registry.parse_options("gsm8k", ["convention=faithful_cot"]) == {"convention": "faithful_cot"}
    with pytest.raises(ValueError, match="expected one of lever, faithful_cot"):
        registry.get_executor("gsm8k", {"convention": "pot"})
    with pytest.raises(ValueError, match="not one of mbpp's"):
        registry.parse_options("mbpp", ["convention=lever"])
    with pytest.raises(ValueError, match="KEY=VALUE"):
        registry.parse_options("gsm8k", ["faithful_cot"])


def test_convention_is_part_of_the_cache_key(sandbox, tmp_path):
    problem = Problem("p", "gsm8k", "q", {}, 5, (Candidate("ans = 5"),))
    lever, faithful = registry.get_executor("gsm8k"), registry.get_executor("gsm8k", {"convention": "faithful_cot"})
    assert executor_key("gsm8k", lever.version, LIMITS) != executor_key("gsm8k", faithful.version, LIMITS)
    cache = ExecutionCache(tmp_path / "cache")
    try:
        (a,) = execute_problems([problem], lever, sandbox, cache, progress=False)
        (b,) = execute_problems([problem], faithful, sandbox, cache, progress=False)
        (c,) = execute_problems([problem], lever, sandbox, cache, progress=False)
    finally:
        cache.close()
    assert not a.candidates[0].execution.correct and b.candidates[0].execution.correct
    assert c.candidates[0].execution == a.candidates[0].execution


def test_run_pools_and_stamp_record_the_convention(tmp_path):
    from lever_jax.pipeline import pools
    from lever_jax.pipeline.run import RunConfig

    for pool in ("gsm8k_code002", "gsm8k_other_llms"):
        assert pools.POOLS[pool]["executor_options"] == {"convention": "faithful_cot"}
    samples = tmp_path / "s.samples.jsonl"
    jsonl.write_problems(samples, [Problem("p", "gsm8k", "q", {}, 5, (Candidate("ans = 5"),))])
    cfg = RunConfig(execution_workers=1, execution_cache_dir=str(tmp_path / "c"),
                    executed_dir=str(tmp_path / "x"), progress=False)
    (lever,) = pools._execute(cfg, tmp_path, samples, "gsm8k", "a")
    (faithful,) = pools._execute(cfg, tmp_path, samples, "gsm8k", "b", {"convention": "faithful_cot"})
    assert not lever.candidates[0].execution.correct and faithful.candidates[0].execution.correct
    stamps = {n: json.loads((tmp_path / "x" / f"{n}-all.executed.jsonl.json").read_text())["executor"] for n in "ab"}
    assert stamps == {"a": "gsm8k:gsm8k-2-lever", "b": "gsm8k:gsm8k-2-faithful_cot"}


def _docs_samples(path: Path) -> None:
    """The GSM8k samples example of docs/data_format.md with runnable programs."""
    line = {"schema_version": 1, "problem_id": "gsm8k-test-0000", "dataset": "gsm8k",
            "question": "Janet's ducks lay 16 eggs per day. ...", "context": {}, "gold": 18.0,
            "candidates": [
                {"program": "eggs_per_day = 16\nmoney_made = (eggs_per_day - 3 - 4) * 2\nanswer = money_made",
                 "gen_logprob": None, "num_tokens": None, "count": 3,
                 "source": "code002_NL+SL,code002_noNL,code002_norationale", "is_greedy": True},
                {"program": "total_eggs = 16\nsold_eggs = total_eggs - 3 - 4\ndollars_per_egg = 2\n"
                            "ans = sold_eggs * dollars_per_egg",
                 "gen_logprob": None, "num_tokens": None, "count": 1, "source": "pot_codex_fewshot"}]}
    path.write_text(json.dumps(line) + "\n")


def _cli_execute(tmp_path, name, *extra):
    out = tmp_path / f"{name}.executed.jsonl.gz"
    code = cli_main(["execute", "--dataset", "gsm8k", "--input", str(tmp_path / "s.jsonl"), "--output", str(out),
                     "--no-cache", "--no-progress", "--workers", "1", *extra])
    assert code == 0
    with gzip.open(out, "rt") as handle:
        return [c["execution"] for c in json.loads(handle.readline())["candidates"]]


def test_cli_execute_with_and_without_the_option(tmp_path, capsys):
    _docs_samples(tmp_path / "s.jsonl")
    lever = _cli_execute(tmp_path, "lever")
    assert [e["correct"] for e in lever] == [True, False]
    assert lever[1]["result_text"] == "ERROR: no answer variable"
    faithful = _cli_execute(tmp_path, "faithful", "--executor-option", "convention=faithful_cot")
    assert [e["correct"] for e in faithful] == [True, True] and faithful[1]["details"]["via"] == "ans"
    assert faithful[0] == lever[0]
    capsys.readouterr()
    code = cli_main(["execute", "--dataset", "gsm8k", "--input", str(tmp_path / "s.jsonl"),
                     "--output", str(tmp_path / "bad.jsonl"), "--executor-option", "convention=pot"])
    err = capsys.readouterr().err
    assert code == 2 and "--executor-option" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_run_uses_the_executors_timeout_unless_set():
    """`lever-jax run` on a user's GSM8k file runs LEVER's 2 s; the bundled pools' convention 10 s;
    an explicit RunConfig.execution_timeout_s wins."""
    from lever_jax.execution.registry import get_executor
    from lever_jax.pipeline.pools import execution_limits
    from lever_jax.pipeline.run import RunConfig

    assert execution_limits(RunConfig(), get_executor("gsm8k")).timeout_s == 2.0
    faithful = get_executor("gsm8k", {"convention": "faithful_cot"})
    assert execution_limits(RunConfig(), faithful).timeout_s == 10.0
    assert execution_limits(RunConfig(execution_timeout_s=3.5), faithful).timeout_s == 3.5
    from lever_jax.execution.base import Limits  # the one rule every command uses

    assert Limits.for_timeout(2.5, memory_mb=64) == Limits(timeout_s=2.5, cpu_s=3, memory_mb=64)
    assert Limits.for_timeout(None) == Limits() and Limits.for_timeout(0.2).cpu_s == 1
