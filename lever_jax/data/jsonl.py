"""Streaming, validating JSONL reader and atomic writer for samples / executed files.

Files may be plain or gzip-compressed (by the ``.gz`` suffix). Reading is lazy (one line at a
time), so files larger than memory work. A bad line raises :class:`DataFileError` naming the file,
the line number and the field. Writers write to a temporary file beside the target and rename it
into place, so a killed run never leaves a half-written output.
"""
from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import re
import tempfile
import zlib
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, TypeVar

from lever_jax.data import paths
from lever_jax.data.errors import UserError

from lever_jax.data.schema import Problem, SchemaError, problem_from_dict, problem_to_dict

PathLike = str | os.PathLike
T = TypeVar("T")


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


class DataFileError(UserError):
    """A data file could not be read; the message names file, line and field."""

    def __init__(self, path: PathLike, line: int | None, field: str | None, message: str):
        where = f"{path}" + (f":{line}" if line is not None else "")
        what = f" field '{field}':" if field else ""
        super().__init__(f"{where}:{what} {message}")
        self.path, self.line, self.field = str(path), line, field


def open_text(path: PathLike, mode: str = "rt") -> IO[str]:
    """Open a text file, transparently gzip-compressed when the name ends in ``.gz``."""
    if paths.is_remote(path) and "r" in mode:  # remote files: through the path layer
        raw = paths.open_binary(path)
        return io.TextIOWrapper(gzip.GzipFile(fileobj=raw) if str(path).endswith(".gz") else raw,  # type: ignore[arg-type]
                                encoding="utf-8")
    if str(path).endswith(".gz"):
        return gzip.open(path, mode, encoding="utf-8")  # type: ignore[return-value]
    return open(path, mode, encoding="utf-8")


def has_content(path: PathLike, chunk: int = 1 << 16) -> bool:
    """Whether a local file holds anything but whitespace (a ``.gz`` once decompressed); reads only
    up to the first such byte. Unreadable content counts as content: the reader reports it."""
    try:
        with (gzip.open(path, "rb") if str(path).endswith(".gz") else open(path, "rb")) as handle:
            while True:
                block = handle.read(chunk)
                if not block:
                    return False
                if block.strip():
                    return True
    except (OSError, EOFError, zlib.error):
        return True


