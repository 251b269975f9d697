"""accuracy_vs_k.png (written by `lever-jax run`): every method its own look, integer k labels."""
from __future__ import annotations

from pathlib import Path

import pytest

from lever_jax.rerank import plots
from lever_jax.rerank.report import METHOD_LABELS


def test_accuracy_vs_k_styles_every_method_apart_and_labels_k_as_integers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shown = {}

    def keep(fig, path) -> None:  # inspect the figure instead of only its pixels
        shown["fig"] = fig
        fig.savefig(path)

    monkeypatch.setattr(plots, "_save", keep)
    ks = [1, 2, 4, 5, 8, 10, 14]
    curves = {m: [{"k": k, "accuracy": 0.5 + 0.01 * i, "std": 0.0} for k in ks] for i, m in enumerate(METHOD_LABELS)}
    plots.accuracy_vs_k(curves, tmp_path / "accuracy_vs_k.png")
    assert len(curves) > 10 and (tmp_path / "accuracy_vs_k.png").stat().st_size > 0
    ax = shown["fig"].axes[0]
    lines = [c.lines[0] for c in ax.containers if c.get_label() in METHOD_LABELS.values()]  # errorbar data lines
    looks = {(str(line.get_color()), line.get_linestyle(), line.get_marker()) for line in lines}
    assert len(lines) == len(looks) == len(curves)
    shown["fig"].canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
    assert labels == [str(k) for k in ks]
