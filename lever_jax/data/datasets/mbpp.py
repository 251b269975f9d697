"""MBPP (Austin et al. 2021): 974 Python tasks with three assert tests each.

Official split by ``task_id`` (the MBPP paper / LEVER): prompt 1-10, test 11-510, validation
511-600, train 601-974; ``all`` = every task. ``variant="sanitized"``: the 427-task sanitized
subset (CodeT's HumanEval-format release) with its revised descriptions and tests.

Problem fields: question = task text; gold = reference code; context = ``test_list``,
``test_setup_code``, ``challenge_test_list`` (+ ``task_id``; sanitized adds ``prompt`` and
``entry_point``, and its gold is the prompt without its docstring + the canonical solution). Problem ids: ``mbpp-<task_id>``.
"""
from __future__ import annotations

import ast
import re
import sys
from typing import Any

from lever_jax.data.bundled import bundled_path
from lever_jax.data.jsonl import DataFileError, iter_json_lines
from lever_jax.data.schema import Problem

SPLITS = ("prompt", "test", "validation", "train", "all")
SPLIT_RANGES = {"prompt": (1, 10), "test": (11, 510), "validation": (511, 600), "train": (601, 974), "all": (1, 974)}
VARIANTS = (None, "sanitized")
FULL_FILE = ("mbpp", "mbpp.jsonl.gz")
SANITIZED_FILE = ("mbpp", "mbpp_sanitized_codet.jsonl.gz")


def split_of(task_id: int) -> str:
    """The official split a task id belongs to."""
    for split in ("prompt", "test", "validation", "train"):
        lo, hi = SPLIT_RANGES[split]
        if lo <= task_id <= hi:
            return split
    raise ValueError(f"MBPP task_id {task_id} outside 1..974")


def _in_split(task_id: int, split: str) -> bool:
    lo, hi = SPLIT_RANGES[split]
    return lo <= task_id <= hi


def _str_list(obj: dict, key: str, path: Any, lineno: int) -> list[str]:
    value = obj.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DataFileError(path, lineno, key, "expected a list of strings")
    return list(value)


def problems_from_file(path: Any, split: str = "all") -> list[Problem]:
    """Problems from an original-schema MBPP JSONL file (text, code, task_id, test_list, ...)."""
    problems = []
    for lineno, obj in iter_json_lines(path):
        task_id = obj.get("task_id")
        if not isinstance(task_id, int):
            raise DataFileError(path, lineno, "task_id", "missing or not an integer")
        if not _in_split(task_id, split):
            continue
        for key in ("text", "code"):
            if not isinstance(obj.get(key), str):
                raise DataFileError(path, lineno, key, "missing or not a string")
        context = {
            "task_id": task_id,
            "test_list": _str_list(obj, "test_list", path, lineno),
            "test_setup_code": obj.get("test_setup_code") or "",
            "challenge_test_list": _str_list(obj, "challenge_test_list", path, lineno),
        }
        problems.append(Problem(f"mbpp-{task_id}", "mbpp", obj["text"], context, obj["code"], ()))
    return problems


def asserts_from_check(test_source: str) -> list[str]:
    """The assert statements inside a HumanEval-style ``def check(candidate):`` as top-level lines."""
    tree = ast.parse(test_source)
    asserts: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            for stmt in node.body:
                if isinstance(stmt, ast.Assert):
                    asserts.append(ast.unparse(stmt))
    return asserts


def test_imports(tests: list[str]) -> str:
    """``import m`` lines for standard-library modules the tests use as ``m.attr`` (CodeT's
    sanitized file dropped MBPP's ``test_imports``, e.g. ``import math`` for ``math.isclose``)."""
    modules = set()
    for test in tests:
        for node in ast.walk(ast.parse(test)):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id in sys.stdlib_module_names:
                modules.add(node.value.id)
    return "".join(f"import {m}\n" for m in sorted(modules))


def _docstring_text(prompt: str) -> str:
    try:
        tree = ast.parse(prompt + "    pass\n")
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                doc = ast.get_docstring(node)
                if doc:
                    return doc.strip()
    except SyntaxError:
        pass
    return prompt


_PROMPT_DOCSTRING = re.compile(r"\n[ \t]*('''|\"\"\")[\s\S]*?\1[ \t]*(?=\n)")


def _strip_docstring(prompt: str) -> str:
    """The prompt without its docstring: CodeT's canonical solutions are often indented with two
    spaces while the prompt's docstring uses four, so prompt + solution would not parse."""
    return _PROMPT_DOCSTRING.sub("", prompt, count=1)


def sanitized_from_file(path: Any, split: str = "all") -> list[Problem]:
    """Problems from CodeT's sanitized-MBPP file (task_id ``MbppEval/<n>``, prompt, test, ...)."""
    problems = []
    for lineno, obj in iter_json_lines(path):
        raw_id = obj.get("task_id")
        try:
            task_id = int(str(raw_id).split("/")[-1])
        except ValueError:
            raise DataFileError(path, lineno, "task_id", f"expected 'MbppEval/<n>', got {raw_id!r}") from None
        if not _in_split(task_id, split):
            continue
        for key in ("prompt", "entry_point", "canonical_solution", "test"):
            if not isinstance(obj.get(key), str):
                raise DataFileError(path, lineno, key, "missing or not a string")
        try:
            tests = asserts_from_check(obj["test"])
        except SyntaxError as err:
            raise DataFileError(path, lineno, "test", f"not valid Python: {err}") from None
        context = {
            "task_id": task_id,
            "test_list": tests,
            "test_setup_code": test_imports(tests),
            "challenge_test_list": [],
            "prompt": obj["prompt"],
            "entry_point": obj["entry_point"],
        }
        gold = _strip_docstring(obj["prompt"]) + obj["canonical_solution"]
        problems.append(Problem(f"mbpp-{task_id}", "mbpp", _docstring_text(obj["prompt"]), context, gold, ()))
    return problems


def load_problems(split: str, variant: str | None = None) -> list[Problem]:
    if split not in SPLITS:
        raise ValueError(f"mbpp has no split {split!r}; splits: {', '.join(SPLITS)}")
    if variant not in VARIANTS:
        raise ValueError(f"mbpp variant must be None or 'sanitized', got {variant!r}")
    if variant == "sanitized":
        return sanitized_from_file(bundled_path(*SANITIZED_FILE, must_exist=True), split)
    return problems_from_file(bundled_path(*FULL_FILE, must_exist=True), split)


def gold_program(problem: Problem) -> str | None:
    return problem.gold if isinstance(problem.gold, str) else None
