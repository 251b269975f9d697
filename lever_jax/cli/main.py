"""The ``lever-jax`` console script: a thin dispatcher over the subcommand modules in ``lever_jax.cli``.

Error convention (one place for every subcommand): a user mistake -- a
:class:`lever_jax.data.errors.UserError` (``DataFileError`` is one: a data file's path, line and field), a
bad flag (argparse), a path that is missing / a directory / unreadable, a gin mistake -- prints ONE
line ``lever-jax: error: WHERE: message`` to stderr and exits 2, no traceback. Any other exception
is a runtime failure: one line naming the exception, exit 1; the traceback is printed only with
``lever-jax --debug COMMAND ...`` (``--debug`` may stand anywhere) or ``LEVER_JAX_DEBUG=1``.
SIGTERM (``kill``, a scheduler's stop) ends a command as Ctrl-C does: ``interrupted``, exit 130, after
the ``finally`` blocks ran (atomic writers remove their partial temp files, sandboxes stop their
workers); a second SIGTERM acts as before. Training handles both signals itself (a checkpoint first).
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import os
import signal
import sys
import threading
import traceback
from types import FrameType
from typing import Any, Callable, Iterator, NoReturn, Sequence

from lever_jax.data.errors import UserError

PROG = "lever-jax"
EXIT_RUNTIME_ERROR = 1
EXIT_USER_ERROR = 2
DEBUG_ENV = "LEVER_JAX_DEBUG"

# (subcommand, module, one-line help). Modules are imported only when their command runs; a module
# registers its subcommand with ``register(subparsers)``, or with the function named after a colon.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("rerank", "lever_jax.cli.rerank", "rerank an executed file and print the baseline table"),
    ("demo", "lever_jax.cli.demo", "baseline tables of the bundled GSM8k pools (no verifier; seconds)"),
    ("execute", "lever_jax.cli.execute", "execute candidates in the sandbox (cached)"),
    ("prepare", "lever_jax.cli.prepare", "build derived data once (e.g. Spider SQLite databases)"),
    ("verify-gold", "lever_jax.cli.verify_gold", "execute gold programs as candidates (sanity check)"),
    ("prompts", "lever_jax.cli.prompts", "write LEVER few-shot prompts for sampling new pools"),
    ("sample", "lever_jax.cli.sample", "sample a candidate pool from a code LLM (llama.cpp or a server)"),
    ("inputs", "lever_jax.cli.inputs", "write every candidate's verifier input string and label (JSONL)"),
    ("import", "lever_jax.cli.import_samples", "convert LEVER / OpenAI / vLLM outputs to samples files"),
    ("train", "lever_jax.training.launch:register_train", "train a verifier from gin files (T5X-style)"),
    ("eval", "lever_jax.training.launch:register_eval", "score candidates with a trained verifier and write JSON scores"),
    ("run", "lever_jax.cli.run", "end to end: execute, cross-fit the verifier, rerank, report"),
    ("compare", "lever_jax.cli.compare", "several `lever-jax run` directories side by side (finished runs, or their common folds)"),
    ("tables", "lever_jax.cli.tables", "the paper's tables on the bundled pools (every run they need, paired CIs)"),
)


class ArgumentParser(argparse.ArgumentParser):
    """argparse that raises :class:`UserError` (one line, exit 2) instead of printing usage."""

    def error(self, message: str) -> NoReturn:
        command = self.prog[len(PROG):].strip() if self.prog.startswith(PROG) else self.prog
        hint = f" (see `{self.prog} --help`)"
        raise UserError(f"{command}: {message}{hint}" if command else message + hint)


def _available_commands() -> list[tuple[str, str, str]]:
    found = []
    for name, module, help_text in COMMANDS:
        if importlib.util.find_spec(module.split(":")[0]) is not None:
            found.append((name, module, help_text))
    return found


def build_parser(selected: str | None = None) -> argparse.ArgumentParser:
    """Parser with every available subcommand; only ``selected`` has its full arguments loaded."""
    parser = ArgumentParser(prog=PROG, description="LEVER verifier reranking in JAX/Flax")
    parser.add_argument("--debug", action="store_true",
                        help=f"print the traceback of a runtime failure (also: {DEBUG_ENV}=1)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module, help_text in _available_commands():
        if name == selected:
            path, _, function = module.partition(":")
            getattr(importlib.import_module(path), function or "register")(sub)
        else:
            sub.add_parser(name, help=help_text, add_help=False)
    return parser


def one_line(text: str) -> str:
    """``text`` on one line: its non-blank lines, stripped, joined by ' | ' (gin's "In call to
    configurable ..." context lines, appended to errors raised inside configurables, dropped)."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    kept = [line for line in lines[1:] if not line.startswith("In call to configurable")]
    return " | ".join(lines[:1] + kept)


def _schema_errors() -> tuple[type[BaseException], ...]:
    try:
        from lever_jax.data.schema import SchemaError
    except Exception:  # noqa: BLE001 - classification must never raise
        return ()
    return (SchemaError,)


_PATH_ERRORS = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)


