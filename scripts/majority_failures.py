"""Where majority vote fails on an executed GSM8k pool, and what a verifier would have to see.

    python scripts/majority_failures.py results/demo/executed/gsm8k_code002-all.executed.jsonl.gz

Prints the problems where majority vote picks a wrong answer although a correct candidate
exists, the share of votes the correct answer holds there, and for every hand-crafted candidate
feature (lever_jax.pipeline.gsm8k_features) how often it separates the correct candidates from the
wrong majority group on those problems.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from lever_jax.rerank import methods
from lever_jax.pipeline import gsm8k_features
from lever_jax.data import problems_to_arrays, read_problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("executed", help="executed GSM8k pool (.jsonl.gz), e.g. from `lever-jax run`")
    args = parser.parse_args(argv)
    problems = sorted(read_problems(args.executed, require_execution=True), key=lambda p: p.problem_id)
    arrays = problems_to_arrays(problems)
    majority = methods.majority_vote(arrays.result_ids, arrays.mask, arrays.counts)
    feats = gsm8k_features.pool_candidate_features(problems, arrays.shape[1])
    rows = [b for b in range(len(problems))
            if not arrays.correct[b, majority[b]] and arrays.correct[b].any()]
    print(f"{len(problems)} problems; majority vote wrong although a correct candidate exists: {len(rows)}")
    if not rows:
        return 0
    share = [arrays.counts[b][arrays.correct[b]].sum() / arrays.counts[b].sum() for b in rows]
    print("vote share of the correct answer on those problems: p10 / p50 / p90 = "
          + " / ".join(f"{100 * x:.0f}%" for x in np.percentile(share, [10, 50, 90])))
    diffs = []
    for b in rows:
        right = arrays.correct[b] & arrays.mask[b]
        wrong = (arrays.result_ids[b] == arrays.result_ids[b, majority[b]]) & arrays.mask[b]
        diffs.append(feats[b, right].mean(axis=0) - feats[b, wrong].mean(axis=0))
    d = np.array(diffs)
    print("\n| feature | mean (correct - wrong majority) | problems where higher for correct | lower |")
    print("|---|---:|---:|---:|")
    for i, name in enumerate(gsm8k_features.FEATURE_NAMES):
        print(f"| {name} | {d[:, i].mean():+.3f} | {np.mean(d[:, i] > 1e-9):.0%} | {np.mean(d[:, i] < -1e-9):.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
