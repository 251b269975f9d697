"""Every script under scripts/ imports the installed package and shows its usage with --help (no
work done): a script whose imports broke, or that cannot show --help, fails here."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(p.name for p in (REPO / "scripts").glob("*.py"))


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS)
def test_script_shows_its_usage(script: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / script), "--help"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.lstrip().startswith("usage:"), proc.stdout[:500] + proc.stderr[-2000:]
    assert list(tmp_path.iterdir()) == [], "--help wrote files"


def test_scripts_import_the_installed_package_without_path_hacks() -> None:
    """``make install`` installs lever_jax (editable): a script imports it like any user code, and a
    sibling script from its own folder (Python puts the script's folder first on the path)."""
    bad = []
    for name in SCRIPTS:
        path = REPO / "scripts" / name
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and ast.unparse(node.func).startswith("sys.path."):
                bad.append(f"scripts/{name}:{node.lineno}: {ast.unparse(node.func)}")
    assert not bad, bad
