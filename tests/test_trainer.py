"""Trainer: LEVER's schedule, exact gradient accumulation, sharded == unsharded on 8 fake
devices (subprocess), gold positives, and the eval-side metrics/records."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import numpy as np
import pytest

from lever_jax.training import partitioning
from lever_jax.data.schema import Candidate, Execution, Problem
from lever_jax.data.arrays import from_flat
from lever_jax.inputs.feeds import EvalSet, with_gold
from lever_jax.models.configs import T5Config
from lever_jax.models.verifier import EncoderDecoderVerifier
from lever_jax.rerank.scores_file import calibration_error, compute_metrics, score_records
from lever_jax.training.trainer import OptimizerConfig, Trainer, make_schedule
from tests.micro_train import with_devices

REPO = Path(__file__).resolve().parent.parent
# A really small T5 so that compiling stays cheap on a shared 2-core machine.
MICRO = dict(vocab_size=64, d_model=16, num_heads=2, d_kv=8, d_ff=32, num_encoder_layers=1,
             num_decoder_layers=1, no_token_id=5, yes_token_id=6, dropout_rate=0.0)


def _batch(seed: int, p: int = 4, k: int = 3, length: int = 16) -> dict:
    rng = np.random.default_rng(seed)
    mask = np.ones((p, k), bool)
    mask[1, 2] = mask[2, 1:] = False
    return {"encoder_input_tokens": rng.integers(2, 64, (p, k, length)).astype(np.int32),
            "labels": rng.integers(0, 2, (p, k)).astype(np.int32), "candidate_mask": mask}


def test_schedule_is_linear_warmup_then_linear_decay():
    sched = make_schedule(OptimizerConfig(learning_rate=1.0, warmup_steps=4), train_steps=12)
    got = [float(sched(s)) for s in range(13)]
    want = [s / 4 for s in range(5)] + [(12 - s) / 8 for s in range(5, 13)]
    np.testing.assert_allclose(got, want, atol=1e-6)


@pytest.mark.slow
def test_accumulation_equals_the_whole_batch():
    model = EncoderDecoderVerifier(T5Config(**MICRO))
    mesh, rules = partitioning.make_mesh(), partitioning.logical_axis_rules("data")
    # eps=1: Adam's update m / (sqrt(v) + eps) stays linear in tiny gradients, so float-rounding
    # differences between the two summation orders are not amplified into O(lr) parameter moves.
    opt = OptimizerConfig(learning_rate=1e-2, warmup_steps=0, eps=1.0)
    runs = {}
    for accum in (1, 2):
        trainer = Trainer(model, opt, 10, mesh, rules, 16, accum_steps=accum)
        state, losses = trainer.init_state(0), []
        for step in range(3):
            state, metrics = trainer.train_step(state, _batch(step))
            losses.append(float(metrics["loss"]))
        runs[accum] = (losses, jax.device_get(state.params))
    for accum in (2,):
        np.testing.assert_allclose(runs[accum][0], runs[1][0], rtol=1e-6, atol=1e-6)
        for a, b in zip(jax.tree.leaves(runs[accum][1]), jax.tree.leaves(runs[1][1])):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert runs[1][0][2] < runs[1][0][0]  # it learns the fixed batches


SHARDED_SCRIPT = textwrap.dedent("""
    import json, sys
    import jax, numpy as np
    from jax.sharding import PartitionSpec as P
    sys.path.insert(0, sys.argv[1])
    from tests.test_trainer import MICRO, _batch
    from lever_jax.training import partitioning
    from lever_jax.models.configs import T5Config
    from lever_jax.models.verifier import EncoderDecoderVerifier
    from lever_jax.training.trainer import OptimizerConfig, Trainer
    assert jax.device_count() == 8, jax.devices()
    model = EncoderDecoderVerifier(T5Config(**dict(MICRO, d_ff=64, num_heads=4)))
    opt = OptimizerConfig(learning_rate=1e-2, warmup_steps=1, eps=1.0)
    out = {}
    for name, (data, mdl, strategy, accum) in {
            "single": (1, 1, "data", 1), "fsdp4x2_accum2": (4, 2, "fsdp", 2)}.items():
        mesh = partitioning.make_mesh(data=data, model=mdl, devices=jax.devices()[:data * mdl])
        trainer = Trainer(model, opt, 10, mesh, partitioning.logical_axis_rules(strategy), 16,
                          accum_steps=accum)
        state, losses = trainer.init_state(0), []
        for step in range(3):
            state, m = trainer.train_step(state, _batch(step, p=8))
            losses.append(float(m["loss"]))
        wi = state.params["encoder"]["layers_0"]["mlp"]["wi_0"]["kernel"]
        out[name] = {"losses": losses, "spec": str(wi.sharding.spec),
                     "shard_shape": list(wi.addressable_shards[0].data.shape),
                     "full_shape": list(wi.shape),
                     "mu_spec": str(jax.tree.leaves(state.opt_state)[1].sharding.spec)}
    print("RESULT" + json.dumps(out))
