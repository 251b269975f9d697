"""What a sampling run asks the model for, and the key that makes its journal resumable."""
from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any, Mapping, Sequence

# Codex sampled at temperature 0.6 in LEVER (../docs/data_format.md, "Sampling").
LEVER_TEMPERATURE = 0.6
DEFAULT_SAMPLES = 5
# Per-dataset caps on generated tokens, from the gold programs' lengths under the Qwen2.5 tokenizer
# (measured: MBPP's 874 golds median 44, 99th percentile 211, longest 432 tokens; Spider's train+dev
# golds median 27, 99th percentile 121, longest 277; WikiTQ as Spider; GSM8k has no gold programs:
# PoT-style programs are ~150 tokens); see docs/sampling.md.
DEFAULT_MAX_TOKENS: Mapping[str, int] = {
    "gsm8k": 320, "mbpp": 320, "humaneval": 384, "spider": 160, "wikitq": 160,
}
JOURNAL_FORMAT = "lever-jax/sample-journal/v1"


@dataclasses.dataclass(frozen=True)
class SampleSettings:
    """Decoding settings of one run; every field is part of the journal key."""

    n: int = DEFAULT_SAMPLES
    temperature: float = LEVER_TEMPERATURE
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int = 0
    greedy: bool = True  # also decode at temperature 0 (the problem's ``greedy``)
    # The n samples as one request with n choices: the prompt is prefilled once and its KV cache
    # shared (llama.cpp, vLLM), instead of n requests with seeds of their own that each prefill it
    # (or its uncached tail) in their own slot. Faster for long prompts; never bit-reproducible.
    shared_prefill: bool = False

    def __post_init__(self) -> None:
        if self.n < 0 or (self.n == 0 and not self.greedy):
            raise ValueError("n must be >= 1 (or 0 with the greedy decode)")
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0 for samples, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")

    def as_dict(self) -> dict[str, Any]:
        """The fields of the journal key (``shared_prefill`` only when on, so that journals written
        before the option existed keep their keys)."""
        fields = dataclasses.asdict(self)
        if not self.shared_prefill:
            fields.pop("shared_prefill")
        return fields


def sample_seed(seed: int, problem_id: str, index: int) -> int:
    """The seed of sample ``index`` of ``problem_id``: fixed by the run's seed alone, so a resumed
    or re-ordered run asks for the same samples (31 bits: llama.cpp and vLLM take signed ints)."""
    digest = hashlib.sha256(f"{seed}/{problem_id}/{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def journal_key(model_id: str, prompt: str, stop: Sequence[str], settings: SampleSettings) -> str:
    """Digest of everything that decides a problem's completions: the model (file digest or server
    model), the prompt, the stops and the settings. A journal entry is reused only on equal keys."""
    blob = json.dumps({"format": JOURNAL_FORMAT, "model": model_id, "prompt": prompt, "stop": list(stop),
                       "settings": settings.as_dict()}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
