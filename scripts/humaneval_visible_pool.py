"""Build the like-for-like HumanEval pool: visible calls feed the verifier, hidden tests judge.

    python scripts/humaneval_visible_pool.py [--source docstring|codet] [--workers 2] [--timeout 5]

Reads the bundled ``humaneval_pool/codegen16b.executed.jsonl.gz`` (executed against the hidden
tests: its verdicts are reused), runs every distinct program on the visible calls
(lever_jax/execution/humaneval_inputs.py) and writes ``codegen16b_<source>.executed.jsonl.gz`` next to
it, then prints the candidates' statistics under both groupings.
"""
from __future__ import annotations

import argparse
import json
import time

from lever_jax.data import bundled_path, read_problems, write_problems
from lever_jax.execution.humaneval_inputs import execute_like_for_like, visible_asserts
from lever_jax.execution import ExecutionCache, Limits, Sandbox


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", choices=("docstring", "codet"), default="docstring")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--cache-dir", default=None)
    args = parser.parse_args()
    folder = bundled_path("humaneval_pool")
    problems = list(read_problems(folder / "codegen16b.executed.jsonl.gz", require_execution=True))
    counts = {"problems": len(problems), "with_visible_calls": sum(bool(visible_asserts(p, args.source)) for p in problems)}
    limits = Limits.for_timeout(args.timeout)
    start = time.time()
    with Sandbox(workers=args.workers, limits=limits) as box, ExecutionCache(args.cache_dir) as cache:
        executed = list(execute_like_for_like(problems, box, cache, args.source, progress=True, reuse_hidden=True))
    out = folder / f"codegen16b_{args.source}.executed.jsonl.gz"
    write_problems(out, executed)
    counts["seconds"] = round(time.time() - start, 1)
    counts["distinct_results_per_problem"] = round(sum(
        len({c.execution.result_key for c in p.candidates if not c.execution.result_key.startswith("!")})
        for p in executed) / len(executed), 2)
    counts["hidden_distinct_results_per_problem"] = round(sum(
        len({c.execution.result_key for c in p.candidates if not c.execution.result_key.startswith("!")})
        for p in problems) / len(problems), 2)
    print(json.dumps(counts))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
