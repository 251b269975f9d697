"""lever-jax: LEVER (Ni et al., ICML 2023) verifier reranking for code LLMs, in JAX/Flax.

Import submodules directly (``lever_jax.rerank.scoring`` imports jax + numpy only)."""

__version__ = "0.1.0"
