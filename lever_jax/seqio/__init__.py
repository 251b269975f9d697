"""The part of lever_jax that imports seqio / TensorFlow: SeqIO vocabularies over the verifier
tokenizers (vocab), the feature converters (feature_converters) and the SeqIO feed of `lever-jax
train` (feeds). The SeqIO metric functions are TF-free (lever_jax.rerank.grouping). The tasks are
registered by the top-level task module tasks/lever_tasks.py, which imports this package; nothing in
lever_jax imports ``tasks``."""
