"""Ground floor: the data contract, file I/O, datasets and candidate pools (imports nothing of ours above it)."""
