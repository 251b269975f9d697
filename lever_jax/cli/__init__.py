"""The ``lever-jax`` console script: one module per subcommand, dispatched by ``main``.

Each subcommand module defines ``register(subparsers)``, which adds its parser and sets ``func``
to a ``main(args) -> int`` function; `train` and `eval` are registered by their one launcher,
``lever_jax.training.launch`` (``register_train`` / ``register_eval``). Modules are imported only when their command runs, so that
``lever-jax rerank`` never pays for TensorFlow or the sandbox.

Errors (``lever_jax.cli.main``): commands raise ``lever_jax.data.errors.UserError`` for a user
mistake (one line ``lever-jax: error: WHERE: message``, exit 2) and let anything else propagate
(one line, exit 1; ``--debug`` / ``LEVER_JAX_DEBUG=1`` for the traceback). ``lever_jax.cli.checks``
holds the up-front checks (input files, splits, positive numbers).
"""
from lever_jax.cli.main import main

__all__ = ["main"]
