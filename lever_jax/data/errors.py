"""The user-error type: a mistake in what the user gave (a path, a flag, a config, a file's content).

Every layer raises :class:`UserError` (or a subclass, e.g. ``lever_jax.data.jsonl.DataFileError``)
for such mistakes, with a message that names what and where in one line; the ``lever-jax``
dispatcher prints it and exits 2, without a traceback. Anything else is a runtime failure (exit 1).
Ground floor: imports nothing of ours.
"""
from __future__ import annotations


class UserError(ValueError):
    """A user mistake; ``str(err)`` is the one line shown to the user."""
