"""Compare `lever-jax run` directories side by side (reads each DIR/metrics.json).

    python scripts/compare_runs.py results/demo results/cf_only ... [--labels a b ...]

Prints one markdown row per run: LEVER (summing) accuracy with its 95% CI, the paired gain over
majority vote with its CI, verifier-only accuracy, the verifier's binary accuracy and ECE, and
the train + score time recorded by the run.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def row(label: str, doc: dict) -> str:
    methods, ver = doc["methods"], doc["verifier"]
    head = "lever_no_agg" if doc.get("ablation") == "no_agg" else "lever"
    m, g = methods[head], ver[f"{head}_minus_majority_vote"]
    only = methods.get("verifier_only", {}).get("accuracy", float("nan"))
    seconds = doc.get("timings_s", {}).get("train_score_s", float("nan"))
    return (f"| {label} | {100 * m['accuracy']:.1f} [{100 * m['ci_low']:.1f}, {100 * m['ci_high']:.1f}] | "
            f"{100 * g['gain']:+.1f} [{100 * g['ci_low']:+.1f}, {100 * g['ci_high']:+.1f}] | {100 * only:.1f} | "
            f"{100 * ver['binary_acc']:.1f} | {ver['ece']:.3f} | {seconds:.0f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="run directories (each with metrics.json)")
    parser.add_argument("--labels", nargs="*", default=None, help="row labels (default: directory names)")
    args = parser.parse_args(argv)
    labels = args.labels or [Path(r).name for r in args.runs]
    if len(labels) != len(args.runs):
        parser.error("--labels needs one label per run directory")
    print("| run | LEVER (summing) [95% CI] | gain over majority vote [paired 95% CI] | verifier only | "
          "binary acc | ECE | train + score (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, run in zip(labels, args.runs):
        path = Path(run) / "metrics.json"
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            print(f"{path}: {err}", file=sys.stderr)
            return 1
        print(row(label, doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
