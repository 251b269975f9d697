"""``lever-jax sample``: sample a candidate pool from a code LLM (LEVER's first step).

    lever-jax sample --dataset mbpp --split test --limit 10 --model qwen.gguf --output mbpp.samples.jsonl.gz
    lever-jax prompts --dataset spider --split dev | lever-jax sample --input - --split dev \\
        --server http://127.0.0.1:8000 --output spider.samples.jsonl.gz

Prompts are LEVER's few-shot prompts, built as ``lever-jax prompts`` builds them (``--dataset``/
``--split``) or read from its output (``--input``; ``-`` = stdin). Per problem: ``--n`` samples at
``--temperature`` (LEVER: 0.6) and the temperature-0 decode as the problem's ``greedy``; every
candidate carries ``gen_logprob`` (the sum of its tokens' log-probs) and ``num_tokens``; identical
programs merge with ``count``. The output is a samples file for ``lever-jax execute``.

Backends: ``--model FILE.gguf`` decodes in this process with llama.cpp (extra ``sample``),
``--parallel`` sequences at once; ``--server URL`` calls any OpenAI-compatible server with
log-probs (vLLM, llama.cpp's server, a hosted API; ``--api-key-env``).

Resumable: each finished problem is appended to a journal (default ``OUTPUT.journal.jsonl``) keyed
by model digest + prompt + settings; a killed run started again with the same flags re-samples
nothing it finished. SIGTERM stops it as Ctrl-C does (lever_jax.cli.main: finished problems stay
journaled, the partial output is removed). With ``--parallel 1`` a fixed
``--seed`` reproduces the file exactly; batched decoding (``--parallel`` > 1) is not
bit-reproducible in llama.cpp (docs/sampling.md).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from typing import Any, Iterator

NAME = "sample"
DATASETS = ("gsm8k", "mbpp", "humaneval", "spider", "wikitq")


def register(subparsers: Any) -> None:
    from lever_jax.cli.prompts import add_prompt_options

    p = subparsers.add_parser(NAME, help="sample a candidate pool from a code LLM (llama.cpp or a server)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_argument_group("problems and prompts")
    src.add_argument("--dataset", choices=DATASETS, help="build LEVER's prompts for a bundled dataset")
    src.add_argument("--split", help="dataset split (also needed with --input, to load the problems)")
    src.add_argument("--variant", default=None, help="dataset variant, e.g. 'sanitized' for MBPP")
    src.add_argument("--input", help="prompts JSONL written by `lever-jax prompts` ('-' = stdin)")
    src.add_argument("--limit", type=int, default=None, help="only the first N problems")
    add_prompt_options(src)
    model = p.add_argument_group("model (one of --model / --server)")
    model.add_argument("--model", help="a GGUF model file, decoded in-process by llama.cpp")
    model.add_argument("--model-sha256", default=None, help="refuse the model file unless it has this sha256")
    model.add_argument("--server", help="an OpenAI-compatible server's URL (with or without /v1)")
    model.add_argument("--server-model", default=None, help="model name to request (default: the server's first)")
    model.add_argument("--api-key-env", default=None, help="environment variable holding the server's API key")
    model.add_argument("--server-extra", default=None,
                       help="JSON object merged into every request (e.g. '{\"top_k\": 0, \"min_p\": 0}')")
    model.add_argument("--threads", type=int, default=None, help="llama.cpp CPU threads (default: all cores)")
    model.add_argument("--ctx-size", type=int, default=4096, help="llama.cpp context per sequence (default 4096)")
    dec = p.add_argument_group("decoding")
    dec.add_argument("--n", type=int, default=None, help="samples per problem (default 5)")
    dec.add_argument("--temperature", type=float, default=None, help="sampling temperature (default: LEVER's 0.6)")
    dec.add_argument("--top-p", type=float, default=1.0)
    dec.add_argument("--max-tokens", type=int, default=None, help="cap per sequence (default: per dataset)")
    dec.add_argument("--seed", type=int, default=0)
    dec.add_argument("--parallel", type=int, default=1, help="sequences decoded at once (default 1)")
    dec.add_argument("--no-greedy", action="store_true", help="skip the temperature-0 decode")
    dec.add_argument("--shared-prefill", action=argparse.BooleanOptionalAction, default=None,
                     help="ask for a problem's --n samples in one request with n choices: the prompt is "
                          "prefilled once and shared (needs --parallel >= n; not bit-reproducible). "
                          "Default: on when --parallel >= n > 1 (2x the throughput, BENCHMARKS.md), off "
                          "otherwise (--parallel 1 reproduces a file exactly)")
    dec.add_argument("--fences", choices=("keep", "strip"), default="keep",
                     help="'strip' keeps the first ```-fenced block of a reply (chat-tuned models)")
    out = p.add_argument_group("output")
    out.add_argument("--output", required=True, help="samples JSONL (.gz ok), written atomically")
    out.add_argument("--journal", default=None, help="resume journal (default OUTPUT.journal.jsonl)")
    out.add_argument("--source", default=None, help="candidates' source tag (default sample:<model>:t<T>)")
    p.set_defaults(func=main)


def _check_args(args: argparse.Namespace) -> None:
    from lever_jax.cli.checks import check_input_file, check_positive, check_split, user_error

    if bool(args.model) == bool(args.server):
        raise user_error("give exactly one of --model FILE.gguf and --server URL", where="sample")
    if bool(args.dataset) == bool(args.input):
        raise user_error("give exactly one of --dataset (with --split) and --input PROMPTS.jsonl", where="sample")
    if args.input and args.input != "-":
        check_input_file(args.input)
    if args.dataset:
        check_split(args.dataset, args.split)
    elif not args.split:
        raise user_error("--input needs --split (the problems are loaded from the bundled split)", where="--split")
    for flag in ("limit", "n", "max_tokens", "parallel", "threads", "ctx_size"):
        check_positive("--" + flag.replace("_", "-"), getattr(args, flag))
    check_positive("--temperature", args.temperature)
    from lever_jax.sampling.settings import DEFAULT_SAMPLES

    n = args.n or DEFAULT_SAMPLES
    if args.shared_prefill is None:  # auto: on where it fits
        args.shared_prefill = n > 1 and args.parallel >= n
    if args.shared_prefill and args.model and args.parallel < n:
        raise user_error(f"--shared-prefill needs --parallel >= --n ({n}): llama.cpp "
                         f"decodes one request's choices in slots of their own, got --parallel {args.parallel}",
                         where="--parallel")
    if not 0 < args.top_p <= 1:
        raise user_error(f"must be in (0, 1], got {args.top_p}", where="--top-p")
    if args.server_extra is not None:
        try:
            extra = json.loads(args.server_extra)
        except json.JSONDecodeError as err:
            raise user_error(f"not JSON ({err})", where="--server-extra") from None
        if not isinstance(extra, dict):
            raise user_error("expected a JSON object", where="--server-extra")
    if args.api_key_env and not os.environ.get(args.api_key_env):
        raise user_error(f"environment variable {args.api_key_env} is not set", where="--api-key-env")


def _stdin_copy() -> str:
    fd, name = tempfile.mkstemp(prefix="lever-jax-prompts.", suffix=".jsonl")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(sys.stdin.read())
    return name


def _records_from_file(path: str, shown: str, dataset_split: tuple[str | None, str], limit: int | None) -> Iterator[Any]:
    """PromptRecords from a ``lever-jax prompts`` file; the problems from the bundled split."""
    from lever_jax.data.datasets import load_problems
    from lever_jax.data.jsonl import DataFileError, iter_json_lines
    from lever_jax.sampling.backends import stop_tuple
    from lever_jax.sampling.pool import PromptRecord

    by_id: dict[str, Any] | None = None
    count = 0
    for lineno, obj in iter_json_lines(path):
        if limit is not None and count >= limit:
            return
        if not isinstance(obj, dict) or not isinstance(obj.get("prompt"), str):
            raise DataFileError(shown, lineno, "prompt", "expected an object with a string 'prompt'")
        dataset = obj.get("dataset")
        if dataset not in DATASETS:
            raise DataFileError(shown, lineno, "dataset", f"expected one of {', '.join(DATASETS)}, got {dataset!r}")
        if by_id is None:
            by_id = {p.problem_id: p for p in load_problems(dataset, dataset_split[1], dataset_split[0])}
        problem = by_id.get(obj.get("problem_id"))
        if problem is None or problem.dataset != dataset:
            raise DataFileError(shown, lineno, "problem_id",
                                f"{obj.get('problem_id')!r} is not a {dataset} {dataset_split[1]} problem (wrong --split?)")
        count += 1
        yield PromptRecord(problem, obj["prompt"], stop_tuple(obj.get("stop")))


def prompt_records(args: argparse.Namespace, input_path: str | None) -> Iterator[Any]:
    """The run's PromptRecords (``--dataset`` built here, or read from ``input_path``)."""
    from lever_jax.cli.prompts import prompt_options
    from lever_jax.data import prompts
    from lever_jax.data.datasets import load_problems
    from lever_jax.sampling.pool import PromptRecord

    if input_path is not None:
        shown = "<stdin>" if args.input == "-" else args.input
        yield from _records_from_file(input_path, shown, (args.variant, args.split), args.limit)
        return
    problems = load_problems(args.dataset, args.split, args.variant)[: args.limit]
    for problem, rec in zip(problems, prompts.prompt_records(problems, **prompt_options(args))):
        yield PromptRecord(problem, rec["prompt"], tuple(rec["stop"]))


