"""Synthetic Python mutants: every kind works, outputs parse and differ, generation is deterministic."""
from __future__ import annotations

import ast

import pytest

from lever_jax.data import mutations_python as mp
from lever_jax.data.datasets import load_problems

SOURCE = '''def f(xs, k):
    """Docstring with 1 number."""  # comment kept
    total = 0
    for i in range(len(xs) - 1):
        if xs[i] < k and not xs[i] == 0:
            total += xs[i] * 2
    return max(total, k) - xs[1:3][0] > 5
'''


def _kinds(source: str) -> set[str]:
    return {s.kind for s in mp.mutation_sites(source)}


def test_all_kinds_found() -> None:
    assert _kinds(SOURCE) == set(mp.MUTATIONS)


@pytest.mark.parametrize("source,kind,expected", [
    ("x = a + b\n", "binary_operator", "x = (a - b)\n"),
    ("x = a - b\n", "swap_arguments", "x = (b - a)\n"),
    ("y = a < b\n", "comparison", "y = (a <= b)\n"),
    ("y = a and b\n", "boolean", "y = (a or b)\n"),
    ("y = not a\n", "boolean", "y = (a)\n"),
    ("y = True\n", "boolean", "y = False\n"),
    ("y = 3\n", "constant", "y = 4\n"),
    ("y = 0\n", "constant", "y = (-1)\n"),
    ("for i in range(n): pass\n", "off_by_one", "for i in range((n) + 1): pass\n"),
    ("y = xs[i]\n", "off_by_one", "y = xs[(i) + 1]\n"),
    ("y = xs[a:b]\n", "off_by_one", "y = xs[(a) + 1:b]\n"),
    ("y = pow(a, b)\n", "swap_arguments", "y = pow(b, a)\n"),
])
def test_single_mutations(source: str, kind: str, expected: str) -> None:
    sites = [s for s in mp.mutation_sites(source) if s.kind == kind]
    assert expected in [mp.apply_site(source, s) for s in sites]


def test_docstrings_and_comments_untouched() -> None:
    for kind, program in mp.mutants(SOURCE, 50, seed=3):
        assert '"""Docstring with 1 number."""  # comment kept' in program, kind


def test_mutants_parse_differ_and_are_unique() -> None:
    out = mp.mutants(SOURCE, 40, seed=0)
    assert len(out) >= 20
    dumps = {ast.dump(ast.parse(p)) for _, p in out}
    assert len(dumps) == len(out) and ast.dump(ast.parse(SOURCE)) not in dumps
    assert {k for k, _ in out[:6]} == set(mp.MUTATIONS)  # round-robin over kinds first


def test_deterministic_and_seed_dependent() -> None:
    assert mp.mutants(SOURCE, 10, seed=7) == mp.mutants(SOURCE, 10, seed=7)
    assert mp.mutants(SOURCE, 10, seed=7) != mp.mutants(SOURCE, 10, seed=8)


def test_unicode_offsets() -> None:
    source = 's = "héllo wörld"; n = len(s) + 1\n'
    programs = [p for _, p in mp.mutants(source, 20)]
    assert 's = "héllo wörld"; n = (len(s) - 1)\n' in programs


def test_kinds_filter_and_bad_input() -> None:
    assert {k for k, _ in mp.mutants(SOURCE, 20, kinds=("constant",))} == {"constant"}
    with pytest.raises(ValueError):
        mp.mutants(SOURCE, 3, kinds=("nope",))
    assert mp.mutants("def (:\n", 3) == []


def test_synthetic_mbpp_pool() -> None:
    problems = load_problems("mbpp", "prompt")
    pool = list(mp.synthetic_problems(problems, n=5, seed=0))
    assert [p.problem_id for p in pool] == [p.problem_id for p in problems]
    again = list(mp.synthetic_problems(problems, n=5, seed=0))
    assert pool == again
    for p in pool:
        assert p.candidates[0].program == p.gold and p.candidates[0].source == "synthetic:gold"
        assert all(c.source.startswith("synthetic:") for c in p.candidates)
        assert len(p.candidates) <= 6
    assert sum(len(p.candidates) - 1 for p in pool) >= 30
    no_gold = mp.synthetic_problem(problems[0].replace(gold=None))
    assert no_gold.candidates == ()
