"""SeqIO feature converters for the verifier models (imports seqio + TensorFlow).

Both converters take the task features ``inputs`` (already framed ``[bos] ids [eos]`` by the
task's preprocessors) and ``targets`` (one ``yes``/``no`` token, plus EOS when the task was built
with ``targets_eos``), pad them to the requested lengths (no packing: LEVER scores every candidate
on its own), and carry the rerank fields through as scalars: ``label`` (1 = yes),
``problem_index``, ``candidate_index``, ``result_id``, ``correct``, ``count``, ``has_gen_logprob``,
``num_tokens`` (int32) and ``gen_logprob`` (float32).

- :class:`VerifierEncDecFeatureConverter`: ``encoder_input_tokens [L]``,
  ``decoder_target_tokens [T]``, ``decoder_input_tokens [T]`` (shifted right, BOS 0),
  ``decoder_loss_weights [T]``; T = 1 (the yes/no token), or 2 with EOS. The verifier reads the
  first decoder step's logits at the ``no``/``yes`` ids.
- :class:`VerifierEncoderFeatureConverter`: ``input_tokens [L]`` for the encoder-only classifier
  (MiniLM/BERT: ``[CLS] ... [SEP]`` from the vocabulary's bos/eos) and the ``label``. Unlike
  ``seqio.EncoderFeatureConverter`` it needs no ``mask_id`` (nothing is masked).

:mod:`lever_jax.inputs.batching` produces the same features without TensorFlow.
"""
from __future__ import annotations

from typing import Mapping

import seqio
import tensorflow as tf

from lever_jax.inputs.batching import FLOAT_FIELDS, INT_FIELDS

_Spec = seqio.FeatureConverter.FeatureSpec
RERANK_FEATURES: dict[str, "seqio.FeatureConverter.FeatureSpec"] = {
    "label": _Spec(dtype=tf.int32, rank=0),
    **{name: _Spec(dtype=tf.int32, rank=0) for name in INT_FIELDS},
    **{name: _Spec(dtype=tf.float32, rank=0) for name in FLOAT_FIELDS},
}


def _rerank_fields(features: Mapping[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    out = {"label": tf.cast(features["correct"], tf.int32)}
    for name in INT_FIELDS:
        out[name] = tf.cast(features[name], tf.int32)
    for name in FLOAT_FIELDS:
        out[name] = tf.cast(features[name], tf.float32)
    return out


def _pad(ids: tf.Tensor, length: int) -> tf.Tensor:
    ids = ids[:length]
    padded = tf.pad(ids, [[0, length - tf.shape(ids)[0]]])
    padded.set_shape([length])
    return padded


class VerifierEncDecFeatureConverter(seqio.FeatureConverter):
    """Encoder-decoder verifier features (unpacked) plus the rerank fields."""

    TASK_FEATURES = {"inputs": _Spec(dtype=tf.int32), "targets": _Spec(dtype=tf.int32)}
    MODEL_FEATURES = {
        "encoder_input_tokens": _Spec(dtype=tf.int32),
        "decoder_target_tokens": _Spec(dtype=tf.int32),
        "decoder_input_tokens": _Spec(dtype=tf.int32),
        "decoder_loss_weights": _Spec(dtype=tf.int32),
        **RERANK_FEATURES,
    }
    PACKING_FEATURE_DTYPES = {}

    def __init__(self, pack: bool = False, **kwargs):
        if pack:
            raise ValueError("verifier examples are scored one by one: packing is not supported")
        super().__init__(pack=False, **kwargs)

    def _convert_features(self, ds: tf.data.Dataset, task_feature_lengths: Mapping[str, int]) -> tf.data.Dataset:
        in_len, tgt_len = task_feature_lengths["inputs"], task_feature_lengths["targets"]

        @tf.autograph.experimental.do_not_convert
        def convert(features: Mapping[str, tf.Tensor]) -> dict[str, tf.Tensor]:
            targets = _pad(features["targets"], tgt_len)
            out = {
                "encoder_input_tokens": _pad(features["inputs"], in_len),
                "decoder_target_tokens": targets,
                "decoder_input_tokens": seqio.utils.make_autoregressive_inputs(targets, bos_id=self.bos_id),
                "decoder_loss_weights": tf.cast(tf.not_equal(targets, 0), tf.int32),
            }
            out.update(_rerank_fields(features))
            return out

        return ds.map(convert, num_parallel_calls=tf.data.AUTOTUNE)

    def get_model_feature_lengths(self, task_feature_lengths: Mapping[str, int]) -> Mapping[str, int]:
        in_len, tgt_len = task_feature_lengths["inputs"], task_feature_lengths["targets"]
        lengths = {
            "encoder_input_tokens": in_len,
            "decoder_target_tokens": tgt_len,
            "decoder_input_tokens": tgt_len,
            "decoder_loss_weights": tgt_len,
        }
        lengths.update({name: 1 for name in RERANK_FEATURES})
        return lengths


class VerifierEncoderFeatureConverter(seqio.FeatureConverter):
    """Encoder-only classifier features: ``input_tokens [L]`` + ``label`` and the rerank fields."""

    TASK_FEATURES = {"inputs": _Spec(dtype=tf.int32)}
    MODEL_FEATURES = {"input_tokens": _Spec(dtype=tf.int32), **RERANK_FEATURES}
    PACKING_FEATURE_DTYPES = {}

    def __init__(self, pack: bool = False, **kwargs):
        if pack:
            raise ValueError("verifier examples are scored one by one: packing is not supported")
        super().__init__(pack=False, **kwargs)

    def _convert_features(self, ds: tf.data.Dataset, task_feature_lengths: Mapping[str, int]) -> tf.data.Dataset:
        in_len = task_feature_lengths["inputs"]

        @tf.autograph.experimental.do_not_convert
        def convert(features: Mapping[str, tf.Tensor]) -> dict[str, tf.Tensor]:
            out = {"input_tokens": _pad(features["inputs"], in_len)}
            out.update(_rerank_fields(features))
            return out

        return ds.map(convert, num_parallel_calls=tf.data.AUTOTUNE)

    def get_model_feature_lengths(self, task_feature_lengths: Mapping[str, int]) -> Mapping[str, int]:
        lengths = {"input_tokens": task_feature_lengths["inputs"]}
        lengths.update({name: 1 for name in RERANK_FEATURES})
        return lengths


def feature_converter(model: str = "encdec") -> seqio.FeatureConverter:
    """The converter for ``model`` ('encdec' or 'encoder')."""
    if model == "encdec":
        return VerifierEncDecFeatureConverter()
    if model == "encoder":
        return VerifierEncoderFeatureConverter()
    raise ValueError(f"model must be 'encdec' or 'encoder', got {model!r}")
