"""GSM8k task function for programs that use sympy (Faithful-CoT's solver prelude).

A separate module so that the sandbox gives it its own zygote with sympy pre-imported: sympy makes
every fork several times slower, so the ~5% of programs that need it must not slow down the rest.
"""
from __future__ import annotations

from typing import Any

import numpy  # noqa: F401 - some sympy code paths import it lazily; pay once, in the zygote
from sympy import Eq, Symbol, simplify, solve

from lever_jax.execution.python_gsm8k import run_program


def solve_it(equation: Any, variable: Any) -> dict[Any, Any]:
    """Faithful-CoT's helper: the first solution of ``solve(..., dict=True)`` (None if unsolved)."""
    solution = solve(equation, variable, dict=True)
    if not solution:
        if isinstance(variable, list):
            return {v: None for v in variable}
        return {variable: None}
    return solution[0]


SYMPY_PRELUDE = {"Symbol": Symbol, "Eq": Eq, "simplify": simplify, "solve": solve, "solve_it": solve_it}


def run(payload: dict[str, Any]) -> dict[str, Any]:
    return run_program(payload, SYMPY_PRELUDE)


def _warm_up() -> None:
    """Run typical solver calls once at import (in the zygote): sympy imports submodules lazily
    and fills caches on first use, which would otherwise be redone in every forked child (~4x)."""
    x, y = Symbol("x", positive=True), Symbol("y")
    solve_it(Eq(2 * x + 1, 5), x)
    solve_it([Eq(x + y, 10), Eq(x - y, 2)], [x, y])
    simplify((x**2 - 1) / (x - 1))
    float(solve_it(Eq(x * 0.78 - 20, 0.5 * x + 1.9), x)[x])


_warm_up()
