"""What `lever-jax run` writes about a finished run: metrics.json's verifier block, per_problem.json
and report.md (the method table, paired gains, how the problems were scored, versions). The run
(lever_jax.pipeline) says in words how it scored the problems; nothing here imports the pipeline."""
from __future__ import annotations

import datetime
import platform
from pathlib import Path
from typing import Any, Optional

import numpy as np

from lever_jax.data import paths
from lever_jax.data.arrays import CandidateArrays
from lever_jax.rerank import report, statistics
from lever_jax.rerank.statistics import paired_gain


def versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for name in ("lever-jax", "jax", "flax", "optax", "orbax-checkpoint", "numpy"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    return out


def verifier_summary(table: dict, headline: str, arrays: CandidateArrays, ver: np.ndarray, rel: Any,
                     codet_values: Optional[np.ndarray], bootstrap: int) -> dict[str, Any]:
    """metrics.json's ``verifier`` block: binary accuracy, ECE, the headline's paired gains over
    majority vote and the log-prob baselines, and CodeT's row where the pool has tests."""
    extra: dict[str, Any] = {
        "binary_acc": statistics.binary_accuracy(ver, arrays.correct, arrays.mask),
        "ece": rel.ece,
        f"{headline}_minus_majority_vote": paired_gain(table[headline].choice, table["majority_vote"].choice,
                                                      arrays.correct, bootstrap),
    }
    for other in ("ml_ep", "lever_count_fallback", "max_gen_prob"):  # pools with real log-probs
        if other in table and headline in table:
            extra[f"{headline}_minus_{other}"] = paired_gain(table[headline].choice, table[other].choice,
                                                             arrays.correct, bootstrap)
    if codet_values is not None:
        ci = statistics.bootstrap_ci(codet_values, n_resamples=bootstrap)
        extra["codet_dual_agreement"] = {"accuracy": ci.mean, "ci_low": ci.low, "ci_high": ci.high,
                                         "confidence": ci.confidence}
    return extra


def per_problem_doc(arrays: CandidateArrays, table: dict, codet: Optional[np.ndarray]) -> dict[str, Any]:
    """Per-problem correctness of every method (the one table's values; null where a method does
    not apply), so paired comparisons across runs (scripts/paper_tables.py) need no recomputation."""
    values = {}
    for name, row in table.items():
        if row.values is not None:
            values[name] = row.values
        elif row.choice is not None:
            values[name] = statistics.choice_correct(row.choice, arrays.correct).astype(np.float64)
    if codet is not None:
        values["codet_dual_agreement"] = codet
    return {"problem_ids": list(arrays.problem_ids),
            "methods": {k: [None if np.isnan(x) else float(x) for x in v] for k, v in values.items()}}


def write_report(path: Path, doc: dict[str, Any], table: dict, scored_by: str, second: Optional[dict] = None) -> None:
    """report.md: the method table, the paired gains, ``scored_by`` (how the run scored the problems:
    its protocol, its training rows), command and versions."""
    v = doc["verifier"]
    lines = [f"# LEVER end-to-end run: {doc['pool']}" + (f" (ablation: {doc['ablation']})"
                                                          if doc["ablation"] != "none" else ""), "",
             f"{doc['problems']} problems, {doc['samples']} samples, {doc['distinct_programs']} distinct programs; "
             + scored_by, "",
             report.format_table(table)]
    if "codet_dual_agreement" in v:
        c = v["codet_dual_agreement"]
        lines.append(f"| CodeT dual execution agreement | {100 * c['accuracy']:.1f} | "
                     f"[{100 * c['ci_low']:.1f}, {100 * c['ci_high']:.1f}] |")
    if second:
        lines += ["", report.format_table(second, title=f"the same choices judged by the "
                                                       f"{doc['methods_second_checker']['checker']}")]
    lines.append("")
    for gain_key in (k for k in v if "_minus_" in k):
        g = v[gain_key]
        lines.append(f"- {gain_key.replace('_', ' ')}: {100 * g['gain']:+.1f} points, paired 95% CI "
                     f"[{100 * g['ci_low']:+.1f}, {100 * g['ci_high']:+.1f}]")
    lines += [f"- verifier binary accuracy (LEVER's binary_acc): {100 * v['binary_acc']:.1f}; "
              f"ECE of P(yes): {v['ece']:.3f}",
              "- time: " + ", ".join(f"{k} {val:.0f}" for k, val in doc["timings_s"].items()), "",
              "Plots: `accuracy_vs_k.png` (accuracy vs number of samples k, every method), "
              "`reliability.png` (reliability diagram of P(yes)).", "",
              "## Command and versions", "", f"```\n{doc['command']}\n```", "",
              ", ".join(f"{k} {val}" for k, val in doc["versions"].items()), "",
              f"Generated {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; "
              "settings in run_config.json and config.gin.", ""]
    paths.write_text_atomic(path, "\n".join(lines))
