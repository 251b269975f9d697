"""Benchmark: the trainer's own feeds (TrainDataConfig.batching) on the real GSM8k pool lengths.

`lever-jax train`'s step (lever_jax.training.trainer.Trainer.train_step, LEVER's loss, AdamW,
dropout on) fed by its own batcher (lever_jax.inputs.feeds.TrainBatcher: the same sampled
problems and candidates in every mode) in the three modes: 'padded' (every candidate padded to
the inputs length, the baseline), 'bucketed' (each step padded to its longest candidate) and
'packed' (candidates packed into rows of the inputs length). Data: the bundled GSM8k
code-davinci-002 pool's fold-0 training task, serialized as LEVER's verifier input and cut to 512
tokens. Models: T5 v1.1-small shapes (random init, bundled SentencePiece) or all-MiniLM-L6-v2
shapes (random init, its WordPiece vocabulary).

Every step index is run once per mode untimed first (compiles every shape that mode meets), then
the timed pass replays the same steps, modes interleaved step by step so they see the same load.

    nice -n 10 .venv/bin/python scripts/bench_train_feeds.py --model t5 --problems 4 --candidates 5 --steps 3
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

MODES = ("padded", "bucketed", "packed")


def build_trainer(model_name: str, mode: str, tok, args):
    from lever_jax.models import EncoderClassifierVerifier, EncoderDecoderVerifier, encoder_config, t5_config
    from lever_jax.training import OptimizerConfig, Trainer, partitioning

    if model_name == "t5":
        model = EncoderDecoderVerifier(t5_config("small", dropout_rate=0.1, vocab_size=tok.vocab_size,
                                                 no_token_id=tok.no_id, yes_token_id=tok.yes_id))
    else:
        model = EncoderClassifierVerifier(encoder_config("minilm", dropout_rate=0.1, vocab_size=tok.vocab_size,
                                                         pad_token_id=tok.pad_id))
    mesh, rules = partitioning.make_mesh(), partitioning.logical_axis_rules("data")
    return Trainer(model, OptimizerConfig(learning_rate=1e-4, warmup_steps=0), 1000, mesh, rules,
                   args.length, accum_steps=args.accum, batching=mode)


def build(model_name: str, mode: str, problems, tok, args):
    import jax

    from lever_jax.inputs import TrainBatcher

    trainer = build_trainer(model_name, mode, tok, args)
    model = trainer.model
    batcher = TrainBatcher(problems, tok, args.length, args.problems, args.candidates, seed=333,
                           tokens_key=model.tokens_key, batching=mode, accum_steps=args.accum)
    batches = [batcher.host_batch(s) for s in range(args.steps)]
    holder = {"state": trainer.init_state(0)}

    def run(i: int) -> float:
        holder["state"], metrics = trainer.train_step(holder["state"], batches[i])
        return float(jax.device_get(metrics["num_candidates"]))

    key = "packed_tokens" if mode == "packed" else model.tokens_key
    slots = [int(np.prod(b[key].shape)) for b in batches]
    shapes = sorted({tuple(b[key].shape) for b in batches})
    return run, {"token_slots_per_step": float(np.mean(slots)), "distinct_shapes": [list(s) for s in shapes]}


def bench_scoring(model_name: str, problems, tok, args) -> dict:
    """log P(yes) of `--score` real candidates: padded to the inputs length vs length-sorted chunks
    cut to their longest (Trainer.score_tokens), same params, warm call first, then one timed call."""
    import jax

    from lever_jax.inputs import pad_to

    rows = np.stack([pad_to(t, args.length, tok.pad_id) for p in problems for t in p.tokens][: args.score])
    out = {}
    for mode in ("padded", "packed"):
        trainer = build_trainer(model_name, mode, tok, args)
        params = trainer.init_state(0).params
        trainer.score_tokens(params, rows, args.score_batch)  # compile every width
        t0 = time.perf_counter()
        scores = trainer.score_tokens(params, rows, args.score_batch)
        wall = time.perf_counter() - t0
        out[mode] = {"wall_s": wall, "candidates_per_s": len(rows) / wall}
        out.setdefault("_scores", []).append(scores)
        jax.clear_caches()
    a, b = out.pop("_scores")
    out["max_abs_score_diff"] = float(np.abs(a - b).max())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=("t5", "minilm"), default="t5")
    parser.add_argument("--problems", type=int, default=4)
    parser.add_argument("--candidates", type=int, default=5)
    parser.add_argument("--accum", type=int, default=1)
    parser.add_argument("--length", type=int, default=512)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--score", type=int, default=0, help="also time scoring this many candidates")
    parser.add_argument("--score_batch", type=int, default=32)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    from lever_jax.inputs import get_vocabulary, numpy_problems, resolve_task

    tok = get_vocabulary("spm" if args.model == "t5" else "minilm")
    problems = numpy_problems(resolve_task("lever_verify_gsm8k_pool_fold0_train"), tok, args.length, add_gold=False)
    lengths = np.array([len(t) for p in problems for t in p.tokens])
    modes = [m for m in args.modes.split(",") if m]
    res: dict = {"config": vars(args), "load_avg_start": os.getloadavg(), "train_problems": len(problems),
                 "length_mean": float(lengths.mean()), "length_p50": float(np.median(lengths)),
                 "length_p90": float(np.percentile(lengths, 90)), "length_max": int(lengths.max())}
    sides = {}
    for mode in modes:
        run, meta = build(args.model, mode, problems, tok, args)
        t0 = time.perf_counter()
        for i in range(args.steps):
            run(i)  # compile every shape this mode meets
        sides[mode] = run
        res[mode] = {**meta, "warm_pass_s": time.perf_counter() - t0}
        print(f"{mode}: warm pass {res[mode]['warm_pass_s']:.1f}s, shapes {meta['distinct_shapes']}", flush=True)
    wall = {m: 0.0 for m in modes}
    cands = {m: 0.0 for m in modes}
    for i in range(args.steps):
        for mode in modes:
            t0 = time.perf_counter()
            cands[mode] += sides[mode](i)
            wall[mode] += time.perf_counter() - t0
    for mode in modes:
        res[mode].update({"wall_s": wall[mode], "candidates": cands[mode],
                          "candidates_per_s": cands[mode] / wall[mode]})
    if args.score:
        res["scoring"] = bench_scoring(args.model, problems, tok, args)
        sc = res["scoring"]
        print(f"{args.model} scoring {args.score} candidates: padded {sc['padded']['candidates_per_s']:.2f}/s, "
              f"length-sorted {sc['packed']['candidates_per_s']:.2f}/s "
              f"({sc['packed']['candidates_per_s'] / sc['padded']['candidates_per_s']:.2f}x; "
              f"max |score diff| {sc['max_abs_score_diff']:.2e})")
    base = res.get("padded", {}).get("candidates_per_s")
    res["load_avg_end"] = os.getloadavg()
    for mode in modes:
        ratio = f", {res[mode]['candidates_per_s'] / base:.2f}x padded" if base else ""
        print(f"{args.model} {mode}: {res[mode]['candidates_per_s']:.2f} candidates/s "
              f"({res[mode]['token_slots_per_step']:.0f} token slots/step){ratio}")
    print(f"load average {res['load_avg_start']} -> {res['load_avg_end']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(res, handle, indent=1)


if __name__ == "__main__":
    main()
