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
import tempfile
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, TypeVar

from lever_jax.data import paths
from lever_jax.data.schema import Problem, SchemaError, problem_from_dict, problem_to_dict

PathLike = str | os.PathLike
T = TypeVar("T")


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


class DataFileError(ValueError):
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
            except (OSError, EOFError) as err:  # truncated or non-gzip data
                raise DataFileError(path, lineno + 1, None, f"unreadable: {type(err).__name__}: {err}") from None
            lineno += 1
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise DataFileError(path, lineno, None, f"invalid UTF-8 at byte {err.start}") from None
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as err:
                raise DataFileError(path, lineno, None, f"invalid JSON: {err.msg} (column {err.colno})") from None


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
