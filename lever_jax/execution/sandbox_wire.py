"""The sandbox's wire format: length-prefixed JSON messages between the Sandbox, its workers and
their zygotes, and the bound on what a task's result may decode to."""
from __future__ import annotations

import json
import os
import re
import struct
from typing import Any

HEADER = struct.Struct(">I")
MAX_RESULT_BYTES = 64 * 1024 * 1024
# Values (containers and their elements) a result may decode to: the zygote, the worker and the
# parent each decode it, and 64 MiB of "{}," is 21 million dicts, 1.5 GiB and ~6 s per decode.
MAX_RESULT_VALUES = 2_000_000
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


def read_exact(fd: int, size: int) -> bytes | None:
    chunks, remaining = [], size
    while remaining:
        data = os.read(fd, remaining)
        if not data:
            return None
        chunks.append(data)
        remaining -= len(data)
    return b"".join(chunks)


def read_message(fd: int) -> dict[str, Any] | None:
    header = read_exact(fd, HEADER.size)
    if header is None:
        return None
    body = read_exact(fd, HEADER.unpack(header)[0])
    return None if body is None else json.loads(body)


def encode_message(obj: Any) -> bytes:
    body = json.dumps(obj, separators=(",", ":")).encode("ascii")  # ASCII: lone surrogates survive
    return HEADER.pack(len(body)) + body


def json_values(text: bytes) -> int:
    """An upper bound on the number of values ``text`` decodes to (each comma, colon, bracket or
    brace makes at most one), counted at C speed without decoding. Strings are skipped -- by a
    regex, only when the plain count is over MAX_RESULT_VALUES: ordinary results cost one pass."""
    def count(data: bytes) -> int:
        return sum(data.count(c) for c in (b",", b":", b"[", b"{")) + 1

    plain = count(text)
    return plain if plain <= MAX_RESULT_VALUES else count(_JSON_STRING.sub(b'""', text))


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
