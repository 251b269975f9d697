"""SeqIO wrappers over the verifier tokenizers (imports seqio + TensorFlow; the pure layer is
:mod:`lever_jax.inputs.tokenizers`).

- ``byte`` -> ``seqio.ByteVocabulary()``; ``spm`` -> ``seqio.SentencePieceVocabulary`` over the
  bundled model (tf_text ops); ``minilm`` -> :class:`TokenizerVocabulary`, a ``seqio.Vocabulary``
  whose TF ops call the HF ``tokenizers`` tokenizer through ``tf.py_function`` (works inside
  ``tf.data`` graphs in-process; not serialisable into a SavedModel).

:func:`seqio_vocabulary` with no name uses the gin-chosen ``get_vocabulary.name``. The ids equal the
pure tokenizer's ids (tests/test_vocabularies.py checks it).
"""
from __future__ import annotations

import functools
from typing import Sequence

import numpy as np
import seqio
import tensorflow as tf

from lever_jax.data.bundled import bundled_path
from lever_jax.inputs.tokenizers import SPM_MODEL, TextTokenizer, get_vocabulary


class TokenizerVocabulary(seqio.Vocabulary):
    """A ``seqio.Vocabulary`` over any pure :class:`TextTokenizer` (TF ops via ``tf.py_function``)."""

    def __init__(self, tokenizer: TextTokenizer):
        self.tokenizer = tokenizer
        super().__init__(extra_ids=0)

    @property
    def bos_id(self) -> int | None:
        return self.tokenizer.bos_id

    @property
    def eos_id(self) -> int | None:
        return self.tokenizer.eos_id

    @property
    def pad_id(self) -> int:
        return self.tokenizer.pad_id

    @property
    def unk_id(self) -> int | None:
        return self.tokenizer.unk_id

    @property
    def _base_vocab_size(self) -> int:
        return self.tokenizer.vocab_size

    def _encode(self, s: str) -> Sequence[int]:
        return self.tokenizer.encode(s)

    def _decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(ids)

    def _encode_tf(self, s: tf.Tensor) -> tf.Tensor:
        def encode(x: tf.Tensor) -> np.ndarray:
            return np.asarray(self.tokenizer.encode(x.numpy().decode("utf-8")), np.int32)

        if s.shape.rank != 0:
            raise ValueError(f"{type(self).__name__}.encode_tf takes a scalar string, got shape {s.shape}")
        ids = tf.py_function(encode, [s], tf.int32)
        ids.set_shape([None])
        return ids

    def _decode_tf(self, ids: tf.Tensor) -> tf.Tensor:
        def decode_one(x: tf.Tensor) -> bytes:
            return self.tokenizer.decode(x.numpy().tolist()).encode("utf-8")

        if ids.shape.rank == 1:
            out = tf.py_function(decode_one, [ids], tf.string)
            out.set_shape([])
            return out
        return tf.map_fn(self._decode_tf, ids, fn_output_signature=tf.string)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TokenizerVocabulary) and other.tokenizer is self.tokenizer

    def __hash__(self) -> int:
        return id(self.tokenizer)


@functools.lru_cache(maxsize=None)
def _build(name: str) -> seqio.Vocabulary:
    if name == "byte":
        return seqio.ByteVocabulary()
    if name == "spm":
        return seqio.SentencePieceVocabulary(str(bundled_path(*SPM_MODEL, must_exist=True)))
    if name.startswith("spm:"):
        return seqio.SentencePieceVocabulary(name[4:])
    return TokenizerVocabulary(get_vocabulary(name))


def seqio_vocabulary(name: str | None = None) -> seqio.Vocabulary:
    """The seqio vocabulary called ``name`` (default: the gin binding of ``get_vocabulary.name``)."""
    return _build(name if name is not None else get_vocabulary().spec)


class GinVocabulary(seqio.Vocabulary):
    """Delegates to the gin-chosen vocabulary (``get_vocabulary.name``), resolved at every call.

    Lets tasks be registered once, at import time (before gin bindings are parsed), and still use
    whatever vocabulary the run's gin config selects.
    """

    def __init__(self) -> None:
        super().__init__(extra_ids=0)

    @property
    def target(self) -> seqio.Vocabulary:
        return seqio_vocabulary()

    @property
    def bos_id(self) -> int | None:
        return get_vocabulary().bos_id

    @property
    def eos_id(self) -> int | None:
        return self.target.eos_id

    @property
    def pad_id(self) -> int:
        return self.target.pad_id

    @property
    def unk_id(self) -> int | None:
        return self.target.unk_id

    @property
    def _base_vocab_size(self) -> int:
        return self.target.vocab_size

    def encode(self, s):  # type: ignore[override]
        return self.target.encode(s)

    def decode(self, ids):  # type: ignore[override]
        return self.target.decode(ids)

    def encode_tf(self, s: tf.Tensor) -> tf.Tensor:
        return self.target.encode_tf(s)

    def decode_tf(self, ids: tf.Tensor) -> tf.Tensor:
        return self.target.decode_tf(ids)

    _encode = encode
    _decode = decode
    _encode_tf = encode_tf
    _decode_tf = decode_tf

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GinVocabulary)

    def __hash__(self) -> int:
        return hash(GinVocabulary)
