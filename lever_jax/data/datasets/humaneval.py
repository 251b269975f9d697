"""HumanEval (Chen et al. 2021): 164 Python functions with hidden unit tests (split ``test``).

Problem fields: question = the prompt (signature + docstring); gold = prompt + canonical solution
(a full program); context = ``prompt``, ``entry_point``, ``test`` (the ``check(candidate)``
source) and ``task_id``. Candidates' programs are FULL programs (prompt + completion). Problem
ids: ``humaneval-<n>`` for ``HumanEval/<n>``.
"""
from __future__ import annotations

from typing import Any

from lever_jax.data.bundled import bundled_path
from lever_jax.data.jsonl import DataFileError, iter_json_lines
from lever_jax.data.schema import Problem

SPLITS = ("test",)
FILE = ("humaneval", "HumanEval.jsonl.gz")


def problem_id(task_id: str) -> str:
    return "humaneval-" + task_id.split("/")[-1]


def problems_from_file(path: Any) -> list[Problem]:
    problems = []
    for lineno, obj in iter_json_lines(path):
        for key in ("task_id", "prompt", "entry_point", "canonical_solution", "test"):
            if not isinstance(obj.get(key), str):
                raise DataFileError(path, lineno, key, "missing or not a string")
        context = {"task_id": obj["task_id"], "prompt": obj["prompt"], "entry_point": obj["entry_point"],
                   "test": obj["test"]}
        problems.append(Problem(problem_id(obj["task_id"]), "humaneval", obj["prompt"], context,
                                obj["prompt"] + obj["canonical_solution"], ()))
    return problems


def load_problems(split: str, variant: str | None = None) -> list[Problem]:
    if split not in SPLITS:
        raise ValueError(f"humaneval has only the split 'test', got {split!r}")
    if variant is not None:
        raise ValueError(f"humaneval has no variants (got {variant!r})")
    return problems_from_file(bundled_path(*FILE, must_exist=True))


def gold_program(problem: Problem) -> str | None:
    return problem.gold if isinstance(problem.gold, str) else None
