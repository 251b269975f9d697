"""One prepared accelerator check (issue 23): what lever-jax does on a GPU/TPU in under 8 minutes.

    python scripts/gpu_check.py --output gpu_check.json                 # on the accelerator machine
    python scripts/gpu_check.py --dry_run --output dry.json             # tiny sizes on the CPU (tests)

Measures, each in its own time box, and writes one JSON document:

1. ``t5_base_train``: T5 v1.1-base (the model LEVER's Spider verifier uses) trained by our Trainer in
   bfloat16 at L = 512: tokens/s of the padded [P, K, L] batch (all tokens real) and model-FLOPs
   utilisation, MFU = model FLOPs/s / the device's peak bf16 FLOPs/s (goal >= 40%). Model FLOPs per
   step: 6 x (encoder matmul parameters) x tokens + 12 x layers x L x d_model x tokens (encoder
   self-attention), plus the one decoder step per candidate (its matmul parameters, cross-attention
   over L, the output projection), all x 3 for forward + backward already in the 6 / 12 factors.
2. ``minilm_finetune``: the MiniLM encoder verifier, every layer trained (LEVER's encoder setting),
   float32 and bfloat16, candidates/s and tokens/s.
3. ``scorer``: the jitted LEVER reranker at 1,000,000 problems x 100 candidates (arbitrary result
   ids, so ``dense_group_ids`` is included), problems/s.
4. ``sampling``: ``lever-jax sample``'s in-process llama.cpp backend when the installed
   ``xllamacpp`` sees a GPU and ``--gguf`` is given (scripts/bench_sample.py's arms); otherwise
   the reason it was skipped.

The device, its kind, the peak assumed (``--peak_tflops`` overrides the table) and jax's version are
in the JSON. No number here is a threshold: the script reports, BENCHMARKS.md records.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

# Dense bf16 peak FLOPs/s by device kind (vendor datasheets; SXM parts for NVIDIA).
PEAK_BF16_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0, "L4": 121.0, "A10": 125.0,
                    "TPU v6": 918.0, "TPU v5p": 459.0, "TPU v5 lite": 197.0, "TPU v5e": 197.0, "TPU v4": 275.0}
NO_ID, YES_ID = 150, 4273


def peak_flops(device_kind: str, override_tflops: float | None) -> float | None:
    if override_tflops:
        return override_tflops * 1e12
    for name, tflops in PEAK_BF16_TFLOPS.items():
        if name.lower() in device_kind.lower():
            return tflops * 1e12
    return None


def timed(fn: Callable[[], Any], steps: int, budget_s: float) -> dict[str, float]:
    """Compile (first call), then up to ``steps`` timed calls within ``budget_s``: median seconds."""
    start = time.perf_counter()
    fn()
    compile_s = time.perf_counter() - start
    times: list[float] = []
    deadline = time.perf_counter() + budget_s
    while len(times) < steps and (not times or time.perf_counter() < deadline):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return {"compile_s": round(compile_s, 3), "median_s": float(np.median(times)), "steps_timed": len(times)}


def _matmul_params(params: Any, part: str) -> int:
    """Parameters of 2-D+ kernels under ``part`` (encoder / decoder), embeddings excluded."""
    import jax

    total = 0
    for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]:
        names = "/".join(str(getattr(k, "key", k)) for k in path).lower()
        if part in names and leaf.ndim >= 2 and "embed" not in names and "relpos" not in names:
            total += int(leaf.size)
    return total


def _trainer(model: Any, length: int) -> Any:
    from lever_jax.training import OptimizerConfig, Trainer, partitioning

    mesh, rules = partitioning.make_mesh(), partitioning.logical_axis_rules("data")
    return Trainer(model, OptimizerConfig(learning_rate=1e-4, warmup_steps=0), 1000, mesh, rules, length)


def _step_fn(trainer: Any, batch: dict[str, np.ndarray]) -> tuple[Callable[[], None], Any]:
    import jax

    holder = {"state": trainer.init_state(0)}

    def step() -> None:
        holder["state"], metrics = trainer.train_step(holder["state"], batch)
        jax.block_until_ready(metrics["loss"])

    return step, holder


def t5_train(args: argparse.Namespace, peak: float | None) -> dict[str, Any]:
    from lever_jax.models import EncoderDecoderVerifier, t5_config

    size = "tiny" if args.dry_run else "base"
    cfg = t5_config(size, dtype="bfloat16", dropout_rate=0.1, no_token_id=NO_ID, yes_token_id=YES_ID)
    p, k, length = (1, 2, 32) if args.dry_run else (args.problems, args.candidates, 512)
    rng = np.random.default_rng(0)
    tokens = rng.integers(2, min(cfg.vocab_size, 32000), (p, k, length), dtype=np.int32)
    batch = {"encoder_input_tokens": tokens, "labels": (rng.random((p, k)) < 0.3).astype(np.int32),
             "candidate_mask": np.ones((p, k), bool)}
    model = EncoderDecoderVerifier(cfg)
    step, holder = _step_fn(_trainer(model, length), batch)
    timing = timed(step, args.steps, args.budget_s)
    params = holder["state"].params
    rows, n_tok = p * k, p * k * length
    d, layers_e, layers_d = cfg.d_model, cfg.num_encoder_layers, cfg.num_decoder_layers
    flops = (6 * _matmul_params(params, "encoder") * n_tok + 12 * layers_e * length * d * n_tok
             + 6 * _matmul_params(params, "decoder") * rows + 12 * layers_d * length * d * rows
             + 6 * d * cfg.vocab_size * rows)
    achieved = flops / timing["median_s"]
    return {"model": f"t5 v1.1-{size}", "dtype": "bfloat16", "batch": [p, k, length], **timing,
            "tokens_per_s": round(n_tok / timing["median_s"], 1), "model_tflops_per_step": round(flops / 1e12, 4),
            "achieved_tflops": round(achieved / 1e12, 3),
            "mfu": None if peak is None else round(achieved / peak, 4)}


def minilm_finetune(args: argparse.Namespace) -> dict[str, Any]:
    from lever_jax.models import EncoderClassifierVerifier, encoder_config

    out: dict[str, Any] = {}
    p, k, length = (1, 2, 16) if args.dry_run else (args.problems, args.candidates, 256)
    rng = np.random.default_rng(0)
    for dtype in ("float32", "bfloat16"):
        overrides = {"num_layers": 1} if args.dry_run else {}
        cfg = encoder_config("minilm", dropout_rate=0.1, dtype=dtype, **overrides)
        tokens = rng.integers(1000, 30000, (p, k, length), dtype=np.int32)
        batch = {"input_tokens": tokens, "labels": (rng.random((p, k)) < 0.3).astype(np.int32),
                 "candidate_mask": np.ones((p, k), bool)}
        step, _ = _step_fn(_trainer(EncoderClassifierVerifier(cfg), length), batch)
        timing = timed(step, args.steps, args.budget_s / 2)
        out[dtype] = {"batch": [p, k, length], **timing,
                      "candidates_per_s": round(p * k / timing["median_s"], 1),
                      "tokens_per_s": round(p * k * length / timing["median_s"], 1)}
    return out


def scorer(args: argparse.Namespace) -> dict[str, Any]:
    import jax

    from lever_jax.rerank import scoring

    batch, width = (1000, 10) if args.dry_run else (1_000_000, 100)
    rng = np.random.default_rng(0)
    gen = jax.device_put(rng.normal(-5, 2, (batch, width)).astype(np.float32))
    ver = jax.device_put(np.log(rng.uniform(0.01, 1, (batch, width))).astype(np.float32))
    ids = jax.device_put(rng.integers(0, 2**31 - 1, (batch, width), dtype=np.int64).astype(np.int32) % 97)
    mask = jax.device_put(np.ones((batch, width), bool))
    timing = timed(lambda: jax.block_until_ready(scoring.rerank(gen, ver, ids, mask)), args.steps, args.budget_s)
    return {"shape": [batch, width], "ids": "arbitrary (dense_group_ids included)", **timing,
            "problems_per_s": round(batch / timing["median_s"], 1)}


def sampling(args: argparse.Namespace) -> dict[str, Any]:
    try:
        import xllamacpp
    except ImportError:
        return {"skipped": "xllamacpp is not installed (extra `sample`)"}
    info = str(xllamacpp.get_device_info()) if hasattr(xllamacpp, "get_device_info") else ""
    if "cuda" not in info.lower() and "gpu" not in info.lower():
        return {"skipped": "the installed xllamacpp is the CPU build (no GPU device)"}
    if not args.gguf:
        return {"skipped": "no --gguf model file given"}
    script = Path(__file__).resolve().parent / "bench_sample.py"
    proc = subprocess.run([sys.executable, str(script), "--model", args.gguf, "--problems", "8", "--n", "8",
                           "--parallel", "32", "--max-tokens", "128"], capture_output=True, text=True,
                          timeout=args.budget_s * 4)
    if proc.returncode != 0:
        return {"error": proc.stderr[-500:]}
    return json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", default="gpu_check.json")
    parser.add_argument("--dry_run", action="store_true", help="tiny sizes (a CPU check of the script itself)")
    parser.add_argument("--problems", type=int, default=8)
    parser.add_argument("--candidates", type=int, default=8)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per measurement (median)")
    parser.add_argument("--budget_s", type=float, default=60.0, help="time box per measurement after compiling")
    parser.add_argument("--peak_tflops", type=float, default=None, help="peak bf16 TFLOP/s (default: by device)")
    parser.add_argument("--gguf", default=None, help="a GGUF model for the sampling check")
    parser.add_argument("--only", default=None, help="comma-separated subset of t5,minilm,scorer,sampling")
    args = parser.parse_args()
    import jax

    device = jax.devices()[0]
    kind = getattr(device, "device_kind", str(device))
    peak = peak_flops(kind, args.peak_tflops)
    checks = {"t5": lambda: t5_train(args, peak), "minilm": lambda: minilm_finetune(args),
              "scorer": lambda: scorer(args), "sampling": lambda: sampling(args)}
    wanted = args.only.split(",") if args.only else list(checks)
    report: dict[str, Any] = {"device": {"platform": device.platform, "kind": kind, "count": jax.device_count(),
                                         "peak_bf16_tflops": None if peak is None else peak / 1e12},
                              "jax": jax.__version__, "python": platform.python_version(),
                              "dry_run": args.dry_run, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    for name in wanted:
        start = time.perf_counter()
        try:
            report[name] = checks[name]()
        except Exception as err:  # noqa: BLE001 - one failed check must not lose the others' figures
            report[name] = {"error": f"{type(err).__name__}: {err}"[:500]}
        report[name]["wall_s"] = round(time.perf_counter() - start, 1)
        Path(args.output).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=1))
    failed = [name for name in wanted if "error" in report[name]]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    os.environ.setdefault("LEVER_JAX_PROGRESS", "off")
    main()
