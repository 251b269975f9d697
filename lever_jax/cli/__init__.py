"""The ``lever-jax`` console script: one module per subcommand, dispatched by ``main``.

Each subcommand module defines ``register(subparsers)``, which adds its parser and sets ``func``
to a ``main(args) -> int`` function. Modules are imported only when their command runs, so that
``lever-jax rerank`` never pays for TensorFlow or the sandbox.
"""
from lever_jax.cli.main import main

__all__ = ["main"]
