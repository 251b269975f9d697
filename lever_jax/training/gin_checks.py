"""Gin mistakes as one-line user errors; macros defined but never used are errors too.

gin reports a mistake as a 24-34 line traceback (and a misspelt macro, ``TRAIN_STEPSS=3``, not at
all: it is just another unused macro). :func:`parse_gin_config` parses files and bindings, checks
the macros (:func:`check_macros`: every ``%NAME`` defined, every defined macro used by some
binding, with a did-you-mean) before gin's own ``finalize`` hooks run, and turns gin's
exceptions into :class:`lever_jax.data.errors.UserError` via :func:`gin_user_error` -- one line,
``FILE:LINE: message`` where gin gives the place. ``lever_jax.cli.main`` maps any exception
through :func:`gin_user_error` too, so a mistake found at call time (a required binding
missing) is one line as well.
"""
from __future__ import annotations

import contextlib
import difflib
import inspect
import logging
import os
import re
import tokenize
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import gin
from gin import config as gin_config

from lever_jax.data.errors import UserError

_GIN_DIR = str(Path(gin.__file__).resolve().parent)
_PARSE_FUNCTIONS = {"parse_config", "parse_config_file", "parse_config_files_and_bindings", "finalize"}
_IN_FILE = re.compile(r'In file "(?P<file>[^"]*)",? line (?P<line>\d+)')
_IN_BINDINGS = re.compile(r"In bindings string line (?P<line>\d+)")
_MACRO_SELECTOR = "gin.macro"


def _error(message: str, where: str | None = None) -> UserError:
    """A :class:`UserError` reading ``WHERE: message`` (``where``: a file, ``FILE:LINE``, a flag)."""
    return UserError(f"{where}: {message}" if where else message)


# Macros that only one kind of gin file defines (gin_configs/runs/train.gin's header): when one is
# missing, the file that should define it was most likely not given at all -- say so.
_FILE_KIND_MACROS = {
    "a task file (gin_configs/tasks/*.gin, e.g. tasks/executed_file.gin with --train_file)": frozenset({
        "MIXTURE_OR_TASK_NAME", "TRAIN_FILE", "DEV_MIXTURE_OR_TASK_NAME", "DEV_FILE", "EVAL_MIXTURE_OR_TASK_NAME",
        "EVAL_FILE", "TASK_FEATURE_LENGTHS", "TRAIN_STEPS", "BATCH_SIZE", "ACCUM_STEPS", "CANDIDATES_PER_PROBLEM",
        "LEARNING_RATE", "BEST_METRIC", "ADD_GOLD"}),
    "a model file (gin_configs/models/*.gin)": frozenset({"MODEL", "VOCABULARY_NAME"}),
}


def _undefined_macro_error(name: str, where: str) -> UserError:
    """``%name`` is used but never defined: when several macros of one kind of gin file are, that
    file was not given (say which); one of them: say which kind of file defines it; else suggest
    a close defined macro (a misspelling)."""
    defined, used_by = _macro_table()
    undefined = set(used_by) - set(defined)
    for kind, macros in _FILE_KIND_MACROS.items():
        missing = sorted(undefined & macros)
        if name in macros and len(missing) > 1:
            return _error(f"no {kind[2:]} given: its macros {', '.join('%' + m for m in missing)} are never defined",
                          where="--gin_file")
        if name in macros:
            return _error(f"macro %{name} is never defined (it comes from {kind})", where=where)
    return _error(f"macro %{name} is used but never defined{_suggest(name, defined, '%')}", where=where)


# ----------------------------------------------------------------------------------------------
# Macros


def _macro_references(value: Any) -> Iterator[str]:
    """Names of the macros ``%NAME`` referenced anywhere inside a bound value."""
    macro_fn = gin_config.get_configurable(gin_config.macro)
    for item in gin_config._iterate_flattened_values(value):  # noqa: SLF001 - gin has no public walker
        if isinstance(item, gin_config.ConfigurableReference) and item.configurable.wrapper == macro_fn:
            yield item.config_key[0]


def _macro_table() -> tuple[dict[str, Any], dict[str, list[str]]]:
    """({macro: value}, {macro: [binding keys referencing it]}) of the current (parsed) config."""
    defined: dict[str, Any] = {}
    used_by: dict[str, list[str]] = {}
    for (scope, selector), params in gin_config._CONFIG.items():  # noqa: SLF001
        if selector == _MACRO_SELECTOR:
            defined[scope] = params.get("value")
            key = f"%{scope}"
        for param, value in params.items():
            if selector != _MACRO_SELECTOR:
                key = gin_config._format_binding_key(scope, selector, param)  # noqa: SLF001
            for name in _macro_references(value):
                used_by.setdefault(name, []).append(key)
    return defined, used_by


