"""Benchmark: verifier training and scoring throughput, our JAX/Flax T5 vs HF transformers (PyTorch).

Same configuration on the same CPU in the same run: T5 v1.1-small (d_model 512, 8+8 layers,
6 heads, d_ff 1024, gated-GELU, untied lm_head, vocab 32128: 76.96M parameters on both sides;
`--tie` ties the output projection to the embedding on both sides, 60.51M), dropout 0.1,
batch = P problems x K candidates x L tokens (default 2 x 4 x 512, all tokens real), LEVER's
loss (2-way class-weighted CE over the no/yes logits of the first decoder step, averaged per
problem), AdamW (weight decay 0.1) + global-norm clipping 1.0. The PyTorch side is LEVER's
way: a full forward of T5ForConditionalGeneration with one decoder step, then the no/yes
columns. Inference: log P(yes) of B candidates per call (no grad).

    .venv/bin/python scripts/bench_train.py --steps 3 --json docs/bench/train.json

Both models are built and warmed up (compiled) first; then the timed steps alternate between
the two frameworks (JAX, PyTorch, JAX, ...) so that both see the same machine load. Reports
examples/s (candidates), tokens/s and the JAX / PyTorch ratio (issue target >= 1.5x) from the
median wall time of the timed steps, plus the median process CPU time per step.
`--jax_dropout_impl jax`, `--jax_no_fold` and `--xla_cpu_defaults` switch off our speed-ups
one at a time (see docs/bench/train.md).

`--real_lengths --model t5|minilm`: the real input-length distribution of the bundled GSM8k pool,
HF fed LEVER's way (padded to the batch's longest) vs ours packed (scripts/bench_train_real.py):

    .venv/bin/python scripts/bench_train.py --real_lengths --model minilm --problems 4 --candidates 4 --steps 6
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from typing import Callable

import numpy as np

NO_ID, YES_ID = 150, 4273
SMALL = dict(vocab_size=32128, d_model=512, num_heads=6, d_kv=64, d_ff=1024,
             num_encoder_layers=8, num_decoder_layers=8)


def _warm(fn: Callable[[], None], warmup: int) -> float:
    """Seconds of the first call (incl. compilation); runs `warmup` untimed calls in all."""
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    for _ in range(max(warmup - 1, 0)):
        fn()
    return first


def _time_interleaved(fns: dict[str, Callable[[], None]], steps: int) -> dict[str, dict]:
    """Alternate the timed calls of every fn; median wall and process-CPU seconds per call."""
    wall: dict[str, list] = {k: [] for k in fns}
    cpu: dict[str, list] = {k: [] for k in fns}
    for _ in range(steps):
        for name, fn in fns.items():
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    return {k: {"wall_s": statistics.median(wall[k]), "cpu_s": statistics.median(cpu[k]),
                "wall_all_s": wall[k]} for k in fns}


def bench_jax(tokens: np.ndarray, labels: np.ndarray, args: argparse.Namespace) -> dict:
    """Builds our model; returns {'train': fn, 'infer': fn, 'meta': {...}}."""
    if args.xla_cpu_defaults:
        os.environ["LEVER_JAX_XLA_CPU_DEFAULTS"] = "1"
    import jax

    from lever_jax.training import OptimizerConfig, Trainer, partitioning
    from lever_jax.models import EncoderDecoderVerifier, T5Config

    cfg = T5Config(**SMALL, dtype=args.jax_dtype, dropout_rate=0.1, no_token_id=NO_ID,
                   yes_token_id=YES_ID, tie_word_embeddings=args.tie, scale_decoder_outputs=False,
                   dropout_impl=args.jax_dropout_impl, fold_single_query_attention=not args.jax_no_fold)
    model = EncoderDecoderVerifier(cfg)
    mesh, rules = partitioning.make_mesh(), partitioning.logical_axis_rules("data")
    trainer = Trainer(model, OptimizerConfig(learning_rate=1e-4, warmup_steps=0), 1000, mesh, rules,
                      tokens.shape[-1])
    state = trainer.init_state(0)
    batch = {"encoder_input_tokens": tokens, "labels": labels,
             "candidate_mask": np.ones(labels.shape, bool)}
    holder = {"state": state}

    def step() -> None:
        holder["state"], metrics = trainer.train_step(holder["state"], batch)
        jax.block_until_ready(metrics["loss"])

    flat = tokens.reshape(-1, tokens.shape[-1])
    infer_rows = np.concatenate([flat] * max(1, args.infer_batch // len(flat)))[: args.infer_batch]

    def infer() -> None:
        trainer.score_tokens(holder["state"].params, infer_rows, args.infer_batch)

    from lever_jax.training import partitioning as part

    return {"train": step, "infer": infer,
            "meta": {"jax_version": jax.__version__, "dropout_impl": cfg.dropout_impl,
                     "fold_single_query_attention": cfg.fold_single_query_attention,
                     "compiler_options": part.compiler_options(mesh),
                     "xla_flags": os.environ.get("XLA_FLAGS", ""),
                     "params": int(sum(x.size for x in jax.tree.leaves(holder["state"].params)))}}


def bench_torch(tokens: np.ndarray, labels: np.ndarray, args: argparse.Namespace) -> dict:
    import torch
    import transformers

    torch.manual_seed(0)
    torch.set_num_threads(args.torch_threads or os.cpu_count() or 1)
    cfg = transformers.T5Config(vocab_size=SMALL["vocab_size"], d_model=SMALL["d_model"],
                                d_kv=SMALL["d_kv"], d_ff=SMALL["d_ff"], num_layers=SMALL["num_encoder_layers"],
                                num_decoder_layers=SMALL["num_decoder_layers"], num_heads=SMALL["num_heads"],
                                feed_forward_proj="gated-gelu", tie_word_embeddings=False, dropout_rate=0.1,
                                decoder_start_token_id=0, pad_token_id=0)
    model = transformers.T5ForConditionalGeneration(cfg)
    # transformers 5 always ties lm_head to the embedding (T5Config forces
    # tie_word_embeddings=True; passing False only turns off the d_model**-0.5 output scaling).
    # T5 v1.1 (and our model) has a separate lm_head: untie it unless --tie.
    assert not cfg.scale_decoder_outputs
    if not args.tie:
        model.lm_head.weight = torch.nn.Parameter(model.shared.weight.detach().clone())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
    p, k, length = tokens.shape
    ids = torch.as_tensor(tokens.reshape(p * k, length), dtype=torch.long)
    attn = (ids != 0).long()
    dec = torch.zeros((p * k, 1), dtype=torch.long)
    y = torch.as_tensor(labels.reshape(-1), dtype=torch.long)

    def loss_fn() -> torch.Tensor:
        logits = model(input_ids=ids, attention_mask=attn, decoder_input_ids=dec).logits[:, 0, [NO_ID, YES_ID]]
        ce = torch.nn.functional.cross_entropy(logits.float(), y, reduction="none").view(p, k)
        return ce.mean(dim=1).mean()  # equal class weights: per-problem mean, then over problems

    def step() -> None:
        model.train()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    flat = ids
    reps = max(1, args.infer_batch // len(flat))
    infer_ids = torch.cat([flat] * reps)[: args.infer_batch]
    infer_attn = (infer_ids != 0).long()
    infer_dec = torch.zeros((len(infer_ids), 1), dtype=torch.long)

    def infer() -> None:
        model.eval()
        with torch.no_grad():
            logits = model(input_ids=infer_ids, attention_mask=infer_attn,
                           decoder_input_ids=infer_dec).logits[:, 0, [NO_ID, YES_ID]]
            torch.log_softmax(logits.float(), -1)[:, 1].numpy()

    return {"train": step, "infer": infer,
            "meta": {"torch_version": torch.__version__, "torch_threads": torch.get_num_threads(),
                     "transformers_version": transformers.__version__,
                     "params": int(sum(t.numel() for t in model.parameters()))}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", type=int, default=2)
    parser.add_argument("--candidates", type=int, default=4)
    parser.add_argument("--length", type=int, default=512)
    parser.add_argument("--steps", type=int, default=3, help="timed steps (median)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed first steps (compile)")
    parser.add_argument("--infer_batch", type=int, default=8)
    parser.add_argument("--jax_dtype", default="float32", choices=("float32", "bfloat16"),
                        help="our compute dtype (params and optimizer stay float32)")
    parser.add_argument("--hf_dtype", default="float32", choices=("float32", "bfloat16"),
                        help="--real_lengths: HF's forward under CPU autocast to bfloat16, or float32")
    parser.add_argument("--tie", action="store_true", help="tie lm_head to the embedding (both)")
    parser.add_argument("--jax_dropout_impl", default="hash", choices=("hash", "jax"))
    parser.add_argument("--jax_no_fold", action="store_true",
                        help="project every encoder position in cross-attention (no folding)")
    parser.add_argument("--xla_cpu_defaults", action="store_true",
                        help="no lever_jax XLA:CPU compiler options (jaxlib defaults)")
    parser.add_argument("--torch_threads", type=int, default=0,
                        help="torch intra-op threads (0: all CPUs). Under load, OpenMP's 2 threads "
                             "can be far slower than 1")
    parser.add_argument("--only", choices=("jax", "torch"), default=None)
    parser.add_argument("--real_lengths", action="store_true",
                        help="real GSM8k pool inputs; HF padded per batch vs ours packed")
    parser.add_argument("--model", choices=("t5", "minilm"), default="t5", help="with --real_lengths")
    parser.add_argument("--row_len", type=int, default=512, help="packed row length (--real_lengths)")
    parser.add_argument("--hf_feed", choices=("step", "per_problem"), default="step",
                        help="--real_lengths: HF pads the whole step, or one problem per forward (LEVER's loop)")
    parser.add_argument("--jax_accum", type=int, default=1,
                        help="--real_lengths: our step as this many micro-batches (gradients accumulated)")
    parser.add_argument("--jax_feed", choices=("packed", "bucketed"), default="packed",
                        help="--real_lengths: our trainer's feed (TrainDataConfig.batching): packed rows of "
                             "--row_len, or each micro-batch padded to its own longest (rounded up)")
    parser.add_argument("--jax_width_multiple", type=int, default=32,
                        help="--jax_feed bucketed: micro-batch widths rounded up to this multiple")
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args(argv)
    if args.real_lengths:
        from bench_train_real import bench_real  # the sibling script (this script's folder is on the path)

        res = bench_real(args)
        print(json.dumps({k: v for k, v in res.items()}, indent=1, default=str))
        feed = "one problem per forward" if args.hf_feed == "per_problem" else "padded to the batch's longest"
        print(f"{args.model}: ours ({args.jax_feed}, {args.jax_dtype}) {res['jax']['candidates_per_s']:.2f} candidates/s, "
              f"HF PyTorch ({args.hf_dtype}, {feed}, "
              f"{res['real_tokens_fraction_hf']:.0%} real tokens) {res['torch']['candidates_per_s']:.2f} candidates/s: "
              f"ratio {res['ratio_train']:.2f}x; load {res['load_avg_start']} -> {res['load_avg_end']}")
        if args.json:
            with open(args.json, "w", encoding="utf-8") as handle:
                json.dump(res, handle, indent=1)
        return

    rng = np.random.default_rng(0)
    shape = (args.problems, args.candidates, args.length)
    tokens = rng.integers(3, 32000, shape).astype(np.int32)
    tokens[..., -1] = 1  # EOS
    labels = rng.integers(0, 2, shape[:2]).astype(np.int32)
    examples = args.problems * args.candidates
    results: dict = {"config": {**vars(args), "examples_per_step": examples,
                                "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
                                "load_avg_start": os.getloadavg()}}
    built = {}
    for name, fn in (("jax", bench_jax), ("torch", bench_torch)):
        if args.only and args.only != name:
            continue
        built[name] = fn(tokens, labels, args)
        first = _warm(built[name]["train"], args.warmup)
        infer_first = _warm(built[name]["infer"], 1)
        results[name] = {**built[name]["meta"], "first_step_s": first, "infer_first_s": infer_first}
        print(f"{name}: first train step {first:.1f}s, first infer call {infer_first:.1f}s", flush=True)
    train = _time_interleaved({k: v["train"] for k, v in built.items()}, args.steps)
    infer = _time_interleaved({k: v["infer"] for k, v in built.items()}, args.steps)
    for name, r in results.items():
        if name == "config":
            continue
        t, i = train[name], infer[name]
        r.update({"train_step_s": t["wall_s"], "train_step_cpu_s": t["cpu_s"],
                  "train_step_all_s": t["wall_all_s"], "infer_call_s": i["wall_s"],
                  "infer_call_cpu_s": i["cpu_s"]})
        r["train_examples_per_s"] = examples / r["train_step_s"]
        r["train_tokens_per_s"] = examples * args.length / r["train_step_s"]
        r["infer_candidates_per_s"] = args.infer_batch / r["infer_call_s"]
        print(f"{name}: train {r['train_examples_per_s']:.2f} examples/s "
              f"({r['train_tokens_per_s']:.0f} tokens/s, step {r['train_step_s']:.2f}s wall, "
              f"{r['train_step_cpu_s']:.2f}s CPU, first {r['first_step_s']:.1f}s); "
              f"infer {r['infer_candidates_per_s']:.2f} candidates/s", flush=True)
    if "jax" in results and "torch" in results:
        results["ratio_train"] = results["jax"]["train_examples_per_s"] / results["torch"]["train_examples_per_s"]
        results["ratio_infer"] = results["jax"]["infer_candidates_per_s"] / results["torch"]["infer_candidates_per_s"]
        results["ratio_train_cpu"] = results["torch"]["train_step_cpu_s"] / results["jax"]["train_step_cpu_s"]
        print(f"ratio JAX/PyTorch: train {results['ratio_train']:.2f}x "
              f"(CPU time {results['ratio_train_cpu']:.2f}x), infer {results['ratio_infer']:.2f}x")
    results["config"]["load_avg_end"] = os.getloadavg()
    print(f"load average {results['config']['load_avg_start']} -> {results['config']['load_avg_end']}")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=1)


if __name__ == "__main__":
    main()
