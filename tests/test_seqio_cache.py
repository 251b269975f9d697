"""seqio's Beam caching (`seqio.scripts.cache_tasks_main`, DirectRunner) on a lever task: the cached
task reads back as exactly the uncached examples (and the training feed reads it in order), and under another vocabulary it is an error."""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lever_jax.data.bundled import bundled_path
from lever_jax.data.jsonl import read_problems, write_problems

REPO = Path(__file__).resolve().parent.parent
TASK = "lever_verify_cache_probe"

REGISTER = textwrap.dedent(f"""
    import dataclasses, os
    from lever_jax.inputs.examples import file_spec
    from tasks.lever_tasks import register_task
    spec = file_spec(os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe.executed.jsonl.gz"))
    register_task(dataclasses.replace(spec, name={TASK!r}))
""")

READ = textwrap.dedent(f"""
    import json, sys
    import gin, seqio
    import probe_tasks
    from tasks.lever_tasks import cached_dir

    def rows(use_cached):
        task = seqio.get_mixture_or_task({TASK!r})
        ds = task.get_dataset({{"inputs": 64, "targets": 1}}, split="train", shuffle=False, use_cached=use_cached)
        out = [{{k: (v.tolist() if hasattr(v, "tolist") else v.decode() if isinstance(v, bytes) else v)
                 for k, v in ex.items()}} for ex in ds.as_numpy_iterator()]
        return sorted(out, key=lambda e: (e["problem_index"], e["candidate_index"]))

    result = {{"cached_dir": cached_dir({TASK!r}), "plain": rows(False), "cached": rows(True)}}
    from lever_jax.seqio.feeds import seqio_problems  # what `lever-jax train` reads: the cache here
    result["feed"] = [[p.index, p.tokens] for p in seqio_problems({TASK!r}, 64)]
    gin.parse_config("get_vocabulary.name = 'spm'")
    try:
        rows(True)
        result["other_vocabulary"] = "read"
    except Exception as err:
        result["other_vocabulary"] = str(err)
    print("RESULT " + json.dumps(result))
""")


@pytest.mark.slow
def test_cache_tasks_main_caches_a_task_that_reads_back_identically(tmp_path):
    pytest.importorskip("apache_beam")
    problems = list(itertools.islice(read_problems(bundled_path("gsm8k_pool") / "code002.executed.jsonl.gz"), 3))
    write_problems(tmp_path / "probe.executed.jsonl.gz", problems)
    (tmp_path / "probe_tasks.py").write_text(REGISTER)
    (tmp_path / "read.py").write_text(READ)
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}", "LEVER_JAX_NO_AUTO_REGISTER": "1",
           "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3"}
    cache = tmp_path / "cache"
    built = subprocess.run([sys.executable, "-m", "seqio.scripts.cache_tasks_main", "--module_import=probe_tasks",
                            f"--tasks={TASK}", f"--output_cache_dir={cache}", "--min_shards=1",
                            "--pipeline_options=--runner=DirectRunner"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-4000:]
    assert (cache / TASK / "COMPLETED").exists() and list((cache / TASK).glob("train.tfrecord-*"))

    read = subprocess.run([sys.executable, "read.py"], cwd=tmp_path, env={**env, "LEVER_JAX_SEQIO_CACHE_DIR": str(cache)},
                          capture_output=True, text=True, timeout=600)
    assert read.returncode == 0, read.stderr[-4000:]
    result = json.loads(next(line for line in read.stdout.splitlines() if line.startswith("RESULT "))[len("RESULT "):])
    assert result["cached_dir"] == str(cache / TASK)
    assert len(result["plain"]) == sum(len(p.candidates) for p in problems)
    assert result["cached"] == result["plain"]  # same ids, labels and rerank fields, candidate for candidate
    expected = {}
    for ex in result["plain"]:
        expected.setdefault(ex["problem_index"], []).append(ex["inputs"])
    assert result["feed"] == [[index, tokens] for index, tokens in expected.items()]  # training reads the cache in order
    assert "made with another vocabulary than" in result["other_vocabulary"] and "rebuild the cache" in result["other_vocabulary"]
