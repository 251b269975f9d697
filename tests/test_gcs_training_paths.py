"""The training-side pieces of the path layer, in process, against the GCS emulator (no mock):
data-dir discovery and file specs on gs://, orbax checkpoints in a bucket, the metrics/TensorBoard
sinks, and the eval output names. The end-to-end CLI run is tests/test_gcs_training.py."""
from __future__ import annotations

import json

import jax.numpy as jnp
import numpy as np
import pytest

from lever_jax.data import paths
from lever_jax.data.bundled import bundled_path
from lever_jax.inputs.examples import discover_files, discover_specs, file_problem_ids, file_spec
from lever_jax.training.checkpoints import Checkpointer, abstract_like
from lever_jax.training.metric_sinks import MetricsWriter, read_metrics
from lever_jax.training.runs import eval_output_paths
from tests.gcs_emulator import emulator

BUCKET = "gs://lever-paths"
POOL = bundled_path("gsm8k_pool") / "code002.executed.jsonl.gz"


@pytest.fixture(scope="module")
def gcs():
    with emulator("lever-paths") as url:
        paths.copy(POOL, f"{BUCKET}/data/gsm8k_pool/mine.executed.jsonl.gz")
        paths.write_bytes_atomic(f"{BUCKET}/data/gsm8k_pool/README.md", b"not a split")
        yield url


def test_data_dir_and_files_on_gcs(gcs):
    found = discover_files(f"{BUCKET}/data")
    assert found == {("gsm8k_pool", "mine"): f"{BUCKET}/data/gsm8k_pool/mine.executed.jsonl.gz"}
    names = {s.name for s in discover_specs(f"{BUCKET}/data")}
    assert {"lever_verify_gsm8k_pool_mine", "lever_verify_gsm8k_pool_mine_fold1_train"} <= names
    spec = file_spec(f"{BUCKET}/data/gsm8k_pool/mine.executed.jsonl.gz", role="train")
    assert spec.path == f"{BUCKET}/data/gsm8k_pool/mine.executed.jsonl.gz" and spec.split == "mine"
    assert file_problem_ids(spec.path) == file_problem_ids(POOL)  # same file, read from the bucket
    with pytest.raises(FileNotFoundError, match=f"{BUCKET}/nowhere"):
        discover_files(f"{BUCKET}/nowhere")


def jax_tree_plus_one(tree):
    return {k: v + 1 for k, v in tree.items()}


def test_checkpoints_in_a_bucket(gcs):
    state = {"w": jnp.arange(6.0).reshape(2, 3), "step": jnp.int32(3)}
    with Checkpointer(f"{BUCKET}/run", keep_latest=1, keep_best=0) as ckpt:
        assert str(ckpt.directory) == f"{BUCKET}/run/checkpoints"
        ckpt.save(2, state, {"seed": 1})
        ckpt.save(4, jax_tree_plus_one(state), {"seed": 1})
    assert paths.exists(f"{BUCKET}/run/checkpoints/4/commit_success.txt")
    assert not paths.exists(f"{BUCKET}/run/checkpoints/2")  # keep_latest=1 deleted it in the bucket
    with Checkpointer(f"{BUCKET}/run", read_only=True) as ckpt:
        assert ckpt.latest_step() == 4
        restored, data = ckpt.restore(None, abstract_like(state))
    np.testing.assert_array_equal(restored["w"], np.arange(6.0).reshape(2, 3) + 1)
    assert data == {"seed": 1}


def test_metrics_and_tensorboard_in_a_bucket(gcs):
    run = f"{BUCKET}/metrics-run"
    writer = MetricsWriter(run, flush_secs=3600)
    for step in (1, 2, 3):
        writer.write(step, {"loss": 1.0 / step})
    assert read_metrics(paths.join(run, "metrics.jsonl")) == []  # throttled: nothing uploaded yet
    writer.flush()  # what the trainer does before each checkpoint
    assert [r["step"] for r in read_metrics(paths.join(run, "metrics.jsonl"))] == [1, 2, 3]
    writer.write(4, {"loss": 0.25})
    writer.close()
    assert [r["step"] for r in read_metrics(paths.join(run, "metrics.jsonl"))] == [1, 2, 3, 4]
    events = paths.glob(paths.join(run, "tensorboard", "events.out.tfevents.*"))
    assert len(events) == 1 and len(paths.read_bytes(events[0])) > 0

    resumed = MetricsWriter(run, resume_step=2, tensorboard=False)  # a resume from step 2 cuts the rest
    assert [r["step"] for r in read_metrics(paths.join(run, "metrics.jsonl"))] == [1, 2]
    resumed.write(3, {"loss": 0.5})
    resumed.close()
    lines = paths.read_text(paths.join(run, "metrics.jsonl")).splitlines()
    assert [json.loads(line)["step"] for line in lines] == [1, 2, 3]


def test_eval_output_paths(tmp_path):
    assert eval_output_paths(f"{BUCKET}/run", "t", None, None) == (f"{BUCKET}/run/eval/t.scores.json",
                                                                  f"{BUCKET}/run/eval/t.metrics.json")
    assert eval_output_paths("m", "t", f"{BUCKET}/o/x.json", None) == (f"{BUCKET}/o/x.json", f"{BUCKET}/o/x.metrics.json")
    assert eval_output_paths(str(tmp_path), "t", None, f"{BUCKET}/out") == (f"{BUCKET}/out/t.scores.json",
                                                                           f"{BUCKET}/out/t.metrics.json")
    assert eval_output_paths(str(tmp_path), "t", None, None) == (str(tmp_path / "eval" / "t.scores.json"),
                                                                 str(tmp_path / "eval" / "t.metrics.json"))


def test_epath_backend_follows_the_path_layer_even_if_touched_first():
    """orbax's epath picks its gs:// backend once per process: a URL path touched before the path
    layer configured itself must not leave orbax on tf.io.gfile (which talks to real GCS, not the
    emulator or gcsfs's credentials). Fresh process, so no other test has configured anything."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = ("from etils import epath\n"
              "first = type(epath.Path('gs://b/x')._backend).__name__\n"
              "from lever_jax.data import paths\n"
              "paths.configure_remote()\n"
              "print(first, type(epath.Path('gs://b/x')._backend).__name__)\n")
    env = {k: v for k, v in os.environ.items() if k != "EPATH_USE_TF"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    first, after = out.stdout.split()[-2:]
    assert first == "_TfBackend" and after == "_FileSystemSpecBackend"
