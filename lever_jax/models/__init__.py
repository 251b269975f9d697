"""Flax networks (T5 encoder-decoder, BERT-style encoder) and the verifier model API.

Public API: the names in ``__all__``, imported on first use (PEP 562, ``lever_jax._exports``):
importing the package imports none of its modules. The rest is internal.
"""
from lever_jax._exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "EncoderDecoderVerifier": "verifier:EncoderDecoderVerifier",
    "EncoderClassifierVerifier": "verifier:EncoderClassifierVerifier",
    "VerifierModel": "base:VerifierModel", "verifier_loss": "base:verifier_loss",
    "VocabularyIds": "base:VocabularyIds",
    "T5Config": "configs:T5Config", "EncoderConfig": "configs:EncoderConfig",
    "LossConfig": "configs:LossConfig",
    "t5_config": "configs:t5_config", "encoder_config": "configs:encoder_config",
    "T5Transformer": "t5:T5Transformer", "EncoderClassifier": "encoder:EncoderClassifier",
    "load_t5": "hf_import:load_t5", "load_minilm": "hf_import:load_minilm",
    "minilm_dir": "hf_import:minilm_dir",
    "CheckpointError": "hf_import:CheckpointError",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
