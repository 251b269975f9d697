"""Training: the train loop, partitioning onto meshes, checkpoints, metric sinks, gin entry points."""
