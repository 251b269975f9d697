"""scripts/bench_attention.py: the per-part timing runs at tiny sizes on both sides, and its FLOP
counts are a layer's (MiniLM: q, k, v, out projections + the two MLP matmuls; scores + weighted sum)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))


def test_flops_are_one_layers_forward_and_backward() -> None:
    from bench_attention import SHAPES, flops

    rows, length, d = 2, 64, 384
    work = flops(SHAPES["minilm"], rows, length)
    assert work["dense"] == 3 * 2 * rows * length * (4 * d * d + 2 * d * 1536)
    assert work["attention"] == 3 * 2 * 2 * rows * 12 * length * length * 32


def test_tiny_run_times_every_part_on_both_sides(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from bench_attention import main

    res = main(["--model", "t5", "--rows", "1", "--length", "32", "--repeat", "1",
                "--json", str(tmp_path / "a.json")])
    assert sorted(res["results"]) == ["bfloat16/attention", "bfloat16/dense", "float32/attention", "float32/dense"]
    assert all(r[side]["ms"] > 0 for r in res["results"].values() for side in ("ours", "pytorch"))
    assert (tmp_path / "a.json").is_file()
