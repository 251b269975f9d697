"""Hand-crafted features of a GSM8k candidate's program and execution result.

Why: on a 2-core CPU the end-to-end run cannot fine-tune a transformer verifier, and a frozen
encoder's pooled vectors cannot compare a program's arithmetic with the question's numbers
(docs/bench/e2e.md). These few numbers give the small verifier head the checks a fine-tuned
verifier learns from the same input (question + program + execution result): does the answer
exist, is it a whole number, is it negative, does the program use the numbers the question
gives, are its intermediate values plausible. They read nothing but the verifier's input, never
the gold answer.

Features come in two groups so that LEVER's input ablations stay meaningful: PROGRAM features
(from the question and the program text) are dropped with the program (``no_program``),
EXECUTION features (from the execution result) with the result (``no_exec``).
"""
from __future__ import annotations

import ast
import math
import re
from typing import Optional, Sequence

import numpy as np

from lever_jax.data.schema import Candidate, Problem

PROGRAM_FEATURES = (
    "question_numbers_used",  # share of the question's numbers (other than 0/1) among the program's literals
    "literals_not_in_question",  # share of the program's literals (other than 0/1) the question does not give
    "log_num_literals",
    "log_num_statements",
    "unparsable",  # the program (comment lines dropped) is not valid Python
)
EXECUTION_FEATURES = (
    "status_ok", "status_error", "status_timeout",
    "no_answer",  # no finite numeric answer
    "answer_integer", "answer_negative", "answer_zero",
    "log_answer_magnitude",
    "answer_in_question",  # the answer is one of the question's numbers
    "answer_decimals",  # digits after the point of a non-integer answer (0..1)
    "locals_negative",  # share of numeric final locals that are negative
    "locals_non_integer",  # share of numeric final locals that are not whole numbers
    "log_num_locals",
    "question_numbers_in_locals",  # share of the question's numbers found among the final locals
    "log_max_local_magnitude",
)
FEATURE_NAMES = PROGRAM_FEATURES + EXECUTION_FEATURES
NUM_FEATURES = len(FEATURE_NAMES)

_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
    "thousand": 1000, "half": 0.5, "twice": 2, "double": 2, "triple": 3, "dozen": 12, "quarter": 0.25,
    "third": 1 / 3,
}
_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*%")
_WORD = re.compile(r"[a-z]+")


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


def _finite(value: object) -> Optional[float]:
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    return x if math.isfinite(x) else None


def question_numbers(question: str) -> list[float]:
    """Numbers a question states: digits (``1,200`` -> 1200), number words, percentages as fractions."""
    found: set[float] = set()
    for match in _NUMBER.finditer(question):
        x = _finite(match.group().replace(",", ""))
        if x is not None:
            found.add(x)
    for word in _WORD.findall(question.lower()):
        if word in _NUMBER_WORDS:
            found.add(float(_NUMBER_WORDS[word]))
    for match in _PERCENT.finditer(question):
        found.add(float(match.group(1)) / 100)
    return sorted(found)


def program_literals(program: str) -> Optional[tuple[list[float], int]]:
    """(numeric literals, statement count) of a program without its comment lines; None if unparsable."""
    code = "\n".join(line for line in program.splitlines() if not line.lstrip().startswith("#"))
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    literals = [float(node.value) for node in ast.walk(tree)
                if isinstance(node, ast.Constant) and isinstance(node.value, (int, float))
                and not isinstance(node.value, bool) and math.isfinite(float(node.value))]
    statements = sum(isinstance(node, ast.stmt) for node in ast.walk(tree))
    return literals, statements


def _final_locals(result_text: str) -> list[float]:
    """Numeric values of the GSM8k executor's final-locals dict (``{'name': 'value', ...}``)."""
    try:
        parsed = ast.literal_eval(result_text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return []
    if not isinstance(parsed, dict):
        return []
    return [x for x in (_finite(v) for v in parsed.values()) if x is not None]


def _share(flags: Sequence[bool], empty: float) -> float:
    return float(np.mean(flags)) if len(flags) else empty


def gsm8k_features(problem: Problem, candidate: Candidate) -> np.ndarray:
    """float32[NUM_FEATURES] for one executed GSM8k candidate (order: FEATURE_NAMES, values in ~[0, 1])."""
    execution = candidate.execution
    if execution is None:
        raise ValueError(f"problem {problem.problem_id!r}: candidate has no execution")
    f = dict.fromkeys(FEATURE_NAMES, 0.0)
    numbers = question_numbers(problem.question)
    given = [x for x in numbers if x not in (0.0, 1.0)]
    parsed = program_literals(candidate.program)
    if parsed is None:
        f["unparsable"] = 1.0
    else:
        literals, statements = parsed
        big = [x for x in literals if x not in (0.0, 1.0)]
        f["question_numbers_used"] = _share([any(_close(l, x) for l in literals) for x in given], 1.0)
        f["literals_not_in_question"] = _share([not any(_close(l, x) for x in numbers) for l in big], 0.0)
        f["log_num_literals"] = math.log1p(len(literals)) / 3
        f["log_num_statements"] = math.log1p(statements) / 3
    f["status_ok"] = float(execution.status == "ok")
    f["status_error"] = float(execution.status == "error")
    f["status_timeout"] = float(execution.status == "timeout")
    answer = _finite((execution.details or {}).get("answer")) if execution.status == "ok" else None
    if answer is None:
        f["no_answer"] = 1.0
    else:
        integer = _close(answer, round(answer))
        f["answer_integer"] = float(integer)
        f["answer_negative"] = float(answer < 0)
        f["answer_zero"] = float(answer == 0)
        f["log_answer_magnitude"] = min(math.log10(abs(answer) + 1) / 5, 2.0)
        f["answer_in_question"] = float(any(_close(answer, x) for x in numbers))
        if not integer:
            decimals = f"{answer:.6f}".rstrip("0").split(".")[1]
            f["answer_decimals"] = len(decimals) / 6
    if execution.status == "ok":
        values = _final_locals(execution.result_text)
        if values:
            f["locals_negative"] = _share([x < 0 for x in values], 0.0)
            f["locals_non_integer"] = _share([not _close(x, round(x)) for x in values], 0.0)
            f["log_num_locals"] = math.log1p(len(values)) / 3
            f["question_numbers_in_locals"] = _share([any(_close(v, x) for v in values) for x in numbers], 1.0)
            f["log_max_local_magnitude"] = min(math.log10(max(abs(x) for x in values) + 1) / 5, 2.0)
    return np.array([f[name] for name in FEATURE_NAMES], np.float32)


def pool_candidate_features(problems: Sequence[Problem], width: int) -> np.ndarray:
    """float32[B, width, NUM_FEATURES] for executed GSM8k problems (zeros on padding)."""
    out = np.zeros((len(problems), width, NUM_FEATURES), np.float32)
    for row, problem in enumerate(problems):
        if problem.dataset != "gsm8k":
            raise ValueError(f"candidate features are defined for gsm8k only; problem {problem.problem_id!r} "
                             f"is {problem.dataset!r} (set HeadConfig.use_candidate_features = False)")
        for col, candidate in enumerate(problem.candidates[:width]):
            out[row, col] = gsm8k_features(problem, candidate)
    return out


def ablation_mask(use_program: bool, use_result: bool) -> np.ndarray:
    """float32[NUM_FEATURES]: 1 for the features an input ablation keeps."""
    return np.array([use_program] * len(PROGRAM_FEATURES) + [use_result] * len(EXECUTION_FEATURES), np.float32)
