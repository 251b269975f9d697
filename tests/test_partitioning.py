"""Sharded vs unsharded training on 8 fake CPU devices (run in a subprocess so the main pytest
process keeps its own device count)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.micro_train import with_devices

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent(r'''
    import json
    import jax, jax.numpy as jnp, numpy as np, optax
    from flax import linen as nn
    from jax.sharding import PartitionSpec as P
    from lever_jax.training import partitioning as pt
    from lever_jax.models.configs import t5_config
    from lever_jax.models.verifier import EncoderDecoderVerifier

    assert jax.device_count() == 8, jax.devices()
    cfg = t5_config("tiny", vocab_size=512, no_token_id=4, yes_token_id=5, dropout_rate=0.0,
                    num_encoder_layers=1, num_decoder_layers=1)
    model = EncoderDecoderVerifier(cfg)
    shapes = {"encoder_input_tokens": (4, 2, 16)}
    abstract = jax.eval_shape(lambda r: model.get_initial_variables(r, shapes), jax.random.PRNGKey(0))
    rs = np.random.RandomState(0)
    params0 = jax.tree.map(lambda s: rs.normal(0, 0.2, s.shape).astype(np.float32),
                           nn.unbox(abstract["params"]))
    tok = rs.randint(1, 512, (4, 2, 16)).astype(np.int32)
    tok[0, 1, 9:] = 0
    batch = {"encoder_input_tokens": tok,
             "labels": np.array([[1, 0], [0, 0], [1, 1], [0, 1]], np.int32),
             "candidate_mask": np.array([[1, 1], [1, 0], [1, 1], [1, 1]], bool)}
    tx = optax.adamw(1e-2, weight_decay=0.1)

    def step(params, opt_state, batch):
        (loss, aux), grads = jax.value_and_grad(model.loss_fn, has_aux=True)(params, batch, None)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    N = 4
    out = {}
    # Unsharded reference on one device.
    params, opt = params0, tx.init(params0)
    f = jax.jit(step)
    losses = []
    for _ in range(N):
        params, opt, loss = f(params, opt, batch)
        losses.append(float(loss))
    out["unsharded"] = losses
    ref_params = params

    for strategy in ("model", "fsdp"):
        mesh = pt.make_mesh(data=2, model=4)
        rules = pt.logical_axis_rules(strategy)
        pshard = pt.get_param_shardings(abstract["params"], rules, mesh)
        oshard = pt.get_opt_state_shardings(tx, nn.unbox(abstract["params"]), pshard, mesh)
        bshard = pt.batch_sharding(mesh)
        params = jax.device_put(params0, pshard)
        opt = pt.sharded_jit(tx.init, mesh, rules, (pshard,), oshard)(params)
        gbatch = pt.host_local_batch_to_global(batch, mesh)
        fs = pt.sharded_jit(step, mesh, rules, (pshard, oshard, bshard),
                            (pshard, oshard, pt.replicated(mesh)), donate_argnums=(0, 1))
        losses = []
        for _ in range(N):
            params, opt, loss = fs(params, opt, gbatch)
            losses.append(float(loss))
        emb = params["token_embedder"]["embedding"]
        wi = params["encoder"]["layers_0"]["mlp"]["wi_0"]["kernel"]
        mu_wi = opt[0].mu["encoder"]["layers_0"]["mlp"]["wi_0"]["kernel"]
        diff = max(float(jnp.max(jnp.abs(a - b))) for a, b in
                   zip(jax.tree.leaves(ref_params), jax.tree.leaves(params)))
        score = pt.sharded_jit(model.score_batch, mesh, rules, (pshard, bshard), bshard)(
            params, gbatch)
        out[strategy] = {
            "losses": losses,
            "emb_spec": str(emb.sharding.spec), "emb_shard": list(emb.addressable_shards[0].data.shape),
            "wi_spec": str(wi.sharding.spec), "wi_shard": list(wi.addressable_shards[0].data.shape),
            "mu_wi_spec": str(mu_wi.sharding.spec),
            "batch_shard": list(gbatch["encoder_input_tokens"].addressable_shards[0].data.shape),
            "score_shape": list(score.shape), "param_diff": diff,
        }
    print("RESULT " + json.dumps(out))
''')


@pytest.fixture(scope="module")
def result() -> dict:
    env = dict(os.environ)
    env["XLA_FLAGS"] = with_devices(8, env)
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["model", "fsdp"])
def test_sharded_loss_matches_unsharded(result: dict, strategy: str) -> None:
    ref = result["unsharded"]
    got = result[strategy]["losses"]
    assert len(ref) == len(got) == 4
    assert ref[0] != ref[-1]  # training actually moved
    for a, b in zip(ref, got):
        assert abs(a - b) <= 1e-5, (ref, got)
    assert result[strategy]["param_diff"] < 1e-4


@pytest.mark.slow
def test_params_really_sharded(result: dict) -> None:
    mp, fsdp = result["model"], result["fsdp"]
    # Tensor parallel: vocab over 'model' (512/4), embed replicated.
    assert mp["emb_spec"] == "P('model', None)"
    assert mp["emb_shard"] == [128, 64]
    assert mp["wi_spec"] == "P(None, 'model')"
    assert mp["wi_shard"] == [64, 32]
    assert mp["mu_wi_spec"] == mp["wi_spec"]  # optimizer state follows its parameter
    # FSDP: embed additionally over 'data'.
    assert fsdp["emb_spec"] == "P('model', 'data')"
    assert fsdp["emb_shard"] == [128, 32]
    assert fsdp["wi_spec"] == "P('data', 'model')"
    assert fsdp["wi_shard"] == [32, 32]
    assert fsdp["mu_wi_spec"] == fsdp["wi_spec"]
    # Batch: 4 problems over data=2.
    assert mp["batch_shard"] == [2, 2, 16]
    assert mp["score_shape"] == [4, 2]


def test_rules_and_mesh_in_process() -> None:
    from jax.sharding import PartitionSpec as P
    from flax import linen as nn

    from lever_jax.training import partitioning as pt

    mesh = pt.make_mesh(data=1, model=1)
    assert mesh.axis_names == ("data", "model")
    rules = pt.logical_axis_rules("fsdp")
    # Activations keep 'data' on batch; 'embed' then stays unsharded.
    assert nn.logical_to_mesh_axes(("batch", "length", "embed"), rules) == P("data", None, None)
    assert nn.logical_to_mesh_axes(("embed", "mlp"), rules) == P("data", "model")
    with pytest.raises(ValueError):
        pt.logical_axis_rules("bogus")
    with pytest.raises(ValueError):
        pt.make_mesh(data=3, model=2)
    assert pt.maybe_initialize_distributed(False) is False
    assert pt.host_batch_slice(8) == slice(0, 8)