def _reachable_macros(defined: dict[str, Any], used_by: dict[str, list[str]]) -> set[str]:
    """Macros referenced, directly or through other used macros, by a non-macro binding."""
    reached = {name for name, keys in used_by.items() if any(not k.startswith("%") for k in keys)}
    frontier = list(reached)
    while frontier:
        for name in _macro_references(defined.get(frontier.pop())):
            if name not in reached:
                reached.add(name)
                frontier.append(name)
    return reached


def _suggest(name: str, choices: Iterable[str], prefix: str = "") -> str:
    match = difflib.get_close_matches(name, sorted(set(choices)), n=1, cutoff=0.6)
    return f" (did you mean {prefix}{match[0]}?)" if match else ""


def _gin_files(files: Sequence[str]) -> list[Path]:
    """``files`` and, recursively, the files they ``include``, resolved as gin resolves them."""
    out: list[Path] = []
    pending = list(files)
    while pending:
        name = pending.pop(0)
        prefixes = [""] if os.path.isabs(name) else list(gin_config._LOCATION_PREFIXES)  # noqa: SLF001
        path = next((Path(p, name) for p in prefixes if Path(p, name).is_file()), None)
        if path is None or path in out:
            continue
        out.append(path)
        text = path.read_text(encoding="utf-8", errors="replace")
        pending.extend(m.group(2) for m in re.finditer(r"^\s*include\s+(['\"])(.+?)\1", text, re.M))
    return out


def _definition_site(name: str, files: Sequence[str], bindings: Sequence[str]) -> str | None:
    """Where macro ``name`` was last defined: ``--gin_bindings '...'`` or ``FILE:LINE``."""
    pattern = re.compile(rf"^\s*{re.escape(name)}\s*=")
    for binding in reversed(list(bindings)):
        if any(pattern.match(line) for line in str(binding).splitlines()):
            return f"--gin_bindings {binding.strip()!r}"
    site = None
    for path in _gin_files(files):
        for lineno, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if pattern.match(line):
                site = f"{path}:{lineno}"
    return site


def check_macros(files: Sequence[str] = (), bindings: Sequence[str] = (), allow: Iterable[str] = ()) -> None:
    """UserError unless every ``%NAME`` used is defined and every defined macro is used.

    Call after parsing, before ``gin.finalize()`` (or use :func:`parse_gin_config`). "Used" means
    reachable from a configurable's binding (directly or through other macros); ``allow`` names
    macros that code reads itself (``gin.query_parameter('%NAME')``). ``files``/``bindings`` (what
    was parsed) only serve to name the line that defined an unused macro.
    """
    defined, used_by = _macro_table()
    for name, keys in sorted(used_by.items()):
        if name not in defined:
            raise _undefined_macro_error(name, f"gin binding {keys[0]}")
    unused = sorted(set(defined) - _reachable_macros(defined, used_by) - set(allow))
    if unused:
        name = unused[0]
        others = f" (also unused: {', '.join(unused[1:])})" if len(unused) > 1 else ""
        hint = _suggest(name, set(defined) - set(unused), "")
        raise _error(f"macro {name} is defined but no binding uses it{hint}{others}",
                        where=_definition_site(name, files, bindings) or "gin")


def macros_referenced_in(*directories: str | os.PathLike) -> set[str]:
    """Names ``NAME`` of every ``%NAME`` in the ``*.gin`` files under ``directories`` (missing ones
    are skipped).

    Pass it as ``allow``/``allow_unused`` so that a macro the project's own run files use (a task
    file sets both ``MIXTURE_OR_TASK_NAME`` for train.gin and ``EVAL_MIXTURE_OR_TASK_NAME`` for
    eval.gin) is not an error when only one of the two run files is parsed; a misspelling is in
    no file and still is."""
    names: set[str] = set()
    for directory in directories:
        for path in sorted(Path(directory).rglob("*.gin")) if Path(directory).is_dir() else ():
            text = path.read_text(encoding="utf-8", errors="replace")
            names.update(m[1] for m in re.finditer(r"%([A-Za-z_][\w./]*)", text) if not m[1].startswith("gin."))
    return names


