"""Bring-your-own-samples importers: convert other tools' outputs into lever-jax samples files.

- :mod:`.lever` — LEVER's released verification files
  (``{spider,wikitq,gsm8k,mbpp}_codex_verification_{train,dev,test}.jsonl``).
- :mod:`.completions` — OpenAI-style / vLLM completion responses with token log-probs.
- :mod:`.merge` — merging identical programs into one candidate with a count.

Formats and the exact field names assumed are documented in each module and in
docs/data_format.md ("Importing samples").
"""
