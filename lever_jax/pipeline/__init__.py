"""The end-to-end run (`lever-jax run`): folds, frozen features, verifier heads, per-fold training."""