def check_unused_macros(files: Sequence[str] = (), bindings: Sequence[str] = (),
                        allow: Iterable[str] = ()) -> None:
    """Alias of :func:`check_macros` (undefined macros are checked as well)."""
    check_macros(files, bindings, allow)


class _DropGinPathNotFound(logging.Filter):
    """gin's resource reader logs 'Path not found' (root logger) before raising its own error."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Path not found")


@contextlib.contextmanager
def _quiet_missing_path_log() -> Iterator[None]:
    root, dropper = logging.getLogger(), _DropGinPathNotFound()
    root.addFilter(dropper)
    try:
        yield
    finally:
        root.removeFilter(dropper)


def parse_gin_config(files: Sequence[str], bindings: Sequence[str], allow_unused: Iterable[str] = (),
                     skip_unknown: bool = False) -> None:
    """``gin.parse_config_files_and_bindings`` + :func:`check_macros` + ``gin.finalize()``; every gin
    mistake becomes one :class:`UserError` (``FILE:LINE: message``)."""
    try:
        with _quiet_missing_path_log():
            gin.parse_config_files_and_bindings(list(files), list(bindings), finalize_config=False,
                                                skip_unknown=skip_unknown)
        check_macros(files, bindings, allow_unused)
        gin.finalize()
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - classified below; non-gin errors re-raised as they are
        user = gin_user_error(exc, files, bindings)
        if user is None:
            raise
        raise user from None


# ----------------------------------------------------------------------------------------------
# gin exceptions -> UserError


def _gin_frames(exc: BaseException) -> list[Any]:
    frames, tb = [], exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith(_GIN_DIR):
            frames.append(tb.tb_frame)
        tb = tb.tb_next
    return frames


def _innermost_is_gin(exc: BaseException) -> bool:
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_filename.startswith(_GIN_DIR)


def _parsed_file(frames: list[Any]) -> str | None:
    """The innermost gin file being parsed (for errors that carry no location, e.g. tokenizing)."""
    for frame in reversed(frames):
        if frame.f_code.co_name == "parse_config_file":
            return frame.f_locals.get("config_file_with_prefix") or frame.f_locals.get("config_file")
    return None


def _configurable_names() -> list[str]:
    names = set()
    for selector in list(gin_config._REGISTRY._selector_map):  # noqa: SLF001
        names.add(selector)
        names.add(selector.rsplit(".", 1)[-1])
    return sorted(names)


def _parameter_hint(message: str) -> str:
    match = re.match(r"Configurable '([^']+)' doesn't have a parameter named '([^']+)'", message)
    if not match:
        return ""
    configurable = gin_config._REGISTRY.get_match(match[1])  # noqa: SLF001
    if configurable is None:
        return ""
    target = configurable.wrapped
    try:
        params = inspect.signature(target.__init__ if inspect.isclass(target) else target).parameters
    except (TypeError, ValueError):
        return ""
    return _suggest(match[2], params, "")


def _moved(message: str, binding: str = "") -> str | None:
    """"OLD moved: bind NEW instead" when ``message`` is gin's error for a binding that
    lever_jax.training.configs.MOVED lists (a setting that moved into a config group);
    ``binding``: the text of the offending binding, when known (names the setting)."""
    from lever_jax.training.configs import MOVED

    param = re.match(r"Configurable '([^']+)' doesn't have a parameter named '([^']+)'", message)
    unknown = re.match(r"No configurable matching '([^']+)'", message)
    if param:
        old = f"{param[1].rsplit('.', 1)[-1]}.{param[2]}"
    elif unknown:
        written = re.match(r"\s*([\w.]+)\.(\w+)\s*=", binding)
        name = unknown[1].rsplit(".", 1)[-1]
        old = f"{name}.{written[2]}" if written and written[1].rsplit(".", 1)[-1] == name else name
    else:
        return None
    return f"{old} moved: bind {MOVED[old]} instead" if old in MOVED else None


def _binding_text(files: Sequence[str], bindings: Sequence[str], located: Any, in_bindings: Any) -> str:
    """The text of the binding gin's error points at (a --gin_bindings line or FILE:LINE)."""
    try:
        if in_bindings:
            return "\n".join(bindings).splitlines()[int(in_bindings["line"]) - 1]
        if located:
            return Path(located["file"]).read_text().splitlines()[int(located["line"]) - 1]
    except (OSError, IndexError, UnicodeDecodeError):
        pass
    return ""


def _hint(message: str) -> str:
    unknown = re.match(r"No configurable matching (?:reference )?'@?([^'(]+)", message)
    if unknown:
        return _suggest(unknown[1], _configurable_names(), "")
    return _parameter_hint(message)


