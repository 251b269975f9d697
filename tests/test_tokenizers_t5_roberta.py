"""T5 SentencePiece (local model) and RoBERTa byte-level BPE (local HF dir), with tiny models built here."""
from __future__ import annotations

import numpy as np
import pytest

from lever_jax.inputs.batching import ProblemBatcher, ProblemExamples, encode_example, frame_ids
from lever_jax.inputs.tokenizers import ByteLevelBPETokenizer, T5SentencePieceTokenizer, _construct

CORPUS = ["yes", "no", "-- question: how many singers?", "select count(*) from singer", "answer = 48 + 24",
          "# return: (int)=3", "def add(a, b): return a + b", "the quick brown fox jumps over the lazy dog"] * 20


@pytest.fixture(scope="module")
def t5_dir(tmp_path_factory):
    import sentencepiece as spm

    d = tmp_path_factory.mktemp("t5")
    spm.SentencePieceTrainer.train(sentence_iterator=iter(CORPUS), model_prefix=str(d / "spiece"), vocab_size=300,
                                   pad_id=0, eos_id=1, unk_id=2, bos_id=-1, byte_fallback=True,
                                   character_coverage=1.0, minloglevel=2)
    return d


@pytest.fixture(scope="module")
def roberta_dirs(tmp_path_factory):
    from tokenizers import ByteLevelBPETokenizer as HF

    trained = HF()
    trained.train_from_iterator(CORPUS, vocab_size=320, min_frequency=1,
                                special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    full = tmp_path_factory.mktemp("roberta_json")
    trained.save(str(full / "tokenizer.json"))
    files = tmp_path_factory.mktemp("roberta_files")
    trained.save_model(str(files))  # vocab.json + merges.txt (older HF checkpoints)
    return full, files


def test_t5_sentencepiece_from_a_local_path(t5_dir, monkeypatch):
    by_file = _construct(f"t5:{t5_dir / 'spiece.model'}")
    by_dir = _construct(f"t5:{t5_dir}")
    assert isinstance(by_file, T5SentencePieceTokenizer) and by_file.name == "t5"
    assert (by_file.pad_id, by_file.eos_id, by_file.unk_id, by_file.bos_id) == (0, 1, 2, None)
    assert by_file.vocab_size == 300 + 100  # the 100 sentinel ids after the pieces, as T5
    text = "select count(*) from singer | answer = 72"
    assert by_file.encode(text) == by_dir.encode(text) and by_file.decode(by_file.encode(text) + [1, 5]) == text
    assert by_file.decode([by_file.vocab_size - 1]) == ""  # a sentinel decodes to nothing
    assert by_file.yes_id == by_file.encode("yes")[0] and by_file.no_id == by_file.encode("no")[0]
    monkeypatch.setenv("LEVER_JAX_T5_SPM", str(t5_dir))
    assert _construct("t5").encode(text) == by_file.encode(text)
    monkeypatch.delenv("LEVER_JAX_T5_SPM")
    with pytest.raises(FileNotFoundError, match="LEVER_JAX_T5_SPM"):
        _construct("t5")
    with pytest.raises(FileNotFoundError, match="not found"):
        _construct(f"t5:{t5_dir / 'missing.model'}")


def test_roberta_byte_level_bpe_from_a_local_dir(roberta_dirs):
    full, files = roberta_dirs
    tok = _construct(f"roberta:{full}")
    old = _construct(f"roberta:{files}")
    assert isinstance(tok, ByteLevelBPETokenizer)
    assert (tok.bos_id, tok.pad_id, tok.eos_id, tok.unk_id, tok.mask_id) == (0, 1, 2, 3, 4)
    text = "Natalia sold 48 clips | answer = 48 + 24 | {'answer': '72'}"
    assert tok.encode(text) == old.encode(text) == _construct(f"roberta:{full / 'tokenizer.json'}").encode(text)
    assert tok.decode(tok.encode(text)) == text  # byte-level: exact round trip, unseen characters too
    assert tok.decode(tok.encode("é ☃")) == "é ☃" and 0 not in tok.encode(text)
    with pytest.raises(FileNotFoundError):
        ByteLevelBPETokenizer(full / "nothing_here")


def test_pipelines_pad_with_robertas_pad_id(roberta_dirs):
    tok = _construct(f"roberta:{roberta_dirs[0]}")
    ex = {"inputs": "answer = 72", "targets": "yes", "problem_index": 0, "candidate_index": 0, "result_id": 0,
          "correct": 1, "count": 1, "has_gen_logprob": 1, "num_tokens": 3, "gen_logprob": -1.0}
    feats = encode_example(ex, tok, 16, "right", model="encoder")
    ids = tok.encode("answer = 72")
    assert feats["input_tokens"].tolist() == [0] + ids + [2] + [1] * (16 - len(ids) - 2)
    with pytest.raises(ValueError, match="pad"):
        encode_example(ex, tok, 16, "right", model="encdec")
    framed = [frame_ids(tok.encode(t), 16, "right", tok.bos_id, tok.eos_id) for t in ("a b", "answer = 72")]
    problem = ProblemExamples.from_examples(0, [dict(ex, candidate_index=i) for i in range(2)], framed)
    batch = ProblemBatcher([problem], tok, 16, 1, 3).batch(0)
    assert (batch["input_tokens"][0, 2] == 1).all()  # the padding candidate row too
    assert batch["input_tokens"][0, 0, len(framed[0]):].tolist() == [1] * (16 - len(framed[0]))


@pytest.mark.slow  # a jitted tiny model: seconds on an idle machine, a minute at load 28
def test_tiny_random_roberta_masks_its_padding(roberta_dirs):
    import jax
    import jax.numpy as jnp

    from lever_jax.models.configs import encoder_config
    from lever_jax.models.encoder import EncoderClassifier

    tok = _construct(f"roberta:{roberta_dirs[0]}")
    cfg = encoder_config("tiny", vocab_size=tok.vocab_size, pad_token_id=tok.pad_id, position_ids_from_padding=True,
                         head_hidden=True, dropout_rate=0.0)
    model = EncoderClassifier(cfg)
    ids = frame_ids(tok.encode("answer = 48 + 24"), None, "right", tok.bos_id, tok.eos_id)
    short = np.full((1, 24), tok.pad_id, np.int32)
    long = np.full((1, 40), tok.pad_id, np.int32)
    short[0, : len(ids)] = ids
    long[0, : len(ids)] = ids
    params = jax.jit(model.init)(jax.random.PRNGKey(0), jnp.asarray(short))["params"]
    apply = jax.jit(lambda p, t: model.apply({"params": p}, t))
    a, b = np.asarray(apply(params, jnp.asarray(short))), np.asarray(apply(params, jnp.asarray(long)))
    np.testing.assert_allclose(a, b, atol=1e-5)  # pad id 1 is padding, id 0 (<s>) is a token
    assert a.shape == (1, 2)
