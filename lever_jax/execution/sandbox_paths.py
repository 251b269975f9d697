"""What a sandboxed task sees of the host's files (the mount view shows only these paths).

The view (``isolation.build_view``) shows the system directories, the interpreter (its prefixes,
standard library and site directories), this package and the sandbox's read-only inputs -- never
the directory lever-jax was started from, nor any other ``sys.path`` entry (a user's project on
``PYTHONPATH``).
"""
from __future__ import annotations

import os
import site
import sys
import sysconfig


def package_dir() -> str:
    """This package's directory (``.../lever_jax``), spelled as it was imported."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def interpreter_paths() -> list[str]:
    """The interpreter's own directories, spelled as this process knows them: its prefixes, the
    standard library and the site directories (the user's site only when it is on ``sys.path``).
    Never "/" (showing it would show everything)."""
    paths = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]
    paths += [sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")]
    paths += site.getsitepackages()
    user = site.getusersitepackages()
    if user in sys.path:
        paths.append(user)
    return [p for p in dict.fromkeys(paths)
            if p and os.path.isabs(p) and os.path.isdir(p) and os.path.realpath(p) != "/"]


def code_paths() -> list[str]:
    """What a task needs to run: the interpreter's directories and this package."""
    return [*interpreter_paths(), package_dir()]