def _tidy(message: str, exc: BaseException | None = None) -> str:
    if isinstance(exc, tokenize.TokenError):
        return f"{exc.args[0]} (an unclosed bracket or quote?)"
    first = message.strip().splitlines()[0].strip() if message.strip() else ""
    missing = re.match(r"Unable to open file: .*?\. Searched config paths: (.*)\.$", first)
    if missing:
        return f"gin file not found (searched config paths: {missing[1]})"
    token = re.search(r"Failed to parse token '([^']*)'", message)
    if token:
        return f"cannot parse value {token[1]!r} (strings need quotes)"
    if first.startswith("Unable to parse value"):
        return "cannot parse the value (strings need quotes: NAME = 'text')"
    return first.rstrip(":").rstrip()


def _binding_site(bindings: Sequence[str], line: int) -> str:
    """``--gin_bindings "TEXT"`` for line ``line`` of gin's bindings string (the bindings joined by
    newlines, the data flags' own bindings first), so the user sees which binding it was."""
    lines = "\n".join(bindings).splitlines()
    return f'--gin_bindings "{lines[line - 1].strip()}"' if 0 < line <= len(lines) else f"--gin_bindings line {line}"


def gin_user_error(exc: BaseException, files: Sequence[str] = (),
                   bindings: Sequence[str] = ()) -> UserError | None:
    """The one-line :class:`UserError` a gin parse/binding/required-binding error stands for;
    None when ``exc`` is not a gin configuration mistake (a failure inside a configurable's body).
    ``files``/``bindings`` (what was parsed) help name the line of a ``%gin.REQUIRED`` macro."""
    if isinstance(exc, UserError):
        return exc
    frames = _gin_frames(exc)
    if not frames:
        return None
    in_parse = any(f.f_code.co_name in _PARSE_FUNCTIONS for f in frames)
    message = str(exc)
    if not in_parse:
        required = isinstance(exc, RuntimeError) and message.startswith("Required bindings for")
        if not (_innermost_is_gin(exc) and required):
            return None
        return _error(_tidy(message).replace("not provided in config", "not bound by any gin file or "
                                                "--gin_bindings"), where="gin")
    macro = re.match(r"No bindings specified for '([^']+)/gin\.macro'", message)
    if macro:
        defined, used_by = _macro_table()
        keys = used_by.get(macro[1], [])
        return _undefined_macro_error(macro[1], f"gin binding {keys[0]}" if keys else "gin")
    if isinstance(exc, SyntaxError) and getattr(exc, "lineno", None):
        where = f"{exc.filename}:{exc.lineno}" if exc.filename else _binding_site(bindings, exc.lineno)
        return _error(_tidy(exc.msg or message), where=where)
    located = _IN_FILE.search(message)
    in_bindings = _IN_BINDINGS.search(message)
    if located:
        where = f"{located['file']}:{located['line']}"
    elif in_bindings:
        where = _binding_site(bindings, int(in_bindings["line"]))
    else:
        parsed = _parsed_file(frames)
        position = exc.args[1] if len(exc.args) > 1 and isinstance(exc.args[1], tuple) else None
        line = f":{position[0]}" if position else ""
        where = f"{parsed}{line}" if parsed else ("--gin_bindings" if position else "gin")
    text = _tidy(message, exc)
    required = re.match(r"(\S+) set to `%gin.REQUIRED` but not subsequently overridden", text)
    if required:
        return _required_error(required[1], files, bindings)
    moved = _moved(text, _binding_text(files, bindings, located, in_bindings))
    return _error(moved if moved else text + _hint(message), where=where)


def _required_error(binding: str, files: Sequence[str], bindings: Sequence[str]) -> UserError:
    """``X = %gin.REQUIRED`` never overridden: name the macro, where it was declared, and an
    unused macro of a similar name (a misspelt override)."""
    macro = re.match(r"(.+)/macro\.value$", binding)
    what = f"macro {macro[1]}" if macro else binding
    defined, used_by = _macro_table()
    unused = set(defined) - _reachable_macros(defined, used_by)
    close = difflib.get_close_matches(macro[1], sorted(unused), n=1, cutoff=0.6) if macro else []
    hint = f" (is {close[0]}, which no binding uses, a misspelling of it?)" if close else ""
    where = (_definition_site(macro[1], files, bindings) if macro else None) or "gin"
    return _error(f"{what} is %gin.REQUIRED and no gin file or --gin_bindings sets it{hint}", where=where)

