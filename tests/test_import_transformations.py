"""`lever-jax import` transformations are explicit and counted: stops, fences, mixed log-probs."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from lever_jax.cli import main as cli_main
from lever_jax.data import jsonl
from lever_jax.data.datasets import load_problems
from lever_jax.data.importers import completions
from lever_jax.data.prompts import STOP_SEQUENCES

BLANK_LINE_PROGRAM = "total = 16 - 3 - 4\n\neggs_sold = total * 2\nanswer = eggs_sold"


def _choice(text: str, tokens: list[str] | None = None, logprobs: list[float] | None = None) -> dict:
    if tokens is None:
        return {"text": text, "logprobs": None}
    assert "".join(tokens) == text
    return {"text": text, "logprobs": {"tokens": tokens, "token_logprobs": logprobs}}


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.fixture(scope="module")
def gsm8k() -> list:
    return load_problems("gsm8k", "test")[:3]


def test_default_stop_keeps_blank_lines_lever_preset_cuts_there(tmp_path, gsm8k):
    text = BLANK_LINE_PROGRAM + "\n\n## Next question"
    path = _write(tmp_path / "c.jsonl", [{"problem_id": gsm8k[0].problem_id, "choices": [_choice(text)]}])
    stats: dict = {}
    (safe,) = completions.import_completions(path, gsm8k, stats=stats)
    assert safe.candidates[0].program == BLANK_LINE_PROGRAM
    assert stats == {"choices": 1, "fences_stripped": 0, "cut_at_stop": 1}
    (lever,) = completions.import_completions(path, gsm8k, stops=STOP_SEQUENCES["gsm8k"])
    assert lever.candidates[0].program == "total = 16 - 3 - 4"
    assert completions.IMPORT_STOPS["gsm8k"] == ("\n\n## ",) and STOP_SEQUENCES["gsm8k"] == ("\n\n",)


def test_chat_fence_is_stripped_and_logprob_covers_the_block_only(tmp_path, gsm8k):
    tokens = ["Here is the code:\n", "```python\n", "x = 1\n", "\n", "answer = x\n", "```", "\nIt works."]
    logprobs = [-5.0, -4.0, -0.5, -0.25, -0.125, -3.0, -7.0]
    text = "".join(tokens)
    line = {"problem_id": gsm8k[1].problem_id,
            "response": {"choices": [{"message": {"content": text},
                                      "logprobs": {"content": [{"token": t, "logprob": v}
                                                               for t, v in zip(tokens, logprobs)]}}]}}
    path = _write(tmp_path / "chat.jsonl", [line])
    stats: dict = {}
    (out,) = completions.import_completions(path, gsm8k, stats=stats)
    (cand,) = out.candidates
    assert cand.program == "x = 1\n\nanswer = x"
    assert cand.gen_logprob == pytest.approx(-0.875) and cand.num_tokens == 3
    assert stats["fences_stripped"] == 1 and stats["cut_at_stop"] == 0
    (kept,) = completions.import_completions(path, gsm8k, strip_fences=False)
    assert kept.candidates[0].program.startswith("Here is the code:\n```python")


def test_unclosed_fence_runs_to_the_end():
    assert completions.fenced_span("```\nanswer = 3") == (4, len("```\nanswer = 3"))
    assert completions.fenced_span("no fence here") is None


def test_cli_summary_counts_and_reports_mixed_logprobs(tmp_path, gsm8k, capsys):
    p0, p1 = gsm8k[0].problem_id, gsm8k[1].problem_id
    path = _write(tmp_path / "mixed.jsonl", [
        {"problem_id": p0, "choices": [_choice("answer = 1", ["answer", " = 1"], [-0.5, -0.5]),
                                       _choice("answer = 2")]},
        {"problem_id": p1, "choices": [_choice("```python\nanswer = 3\n```"), _choice("answer = 3")]},
    ])
    out = tmp_path / "samples.jsonl"
    assert cli_main(["import", "--format", "openai", "--dataset", "gsm8k", "--split", "test",
                     "--input", str(path), "--output", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip().splitlines()
    summary = json.loads(err[0])
    assert {k: summary[k] for k in ("problems", "candidates", "samples", "with_logprobs", "choices",
                                    "fences_stripped", "cut_at_stop", "duplicates_merged",
                                    "problems_mixed_logprobs", "problems_without_logprobs")} == {
        "problems": 2, "candidates": 3, "samples": 4, "with_logprobs": 1, "choices": 4,
        "fences_stripped": 1, "cut_at_stop": 0, "duplicates_merged": 1,
        "problems_mixed_logprobs": 1, "problems_without_logprobs": 1}
    assert err[1].startswith(f"note: 1 problem(s) have a log-prob for some candidates only (first: {p0})")
    assert "count-based P_LM" in err[1]
    problems = list(jsonl.read_problems(out))
    assert [c.program for c in problems[1].candidates] == ["answer = 3"]


def test_cli_stop_flag_decodes_escapes_and_overrides(tmp_path, gsm8k, capsys):
    path = _write(tmp_path / "c.jsonl", [{"problem_id": gsm8k[0].problem_id, "stop": ["zzz"],
                                          "choices": [_choice(BLANK_LINE_PROGRAM)]}])
    out = tmp_path / "s.jsonl"
    assert cli_main(["import", "--format", "openai", "--dataset", "gsm8k", "--split", "test",
                     "--input", str(path), "--output", str(out), "--stop", "\\n\\n"]) == 0
    assert json.loads(capsys.readouterr().err.splitlines()[0])["stops"] == ["\n\n"]
    assert next(iter(jsonl.read_problems(out))).candidates[0].program == "total = 16 - 3 - 4"


def test_lever_format_rejects_openai_only_flags(tmp_path):
    from lever_jax.cli.import_samples import _problems
    from lever_jax.data.errors import UserError
    import argparse

    args = argparse.Namespace(format="lever", stop=["x"], stop_preset="safe", fences="strip", dataset="mbpp",
                              input="x.jsonl", split=None, recorded_execution=False, source=None)
    with pytest.raises(UserError, match="--format openai/vllm only"):
        _problems(args, {})
