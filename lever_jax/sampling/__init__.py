"""Sampling candidate pools from a code LLM (``lever-jax sample``): the first step of LEVER.

Data flows prompts -> :mod:`backends` (llama.cpp in-process, or any OpenAI-compatible server) ->
:mod:`journal` (a per-problem, append-only record of raw completions, so a killed run resumes) ->
:mod:`pool` (completions -> data-contract candidates: stops, log-probs, duplicates merged, the
temperature-0 decode as the problem's ``greedy``) -> a samples file that ``lever-jax execute`` reads.

Nothing here imports JAX; the llama.cpp runtime (``xllamacpp``, extra ``sample``) is imported only
when the in-process backend is built.

Public API: the names in ``__all__``, imported on first use (PEP 562, ``lever_jax._exports``):
importing the package imports none of its modules. The rest is internal.
"""
from lever_jax._exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "SampleSettings": "settings:SampleSettings", "LEVER_TEMPERATURE": "settings:LEVER_TEMPERATURE",
    "DEFAULT_SAMPLES": "settings:DEFAULT_SAMPLES", "Journal": "journal:Journal",
    "Sampler": "pool:Sampler", "PromptRecord": "pool:PromptRecord", "summary": "pool:summary",
    "Backend": "backends:Backend", "LlamaCppBackend": "backends:LlamaCppBackend",
    "ServerBackend": "backends:ServerBackend", "SamplingError": "backends:SamplingError",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
