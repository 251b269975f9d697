"""GSM8k (Cobbe et al. 2021): grade-school maths word problems; gold = the number after ``####``.

Files: ``bundled/gsm8k/{train,test}.jsonl.gz`` (openai/grade-school-math, unchanged). Problem ids
are ``gsm8k-<split>-<line index, 4 digits>``. There is no gold program (LEVER trains on sampled
programs only), so :func:`gold_program` returns None.
"""
from __future__ import annotations

import math
import re
from typing import Any

from lever_jax.data.bundled import bundled_path
from lever_jax.data.jsonl import DataFileError, iter_json_lines
from lever_jax.data.schema import Problem

SPLITS = ("train", "test")
SIZES = {"train": 7473, "test": 1319}
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


def parse_gold_answer(answer: str) -> float:
    """The float after the last ``####`` of a GSM8k rationale (commas removed)."""
    if "####" not in answer:
        raise ValueError("no '#### <number>' in the answer")
    text = answer.rsplit("####", 1)[1].strip().replace(",", "")
    if not _NUMBER.match(text):
        raise ValueError(f"gold answer {text!r} is not a number")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"gold answer {text!r} is not finite")
    return value


def problem_id(split: str, index: int) -> str:
    return f"gsm8k-{split}-{index:04d}"


def problems_from_file(path: Any, split: str) -> list[Problem]:
    """Problems from an original GSM8k JSONL file (``question``, ``answer``)."""
    problems = []
    for index, (lineno, obj) in enumerate(iter_json_lines(path)):
        for key in ("question", "answer"):
            if not isinstance(obj.get(key), str):
                raise DataFileError(path, lineno, key, "missing or not a string")
        try:
            gold = parse_gold_answer(obj["answer"])
        except ValueError as err:
            raise DataFileError(path, lineno, "answer", str(err)) from None
        problems.append(Problem(problem_id(split, index), "gsm8k", obj["question"], {}, gold, ()))
    return problems


def load_problems(split: str, variant: str | None = None) -> list[Problem]:
    if split not in SPLITS:
        raise ValueError(f"gsm8k has no split {split!r}; splits: {', '.join(SPLITS)}")
    if variant is not None:
        raise ValueError(f"gsm8k has no variants (got {variant!r})")
    return problems_from_file(bundled_path("gsm8k", f"{split}.jsonl.gz", must_exist=True), split)


def gold_program(problem: Problem) -> str | None:
    return None
