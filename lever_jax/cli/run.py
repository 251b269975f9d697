"""`lever-jax run`: the end-to-end LEVER job -- execute, cross-fit the verifier, rerank, report.

    lever-jax run [--gin_file gin_configs/runs/demo.gin] [--quick] [--out DIR] [--ablation A]
    lever-jax run --input my.samples.jsonl [--gin_file ...]     # your own samples or executed file

Default: gin_configs/runs/demo.gin on the bundled GSM8k code-davinci-002 pool into results/demo;
--quick uses gin_configs/runs/demo_quick.gin (a smoke run for CI). Writes DIR/report.md,
DIR/metrics.json, DIR/scores.json, DIR/accuracy_vs_k.png, DIR/reliability.png.
"""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from lever_jax.data import paths
from lever_jax.data.errors import UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("run", help=__doc__.splitlines()[0], description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gin_file", action="append", default=None, help="gin config(s) (default runs/demo.gin)")
    p.add_argument("--gin_bindings", action="append", default=[], help="extra gin bindings 'NAME=VALUE'")
    p.add_argument("--quick", action="store_true", help="smoke setting: runs/demo_quick.gin (not with --gin_file)")
    p.add_argument("--input", default=None, help="your samples or executed file (RunConfig.input) instead of the pool")
    p.add_argument("--out", default=None, help="run directory (default results/demo or results/demo_quick)")
    p.add_argument("--ablation", default=None,
                   choices=("none", "no_exec", "no_program", "no_gen_prob", "no_agg"),
                   help="LEVER ablation: drop the execution result / the program from the verifier "
                        "input, drop P_LM from the score, or rerank without aggregation")
    p.add_argument("--max_problems", type=int, default=None, help="only the first N problems")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=main)


def resolve_gin_file(name: str) -> str:
    """A gin file path as given, or relative to the checkout / the installed package."""
    from lever_jax.training.launch import gin_search_paths

    for root in ["", *gin_search_paths()]:
        candidate = Path(root) / name if root else Path(name)
        if candidate.is_file():
            return str(candidate)
    raise UserError(f"gin file not found: {name}")


def main(args: argparse.Namespace) -> int:
    import gin

    from lever_jax.pipeline import run as run_lib

    from lever_jax.training.launch import parse_gin_files

    if args.quick and args.gin_file:
        raise UserError("--quick selects gin_configs/runs/demo_quick.gin; with --gin_file, include that file "
                        "or set RunConfig.max_problems yourself")
    default = "gin_configs/runs/demo_quick.gin" if args.quick else "gin_configs/runs/demo.gin"
    files = [resolve_gin_file(f) for f in (args.gin_file or [default])]
    for flag, value in (("--out", args.out), ("--input", args.input)):
        if value and paths.is_remote(value):  # the run directory is local (docs/cloud_tpu.md); not ./gs:/...
            raise UserError(f"lever-jax run {flag} {value}: must be a local path (copy the file or the run "
                            "directory with gsutil/gcloud storage; execute/train/eval/rerank read and write gs://)")
    bindings = list(args.gin_bindings)
    if args.input:
        bindings.append(f"RunConfig.input = {str(Path(args.input).resolve())!r}")
    if args.ablation:
        bindings.append(f"RunConfig.ablation = '{args.ablation}'")
    if args.max_problems is not None:
        bindings.append(f"RunConfig.max_problems = {args.max_problems}")
    if args.no_progress:
        bindings.append("RunConfig.progress = False")
    gin.clear_config()
    parse_gin_files(files, bindings)
    out = args.out or ("results/demo_quick" if args.quick else "results/demo")
    argv = sys.argv[1:]
    command = "lever-jax " + " ".join(shlex.quote(a) for a in argv) if argv[:1] == ["run"] \
        else "lever-jax run " + " ".join(shlex.quote(a) for a in argv)
    try:
        doc = run_lib.run(out, command=command, gin_text=gin.config_str())
    finally:  # an in-process caller (a notebook, a test, a second run) must not inherit this run's bindings
        gin.clear_config()
    methods = doc["methods"]
    head = "lever_no_agg" if doc["ablation"] == "no_agg" else "lever"
    print(f"{doc['pool']}: majority vote {100 * methods['majority_vote']['accuracy']:.1f}, "
          f"LEVER {100 * methods[head]['accuracy']:.1f}, oracle {100 * methods['oracle']['accuracy']:.1f}; "
          f"report: {out}/report.md")
    return 0


def cli(argv: list[str] | None = None) -> int:
    """`python -m lever_jax.cli.run [flags]` (same as `lever-jax run [flags]`)."""
    parser = argparse.ArgumentParser(prog="lever-jax")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["run", *(sys.argv[1:] if argv is None else argv)])
    return args.func(args)


if __name__ == "__main__":
    sys.exit(cli())
