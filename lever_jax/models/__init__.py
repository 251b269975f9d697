"""Flax networks (T5 encoder-decoder, BERT-style encoder) and the verifier model API."""
