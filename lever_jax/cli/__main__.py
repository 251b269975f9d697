"""``python -m lever_jax.cli``: the same as the ``lever-jax`` console script."""
import sys

from lever_jax.cli.main import main

sys.exit(main())
