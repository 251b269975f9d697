"""Reranking: the jitted scorer (jax + numpy only), selection methods, statistics, reports, plots.

This package's __init__ imports nothing, so `lever_jax.rerank.scoring` stays importable with jax + numpy alone.
"""
