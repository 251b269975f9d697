"""Training: the train loop, partitioning onto meshes, checkpoints, metric sinks, gin entry points.

Public API: the names in ``__all__``, imported on first use (PEP 562, ``lever_jax._exports``):
importing the package imports none of its modules. The rest is internal.
"""
from lever_jax._exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "Trainer": "trainer:Trainer", "OptimizerConfig": "trainer:OptimizerConfig",
    "TrainState": "trainer:TrainState",
    "Checkpointer": "checkpoints:Checkpointer", "MetricsWriter": "metric_sinks:MetricsWriter",
    "read_metrics": "metric_sinks:read_metrics", "parse_gin_files": "launch:parse_gin_files",
    "gin_search_paths": "launch:gin_search_paths", "make_mesh": "partitioning:make_mesh",
    "TrainDataConfig": "configs:TrainDataConfig", "EvalDataConfig": "configs:EvalDataConfig",
    "TrainLoopConfig": "configs:TrainLoopConfig", "CheckpointConfig": "configs:CheckpointConfig",
    "ScoringConfig": "configs:ScoringConfig", "PartitionConfig": "configs:PartitionConfig",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
