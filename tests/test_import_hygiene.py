"""The ground-floor modules import jax + numpy only: no TensorFlow, SeqIO or torch."""
from __future__ import annotations

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


# Data flows one way: (sampling ->) data -> execution -> inputs -> models / training -> rerank;
# pipeline composes them; seqio and cli sit on top. A subpackage may import only from the ones
# listed for it.
ALLOWED_IMPORTS = {
    "data": set(),
    "sampling": {"data"},
    "execution": {"data"},
    "inputs": {"data", "execution"},
    "models": {"data"},
    "rerank": {"data"},
    "training": {"data", "inputs", "models", "rerank"},
    "pipeline": {"data", "execution", "inputs", "models", "rerank", "training"},
    "seqio": {"data", "inputs", "rerank"},
    "cli": {"data", "execution", "inputs", "models", "rerank", "training", "pipeline", "seqio", "sampling"},
}


def test_every_subpackage_has_import_rules():
    root = Path(__file__).resolve().parent.parent / "lever_jax"
    packages = {p.parent.name for p in root.glob("*/__init__.py")}
    assert packages - set(ALLOWED_IMPORTS) == set(), "a new subpackage needs its row in ALLOWED_IMPORTS"


def test_subpackages_import_only_downstream():
    import ast

    root = Path(__file__).resolve().parent.parent / "lever_jax"
    bad = []
    for path in root.rglob("*.py"):
        rel = path.relative_to(root).parts
        if len(rel) < 2 or rel[0] not in ALLOWED_IMPORTS:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                parts = name.split(".")
                if parts[0] == "lever_jax" and len(parts) > 1 and parts[1] != rel[0] \
                        and parts[1] not in ALLOWED_IMPORTS[rel[0]]:
                    bad.append(f"{path.relative_to(root)} imports {name}")
    assert not bad, bad
