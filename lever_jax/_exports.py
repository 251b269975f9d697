"""Lazy public names for the subpackages (PEP 562), shared by every ``lever_jax/<pkg>/__init__.py``.

A subpackage lists its public API as ``{name: "module:attribute"}`` with ``module`` one of its OWN
submodules, so ``import lever_jax.rerank`` stays as light as an empty ``__init__`` (the jitted
scorer keeps importing with jax + numpy alone; ``lever_jax.data`` never pulls in TensorFlow) and
the lazy names cannot cross the import-hygiene rules. A name is imported on first use and cached.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping


def lazy_exports(package: str,
                 exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` serving ``exports``
    (name -> "submodule:attribute")."""
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        target = exports.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = target.partition(":")
        value = getattr(importlib.import_module(f"{package}.{module}"), attribute)
        namespace[name] = value  # later look-ups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
