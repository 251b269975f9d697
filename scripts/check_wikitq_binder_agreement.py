"""Agreement of our execution of the wikitq_binder pool with the answers Binder recorded.

Compares every plain-SQL candidate of an executed pool (``lever-jax execute --dataset
wikitq_binder``) with the recorded answer of its samples (bundled ``recorded_answers.jsonl.gz``):
same answer = equal canonical keys (Binder's answer cells in order; ints and integral floats are
equal) or both an error. Counts samples (a candidate weighs its ``count``) and distinct programs,
and lists each disagreement with its cause. Neural (``QA(...)``) candidates are counted apart.

    lever-jax execute --dataset wikitq_binder --input lever_jax/data/bundled/wikitq_binder/binder.samples.jsonl.gz --output /tmp/binder.executed.jsonl.gz
    python scripts/check_wikitq_binder_agreement.py /tmp/binder.executed.jsonl.gz
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path
from typing import Any

from lever_jax.data import bundled_path, iter_json_lines, read_problems
from lever_jax.data.result_keys import canonical_key

ERROR = "<error>"


def cause(status: str, recorded: Any) -> str:
    if status != "ok" and recorded != ERROR:
        return "we_error_recorded_answer"
    if status == "ok" and recorded == ERROR:
        return "we_answer_recorded_error"
    return "different_answer"


def agreement(executed: Path) -> dict[str, Any]:
    recorded = {obj["problem_id"]: obj["answers"]
                for _, obj in iter_json_lines(bundled_path("wikitq_binder", "recorded_answers.jsonl.gz", must_exist=True))}
    counts: collections.Counter = collections.Counter()
    disagreements = []
    for problem in read_problems(executed, require_execution=True):
        for candidate, answers in zip(problem.candidates, recorded[problem.problem_id]):
            execution = candidate.execution
            assert execution is not None
            if execution.status == "unsupported":
                counts["neural_samples"] += candidate.count
                continue
            counts["samples"] += candidate.count
            counts["programs"] += 1
            ok = execution.status == "ok"
            for answer in answers:  # one per raw sample of this program
                same = (not ok and answer == ERROR) or (ok and answer != ERROR and execution.result_key == canonical_key(answer))
                counts["samples_same"] += same
                if not same:
                    disagreements.append({"problem_id": problem.problem_id, "program": candidate.program,
                                          "cause": cause(execution.status, answer), "recorded": str(answer)[:200],
                                          "ours": (execution.details or {}).get("answer") if ok else execution.error})
            counts["programs_same"] += all(
                (not ok and a == ERROR) or (ok and a != ERROR and execution.result_key == canonical_key(a)) for a in answers)
    return {"plain_sql_samples": counts["samples"], "same_answer_samples": counts["samples_same"],
            "sample_agreement": round(counts["samples_same"] / max(counts["samples"], 1), 4),
            "plain_sql_programs": counts["programs"], "same_answer_programs": counts["programs_same"],
            "neural_samples_not_run": counts["neural_samples"],
            "disagreements_by_cause": dict(collections.Counter(d["cause"] for d in disagreements)),
            "disagreements": disagreements}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("executed", type=Path, help="executed wikitq_binder pool")
    args = parser.parse_args(argv)
    print(json.dumps(agreement(args.executed), indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
