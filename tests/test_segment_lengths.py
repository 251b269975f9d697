"""scripts/segment_lengths.py: per-segment token lengths of a bundled pool against the caps."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("minilm_weights")


def test_segment_lengths_counts_distinct_texts_and_the_share_cut(capsys) -> None:
    path = Path(__file__).resolve().parents[1] / "scripts" / "segment_lengths.py"
    spec = importlib.util.spec_from_file_location("segment_lengths", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--max_problems", "6", "--result_len", "2", "--program_len", "100000"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["question", "program, comments stripped",
                                                        "program, as sampled", "execution result"]
    assert lines[0].startswith("question: 6 distinct texts")
    share = {line.split(":")[0]: float(re.search(r"longer than \d+: ([\d.]+)%", line).group(1)) for line in lines}
    assert share["execution result"] == 100.0  # [CLS] + [SEP] alone are 2 tokens
    assert share["program, as sampled"] == 0.0
