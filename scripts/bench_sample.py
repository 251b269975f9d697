"""Sampling throughput: `lever-jax sample` vs llama.cpp's own generation of the same requests.

    python scripts/bench_sample.py --model models/qwen.gguf [--dataset mbpp --split test] [--problems 4] \
        [--every 1] [--n 4] [--parallel 4] [--max-tokens 96] [--threads 2] [--output bench.json]

Same prompts (LEVER's few-shot prompts of ``--dataset``: ``--problems`` problems of ``--split``,
every ``--every``-th, so that Spider problems do not share their database), same stops, same
``--max-tokens``, one model file, all in this run:

* ``llamacpp_batched``: llama.cpp's own batched generation: one request per problem asking for
  ``n`` completions (``"n": N``), ``--parallel`` slots; what the runtime does with no tool around it;
* ``llamacpp_sequential``: one slot, one request per sequence, one after another;
* ``lever_jax_sample``: ``lever-jax sample`` with ``--parallel`` (the sampler, the journal and the
  samples file included), with a fresh journal;
* ``lever_jax_sample_shared_prefill``: the same with ``--shared-prefill`` (one request with n
  choices per problem, the prompt prefilled once).

Each arm counts the tokens it generated (the samples differ between arms, so the figure is tokens
per second of wall clock) and reports ratios against both llama.cpp arms. The llama.cpp arms time
generation alone (model loaded, few-shot prefix warmed, untimed); a ``lever-jax sample`` arm's time
is the whole command, so each is run a second time on its finished journal (no decoding: model load,
sha256 of the model file, samples file) and ``*_net`` ratios subtract that start-up. The goal: within
1.5x of the batched arm, never slower than the sequential one. Prints one JSON document.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from lever_jax.cli.main import main as lever_main
from lever_jax.data import iter_json_lines, load_problems
from lever_jax.data import prompts as prompt_lib


def _server(model: str, parallel: int, threads: int, ctx: int) -> Any:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model
    params.n_parallel = parallel
    params.n_ctx = parallel * ctx
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.warmup = False
    params.verbosity = -1
    return xllamacpp.Server(params)


def _body(prompt: str, stop: list[str], args: argparse.Namespace, n: int, seed: int) -> dict[str, Any]:
    return {"prompt": prompt, "stop": stop, "max_tokens": args.max_tokens, "temperature": 0.6, "top_k": 0,
            "min_p": 0.0, "seed": seed, "n": n, "logprobs": 1}


def _tokens(reply: dict[str, Any]) -> int:
    # a blank completion (its stop string began in the first token) comes back without log-probs
    return sum(len((c.get("logprobs") or {}).get("content") or ()) for c in reply["choices"])


def llamacpp_arm(records: list[dict[str, Any]], args: argparse.Namespace, batched: bool) -> dict[str, Any]:
    server = _server(args.model, args.parallel if batched else 1, args.threads, args.ctx_size)
    server.handle_completions(_body(records[0]["prompt"], records[0]["stop"], args, 1, 0))  # warm the prefix
    start = time.perf_counter()
    if batched:
        with ThreadPoolExecutor(max_workers=max(1, args.parallel // args.n) or 1) as pool:
            replies = list(pool.map(lambda r: server.handle_completions(
                _body(r["prompt"], r["stop"], args, args.n, 1)), records))
    else:
        replies = [server.handle_completions(_body(r["prompt"], r["stop"], args, 1, i))
                   for r in records for i in range(args.n)]
    seconds = time.perf_counter() - start
    tokens = sum(_tokens(r) for r in replies)
    del server
    return {"tokens": tokens, "seconds": round(seconds, 3), "tokens_per_s": round(tokens / seconds, 3)}


def sample_arm(args: argparse.Namespace, prompts: Path, workdir: Path, shared_prefill: bool) -> dict[str, Any]:
    out = workdir / f"bench{'.shared' if shared_prefill else ''}.samples.jsonl"
    argv = ["sample", "--input", str(prompts), "--split", args.split, "--model", args.model,
            "--n", str(args.n), "--no-greedy", "--parallel", str(args.parallel), "--threads", str(args.threads),
            "--max-tokens", str(args.max_tokens), "--ctx-size", str(args.ctx_size), "--output", str(out),
            "--shared-prefill" if shared_prefill else "--no-shared-prefill"]
    seconds, startup = _timed_sample(argv), _timed_sample(argv)  # the second run finds all journaled
    tokens = sum(len(s["tokens"]) for _n, e in iter_json_lines(f"{out}.journal.jsonl") for s in e["samples"])
    net = max(seconds - startup, 1e-9)
    return {"tokens": tokens, "seconds": round(seconds, 3), "tokens_per_s": round(tokens / seconds, 3),
            "includes": "model load + sha256 of the model file + writing the samples file",
            "startup_seconds": round(startup, 3), "tokens_per_s_net": round(tokens / net, 3)}


def _timed_sample(argv: list[str]) -> float:
    start = time.perf_counter()
    code = lever_main(argv)
    if code != 0:
        raise SystemExit(f"lever-jax sample exited {code}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--dataset", default="mbpp")
    parser.add_argument("--split", default="test")
    parser.add_argument("--problems", type=int, default=4)
    parser.add_argument("--every", type=int, default=1, help="take every K-th problem of the split")
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--ctx-size", type=int, default=2048)
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    os.environ.setdefault("LEVER_JAX_PROGRESS", "off")
    problems = load_problems(args.dataset, args.split)[:: args.every][: args.problems]
    records = list(prompt_lib.prompt_records(problems))
    arms: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        prompts = Path(tmp) / "prompts.jsonl"
        prompts.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        arms["llamacpp_sequential"] = llamacpp_arm(records, args, batched=False)
        arms["llamacpp_batched"] = llamacpp_arm(records, args, batched=True)
        arms["lever_jax_sample"] = sample_arm(args, prompts, Path(tmp), shared_prefill=False)
        arms["lever_jax_sample_shared_prefill"] = sample_arm(args, prompts, Path(tmp), shared_prefill=True)
    report: dict[str, Any] = {"arms": arms}
    for suffix in ("", "_net"):
        ours = {a: arms[a][f"tokens_per_s{suffix}"] for a in ("lever_jax_sample", "lever_jax_sample_shared_prefill")}
        for base in ("batched", "sequential"):
            rate = arms[f"llamacpp_{base}"]["tokens_per_s"]
            report[f"ratio_vs_{base}{suffix}"] = {a: round(v / rate, 3) for a, v in ours.items()}
    report.update({
        "settings": {k: v for k, v in vars(args).items() if k != "output"},
        "machine": {"cpus": os.cpu_count(), "load_1m": round(os.getloadavg()[0], 2), "python": platform.python_version()},
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    })
    text = json.dumps(report, indent=1)
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    sys.exit(main())
