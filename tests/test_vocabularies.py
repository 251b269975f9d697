"""Offline vocabularies: pure tokenizers, and their seqio wrappers giving identical ids."""
from __future__ import annotations

import json

import gin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lever_jax.data.bundled import bundled_path
from lever_jax.inputs.tokenizers import SPM_MODEL, ByteTokenizer, get_vocabulary

TEXTS = [
    "Janet\u2019s ducks lay 16 eggs | eggs = 16 - 3\n    answer = eggs * 2 | {'eggs': 13, 'answer': 26}",
    "-- question: how many?|-- SQL:|select count(*) from singer|-- exec result:|/*| count(*)|        6|*/",
    "# description\nAdd.\n\n# program\ndef add(x, y):\n\treturn x + y\n\n# execution\n# return: (int)=5",
    "\u00e9 \u00fc \u4e2d\u6587 \U0001F600 tab\tend  ",
    "",
]
NAMES = ("byte", "spm", "minilm")


def test_byte_ids_are_byt5_style():
    tok = get_vocabulary("byte")
    assert isinstance(tok, ByteTokenizer)
    assert tok.encode("a\u00e9") == [ord("a") + 3, 0xC3 + 3, 0xA9 + 3]
    assert (tok.pad_id, tok.eos_id, tok.unk_id, tok.vocab_size) == (0, 1, 2, 259)
    assert tok.decode(tok.encode("ab") + [1] + tok.encode("zz")) == "ab"  # stops at EOS
    assert (tok.yes_id, tok.no_id) == (ord("y") + 3, ord("n") + 3)


@pytest.mark.parametrize("name", ["byte", "spm"])
@pytest.mark.parametrize("text", TEXTS)
def test_exact_round_trip(name, text):
    tok = get_vocabulary(name)
    assert tok.decode(tok.encode(text)) == text


@settings(max_examples=60)
@given(st.text(max_size=80))
def test_spm_round_trips_any_text(text):
    tok = get_vocabulary("spm")  # byte_fallback + identity normalisation: lossless
    assert tok.decode(tok.encode(text)) == text


def test_spm_model_is_bundled_with_provenance():
    stats = json.loads(bundled_path("vocab", "lever_spm_8k.json").read_text())
    tok = get_vocabulary("spm")
    assert tok.vocab_size == stats["options"]["vocab_size"] == 8000
    assert stats["options"]["byte_fallback"] is True
    assert (tok.pad_id, tok.eos_id, tok.unk_id, tok.bos_id) == (0, 1, 2, None)
    assert tok.encode("yes") == [tok.yes_id] and tok.encode("no") == [tok.no_id]  # one piece each
    assert bundled_path(*SPM_MODEL).exists() and bundled_path("vocab", "README.md").exists()


def test_minilm_wordpiece():
    tok = get_vocabulary("minilm")
    assert (tok.pad_id, tok.bos_id, tok.eos_id, tok.unk_id) == (0, 101, 102, 100)
    assert tok.vocab_size == 30522
    assert tok.encode("yes") == [tok.yes_id] == [2748] and tok.encode("no") == [tok.no_id] == [2053]
    ids = tok.encode("Hello World")
    assert 101 not in ids and 102 not in ids  # no special tokens from encode
    assert tok.decode([101] + ids + [102, 0, 0]) == "hello world"
    long = tok.encode("word " * 1000)
    assert len(long) == 1000  # the tokenizer.json truncation is switched off


def test_special_ids_distinct_and_unknown_name():
    for name in NAMES:
        tok = get_vocabulary(name)
        assert tok.yes_id != tok.no_id and tok.pad_id == 0
        assert len({tok.yes_id, tok.no_id, tok.pad_id, tok.eos_id}) == 4
    with pytest.raises(ValueError, match="unknown vocabulary"):
        get_vocabulary("nope")
    with pytest.raises(FileNotFoundError):
        get_vocabulary("spm:/does/not/exist.model")


def test_gin_chooses_the_vocabulary():
    with gin.unlock_config():
        gin.parse_config("get_vocabulary.name = 'minilm'")
    try:
        assert get_vocabulary().spec == "minilm"
    finally:
        gin.clear_config()
    assert get_vocabulary().spec == "byte"


# ---------------------------------------------------------------------------------------------
# seqio wrappers (TensorFlow): identical ids, in eager mode and inside a tf.data graph


@pytest.mark.parametrize("name", NAMES)
def test_seqio_vocabulary_ids_identical(name):
    tf = pytest.importorskip("tensorflow")
    from lever_jax.seqio.vocab import seqio_vocabulary

    tok, vocab = get_vocabulary(name), seqio_vocabulary(name)
    assert vocab.eos_id == tok.eos_id and vocab.pad_id == tok.pad_id and vocab.vocab_size == tok.vocab_size
    ds = tf.data.Dataset.from_tensor_slices(TEXTS).map(vocab.encode_tf)
    for text, graph_ids in zip(TEXTS, ds.as_numpy_iterator()):
        expected = tok.encode(text)
        assert list(vocab.encode(text)) == expected
        assert vocab.encode_tf(tf.constant(text)).numpy().tolist() == expected
        assert graph_ids.tolist() == expected
        framed = expected + [tok.eos_id, 0, 0]
        assert vocab.decode(framed) == tok.decode(framed)
        assert vocab.decode_tf(tf.constant(framed, tf.int32)).numpy().decode("utf-8") == tok.decode(framed)


def test_gin_vocabulary_follows_binding():
    pytest.importorskip("tensorflow")
    from lever_jax.seqio.vocab import GinVocabulary

    vocab = GinVocabulary()
    assert list(vocab.encode("yes")) == get_vocabulary("byte").encode("yes")
    with gin.unlock_config():
        gin.parse_config("get_vocabulary.name = 'spm'")
    try:
        assert list(vocab.encode("yes")) == [get_vocabulary("spm").yes_id]
        assert vocab.vocab_size == 8000
    finally:
        gin.clear_config()
