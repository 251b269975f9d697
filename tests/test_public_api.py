"""Each lever_jax subpackage states its public API in ``__all__`` (lazy, PEP 562): every name
resolves to the object of the module it names, and importing the package alone stays as light as
an empty ``__init__`` (no TensorFlow / SeqIO, and none of its own modules)."""
from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGES = ("data", "execution", "inputs", "models", "training", "rerank", "pipeline", "sampling")


@pytest.mark.parametrize("name", PACKAGES)
def test_every_public_name_resolves_to_its_module_attribute(name: str) -> None:
    package = importlib.import_module(f"lever_jax.{name}")
    assert package.__all__ and len(set(package.__all__)) == len(package.__all__)
    for public in package.__all__:
        module, _, attribute = package._EXPORTS[public].partition(":")
        assert "." not in module, f"{public}: a lazy name lives in the package's own modules"
        expected = getattr(importlib.import_module(f"lever_jax.{name}.{module}"), attribute)
        assert getattr(package, public) is expected, public
        assert public in dir(package)
    with pytest.raises(AttributeError, match="no_such_name"):
        getattr(package, "no_such_name")


@pytest.mark.parametrize("name", PACKAGES)
def test_a_public_name_never_shadows_a_submodule(name: str) -> None:
    """``import lever_jax.X.Y`` rebinds the package attribute Y to the submodule: a public name
    equal to a submodule's name would change meaning with import order."""
    package = importlib.import_module(f"lever_jax.{name}")
    submodules = {p.stem for p in Path(package.__file__).parent.iterdir()
                  if p.suffix == ".py" or (p / "__init__.py").is_file()}
    assert set(package.__all__) & submodules == set()


@pytest.mark.parametrize("name", PACKAGES)
def test_importing_a_package_imports_none_of_its_modules(name: str) -> None:
    code = (
        "import json, sys\n"
        f"import lever_jax.{name}\n"
        "heavy = ('tensorflow', 'seqio', 'torch', 'flax', 'jax', 'numpy')\n"
        "print(json.dumps(sorted(m for m in sys.modules\n"
        "                        if m.split('.')[0] in heavy or m.startswith('lever_jax'))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert loaded == sorted(["lever_jax", "lever_jax._exports", f"lever_jax.{name}"])


def test_a_public_name_imports_only_its_own_module() -> None:
    """``lever_jax.rerank.rerank`` (the jitted scorer) loads jax + numpy, not the data layer or flax."""
    code = (
        "import json, sys\n"
        "import lever_jax.rerank as r\n"
        "r.rerank, r.bootstrap_ci\n"
        "heavy = ('tensorflow', 'seqio', 'torch', 'flax')\n"
        "print(json.dumps(sorted(m for m in sys.modules\n"
        "                        if m.split('.')[0] in heavy or m.startswith('lever_jax.data'))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
