"""Verifier inputs: serialisation, examples from executed files, tokenizers, batching (no TensorFlow)."""