def as_user_error(exc: BaseException) -> UserError | None:
    """The user mistake ``exc`` stands for, or None when it is a runtime failure."""
    if isinstance(exc, UserError):
        return exc
    if isinstance(exc, _schema_errors()):
        return UserError(str(exc))
    if isinstance(exc, _PATH_ERRORS) and getattr(exc, "filename", None):
        return UserError(f"{exc.filename}: {exc.strerror or type(exc).__name__}")
    if isinstance(exc, SystemExit) and isinstance(exc.code, str):
        return UserError(exc.code)
    if "gin" in sys.modules:
        from lever_jax.training.gin_checks import gin_user_error

        return gin_user_error(exc)
    return None


def report_error(exc: BaseException, command: str | None, debug: bool) -> int:
    """Print ``exc`` the house way (see the module doc) and return the exit code."""
    user = as_user_error(exc)
    if user is not None:
        if debug:
            traceback.print_exception(exc, file=sys.stderr)
        print(f"{PROG}: error: {one_line(str(user))}", file=sys.stderr)
        return EXIT_USER_ERROR
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    what = f"{PROG} {command}" if command else PROG
    message = one_line(str(exc))
    if len(message) > 500:
        message = message[:500] + "..."
    hint = "" if debug else f" (traceback: `{PROG} --debug {command or ''} ...` or {DEBUG_ENV}=1)"
    print(f"{what} failed: {type(exc).__name__}: {message}{hint}", file=sys.stderr)
    return EXIT_RUNTIME_ERROR


def _debug_requested(argv: list[str]) -> tuple[bool, list[str]]:
    """(--debug given anywhere before ``--`` or LEVER_JAX_DEBUG set, argv without --debug)."""
    head, sep, tail = (argv[: argv.index("--")], ["--"], argv[argv.index("--") + 1:]) if "--" in argv \
        else (argv, [], [])
    debug = "--debug" in head or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    return debug, [a for a in head if a != "--debug"] + sep + tail


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt like Ctrl-C (so cleanup runs instead of the process dying
    mid-write); the first signal restores the previous handler. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        signal.signal(signum, previous)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_command(func: Callable[[argparse.Namespace], Any], args: argparse.Namespace,
                command: str | None, debug: bool) -> int:
    """``func(args)`` with the error convention applied (for entry points besides ``main``)."""
    try:
        with sigterm_as_interrupt():
            return int(func(args) or 0)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except SystemExit as exc:
        if isinstance(exc.code, str):
            return report_error(exc, command, debug)
        raise
    except Exception as exc:  # noqa: BLE001 - the one place that turns exceptions into exit codes
        return report_error(exc, command, debug)


def main(argv: Sequence[str] | None = None) -> int:
    debug, argv = _debug_requested(list(sys.argv[1:] if argv is None else argv))
    selected = next((a for a in argv if not a.startswith("-")), None)
    try:
        parser = build_parser(selected)
        args = parser.parse_args(argv)
    except Exception as exc:  # noqa: BLE001 - argparse mistakes are UserErrors; imports may fail
        return report_error(exc, selected, debug)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0 if args.command is None else EXIT_USER_ERROR
    return run_command(args.func, args, args.command, debug)


if __name__ == "__main__":
    sys.exit(main())
