"""The README's "Calling the reranker from JAX" snippet runs verbatim (jit, vmap, grad from user code)."""
from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _snippet() -> str:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- readme-jax-example:start -->\s*```python\n(.*?)```\s*<!-- readme-jax-example:end -->",
                      text, re.S)
    assert block, "README lost its JAX example markers"
    return block.group(1)


def test_readme_jax_snippet_runs(capsys):
    namespace: dict = {}
    exec(compile(_snippet(), str(README), "exec"), namespace)  # noqa: S102 (our own README)
    assert namespace["out"].choice.tolist() == [1, 0]
    assert "[1 0]" in capsys.readouterr().out
