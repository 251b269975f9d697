"""The ground-floor modules import jax + numpy only: no TensorFlow, SeqIO or torch."""
from __future__ import annotations

import json
import subprocess
import sys


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
