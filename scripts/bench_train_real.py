"""`bench_train.py --real_lengths`: verifier training on the real input lengths of the GSM8k pool.

Same model, same examples, same optimizer on both sides, in one process, timed steps alternating:
P problems x K candidates per step, drawn (seeded) from the bundled GSM8k code-davinci-002 pool and
serialized as LEVER's verifier input (``question | program | result``, comments kept, cut to 512
tokens). HF PyTorch is fed the way LEVER feeds it: `--hf_feed step` pads the step's candidates to
the longest in the batch; `--hf_feed per_problem` is LEVER's released training loop exactly: one
problem's candidates per forward (padded to that problem's longest; LEVER runs one problem per GPU),
gradients accumulated over the step's problems, one optimizer step. Ours is
`lever_jax.training.Trainer.train_step` fed the same candidates by the trainer's own feeds
(`--jax_feed`, TrainDataConfig.batching): 'packed' rows of `--row_len` tokens (segment ids,
block-diagonal attention, per-segment pooling / one decoder position per segment;
lever_jax.inputs.packing.packed_train_batch) or 'bucketed' (each micro-batch padded to its own
longest candidate, rounded up to `--jax_width_multiple`: LEVER's per-forward padding;
packing.bucketed_train_batch); `--jax_accum A` splits the step's problems into A micro-batches
whose gradients accumulate, so activations stay small. Compilation (every width of the timed steps
for 'bucketed') happens before the timed steps.
Models: T5 v1.1-small (random init, bundled SentencePiece ids) and the MiniLM encoder classifier
(all-MiniLM-L6-v2 size, mean pooling; HF BertModel + mean pooling + Linear).
Reports candidates/s (total candidates / total wall of the timed steps) and the ratio.
"""
from __future__ import annotations

import os
import time
from typing import Callable

import numpy as np

NO_ID, YES_ID = 150, 4273


def real_batches(model: str, steps: int, problems: int, candidates: int, max_len: int, seed: int = 0):
    """[(tokens [P, K, L_batch] padded to the batch's longest, labels [P, K])] of real candidates."""
    from lever_jax.data import bundled_path, read_problems
    from lever_jax.inputs.serialize import serialize_gsm8k
    from lever_jax.inputs import get_vocabulary

    pool = list(read_problems(bundled_path("gsm8k_pool", "code002.executed.jsonl.gz"), require_execution=True))
    tok = get_vocabulary("minilm" if model == "minilm" else "spm")
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        picked = rng.choice(len(pool), problems, replace=False)
        seqs, labels = [], np.zeros((problems, candidates), np.int32)
        for i, b in enumerate(picked):
            cands = pool[b].candidates
            for j, n in enumerate(rng.choice(len(cands), candidates, replace=len(cands) < candidates)):
                ids = tok.encode(serialize_gsm8k(pool[b], cands[n]))
                ids = ([tok.bos_id, *ids[:max_len - 2], tok.eos_id] if model == "minilm"
                       else [*ids[:max_len - 1], tok.eos_id])
                seqs.append(ids)
                labels[i, j] = int(bool(cands[n].execution.correct))
        width = max(len(s) for s in seqs)
        tokens = np.zeros((problems * candidates, width), np.int32)
        for r, s in enumerate(seqs):
            tokens[r, :len(s)] = s
        out.append((tokens.reshape(problems, candidates, width), labels))
    return out


def _packed_steps(batches, row_len: int, accum: int) -> tuple[list[dict], int]:
    """Every step's packed micro-batches (lever_jax.inputs.packing.packed_train_batch: the trainer's
    feed, leading axis = micro-batch), padded to the largest row count of any step: one compilation."""
    from lever_jax.inputs import packed_train_batch

    steps = [packed_train_batch(t, np.ones(y.shape, bool), y, row_len, accum_steps=accum) for t, y in batches]
    rows = max(b["packed_tokens"].shape[1] for b in steps)
    segs = max(b.pop("num_segments") for b in steps)
    for b in steps:
        extra = rows - b["packed_tokens"].shape[1]
        for key in ("packed_tokens", "segment_ids", "positions"):
            b[key] = np.pad(b[key], ((0, 0), (0, extra), (0, 0)))
    return steps, segs


def _bucketed_steps(batches, length: int, accum: int, multiple: int, tokens_key: str) -> list[dict]:
    """Every step's micro-batches, each padded to its own longest candidate rounded up to
    `multiple` (lever_jax.inputs.packing.bucketed_train_batch: the trainer's 'bucketed' feed, on
    blocks `length` wide as the trainer's batcher builds them)."""
    from lever_jax.inputs import bucketed_train_batch

    full = lambda t: np.pad(t, ((0, 0), (0, 0), (0, length - t.shape[-1])))
    return [bucketed_train_batch(full(t), np.ones(y.shape, bool), y, tokens_key, accum_steps=accum,
                                 multiple=multiple) for t, y in batches]


