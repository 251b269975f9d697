"""Sampling candidate pools from a code LLM (``lever-jax sample``): the first step of LEVER.

Data flows prompts -> :mod:`backends` (llama.cpp in-process, or any OpenAI-compatible server) ->
:mod:`journal` (a per-problem, append-only record of raw completions, so a killed run resumes) ->
:mod:`pool` (completions -> data-contract candidates: stops, log-probs, duplicates merged, the
temperature-0 decode as the problem's ``greedy``) -> a samples file that ``lever-jax execute`` reads.

Nothing here imports JAX; the llama.cpp runtime (``xllamacpp``, extra ``sample``) is imported only
when the in-process backend is built.
"""