def iter_json_lines(path: PathLike) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, decoded_object)`` for every non-blank line; 1-based line numbers."""
    if not paths.exists(path):
        raise DataFileError(path, None, None, "no such file")
    lineno = 0
    # Binary lines decoded one by one, so that bad UTF-8 is reported on the right line.
    raw_handle = paths.open_binary(path)
    with (gzip.GzipFile(fileobj=raw_handle) if str(path).endswith(".gz") else raw_handle) as handle, raw_handle:
        lines = iter(handle)
        while True:
            try:
                raw = next(lines)
            except StopIteration:
                return
            except zlib.error as err:  # a corrupt deflate stream
                raise DataFileError(path, lineno + 1, None, f"corrupt compressed data ({err})") from None
            except (OSError, EOFError) as err:  # truncated or non-gzip data
                raise DataFileError(path, lineno + 1, None, f"unreadable: {type(err).__name__}: {err}") from None
            lineno += 1
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise DataFileError(path, lineno, None, f"invalid UTF-8 at byte {err.start}") from None
            if not line.strip():
                continue
            yield lineno, _decode_line(path, lineno, line)


class _NonStandard:
    """Stands in for a NaN / Infinity token while decoding, so that its field can be named."""

    def __init__(self, token: str):
        self.token = token


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
MAX_DEPTH = 200  # JSON nesting deeper than this means nothing in the data contract


def _decode_line(path: PathLike, lineno: int, line: str) -> Any:
    """One JSON line -> object; strict: no NaN/+Infinity, no lone surrogates, bounded nesting."""
    found: list[_NonStandard] = []

    def constant(token: str) -> Any:
        if token == "-Infinity":  # the contract's impossible log-probability; the schema checks where it may be
            return float("-inf")
        found.append(_NonStandard(token))
        return found[-1]

    try:
        obj = json.loads(line, parse_constant=constant)
    except json.JSONDecodeError as err:
        raise DataFileError(path, lineno, None, f"invalid JSON: {err.msg} (column {err.colno})") from None
    except RecursionError:
        raise DataFileError(path, lineno, None, f"JSON nested too deeply (limit {MAX_DEPTH} levels)") from None
    if found or _SURROGATE_ESCAPE.search(line) or _deeper_than(line, MAX_DEPTH):
        field, message = _find_bad_value(obj)
        if field is not None:
            raise DataFileError(path, lineno, field, message)
    return obj


def _deeper_than(line: str, limit: int) -> bool:
    """Cheap upper bound on the nesting (brackets inside strings count too: then we walk)."""
    if line.count("[") + line.count("{") <= limit:
        return False
    depth = deepest = 0
    for char in re.findall(r'[\[\]{}]', line):
        depth += 1 if char in "[{" else -1
        deepest = max(deepest, depth)
    return deepest > limit


def _find_bad_value(obj: Any) -> tuple[str | None, str]:
    """The first NaN/Infinity token, lone surrogate or too-deep nesting: (field path, message)."""
    stack: list[tuple[Any, str, int]] = [(obj, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        where = path or "<record>"
        if depth > MAX_DEPTH:
            return where[:where.find("[")] + "[...]" if "[" in where else where, f"nested more than {MAX_DEPTH} levels deep"
        if isinstance(value, _NonStandard):
            return where, f"{value.token} is not a JSON number (use null, or a finite number)"
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as err:
                return where, f"lone surrogate \\u{ord(value[err.start]):04x} at character {err.start} (not valid Unicode)"
        elif isinstance(value, dict):
            for key, item in reversed(list(value.items())):
                stack.append((key, where, depth + 1))
                stack.append((item, f"{path}.{key}" if path else str(key), depth + 1))
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in reversed(list(enumerate(value))))
    return None, ""


def read_records(path: PathLike, parse: Callable[[Any], T]) -> Iterator[T]:
    """Stream ``parse(obj)`` over a JSONL file, turning :class:`SchemaError` into file:line errors."""
    for lineno, obj in iter_json_lines(path):
        try:
            yield parse(obj)
        except SchemaError as err:
            raise DataFileError(path, lineno, err.field, err.message) from None


def read_problems(path: PathLike, require_execution: bool = False) -> Iterator[Problem]:
    """Stream validated :class:`Problem` records; ``require_execution`` for executed files."""
    seen: set[str] = set()
    for lineno, obj in iter_json_lines(path):
        try:
            problem = problem_from_dict(obj, require_execution=require_execution)
        except SchemaError as err:
            raise DataFileError(path, lineno, err.field, err.message) from None
        if problem.problem_id in seen:
            raise DataFileError(path, lineno, "problem_id", f"duplicate problem_id {problem.problem_id!r}")
        seen.add(problem.problem_id)
        yield problem


@contextlib.contextmanager
def atomic_writer(path: PathLike, mode: str = "wt") -> Iterator[IO[Any]]:
    """Write to a temp file in the target's directory; rename over ``path`` only on success.

    Remote targets (``gs://``): written locally the same way, then uploaded whole (``paths.staged``)."""
    if paths.is_remote(path):
        with paths.staged(path) as staged_name, atomic_writer(staged_name, mode) as handle:
            yield handle
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    os.chmod(tmp_name, 0o666 & ~_UMASK)  # mkstemp makes 0600; give outputs the usual permissions
    try:
        if target.name.endswith(".gz"):
            # mtime=0 keeps compressed output byte-identical across runs.
            raw = open(tmp_name, "wb")
            gz = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0)
            handle: IO[Any] = io.TextIOWrapper(gz, encoding="utf-8") if "t" in mode else gz
            try:
                yield handle
            finally:
                handle.close()
                raw.close()
        else:
            with open(tmp_name, mode, **({"encoding": "utf-8"} if "t" in mode else {})) as handle:
                yield handle
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


def write_json_lines(path: PathLike, records: Iterable[Any]) -> int:
    """Atomically write one compact JSON object per line; returns the number of lines."""
    count = 0
    with atomic_writer(path) as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
            count += 1
    return count


def write_problems(path: PathLike, problems: Iterable[Problem]) -> int:
    """Atomically write problems (streamed) in the data-contract layout; returns the count."""
    return write_json_lines(path, (problem_to_dict(p) for p in problems))


def write_json(path: PathLike, obj: Any, indent: int | None = 1) -> None:
    """Atomically write one JSON document (scores, metrics)."""
    with atomic_writer(path) as handle:
        json.dump(obj, handle, ensure_ascii=False, indent=indent)
        handle.write("\n")
