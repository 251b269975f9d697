"""Compare a re-executed GSM8k pool with the answers its sources recorded.

    lever-jax execute --dataset gsm8k --executor-option convention=faithful_cot \\
        --input lever_jax/data/bundled/gsm8k_pool/code002.samples.jsonl.gz --output /tmp/code002.executed.jsonl.gz
    python scripts/reexecute_gsm8k_pool.py --executed /tmp/code002.executed.jsonl.gz \\
        --recorded lever_jax/data/bundled/gsm8k_pool/code002.recorded.jsonl.gz [--show 10]

A recorded answer is *confirmed* when the re-execution gives a number within 1e-4 of it, or when
both are non-numeric/errors. Prints the counts (overall and per source) and some disagreements.
"""
from __future__ import annotations

import argparse
import collections
import json
import sys

from lever_jax.data import read_problems

TOLERANCE = 1e-4


def _number(execution: object) -> float | None:
    if execution is None or execution.status != "ok":
        return None
    answer = (execution.details or {}).get("answer")
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        return None
    return float(answer)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--executed", required=True, help="output of `lever-jax execute` on the samples file")
    ap.add_argument("--recorded", required=True, help="the pool's executed file with recorded answers")
    ap.add_argument("--show", type=int, default=10, help="disagreements to print")
    args = ap.parse_args()
    recorded = {p.problem_id: p for p in read_problems(args.recorded)}
    counts = collections.Counter()
    by_source: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    shown = 0
    for problem in read_problems(args.executed, require_execution=True):
        old = recorded.get(problem.problem_id)
        if old is None:
            counts["problem missing from recorded file"] += 1
            continue
        old_by_program = {c.program: c for c in old.candidates}
        for cand in problem.candidates:
            ref = old_by_program.get(cand.program)
            if ref is None:
                counts["candidate missing from recorded file"] += 1
                continue
            new_n, old_n = _number(cand.execution), _number(ref.execution)
            if new_n is not None and old_n is not None:
                ok = abs(new_n - old_n) <= TOLERANCE
                kind = "confirmed (numbers agree)" if ok else "differs (both numeric)"
            elif new_n is None and old_n is None:
                ok, kind = True, "confirmed (both non-numeric / error)"
            elif old_n is None:
                ok, kind = False, "differs (recorded non-numeric, re-run numeric)"
            else:
                ok, kind = False, "differs (recorded numeric, re-run not)"
            counts[kind] += 1
            counts["total"] += 1
            counts["confirmed"] += ok
            counts["correct (re-run)"] += bool(cand.execution and cand.execution.correct)
            counts["correct (recorded)"] += bool(ref.execution and ref.execution.correct)
            source = (cand.source or "?").split(",")[0]
            by_source[source]["total"] += 1
            by_source[source]["confirmed"] += ok
            if not ok and shown < args.show:
                shown += 1
                print(json.dumps({"problem": problem.problem_id, "source": cand.source,
                                  "recorded": (ref.execution.details or {}).get("answer") if ref.execution else None,
                                  "re-run": (cand.execution.details or {}).get("answer") if cand.execution else None,
                                  "status": cand.execution.status if cand.execution else None,
                                  "error": cand.execution.error if cand.execution else None}, ensure_ascii=False))
    total = counts["total"]
    print(f"\nrecorded answers confirmed by re-execution: {counts['confirmed']}/{total} "
          f"({100.0 * counts['confirmed'] / max(total, 1):.2f}%)")
    for key, value in sorted(counts.items()):
        if key not in ("total", "confirmed"):
            print(f"  {key}: {value}")
    print("per source (first listed source of merged candidates):")
    for source, c in sorted(by_source.items()):
        print(f"  {source}: {c['confirmed']}/{c['total']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
