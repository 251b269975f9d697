"""Sandboxed, parallel, cached execution of generated Python and SQL.

Public API: the names in ``__all__``, imported on first use (PEP 562, ``lever_jax._exports``):
importing the package imports none of its modules. The rest is internal.
"""
from lever_jax._exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "Sandbox": "sandbox:Sandbox", "SandboxError": "sandbox:SandboxError",
    "get_executor": "registry:get_executor", "execute_problems": "runner:execute_problems",
    "RunStats": "runner:RunStats", "Limits": "base:Limits", "Task": "base:Task",
    "SandboxResult": "base:SandboxResult", "DatasetExecutor": "base:DatasetExecutor",
    "ExecutionCache": "cache:ExecutionCache", "default_cache_dir": "cache:default_cache_dir",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
