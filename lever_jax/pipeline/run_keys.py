"""What `lever-jax run` derives from its RunConfig (lever_jax.pipeline.run) to name things: the keys
of shareable directories (fold checkpoints), so that a changed setting never resumes a stale fold,
the pools' names in reports, and the run's log line."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:  # defined with the run: gin's operative config (DIR/config.gin) names its module
    from lever_jax.pipeline.run import RunConfig


def log(msg: str) -> None:
    """One timestamped progress line on stderr (the run's log; stdout carries the summary only)."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def sha(obj: Any) -> str:
    """16 hex digits naming a settings document (sorted keys)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def input_key(cfg: RunConfig) -> Optional[dict[str, Any]]:
    """The user's input file as a key (path, size, mtime): an edited file never resumes a fold."""
    if cfg.input is None:
        return None
    st = Path(cfg.input).stat()
    return {"path": str(Path(cfg.input).resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def options_key(cfg: RunConfig, gold_rows: int = 0) -> dict[str, Any]:
    """The training-data options, only when set (so existing fold directories keep their names);
    ``gold_rows``: the gold programs added to training (RunConfig.add_gold), when there are any."""
    out: dict[str, Any] = {k: getattr(cfg, k) for k in ("train_problems", "train_pool") if getattr(cfg, k) is not None}
    if gold_rows:
        out["gold_rows"] = gold_rows
    if cfg.train_input is not None:
        out["train_input"] = input_key(dataclasses.replace(cfg, input=cfg.train_input))
    if cfg.protocol != "crossfit":
        out["protocol"] = cfg.protocol
    if cfg.train_pool is not None and cfg.train_pool_mode != "replace":
        out["train_pool_mode"] = cfg.train_pool_mode
    return out


def fold_key(cfg: RunConfig, gold_rows: int = 0) -> dict[str, Any]:
    """What a fold's problems and rows depend on (part of every fold directory's name)."""
    return {"folds": cfg.num_folds, "fold_seed": cfg.fold_seed, "dev_fraction": cfg.dev_fraction,
            "max_problems": cfg.max_problems, "pool": cfg.pool, "execute": cfg.execute, "input": input_key(cfg),
            **options_key(cfg, gold_rows)}


def folds_root(cfg: RunConfig, out: Path) -> Path:
    """Where fold directories go: ``RunConfig.folds_dir`` or DIR/folds."""
    return Path(cfg.folds_dir or out / "folds")


def pool_name(cfg: RunConfig) -> str:
    """The evaluated pool's name in reports: the bundled pool or the input file's name."""
    return cfg.pool if cfg.input is None else Path(cfg.input).name


def train_name(cfg: RunConfig) -> Optional[str]:
    """The training pool's name in reports (None: the evaluated pool's own problems)."""
    return cfg.train_pool if cfg.train_input is None else f"RunConfig.train_input {cfg.train_input}"
