"""The end-to-end run (`lever-jax run`): folds, frozen features, verifier heads, per-fold training.

Public API: the names in ``__all__``, imported on first use (PEP 562, ``lever_jax._exports``):
importing the package imports none of its modules. The rest is internal.
"""
from lever_jax._exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "RunConfig": "run:RunConfig", "POOLS": "pools:POOLS", "load_pool": "pools:load_pool",
    "training_view": "pools:training_view", "execution_limits": "pools:execution_limits",
    "CrossFit": "crossfit:CrossFit", "FoldVerifier": "crossfit:FoldVerifier",
    "FoldResult": "crossfit:FoldResult",
    "HeadConfig": "head:HeadConfig", "HeadTrainer": "head:HeadTrainer",
    "FinetuneConfig": "finetune:FinetuneConfig", "FinetuneTrainer": "finetune:FinetuneTrainer",
    "FeatureConfig": "encoder_features:FeatureConfig", "FrozenEncoder": "encoder_features:FrozenEncoder",
    "PoolFeatures": "encoder_features:PoolFeatures", "Tables": "paper_tables:Tables",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