""")


@pytest.mark.slow
def test_sharded_equals_unsharded_on_8_fake_devices(tmp_path):
    env = dict(os.environ, XLA_FLAGS=with_devices(8, os.environ), JAX_PLATFORMS="cpu")
    script = tmp_path / "sharded.py"
    script.write_text(SHARDED_SCRIPT)
    proc = subprocess.run([sys.executable, str(script), str(REPO)], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.split("RESULT", 1)[1])
    base = out["single"]["losses"]
    for name in ("fsdp4x2_accum2",):
        np.testing.assert_allclose(out[name]["losses"], base, rtol=1e-5, atol=1e-5)
    fsdp = out["fsdp4x2_accum2"]
    # wi_0 kernel [embed=16, mlp=64]: embed over 'data' (4), mlp over 'model' (2).
    assert fsdp["spec"] in ("P('data', 'model')", "PartitionSpec('data', 'model')"), fsdp
    assert fsdp["shard_shape"] == [4, 32] and fsdp["full_shape"] == [16, 64]
    assert out["single"]["shard_shape"] == out["single"]["full_shape"]


def _problem(gold: str, programs: list[tuple[str, bool]]) -> Problem:
    cands = tuple(Candidate(program=p, gen_logprob=-1.0, execution=Execution(
        status="ok", result_key=str(ok), result_text=str(ok), correct=ok)) for p, ok in programs)
    return Problem(problem_id="p0", dataset="mbpp", question="q", context={}, gold=gold,
                   candidates=cands)


def test_gold_program_added_as_positive_only_when_missing():
    problem, added = with_gold(_problem("def f(): return 1", [("def f(): return 2", False),
                                                             ("def f():  return 3", True)]))
    assert added and problem.candidates[-1].program == "def f(): return 1"
    assert problem.candidates[-1].execution.correct and problem.candidates[-1].source == "gold"
    same, added = with_gold(_problem("def f(): return 1", [("def  f(): return 1", True)]))
    assert not added and len(same.candidates) == 1
    none_correct, added = with_gold(_problem("x", [("y", False)]))
    assert not added  # its execution would be unknown


def _eval_set() -> EvalSet:
    # Two problems: 3 candidates (results a, b, a) and 2 candidates (results x, y).
    arrays = from_flat(["p0", "p1"], np.array([0, 3, 5]),
                       gen_logprob=np.array([-3.0, -0.1, -3.0, -0.5, -1.0], np.float32),
                       num_tokens=np.array([3, 3, 3, 3, 3], np.int32), counts=np.ones(5, np.int32),
                       result_ids=np.array([0, 1, 0, 0, 1], np.int32),
                       correct=np.array([1, 0, 1, 0, 1], bool))
    return EvalSet(name="t", dataset="mbpp", tokens=np.zeros((5, 4), np.int32), arrays=arrays)


def test_metrics_and_score_records():
    es = _eval_set()
    ver = np.log(np.array([0.9, 0.2, 0.9, 0.3, 0.8], np.float32))
    metrics = compute_metrics(es, ver)
    # Plain rerank: p0 -> cand 1 (-0.1 + log .2 = -1.71 > -3.1) wrong; p1 -> cand 1 right.
    assert metrics["rerank_acc"] == pytest.approx(0.5)
    # Summing: p0 groups {0,2} (logsumexp(-3.1, -3.1) = -2.41) vs {1} (-1.71): still wrong.
    assert metrics["summing_agg_rerank_acc"] == pytest.approx(0.5)
    assert metrics["max_gen_prob_acc"] == pytest.approx(0.0)
    assert metrics["verifier_only_acc"] == pytest.approx(1.0)
    assert metrics["lever_acc"] == metrics["summing_agg_rerank_acc"]
    assert metrics["lever_no_agg_acc"] == metrics["rerank_acc"]
    assert metrics["binary_acc"] == pytest.approx(1.0)
    assert 0.0 <= metrics["calibration_error"] <= 1.0
    records = score_records(es, ver)
    assert [r["problem_id"] for r in records] == ["p0", "p1"]
    assert [len(r["candidates"]) for r in records] == [3, 2]
    assert records[0]["choices"]["verifier_only"] in (0, 2) and records[0]["choices"]["max_gen_prob"] == 1
    assert records[1]["choice_correct"]["lever_no_agg"] is True
    c = records[0]["candidates"][1]
    assert c["candidate_index"] == 1
    assert c["score"] == pytest.approx(c["gen_logprob"] + c["verifier_logprob"], abs=1e-6)
    json.dumps(records)  # JSON-serialisable


def test_calibration_error():
    assert calibration_error(np.array([1.0, 0.0]), np.array([1, 0])) == pytest.approx(0.0)
    assert calibration_error(np.array([0.95, 0.95]), np.array([0, 0])) == pytest.approx(0.95)


def test_seqio_and_numpy_inputs_give_the_same_problems():
    pytest.importorskip("seqio")
    import tasks.lever_tasks
    from lever_jax.inputs.feeds import numpy_problems, resolve_task
    from lever_jax.inputs.tokenizers import get_vocabulary
    from lever_jax.seqio.feeds import seqio_problems

    import gin

    task = "lever_verify_gsm8k_pool_fold0_eval"
    tasks.lever_tasks.register_lever_tasks()  # explicitly: test_tasks.py turns the import-time registration off
    with gin.unlock_config():
        gin.bind_parameter("get_vocabulary.name", "byte")
    try:
        tok = get_vocabulary()
        from_numpy = numpy_problems(resolve_task(task), tok, 96, max_problems=3)
        from_seqio = seqio_problems(task, 96, max_problems=3)
    finally:
        gin.clear_config()
    assert [p.index for p in from_seqio] == [p.index for p in from_numpy]
    for a, b in zip(from_numpy, from_seqio):
        assert a.tokens == b.tokens
        np.testing.assert_array_equal(a.labels, b.labels)
        np.testing.assert_array_equal(a.result_ids, b.result_ids)
        np.testing.assert_allclose(a.gen_logprob, b.gen_logprob, rtol=1e-6)


def test_numpy_problems_with_gold_feed_the_train_batcher(tmp_path):
    from lever_jax.inputs.feeds import TrainBatcher, numpy_problems
    from lever_jax.inputs.batching import ProblemBatcher, ProblemExamples
    from lever_jax.inputs.examples import discover_specs
    from lever_jax.inputs.tokenizers import get_vocabulary

    fixtures = Path(__file__).parent / "fixtures" / "executed"
    spec = next(s for s in discover_specs(fixtures, include_bundled=False) if s.name == "lever_verify_mbpp_test")
    tok = get_vocabulary("byte")
    plain = numpy_problems(spec, tok, 128, add_gold=False)
    gold = numpy_problems(spec, tok, 128, add_gold=True, gold_mode="copy")
    assert all(isinstance(p, ProblemExamples) for p in gold)
    added = [len(g.tokens) - len(p.tokens) for p, g in zip(plain, gold)]
    assert all(a in (0, 1) for a in added)
    for p, g, a in zip(plain, gold, added):
        assert g.tokens[: len(p.tokens)] == p.tokens and (not a or g.labels[-1] == 1)
    assert len(numpy_problems(spec, tok, 128, max_problems=1, add_gold=False)) == 1
    # the default (LEVER): MBPP's gold is executed and appended to every problem
    from lever_jax.execution.base import Limits
    from lever_jax.execution.cache import ExecutionCache
    from lever_jax.execution.sandbox import Sandbox

    with Sandbox(workers=1, limits=Limits(timeout_s=10, cpu_s=5)) as box, ExecutionCache(tmp_path) as cache:
        executed = numpy_problems(spec, tok, 128, gold_runtime={"sandbox": box, "cache": cache})
    assert [len(e.tokens) - len(p.tokens) for p, e in zip(plain, executed)] == [1] * len(plain)
    assert all(e.tokens[: len(p.tokens)] == p.tokens for p, e in zip(plain, executed))
    batcher = TrainBatcher(gold, tok, 128, 2, 3, seed=0, host_rows=slice(1, 2))
    assert isinstance(batcher, ProblemBatcher)
    full = batcher.batch(0)
    rows = batcher.host_batch(0)
    assert rows["encoder_input_tokens"].shape == (1, 3, 128) and "input_tokens" not in rows
    np.testing.assert_array_equal(rows["encoder_input_tokens"], full["input_tokens"][1:2])
    with pytest.raises(ValueError, match="at least one problem"):
        TrainBatcher([], tok, 128, 2, 3)
