"""The fine-tuned verifier's frozen half (lever_jax.pipeline.finetune, step 1): the pretrained
all-MiniLM-L6-v2's bottom ``FinetuneConfig.frozen_layers`` layers encode every distinct question,
program (comments stripped, tail kept) and execution result once, as separate segments
(``[CLS] ... [SEP]`` each, own positions), in length-bucketed batches
(lever_jax.inputs.packing.bucket). The hidden states (float16, ragged) are cached in chunks under
DIR/finetune_cache/ and shared by every fold and run; an interrupted encoding resumes from the
last chunk written.
"""
from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import jax
import numpy as np
from flax import linen as nn

from lever_jax.data.paths import staged
from lever_jax.data.progress import progress_bar
from lever_jax.data.schema import Problem
from lever_jax.inputs.packing import bucket
from lever_jax.inputs.serialize import render_schema, schema_of
from lever_jax.models.configs import encoder_config
from lever_jax.models.encoder import EncoderClassifier
from lever_jax.pipeline.encoder_features import encoder_program_text, result_text, segment_tokens

if TYPE_CHECKING:
    from lever_jax.pipeline.finetune import FinetuneConfig

PARTS = ("question", "program", "result")


@dataclasses.dataclass(frozen=True)
class RaggedStates:
    """Hidden states of many sequences, concatenated: sequence i is data[start[i]:start[i+1]]."""

    data: np.ndarray  # float16 [total_tokens, H]
    start: np.ndarray  # int64 [n + 1]

    def __getitem__(self, i: int) -> np.ndarray:
        return self.data[self.start[i]:self.start[i + 1]]

    def length(self, i: int) -> int:
        return int(self.start[i + 1] - self.start[i])


class LowerEncoder:
    """The pretrained MiniLM's bottom `layers` layers, jitted: tokens -> hidden states."""

    def __init__(self, layers: int) -> None:
        from lever_jax.models import hf_import
        from lever_jax.inputs.tokenizers import get_vocabulary

        self.tokenizer = get_vocabulary("minilm")
        cfg = encoder_config("minilm", num_layers=layers, dropout_rate=0.0)
        module = EncoderClassifier(cfg)
        init = nn.unbox(module.init(jax.random.PRNGKey(0), np.ones((1, 8), np.int32))["params"])
        _, loaded = hf_import.load_minilm()
        loaded = {k: v for k, v in loaded.items()
                  if not k.startswith("layers_") or int(k.split("_")[1]) < layers}
        self.params = jax.device_put(hf_import.merge_params(init, loaded))
        self._encode = jax.jit(lambda p, t: module.apply({"params": p}, t, None, t != 0, True,
                                                         method=EncoderClassifier.encode))

    def encode(self, texts: Sequence[str], max_len: int, keep: str, batch_size: int,
               progress=None) -> RaggedStates:
        tok = self.tokenizer
        seqs = [segment_tokens(ids, max_len, keep, tok.bos_id, tok.eos_id)
                for ids in tok.encode_batch(texts)]
        lengths = np.array([len(s) for s in seqs], np.int64)
        start = np.concatenate([[0], np.cumsum(lengths)])
        data = np.zeros((int(start[-1]), 384), np.float16)
        for idx, width in bucket(lengths, batch_size, multiple=16):
            batch = np.zeros((batch_size, width), np.int32)  # fixed rows: one compile per width
            for r, i in enumerate(idx):
                batch[r, :lengths[i]] = seqs[i]
            states = np.asarray(self._encode(self.params, batch))
            for r, i in enumerate(idx):
                data[start[i]:start[i + 1]] = states[r, :lengths[i]]
            if progress is not None:
                progress.update(len(idx))
        return RaggedStates(data, start)


CACHE_CHUNK = 2048  # texts per cache file: an interrupted encoding resumes from the last chunk