def jax_side(model: str, batches, row_len: int, accum: int = 1, dtype: str = "float32",
             feed: str = "packed", multiple: int = 32) -> Callable[[int], None]:
    """Our step: `lever_jax.training.Trainer.train_step` (LEVER's loss, AdamW, clipping, dropout
    0.1, the trainer's XLA:CPU options) fed `feed` ('packed': `accum` packed micro-batches of
    `row_len`-token rows, padded to one shape for all steps; 'bucketed': `accum` micro-batches,
    each cut to its own longest candidate rounded up to `multiple`, one compilation per width)."""
    import jax

    from lever_jax.models import EncoderClassifierVerifier, EncoderDecoderVerifier, encoder_config, t5_config
    from lever_jax.training import OptimizerConfig, Trainer, partitioning

    if model == "minilm":
        verifier = EncoderClassifierVerifier(encoder_config("minilm", dropout_rate=0.1, dtype=dtype))
    else:
        verifier = EncoderDecoderVerifier(t5_config("small", dropout_rate=0.1, dtype=dtype))
    mesh, rules = partitioning.make_mesh(), partitioning.logical_axis_rules("data")
    trainer = Trainer(verifier, OptimizerConfig(learning_rate=1e-4, warmup_steps=0), 1000, mesh, rules,
                      row_len, accum_steps=accum, batching=feed)
    holder = {"state": trainer.init_state(0)}
    if feed == "packed":
        host, segs = _packed_steps(batches, row_len, accum)
        for b in host:
            b["num_segments"] = segs
        meta = {"row_len": row_len, "rows_per_micro_batch": int(host[0]["packed_tokens"].shape[1]),
                "segments_per_row": segs,
                "mean_fill": float(np.mean([(b["segment_ids"] > 0).mean() for b in host]))}
    else:
        host = _bucketed_steps(batches, row_len, accum, multiple, verifier.tokens_key)
        widths = [w for b in host for w in b["micro_widths"]]
        meta = {"width_multiple": multiple, "widths": sorted(set(widths)),
                "mean_fill": float(np.sum([(t > 0).sum() for t, _ in batches]) /
                                   np.sum([b["candidate_mask"][m].size * w for b in host
                                           for m, w in enumerate(b["micro_widths"])]))}

    def run(i: int) -> None:
        holder["state"], metrics = trainer.train_step(holder["state"], host[i])
        jax.block_until_ready(metrics["loss"])

    def compile_all() -> None:  # every timed step's programs, without an update ('bucketed': a width each)
        for b in host:
            jax.block_until_ready(trainer.loss_and_grads(holder["state"], b))

    run.compile_all = compile_all if feed == "bucketed" else (lambda: None)
    run.meta = {"feed": feed, "micro_batches": accum, "dtype": dtype, **meta}
    return run


def _per_problem(t, y) -> list:
    """One problem's candidates trimmed to that problem's longest: [(ids [K, L_p], labels [K])]."""
    out = []
    for tp, yp in zip(t, y):
        width = int((tp > 0).sum(-1).max())
        out.append((tp[:, :width], yp))
    return out


