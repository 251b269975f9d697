"""Reranking: the jitted scorer (jax + numpy only), selection methods, statistics, reports, plots.

This package's __init__ imports nothing eagerly, so `lever_jax.rerank.scoring` stays importable
with jax + numpy alone.

Public API: the names in ``__all__``, imported on first use (PEP 562, ``lever_jax._exports``):
importing the package imports none of its modules. The rest is internal.
"""
from lever_jax._exports import lazy_exports

_EXPORTS: dict[str, str] = {
    # the jitted scorer (jax + numpy only)
    "rerank": "scoring:rerank", "rerank_voting": "scoring:rerank_voting",
    "RerankOutput": "scoring:RerankOutput",
    "rerank_reference": "scoring:rerank_reference", "normalize_gen_logprob": "scoring:normalize_gen_logprob",
    "frequency_logprob": "scoring:frequency_logprob", "dense_group_ids": "scoring:dense_group_ids",
    # every selection method on a CandidateArrays (lever_jax.data), as one table
    "method_table": "table:method_table", "MethodResult": "table:MethodResult",
    "format_table": "table:format_table",
    "metrics_json": "table:metrics_json", "per_problem": "table:per_problem",
    "accuracy_curves": "table:accuracy_curves",
    "lever_metrics": "table:lever_metrics", "METHOD_LABELS": "report:METHOD_LABELS",
    # statistics
    "accuracy": "statistics:accuracy", "bootstrap_ci": "statistics:bootstrap_ci",
    "BootstrapCI": "statistics:BootstrapCI",
    "accuracy_at_k": "statistics:accuracy_at_k", "binary_accuracy": "statistics:binary_accuracy",
    # verifier scores files (`lever-jax eval` writes them)
    "load_scores": "scores_file:load_scores", "read_verifier_scores": "scores_file:read_verifier_scores",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
