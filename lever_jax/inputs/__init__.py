"""Verifier inputs: serialisation, examples from executed files, tokenizers, batching (no TensorFlow).

Public API: the names in ``__all__``, imported on first use (PEP 562, ``lever_jax._exports``):
importing the package imports none of its modules. The rest is internal.
"""
from lever_jax._exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "SerializeOptions": "serialize:SerializeOptions", "target_text": "serialize:target_text",
    "get_vocabulary": "tokenizers:get_vocabulary",
    "TaskSpec": "examples:TaskSpec", "discover_specs": "examples:discover_specs",
    "iter_examples": "examples:iter_examples", "bundled_pool_files": "examples:bundled_pool_files",
    "encode_example": "batching:encode_example", "batch_features": "batching:batch_features",
    "pad_to": "batching:pad_to", "packed_train_batch": "packing:packed_train_batch",
    "bucketed_train_batch": "packing:bucketed_train_batch",
    "TrainBatcher": "feeds:TrainBatcher", "EvalSet": "feeds:EvalSet", "load_eval_set": "feeds:load_eval_set",
    "numpy_problems": "feeds:numpy_problems", "resolve_task": "feeds:resolve_task",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
