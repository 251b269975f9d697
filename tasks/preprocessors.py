"""SeqIO preprocessors of the verifier tasks (TF ops mirroring :mod:`lever_jax.inputs.batching`).

``vocab_name`` None means "the gin-chosen vocabulary" (``get_vocabulary.name``), resolved when the
dataset is built, so one registered task serves every vocabulary.
"""
from __future__ import annotations

from typing import Mapping

import tensorflow as tf

from lever_jax.seqio.vocab import seqio_vocabulary
from lever_jax.inputs.examples import EXAMPLE_FIELDS
from lever_jax.inputs.tokenizers import get_vocabulary

_TF_TYPES = {str: tf.string, int: tf.int32, float: tf.float32}
EXAMPLE_SIGNATURE = {name: tf.TensorSpec(shape=(), dtype=_TF_TYPES[kind]) for name, kind in EXAMPLE_FIELDS.items()}


VOCABULARY_FEATURE = "tokens_vocabulary"


def tokenize_verifier(dataset: tf.data.Dataset, vocab_name: str | None = None) -> tf.data.Dataset:
    """``inputs`` -> ids (no special tokens); ``targets`` -> ``[yes_id]`` / ``[no_id]``.

    Keeps ``inputs_pretokenized`` / ``targets_pretokenized`` copies (for metrics and decoding) and
    the vocabulary's name (``tokens_vocabulary``): the SeqIO cache (``seqio.CacheDatasetPlaceholder``
    follows this step) stores these ids, and :func:`frame_verifier_inputs` refuses ids made with
    another vocabulary than the one now chosen.
    """
    tok = get_vocabulary(vocab_name) if vocab_name else get_vocabulary()
    vocab = seqio_vocabulary(tok.spec)

    @tf.autograph.experimental.do_not_convert  # plain TF ops: skip autograph (faster tracing)
    def fn(ex: Mapping[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        out = dict(ex)
        out["inputs_pretokenized"] = ex["inputs"]
        out["targets_pretokenized"] = ex["targets"]
        out["inputs"] = tf.cast(vocab.encode_tf(ex["inputs"]), tf.int32)
        is_yes = tf.equal(ex["targets"], "yes")
        out["targets"] = tf.reshape(tf.where(is_yes, tok.yes_id, tok.no_id), [1])
        out[VOCABULARY_FEATURE] = tf.constant(tok.spec)
        return out

    return dataset.map(fn, num_parallel_calls=tf.data.AUTOTUNE)


def frame_verifier_inputs(
    dataset: tf.data.Dataset,
    sequence_length: Mapping[str, int] | None = None,
    side: str = "right",
    targets_eos: bool = False,
    vocab_name: str | None = None,
) -> tf.data.Dataset:
    """``inputs`` -> ``[bos] + ids + [eos]`` cut on ``side`` to fit ``sequence_length['inputs']``;
    ``targets`` get EOS appended when ``targets_eos`` (see numpy_pipeline.frame_ids)."""
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    tok = get_vocabulary(vocab_name) if vocab_name else get_vocabulary()
    prefix = [] if tok.bos_id is None else [tok.bos_id]
    length = (sequence_length or {}).get("inputs")
    budget = None if length is None else length - len(prefix) - 1
    if budget is not None and budget < 1:
        raise ValueError(f"sequence length {length} leaves no room for tokens")

    @tf.autograph.experimental.do_not_convert  # plain TF ops: skip autograph (faster tracing)
    def fn(ex: Mapping[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        out = dict(ex)
        made_with = out.pop(VOCABULARY_FEATURE, None)
        if made_with is not None:  # ids from tokenize_verifier, possibly read back from a SeqIO cache
            tf.debugging.assert_equal(made_with, tf.constant(tok.spec), message=(
                f"the task's cached ids were made with another vocabulary than {tok.spec!r}: rebuild the "
                "cache (seqio cache_tasks_main) with this vocabulary, or read the task uncached"))
        ids = ex["inputs"]
        if budget is not None:
            if side == "left":
                ids = ids[tf.maximum(tf.shape(ids)[0] - budget, 0):]
            else:
                ids = ids[:budget]
        parts = [tf.constant(prefix, tf.int32)] if prefix else []
        out["inputs"] = tf.concat(parts + [ids, tf.constant([tok.eos_id], tf.int32)], axis=0)
        if targets_eos:
            out["targets"] = tf.concat([ex["targets"], tf.constant([tok.eos_id], tf.int32)], axis=0)
        return out

    return dataset.map(fn, num_parallel_calls=tf.data.AUTOTUNE)
