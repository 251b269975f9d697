"""LEVER's ablations on the end-to-end run, one `lever-jax run --ablation A` per row, sharing the
execution cache, the frozen-encoder features and (for the reranking-only ablations) the trained
folds; writes OUT/ablations.md and prints it.

    python scripts/ablations.py [--gin_file gin_configs/runs/demo.gin] [--out results/ablations]
        [--gin_bindings ...]

Rows: LEVER (full), no execution result in the verifier input, no program in the input,
no generation probability (P_LM) in the score, no aggregation over execution results.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lever_jax.cli import run as run_cmd  # noqa: E402

ROWS = (("none", "LEVER (full)"), ("no_exec", "- execution result in the input"),
        ("no_program", "- program in the input"), ("no_gen_prob", "- generation probability (P_LM)"),
        ("no_agg", "- aggregation over execution results"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gin_file", action="append", default=None)
    parser.add_argument("--gin_bindings", action="append", default=[])
    parser.add_argument("--out", default="results/ablations")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    out = Path(args.out)
    shared = [f"RunConfig.features_dir = '{out / 'features'}'", f"RunConfig.folds_dir = '{out / 'folds'}'",
              f"RunConfig.executed_dir = '{out / 'executed'}'"]
    lines = ["| setting | LEVER accuracy (%) | 95% CI | gain over majority vote (paired 95% CI) | verifier binary acc |",
             "|---|---:|---:|---:|---:|"]
    for ablation, label in ROWS:
        argv = ["--out", str(out / ablation), "--ablation", ablation, "--no-progress"]
        argv += [x for f in (args.gin_file or []) for x in ("--gin_file", f)]
        argv += [x for b in [*shared, *args.gin_bindings] for x in ("--gin_bindings", b)]
        if args.quick:
            argv.append("--quick")
        if run_cmd.cli(argv) != 0:
            return 1
        doc = json.loads((out / ablation / "metrics.json").read_text())
        head = "lever_no_agg" if ablation == "no_agg" else "lever"
        m = doc["methods"][head]
        g = doc["verifier"][f"{head}_minus_majority_vote"]
        lines.append(f"| {label} | {100 * m['accuracy']:.1f} | [{100 * m['ci_low']:.1f}, {100 * m['ci_high']:.1f}] | "
                     f"{100 * g['gain']:+.1f} [{100 * g['ci_low']:+.1f}, {100 * g['ci_high']:+.1f}] | "
                     f"{100 * doc['verifier']['binary_acc']:.1f} |")
    text = "\n".join(lines) + "\n"
    (out / "ablations.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
