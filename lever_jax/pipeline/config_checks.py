"""`lever-jax run`'s up-front check of its whole ``RunConfig``, before anything is executed or trained.

Each bad field is one :class:`~lever_jax.data.errors.UserError` naming ``RunConfig.<field>``, the
value and what is allowed (``execution_workers = 0`` used to start one sandbox worker per core; a
``dev_fraction`` of 1.5 failed only after execution and feature extraction).
"""
from __future__ import annotations

import numbers
from pathlib import Path
from typing import TYPE_CHECKING, Any, Collection, Optional

from lever_jax.data.errors import UserError
from lever_jax.data.jsonl import has_content
from lever_jax.pipeline.protocol import check_protocol
from lever_jax.pipeline.training_data import TRAIN_POOL_MODES

if TYPE_CHECKING:  # run.py defines it and imports this module
    from lever_jax.pipeline.run import RunConfig


def _fail(field: str, value: Any, expected: str) -> UserError:
    return UserError(f"RunConfig.{field}: expected {expected}, got {value!r}")


def _int(cfg: RunConfig, field: str, minimum: int, optional: bool = False) -> None:
    value = getattr(cfg, field)
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise _fail(field, value, f"an integer >= {minimum}" + (" or None" if optional else ""))


def _one_of(cfg: RunConfig, field: str, allowed: Collection[Any], optional: bool = False) -> None:
    value = getattr(cfg, field)
    if (value is None and optional) or (isinstance(value, str) and value in allowed):
        return
    raise _fail(field, value, "one of " + ", ".join(map(str, allowed)) + (" or None" if optional else ""))


def _number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _input_file(cfg: RunConfig, field: str) -> None:
    value = getattr(cfg, field)
    if not isinstance(value, str):
        raise _fail(field, value, "a file path")
    path = Path(value)
    if not path.is_file():
        raise UserError(f"RunConfig.{field}: {path}: " + ("is a directory" if path.is_dir() else "no such file"))
    if not has_content(path):
        raise UserError(f"RunConfig.{field}: {path}: no problems (the file is empty or holds only blank lines)")


def check_run_config(cfg: RunConfig, pools: Collection[str], ablations: Collection[str],
                     verifiers: Collection[str]) -> None:
    """UserError naming the first field of ``cfg`` (a RunConfig) that no run could use."""
    if cfg.input is None:
        _one_of(cfg, "pool", pools)
    else:
        _input_file(cfg, "input")
    if cfg.train_input is not None:
        _input_file(cfg, "train_input")
    _int(cfg, "max_problems", 1, optional=True)
    _int(cfg, "num_folds", 2)
    _int(cfg, "fold_seed", 0)
    if not _number(cfg.dev_fraction) or not 0.0 <= cfg.dev_fraction < 1.0:
        raise _fail("dev_fraction", cfg.dev_fraction, "a number in [0, 1)")
    _one_of(cfg, "ablation", ablations)
    _one_of(cfg, "verifier", verifiers)
    for field in ("execute", "progress"):
        if not isinstance(getattr(cfg, field), bool):
            raise _fail(field, getattr(cfg, field), "True or False")
    _int(cfg, "execution_workers", 1, optional=True)
    timeout: Optional[Any] = cfg.execution_timeout_s
    if timeout is not None and (not _number(timeout) or not timeout > 0):
        raise _fail("execution_timeout_s", timeout, "a number of seconds > 0 or None")
    _int(cfg, "bootstrap", 1)
    _int(cfg, "train_problems", 1, optional=True)
    _one_of(cfg, "train_pool", pools, optional=True)
    _one_of(cfg, "train_pool_mode", TRAIN_POOL_MODES)
    if cfg.train_pool is None and cfg.train_input is None and cfg.train_pool_mode != "replace":
        raise UserError(f"RunConfig.train_pool_mode = {cfg.train_pool_mode!r} needs RunConfig.train_pool "
                        f"(the pool whose samples to add)")
    check_protocol(cfg.protocol, cfg.train_pool, cfg.train_input, cfg.train_pool_mode)
    for field in ("execution_cache_dir", "features_dir", "executed_dir", "folds_dir"):
        if getattr(cfg, field) is not None and not isinstance(getattr(cfg, field), str):
            raise _fail(field, getattr(cfg, field), "a directory path or None")
