"""The user-error type every ``lever-jax`` command raises for a mistake the user can fix.

A :class:`UserError` (bad path, a directory instead of a file, an empty file, a bad flag value, an
unknown task or split, a gin mistake) is printed by the dispatcher (``lever_jax.cli.main``) as one
line, ``lever-jax: error: WHERE: message``, and exits with :data:`EXIT_USER_ERROR` (2), no
traceback. Anything else is a runtime failure: one line, exit :data:`EXIT_RUNTIME_ERROR` (1), the
traceback only with ``lever-jax --debug`` or ``LEVER_JAX_DEBUG=1``.

This module imports nothing from lever_jax, so every layer (data, training, rerank, cli) may raise
it. ``lever_jax.data.jsonl.DataFileError`` is mapped to it by the dispatcher.
"""
from __future__ import annotations

EXIT_OK = 0
EXIT_RUNTIME_ERROR = 1
EXIT_USER_ERROR = 2


class UserError(Exception):
    """A mistake in the user's input.

    ``where``: ``FILE``, ``FILE:LINE``, ``--flag`` or ``FILE:LINE: FIELD``."""

    def __init__(self, message: str, where: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


def one_line(text: str) -> str:
    """``text`` on one line: its non-blank lines, stripped, joined by ' | '."""
    return " | ".join(line.strip() for line in str(text).splitlines() if line.strip())

