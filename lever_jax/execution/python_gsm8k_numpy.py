"""GSM8k task function for programs that import numpy (Program-of-Thoughts programs all do).

A separate module so that the sandbox gives it its own zygote with numpy pre-imported: importing
numpy in every forked child would cost far more than the program itself.
"""
from __future__ import annotations

from typing import Any

import numpy  # noqa: F401 - imported once in the zygote, inherited by every child

from lever_jax.execution.python_gsm8k import run_program


def run(payload: dict[str, Any]) -> dict[str, Any]:
    return run_program(payload)