def _concat(parts: Sequence[RaggedStates]) -> RaggedStates:
    starts, offset = [np.zeros(1, np.int64)], 0
    for p in parts:
        starts.append(p.start[1:] + offset)
        offset += int(p.start[-1])
    return RaggedStates(np.concatenate([p.data for p in parts]) if parts else np.zeros((0, 384), np.float16),
                        np.concatenate(starts))


def cached_states(config: FinetuneConfig, part: str, texts: Sequence[str], max_len: int, keep: str,
                  cache_dir: Path, encoder: Callable[[], LowerEncoder], progress: bool) -> RaggedStates:
    """States of the distinct `texts`: one cache file per chunk of CACHE_CHUNK texts, keyed by the
    config and the chunk's texts (written atomically; a re-run encodes only missing chunks)."""
    chunks = [texts[i:i + CACHE_CHUNK] for i in range(0, len(texts), CACHE_CHUNK)]
    paths = []
    for chunk in chunks:
        h = hashlib.sha256(config.cache_key(part, max_len, keep).encode())
        for t in chunk:
            h.update(t.encode("utf-8", "surrogatepass") + b"\x00")
        paths.append(Path(cache_dir) / f"{part}-{h.hexdigest()[:20]}.npz")
    missing = [i for i, p in enumerate(paths) if not p.exists()]
    bar = progress_bar(sum(len(chunks[i]) for i in missing), desc=f"encode {part} ({config.frozen_layers} layers)",
                       unit="text", disable=not progress or not missing, smoothing=0.1)
    for i in missing:
        states = encoder().encode(chunks[i], max_len, keep, config.encode_batch_size, bar)
        with staged(paths[i]) as tmp, open(tmp, "wb") as handle:
            np.savez(handle, data=states.data, start=states.start)
    bar.close()
    loaded = []
    for path in paths:
        with np.load(path) as z:
            loaded.append(RaggedStates(z["data"], z["start"]))
    return _concat(loaded)


def question_text(problem: Problem, with_schema: bool = False) -> str:
    """The question segment: the question, then (``with_schema``) the database schema's
    ``table(columns)`` lines when the problem has one."""
    schema = schema_of(problem) if with_schema else None
    return f"{problem.question}\n{render_schema(schema)}" if schema else problem.question


@dataclasses.dataclass(frozen=True)
class PoolStates:
    """Cached states of a pool: question of problem b, program/result of candidate (b, n)."""

    question: RaggedStates  # one per problem
    program: RaggedStates  # one per distinct program text
    result: RaggedStates  # one per distinct result text
    program_index: np.ndarray  # int64 [B, N] (-1 = no candidate)
    result_index: np.ndarray  # int64 [B, N]


def pool_states(problems: Sequence[Problem], width: int, config: FinetuneConfig, cache_dir: Path,
                progress: bool = True) -> PoolStates:
    """Encode (or load) the frozen-layer states of every question, program and result."""
    holder: list[LowerEncoder] = []

    def encoder() -> LowerEncoder:
        if not holder:
            holder.append(LowerEncoder(config.frozen_layers))
        return holder[0]

    index = {part: np.full((len(problems), width), -1, np.int64) for part in PARTS[1:]}
    texts: dict[str, dict[str, int]] = {part: {} for part in PARTS[1:]}
    for b, p in enumerate(problems):
        for n, c in enumerate(p.candidates[:width]):
            for part, text in (("program", encoder_program_text(p, c, config.strip_comments)),
                               ("result", result_text(c))):
                index[part][b, n] = texts[part].setdefault(text, len(texts[part]))
    q = cached_states(config, "question", [question_text(p, config.schema_in_question) for p in problems],
                      config.question_len, "head", cache_dir, encoder, progress)
    r = cached_states(config, "result", list(texts["result"]), config.result_len, "tail", cache_dir,
                      encoder, progress)
    pr = cached_states(config, "program", list(texts["program"]), config.program_len, "tail", cache_dir,
                       encoder, progress)
    return PoolStates(q, pr, r, index["program"], index["result"])
