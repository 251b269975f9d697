"""Quick model benchmark: parameter counts of every preset and forward / forward+backward
throughput of a verifier on this machine's default JAX backend.

    .venv/bin/python scripts/bench_models_forward.py --size small --length 512 --batch 8

Throughput counts candidates (examples) per second over `--steps` timed calls after one
warm-up (compile) call; parameters come from jax.eval_shape (nothing is allocated).
"""
from __future__ import annotations

import argparse
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn

from lever_jax.models import EncoderClassifierVerifier, EncoderDecoderVerifier, encoder_config, t5_config

# Published parameter counts (HF model cards / num_parameters()).
HF_COUNTS = {
    ("t5", "1.0", "small"): ("t5-small", 60_506_624),
    ("t5", "1.0", "base"): ("t5-base", 222_903_552),
    ("t5", "1.0", "large"): ("t5-large", 737_668_096),
    ("t5", "1.1", "small"): ("google/t5-v1_1-small", 76_961_152),
    ("t5", "1.1", "base"): ("google/t5-v1_1-base", 247_577_856),
    ("t5", "1.1", "large"): ("google/t5-v1_1-large", 783_150_080),
    ("enc", "", "minilm"): ("all-MiniLM-L6-v2 (without pooler)", 22_565_376),
    ("enc", "", "roberta_large"): ("roberta-large RobertaForSequenceClassification, 2 labels", 355_361_794),
}


def count(model, key: str) -> int:
    abstract = jax.eval_shape(lambda r: model.get_initial_variables(r, {key: (1, 1, 4)}),
                              jax.random.PRNGKey(0))
    return sum(int(np.prod(x.shape)) for x in jax.tree_util.tree_leaves(nn.unbox(abstract)))


def param_table() -> list[dict]:
    rows = []
    for version in ("1.0", "1.1"):
        for size in (["tiny"] if version == "1.1" else []) + ["small", "base", "large"]:
            n = count(EncoderDecoderVerifier(t5_config(size, version=version)),
                      "encoder_input_tokens")
            name, ref = HF_COUNTS.get(("t5", version, size), ("-", None))
            rows.append(dict(model=f"t5 v{version} {size}", params=n, hf=name, hf_params=ref))
    for size in ("tiny", "minilm", "roberta_large"):
        n = count(EncoderClassifierVerifier(encoder_config(size)), "input_tokens")
        name, ref = HF_COUNTS.get(("enc", "", size), ("-", None))
        rows.append(dict(model=f"encoder {size} (+2-way head)", params=n, hf=name,
                         hf_params=ref))
    return rows


def throughput(size: str, length: int, batch: int, steps: int, dtype: str) -> dict:
    model = EncoderDecoderVerifier(t5_config(size, dtype=dtype, dropout_rate=0.0))
    shapes = {"encoder_input_tokens": (batch, 1, length)}
    params = jax.jit(lambda r: nn.unbox(model.get_initial_variables(r, shapes))["params"])(
        jax.random.PRNGKey(0))
    rs = np.random.RandomState(0)
    b = {"encoder_input_tokens": jnp.asarray(rs.randint(1, 32000, (batch, 1, length)), jnp.int32),
         "labels": jnp.asarray(rs.randint(0, 2, (batch, 1)), jnp.int32),
         "candidate_mask": jnp.ones((batch, 1), bool)}
    fwd = jax.jit(model.score_batch)
    grad = jax.jit(jax.value_and_grad(lambda p, x: model.loss_fn(p, x, None)[0]))
    out = {}
    for name, fn in (("forward", lambda: fwd(params, b)), ("forward_backward", lambda: grad(params, b))):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        compile_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(steps):
            jax.block_until_ready(fn())
        dt = (time.perf_counter() - t0) / steps
        out[name] = dict(examples_per_s=round(batch / dt, 3), s_per_step=round(dt, 3),
                         first_call_s=round(compile_s, 1))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="small")
    ap.add_argument("--length", type=int, default=512)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--skip-params", action="store_true")
    args = ap.parse_args()
    result = {"backend": jax.default_backend(), "devices": str(jax.devices()),
              "cpu_count": os.cpu_count(), "load_avg_before": os.getloadavg()}
    if not args.skip_params:
        result["params"] = param_table()
    result["throughput"] = {"model": f"t5 v1.1 {args.size} verifier", "length": args.length,
                            "batch": args.batch, "dtype": args.dtype,
                            **throughput(args.size, args.length, args.batch, args.steps,
                                         args.dtype)}
    result["load_avg_after"] = os.getloadavg()
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
