"""Everything that imports seqio / TensorFlow: vocabularies, feature converters, SeqIO metric functions."""
