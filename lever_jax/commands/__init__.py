"""Subcommands of the ``lever-jax`` console script, one module each.

Each module defines ``register(subparsers)`` which adds its parser and sets ``func`` to a
``main(args) -> int`` function. Modules are imported lazily so that ``lever-jax rerank`` never
pays for TensorFlow or the sandbox.
"""
