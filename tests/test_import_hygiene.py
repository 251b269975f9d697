"""Import hygiene: the ground-floor modules import jax + numpy only (no TensorFlow, SeqIO or torch),
and every first-party package and lever_jax subpackage imports only what sits below it."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path


def test_scoring_baselines_metrics_import_no_heavy_frameworks():
    code = (
        "import json, sys\n"
        "import lever_jax.rerank.scoring, lever_jax.rerank.methods, lever_jax.rerank.statistics\n"
        "heavy = ('tensorflow', 'seqio', 'torch', 'tensorflow_text', 'flax', 'lever_jax.data')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy[:5] or m.startswith(heavy[5]))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert loaded == [], f"ground-floor modules pulled in: {loaded}"



def test_the_metrics_writer_loads_tensorboardx_without_torch(tmp_path):
    """tensorboardX imports torch when it is installed (~3 s of CPU in every training process):
    the metrics writer loads it without, and torch still imports normally afterwards."""
    import pytest

    pytest.importorskip("torch")
    code = (
        "import sys\n"
        "from lever_jax.training.metric_sinks import MetricsWriter\n"
        f"writer = MetricsWriter({str(tmp_path)!r})\n"
        "writer.write(1, {'loss': 0.5})\n"
        "writer.close()\n"
        "print('torch' in sys.modules)\n"
        "import torch\n"
        "print(torch.zeros(2).sum().item())\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "0.0"]
    assert [p.name.startswith("events.out.tfevents.") for p in (tmp_path / "tensorboard").iterdir()] == [True]

# Data flows one way: (sampling ->) data -> execution -> inputs -> models / training -> rerank;
# pipeline composes them; cli sits on top. seqio is the TensorFlow twin of inputs (its task
# features and the SeqIO feed): only training's seqio pipeline and cli reach it, lazily. A
# subpackage may import only from the ones listed for it.
ALLOWED_IMPORTS = {
    "data": set(),
    "sampling": {"data"},
    "execution": {"data"},
    "inputs": {"data", "execution"},
    "models": {"data"},
    "rerank": {"data"},
    "seqio": {"data", "inputs", "rerank"},
    "training": {"data", "inputs", "models", "rerank", "seqio"},
    "pipeline": {"data", "execution", "inputs", "models", "rerank", "training"},
    "cli": {"data", "execution", "inputs", "models", "rerank", "training", "pipeline", "seqio", "sampling"},
}
# The first-party top-level packages, bottom to top: the library, the SeqIO task module that gin
# files and users import (t5x's layout), the scripts, the tests. Each may import itself and the
# ones listed; nothing below imports what sits above it.
TOP_LEVEL_IMPORTS = {
    "lever_jax": set(),
    "tasks": {"lever_jax"},
    "scripts": {"lever_jax", "tasks"},
    "tests": {"lever_jax", "tasks", "scripts"},
}
# lever_jax's own top-level helper modules (standard library only) that every subpackage may import:
# the lazy public names of each subpackage's __init__.
SHARED = {"_exports"}
REPO = Path(__file__).resolve().parent.parent


def _first_party(name: str) -> str | None:
    """The first-party top-level package a dotted module name belongs to (a script imports a
    sibling script by its bare name), or None for a third-party / standard module."""
    head = name.split(".")[0]
    if head in TOP_LEVEL_IMPORTS:
        return head
    return "scripts" if (REPO / "scripts" / f"{head}.py").is_file() else None


def _imported_names(path: Path) -> list[str]:
    """Every module ``path`` imports: import statements (relative ones resolved, lazy ones in
    functions too) and ``importlib.import_module`` / ``__import__`` of a literal name."""
    package = list(path.relative_to(REPO).with_suffix("").parts[:-1])
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names += [module] if node.module else [f"{module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str) and ast.unparse(node.func) in (
                    "importlib.import_module", "import_module", "__import__"):
            names.append(node.args[0].value)
    return names


def _python_files(top: str) -> list[Path]:
    return sorted((REPO / top).rglob("*.py"))


def test_every_subpackage_has_import_rules():
    packages = {p.parent.name for p in (REPO / "lever_jax").glob("*/__init__.py")}
    assert packages - set(ALLOWED_IMPORTS) == set(), "a new subpackage needs its row in ALLOWED_IMPORTS"


def test_every_first_party_package_has_import_rules():
    tops = {p.parent.name for p in REPO.glob("*/__init__.py")} | {"scripts"}
    assert tops - set(TOP_LEVEL_IMPORTS) == set(), "a new top-level package needs its row in TOP_LEVEL_IMPORTS"


def test_first_party_packages_import_only_downward():
    """``tasks`` may import lever_jax; nothing in lever_jax imports ``tasks``, ``scripts`` or ``tests``."""
    bad = []
    for top, allowed in TOP_LEVEL_IMPORTS.items():
        for path in _python_files(top):
            for name in _imported_names(path):
                owner = _first_party(name)
                if owner is not None and owner != top and owner not in allowed:
                    bad.append(f"{path.relative_to(REPO)} imports {name}")
    assert not bad, bad


def test_subpackages_import_only_downstream():
    root = REPO / "lever_jax"
    bad = []
    for path in _python_files("lever_jax"):
        rel = path.relative_to(root).parts
        if len(rel) < 2 or rel[0] not in ALLOWED_IMPORTS:
            continue
        for name in _imported_names(path):
            parts = name.split(".")
            if parts[0] == "lever_jax" and len(parts) > 1 and parts[1] != rel[0] \
                    and parts[1] not in ALLOWED_IMPORTS[rel[0]] | SHARED:
                bad.append(f"{path.relative_to(root)} imports {name}")
    assert not bad, bad

