"""Train a LEVER verifier from gin files (t5x-style entry point; the same as `lever-jax train`).

    python -m lever_jax.training.train --gin_file gin_configs/runs/smoke.gin \\
        --gin_bindings "MODEL_DIR='/tmp/smoke'"
    python -m lever_jax.training.train --gin_file gin_configs/models/t5_small.gin \\
        --gin_file gin_configs/tasks/gsm8k_pool.gin --gin_file gin_configs/runs/train.gin \\
        --gin_bindings "MODEL_DIR='/tmp/verifier'" --gin_bindings TRAIN_STEPS=1000

Flags and launch: lever_jax.training.launch; the run: lever_jax.training.runs.train (gin `train`).
"""
import sys

if __name__ == "__main__":
    from lever_jax.training.launch import main

    sys.exit(main("train", doc=__doc__))