def torch_side(model: str, batches, threads: int, feed: str = "step", dropout: float = 0.1,
               dtype: str = "float32") -> Callable[[int], None]:
    """HF PyTorch fed `feed`; `dtype` "bfloat16" runs the forward under CPU autocast (float32
    master weights and optimizer, bf16 matmuls: PyTorch's mixed precision on CPU)."""
    import torch
    import transformers

    torch.manual_seed(0)
    torch.set_num_threads(threads or os.cpu_count() or 1)
    if model == "minilm":
        cfg = transformers.BertConfig(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                                      intermediate_size=1536, hidden_dropout_prob=dropout,
                                      attention_probs_dropout_prob=dropout)
        net = transformers.BertModel(cfg, add_pooling_layer=False)
        head = torch.nn.Linear(384, 2)
        modules = torch.nn.ModuleList([net, head])

        def logits(ids, attn):
            h = net(input_ids=ids, attention_mask=attn).last_hidden_state
            m = attn[..., None].float()
            return head((h * m).sum(1) / m.sum(1).clamp(min=1e-9))
    else:
        cfg = transformers.T5Config(vocab_size=32128, d_model=512, d_kv=64, d_ff=1024, num_layers=8,
                                    num_decoder_layers=8, num_heads=6, feed_forward_proj="gated-gelu",
                                    dropout_rate=dropout, decoder_start_token_id=0, pad_token_id=0)
        net = transformers.T5ForConditionalGeneration(cfg)
        net.lm_head.weight = torch.nn.Parameter(net.shared.weight.detach().clone())  # untied (v1.1)
        modules = net

        def logits(ids, attn):
            dec = torch.zeros((ids.shape[0], 1), dtype=torch.long)
            return net(input_ids=ids, attention_mask=attn, decoder_input_ids=dec).logits[:, 0, [NO_ID, YES_ID]]

    opt = torch.optim.AdamW(modules.parameters(), lr=1e-4, weight_decay=0.1)
    host = []
    for t, y in batches:  # micro-batches of one step: the whole step, or one problem each
        p, k, length = t.shape
        micro = [(t, y)] if feed == "step" else [(tp[None], yp[None]) for tp, yp in _per_problem(t, y)]
        host.append([(torch.as_tensor(a.reshape(-1, a.shape[-1]), dtype=torch.long),
                      torch.as_tensor(b.reshape(-1), dtype=torch.long), a.shape[0], k, p) for a, b in micro])

    def run(i: int) -> None:
        modules.train()
        opt.zero_grad(set_to_none=True)
        for ids, y, mp, k, p in host[i]:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == "bfloat16"):
                out = logits(ids, (ids != 0).long())
            ce = torch.nn.functional.cross_entropy(out.float(), y, reduction="none").view(mp, k)
            (ce.mean(dim=1).sum() / p).backward()  # LEVER: per-problem mean, then mean over problems
        run.grad_norm = float(torch.nn.utils.clip_grad_norm_(modules.parameters(), 1.0))  # before clipping
        opt.step()

    run.meta = {"torch_version": torch.__version__, "transformers_version": transformers.__version__,
                "torch_threads": torch.get_num_threads(), "dtype": dtype,
                "attn_implementation": getattr(net.config, "_attn_implementation", None)}
    run.modules = modules
    return run


def _hf_fill(batches, feed: str, real: list) -> float:
    """Real tokens / tokens HF computes (padding included) under `feed`."""
    if feed == "step":
        return float(np.sum(real) / np.sum([t.size for t, _ in batches]))
    return float(np.sum(real) / np.sum([a.size for t, y in batches for a, _ in _per_problem(t, y)]))


def bench_real(args) -> dict:
    """One model on real lengths; returns a result dict (printed by bench_train.main)."""
    batches = real_batches(args.model, args.warmup + args.steps, args.problems, args.candidates, args.length)
    widths = [t.shape[-1] for t, _ in batches]
    real = [int((t > 0).sum()) for t, _ in batches]
    sides = {"jax": jax_side(args.model, batches, args.row_len, args.jax_accum, args.jax_dtype, args.jax_feed,
                             args.jax_width_multiple),
             "torch": torch_side(args.model, batches, args.torch_threads, args.hf_feed, dtype=args.hf_dtype)}
    res: dict = {"model": args.model, "load_avg_start": os.getloadavg(),
                 "candidates_per_step": args.problems * args.candidates,
                 "hf_padded_width_mean": float(np.mean(widths)),
                 "hf_feed": args.hf_feed,
                 "real_tokens_fraction_hf": _hf_fill(batches, args.hf_feed, real)}
    for name, fn in sides.items():
        t0 = time.perf_counter()
        for i in range(args.warmup):
            fn(i)
        getattr(fn, "compile_all", lambda: None)()  # compile time stays out of the timed steps
        res[f"{name}_warmup_s"] = time.perf_counter() - t0
    wall = {k: 0.0 for k in sides}
    cpu = {k: 0.0 for k in sides}  # CPU of all this process's threads: how many cores a side kept busy
    for i in range(args.warmup, args.warmup + args.steps):
        for name, fn in sides.items():
            t0, c0 = time.perf_counter(), time.process_time()
            fn(i)
            wall[name] += time.perf_counter() - t0
            cpu[name] += time.process_time() - c0
    cands = args.steps * args.problems * args.candidates
    for name, fn in sides.items():
        res[name] = {**fn.meta, "wall_s": wall[name], "candidates_per_s": cands / wall[name],
                     "cpu_s": cpu[name], "cores_busy": cpu[name] / wall[name]}
    res["ratio_train"] = res["jax"]["candidates_per_s"] / res["torch"]["candidates_per_s"]
    res["load_avg_end"] = os.getloadavg()
    return res


if __name__ == "__main__":  # the flags live in bench_train.py: this is its --real_lengths mode
    import sys

    from bench_train import main

    main(["--real_lengths", *sys.argv[1:]])