def build_backend(args: argparse.Namespace) -> Any:
    from lever_jax.sampling.backends import LlamaCppBackend, ServerBackend

    if args.model:
        return LlamaCppBackend(args.model, sha256=args.model_sha256, threads=args.threads,
                               parallel=args.parallel, ctx_size=args.ctx_size)
    api_key = os.environ.get(args.api_key_env) if args.api_key_env else None
    extra = json.loads(args.server_extra) if args.server_extra else None
    return ServerBackend(args.server, model=args.server_model, api_key=api_key, parallel=args.parallel, extra=extra)


def main(args: argparse.Namespace) -> int:
    _check_args(args)
    input_path = (_stdin_copy() if args.input == "-" else args.input) if args.input else None
    try:
        return _sample(args, input_path)
    finally:
        if args.input == "-" and input_path:
            os.unlink(input_path)


def _sample(args: argparse.Namespace, input_path: str | None) -> int:
    from lever_jax.data import jsonl
    from lever_jax.data.progress import progress_bar
    from lever_jax.sampling.journal import Journal
    from lever_jax.sampling.pool import Sampler, summary
    from lever_jax.sampling.settings import DEFAULT_MAX_TOKENS, DEFAULT_SAMPLES, LEVER_TEMPERATURE, SampleSettings

    records = list(prompt_records(args, input_path))  # every prompt checked before the model loads
    dataset = args.dataset or (records[0].problem.dataset if records else "")
    settings = SampleSettings(
        n=args.n or DEFAULT_SAMPLES, temperature=args.temperature or LEVER_TEMPERATURE, top_p=args.top_p,
        max_tokens=args.max_tokens or DEFAULT_MAX_TOKENS.get(dataset, 256), seed=args.seed,
        greedy=not args.no_greedy, shared_prefill=args.shared_prefill)
    journal = Journal(args.journal or f"{args.output}.journal.jsonl")
    backend = build_backend(args)
    bar = progress_bar(total=len(records), desc=f"sample {dataset}", unit="problem", file=sys.stderr)

    def on_problem(stats: Any) -> None:
        per_s, tok_s = stats.rates()
        bar.update(1)
        bar.set_postfix(samples_per_s=f"{per_s:.2f}", tokens_per_s=f"{tok_s:.1f}", resumed=stats.from_journal)

    sampler = Sampler(backend, settings, journal, source=args.source, strip_fences=args.fences == "strip",
                      on_problem=on_problem)
    try:
        with bar:
            written = jsonl.write_problems(args.output, sampler.run(records))
    finally:
        backend.close()
    report = summary(sampler.stats, {"output": args.output, "journal": str(journal.path), "model": backend.model_id,
                                     "settings": settings.as_dict(), "written": written})
    print(json.dumps(report), file=sys.stderr)
    return 0
