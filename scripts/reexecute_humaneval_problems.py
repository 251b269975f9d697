"""Re-execute some problems of the bundled HumanEval pools after a change to how their tests are judged.

    python scripts/reexecute_humaneval_problems.py --problems humaneval-32,humaneval-38,humaneval-50 \\
        [--workers 2] [--timeout 5] [--dry-run]

For when an executor change touches only the named problems (their sandbox tasks or verdicts
change; every other problem's task is byte-identical, so re-running it would only re-measure
load-dependent limits). Every candidate of those problems in ``codegen16b.executed.jsonl.gz`` runs
again against the hidden tests (HumanEval executor); the new verdicts also go into
``codegen16b_docstring.executed.jsonl.gz`` (``correct`` and ``details.hidden``: its visible calls
do not depend on the hidden tests). Both files are rewritten atomically, as is ``stats.json``'s
``executed`` (``build_humaneval_pool.executed_stats``). Prints pass@1 / pass@10 / oracle /
majority vote of both pools before and after, and per problem the correct and ``ok`` samples.
``--dry-run``: measure and print, write nothing.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from build_humaneval_pool import executed_stats

from lever_jax.data import Problem, bundled_path, jsonl
from lever_jax.execution import Limits, Sandbox, execute_problems
from lever_jax.execution.humaneval_inputs import combine, visible_calls
from lever_jax.execution.python_tests import HumanEvalExecutor

HIDDEN = "codegen16b.executed.jsonl.gz"
DOCSTRING = "codegen16b_docstring.executed.jsonl.gz"
METRICS = ("pass@1", "pass@10", "oracle", "majority_output")


def _summary(problem: Problem) -> dict[str, int]:
    """Samples (merged counts expanded): correct, ok, unverified (a test judged in the program's process)."""
    return {"correct": sum(c.count for c in problem.candidates if c.execution.correct),
            "ok": sum(c.count for c in problem.candidates if c.execution.status == "ok"),
            "unverified": sum(c.count for c in problem.candidates
                              if (c.execution.details or {}).get("unverified_tests"))}


def _with_hidden(visible: Problem, hidden: Problem) -> Problem:
    """``visible`` (a docstring-pool problem) with the hidden verdicts of ``hidden`` (same candidates)."""
    if [c.program for c in visible.candidates] != [c.program for c in hidden.candidates]:
        raise SystemExit(f"{visible.problem_id}: the two pools' candidates differ")
    calls = visible_calls(visible, "docstring")
    may_raise = frozenset(i for i, (_, expected) in enumerate(calls) if expected is None)
    candidates = tuple(dataclasses.replace(v, execution=combine(h.execution, v.execution, "docstring", may_raise))
                       for v, h in zip(visible.candidates, hidden.candidates))
    return visible.replace(candidates=candidates)


def _stats(problems: list[Problem]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pool.jsonl.gz"
        jsonl.write_problems(path, problems)
        return executed_stats(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", required=True, help="comma-separated problem ids, e.g. humaneval-32,humaneval-38")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--dry-run", action="store_true", help="measure and print, write nothing")
    args = parser.parse_args()
    folder = bundled_path("humaneval_pool")
    wanted = [p.strip() for p in args.problems.split(",") if p.strip()]
    pools = {name: list(jsonl.read_problems(folder / name, require_execution=True)) for name in (HIDDEN, DOCSTRING)}
    index = {name: {p.problem_id: i for i, p in enumerate(problems)} for name, problems in pools.items()}
    unknown = [p for p in wanted if p not in index[HIDDEN] or p not in index[DOCSTRING]]
    if unknown:
        print(f"error: --problems: unknown problem id(s) {', '.join(unknown)}", file=sys.stderr)
        return 2
    before = {name: _stats(problems) for name, problems in pools.items()}
    targets = [pools[HIDDEN][index[HIDDEN][p]] for p in wanted]
    with Sandbox(workers=args.workers, limits=Limits.for_timeout(args.timeout)) as box:
        redone = list(execute_problems(targets, HumanEvalExecutor(), box, None, progress=False))
    report: dict[str, Any] = {"problems": {}}
    for problem in redone:
        i, j = index[HIDDEN][problem.problem_id], index[DOCSTRING][problem.problem_id]
        report["problems"][problem.problem_id] = {"before": _summary(pools[HIDDEN][i]), "after": _summary(problem)}
        pools[HIDDEN][i] = problem
        pools[DOCSTRING][j] = _with_hidden(pools[DOCSTRING][j], problem)
    for name, problems in pools.items():
        after = _stats(problems)
        report[name] = {m: {"before": round(before[name][m], 2), "after": round(after[m], 2)} for m in METRICS}
        report[name]["statuses"] = {"before": before[name]["statuses"], "after": after["statuses"]}
        if not args.dry_run:
            jsonl.write_problems(folder / name, problems)
            if name == HIDDEN:
                stats = json.loads((folder / "stats.json").read_text(encoding="utf-8"))
                stats["executed"] = after
                jsonl.write_json(folder / "stats.json", stats)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
