"""A sandbox task module whose import takes a while, as sympy's does (tests/test_sandbox.py)."""
from __future__ import annotations

import time
from typing import Any

time.sleep(0.5)
IMPORTED_AT = time.monotonic()  # CLOCK_MONOTONIC: comparable across the processes of this machine


def run(payload: Any) -> dict[str, float]:
    return {"imported_at": IMPORTED_AT}
