"""Sandboxed, parallel, cached execution of generated Python and SQL."""
