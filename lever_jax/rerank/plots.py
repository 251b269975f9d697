"""PNG plots of a run (matplotlib, Agg backend): accuracy vs number of samples k for every method,
and the reliability diagram of the verifier's P(yes). Files are written atomically."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from lever_jax.data import paths
from lever_jax.rerank.statistics import Reliability  # noqa: E402
from lever_jax.rerank.report import METHOD_LABELS  # noqa: E402


def _save(fig, path: str | os.PathLike) -> None:
    with paths.staged(path) as tmp:
        fig.savefig(tmp, dpi=120, bbox_inches="tight", format=Path(path).suffix.lstrip(".") or "png")
    plt.close(fig)


LINESTYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D")


def method_styles(names: Sequence[str]) -> dict[str, dict[str, str]]:
    """A distinct (colour, line style, marker) for every method: tab10's colours cycle, and each
    cycle of ten also changes the line style and the marker, so methods 1 and 11 never look alike."""
    colors = plt.get_cmap("tab10").colors
    return {name: {"color": colors[i % 10], "linestyle": LINESTYLES[i // 10 % 4], "marker": MARKERS[i // 10 % 4]}
            for i, name in enumerate(names)}


def accuracy_vs_k(curves: Mapping[str, Sequence[Mapping[str, float]]], path: str | os.PathLike,
                  title: str = "") -> None:
    """One line per method: accuracy (%) vs k (log-scaled x axis labelled with the plotted k
    values as integers), error bars = std over trials."""
    from matplotlib.ticker import FixedLocator, NullLocator, StrMethodFormatter

    fig, ax = plt.subplots(figsize=(7, 4.5))
    names = [m for m in METHOD_LABELS if m in curves]
    all_k: set[int] = set()
    for name, style in method_styles(names).items():
        pts = curves[name]
        ks = [p["k"] for p in pts]
        all_k.update(int(k) for k in ks)
        acc = [100 * p["accuracy"] for p in pts]
        err = [100 * p.get("std", 0.0) for p in pts]
        ax.errorbar(ks, acc, yerr=err, ms=3, capsize=2, label=METHOD_LABELS[name], **style)
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(sorted(all_k)))
    ax.xaxis.set_major_formatter(StrMethodFormatter("{x:.0f}"))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("number of samples k")
    ax.set_ylabel("accuracy (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    _save(fig, path)


def reliability_diagram(rel: Reliability, path: str | os.PathLike, title: str = "") -> None:
    """Bars: fraction of correct candidates per P(yes) bin; diagonal = perfect calibration."""
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(5, 6), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    edges = rel.bin_edges
    centers = (edges[:-1] + edges[1:]) / 2
    width = edges[1] - edges[0]
    ax.bar(centers, [0 if a != a else a for a in rel.accuracy], width=width * 0.9, edgecolor="k",
           label="fraction correct")
    ax.plot([0, 1], [0, 1], "r--", label="perfect calibration")
    ax.set_ylabel("fraction of correct programs")
    ax.set_title(f"{title} (ECE {rel.ece:.3f})")
    ax.legend(fontsize=8)
    ax2.bar(centers, rel.count, width=width * 0.9, color="gray")
    ax2.set_yscale("log")
    ax2.set_xlabel("verifier P(yes)")
    ax2.set_ylabel("programs")
    _save(fig, path)
