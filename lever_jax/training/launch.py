"""The one launcher of `lever-jax train` / `lever-jax eval` (and `python -m lever_jax.training.train`
/ `.evaluate`): each command's explicit flag set (t5x-style --gin_file / --gin_bindings /
--gin_search_paths, --distributed, its data flags), gin file resolution and parsing, logging
set-up, and the two entry points (the run bodies are lever_jax.training.runs)."""
from __future__ import annotations

import argparse
import importlib
import logging
import math
import sys
from pathlib import Path
from typing import Optional, Sequence

import gin
import jax

from lever_jax.data.errors import UserError
from lever_jax.training import partitioning
from lever_jax.training.runs import evaluate, train

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # holds gin_configs/ in a non-editable install


def add_common_flags(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The t5x-style flags `lever-jax train` and `lever-jax eval` share."""
    parser.add_argument("--gin_file", action="append", default=[],
                        help="gin config file (repeatable; run, model and task files in any order)")
    parser.add_argument("--gin_bindings", action="append", default=[],
                        help="gin binding 'NAME=VALUE' (repeatable; applied after the files)")
    parser.add_argument("--gin_search_paths", action="append", default=[],
                        help="extra directories to resolve gin files and includes")
    parser.add_argument("--distributed", action="store_true",
                        help="call jax.distributed.initialize() first (multi-host: no other flag on Cloud TPU, "
                        "SLURM or Open MPI, where JAX finds the cluster itself)")
    parser.add_argument("--coordinator_address", default=None,
                        help="with --distributed: HOST:PORT of process 0 (a loopback address binds to it only)")
    parser.add_argument("--num_processes", type=int, default=None, help="with --distributed: process count")
    parser.add_argument("--process_id", type=int, default=None, help="with --distributed: this process's index")
    parser.add_argument("--log_level", default="INFO")
    return parser


def add_train_flags(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """`lever-jax train`'s flags: the common ones, --train_file / --dev_file (shorthands for the
    TRAIN_FILE / DEV_FILE macros) and --task_module."""
    add_common_flags(parser)
    parser.add_argument("--train_file", default=None, help="executed file to train on (sets TRAIN_FILE)")
    parser.add_argument("--dev_file", default=None, help="executed file for checkpoint selection (DEV_FILE)")
    parser.add_argument("--task_module", action="append", default=[],
                        help="module that registers SeqIO tasks, imported after the gin files (repeatable; "
                        "TrainDataConfig.pipeline='seqio' needs one: tasks.lever_tasks)")
    parser.set_defaults(func=run_train)
    return parser


def add_eval_flags(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """`lever-jax eval`'s flags: the common ones, --input (sets EVAL_FILE) and --output
    (`evaluate.output`)."""
    add_common_flags(parser)
    parser.add_argument("--input", default=None, help="executed JSONL(.gz) file to score (sets EVAL_FILE)")
    parser.add_argument("--output", default=None, help="scores JSON to write (metrics go beside it)")
    parser.set_defaults(func=run_evaluate)
    return parser


def register_train(subparsers: argparse._SubParsersAction) -> None:
    """The `lever-jax train` subcommand."""
    add_train_flags(subparsers.add_parser(
        "train", help="train a LEVER verifier from gin files (resumes from MODEL_DIR)"))


def register_eval(subparsers: argparse._SubParsersAction) -> None:
    """The `lever-jax eval` subcommand."""
    add_eval_flags(subparsers.add_parser(
        "eval", help="evaluate a trained verifier from gin files (JSON scores)"))


def main(command: str, argv: Optional[Sequence[str]] = None, doc: str = "") -> int:
    """`python -m lever_jax.training.{train,evaluate}`: the same flags and run as `lever-jax <command>`."""
    parser = argparse.ArgumentParser(prog=f"python -m lever_jax.training.{'train' if command == 'train' else 'evaluate'}",
                                     description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    args = (add_train_flags if command == "train" else add_eval_flags)(parser).parse_args(argv)
    return args.func(args)


def data_bindings(args: argparse.Namespace) -> list[str]:
    """Gin bindings for the data flags (after the files, before --gin_bindings)."""
    out = []
    for flag, macro, task_macro in (("train_file", "TRAIN_FILE", "MIXTURE_OR_TASK_NAME"),
                                    ("dev_file", "DEV_FILE", "DEV_MIXTURE_OR_TASK_NAME"),
                                    ("input", "EVAL_FILE", "EVAL_MIXTURE_OR_TASK_NAME")):
        value = getattr(args, flag, None)
        if value is not None:
            out += [f"{macro} = {str(value)!r}", f"{task_macro} = None"]
    if getattr(args, "output", None):
        out.append(f"evaluate.output = {args.output!r}")
    return out


def gin_search_paths(extra: list[str] = ()) -> list[Path]:
    """Where gin files and includes are resolved: cwd, the checkout (editable install) or the
    installed package (which ships gin_configs/), then --gin_search_paths."""
    roots = [Path.cwd()]
    roots += [root for root in (REPO_ROOT, PACKAGE_ROOT) if (root / "gin_configs").is_dir()]
    return roots + [Path(p) for p in extra]


def _tolerate_namespace_packages() -> None:
    """gin's python-package reader looks ``gin_configs/runs/x.gin`` up as package ``gin_configs.runs``;
    with the checkout on sys.path (an editable install) that is a namespace package without a
    file, and gin raises TypeError instead of moving on to the search paths (so an include failed
    whenever the cwd was not the checkout). Wrap its existence check to answer False instead."""
    from gin import config as gin_config, resource_reader

    def exists(path: str) -> bool:
        try:
            return resource_reader.system_path_file_exists(path)
        except TypeError:
            return False

    gin_config._FILE_READERS[:] = [  # noqa: SLF001 - gin has no public way to replace a reader
        (reader, exists if check is resource_reader.system_path_file_exists else check)
        for reader, check in gin_config._FILE_READERS]  # noqa: SLF001


def parse_gin_files(files: list[str], bindings: list[str], extra_paths: list[str] = ()) -> None:
    """Parse gin files + bindings (search paths: :func:`gin_search_paths`); every gin mistake,
    including a binding of a macro that no file uses (a misspelt name), is one UserError."""
    from lever_jax.training.gin_checks import macros_referenced_in, parse_gin_config

    _tolerate_namespace_packages()
    roots = gin_search_paths(list(extra_paths))
    for path in roots:
        gin.add_config_file_search_path(str(path))
    parse_gin_config(files, bindings, allow_unused=macros_referenced_in(*(r / "gin_configs" for r in roots)))


def import_task_modules(modules: Sequence[str]) -> None:
    """Import the modules that register SeqIO tasks (t5x's task modules, e.g. ``tasks.lever_tasks``)
    after gin is parsed, so that their import-time registration sees the gin bindings
    (``discover_specs.*``); the parsed config is locked, so their configurables are added unlocked."""
    for name in modules:
        try:
            with gin.unlock_config():
                importlib.import_module(name)
        except ImportError as err:
            raise UserError(f"--task_module {name}: cannot import it: {err}") from None


def parse_gin(args: argparse.Namespace) -> None:
    """Parse the command's gin files, data flags and --gin_bindings."""
    if not args.gin_file:
        raise UserError("at least one --gin_file is required (e.g. gin_configs/runs/smoke.gin)")
    parse_gin_files(args.gin_file, data_bindings(args) + list(args.gin_bindings), args.gin_search_paths)


class _DropOrbaxNoise(logging.Filter):
    """Orbax warns on every save without metrics when best-tracking is on (periodic saves)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "did not provide metrics" not in record.getMessage()


def setup(args: argparse.Namespace) -> None:
    # force=True: absl (imported by orbax/tensorflow) may already have configured the root logger.
    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True)
    absl_logger = logging.getLogger("absl")
    absl_logger.setLevel(logging.WARNING)
    absl_logger.addFilter(_DropOrbaxNoise())
    explicit = {"coordinator_address": getattr(args, "coordinator_address", None),
                "num_processes": getattr(args, "num_processes", None), "process_id": getattr(args, "process_id", None)}
    if any(v is not None for v in explicit.values()) and not args.distributed:
        raise UserError("--coordinator_address/--num_processes/--process_id need --distributed")
    partitioning.maybe_initialize_distributed(args.distributed, **explicit)
    parse_gin(args)


def run_train(args: argparse.Namespace) -> int:
    setup(args)
    import_task_modules(args.task_module)
    record = train(argv_note=f"\n# flags: {' '.join(sys.argv[1:])}\n")
    if "preempted_at_step" in record and jax.process_index() == 0:
        print(f"preempted: checkpoint saved at step {int(record['preempted_at_step'])}; "
              "the same command resumes from it", file=sys.stderr)
    if jax.process_index() == 0:
        shown = {k: v for k, v in record.items() if isinstance(v, float) and math.isfinite(v)}
        print(" ".join(f"{k}={v:.4g}" for k, v in sorted(shown.items())))
    return 0


def run_evaluate(args: argparse.Namespace) -> int:
    setup(args)
    metrics = evaluate()
    if jax.process_index() == 0:
        print(" ".join(f"{k}={v:.4g}" for k, v in sorted(metrics.items()) if isinstance(v, float)))
    return 0
