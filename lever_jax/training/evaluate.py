"""Evaluate a trained LEVER verifier from gin files (t5x-style entry point; the same as `lever-jax eval`).

    python -m lever_jax.training.evaluate --gin_file gin_configs/runs/smoke.gin \\
        --gin_bindings "MODEL_DIR='/tmp/smoke'"

Writes MODEL_DIR/eval/<task>.scores.json and <task>.metrics.json (or EVAL_OUTPUT_DIR). Flags and
launch: lever_jax.training.launch; the run: lever_jax.training.runs.evaluate (gin `evaluate`).
"""
import sys

if __name__ == "__main__":
    from lever_jax.training.launch import main

    sys.exit(main("eval", doc=__doc__))
