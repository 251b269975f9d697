#!/usr/bin/env bash
# Sample the bundled Qwen2.5-Coder-0.5B pools (docs/sampling.md): MBPP test + train, Spider dev and a
# seeded 1,000-problem Spider train subset; 5 samples at LEVER's temperature 0.6 + the greedy decode.
# Resumable: each run journals finished problems, so starting this script again after a kill
# continues where it stopped. Run it niced in the background:
#   nice -n 19 scripts/sample_qwen_pools.sh POOL_DIR > POOL_DIR/sample.log 2>&1 &
set -euo pipefail
DIR="${1:?usage: sample_qwen_pools.sh POOL_DIR}"
MODEL="${MODEL:-models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf}"
SHA256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
LEVER="${LEVER:-lever-jax}"
COMMON=(--model "$MODEL" --model-sha256 "$SHA256" --n 5 --temperature 0.6 --seed 0 --threads "${THREADS:-2}")
SLOTS=(--parallel "${PARALLEL:-4}")
mkdir -p "$DIR"
# A finished pool (its samples file written, its journal no longer kept) is not sampled again.
sample() {  # sample OUTPUT ARGS...
  local out="$1"; shift
  if [ -f "$out" ] && [ ! -f "$out.journal.jsonl" ]; then echo "$out: done"; return; fi
  "$LEVER" sample "$@" "${COMMON[@]}" --output "$out"
}
sample "$DIR/mbpp_test.samples.jsonl.gz" --dataset mbpp --split test "${SLOTS[@]}"
sample "$DIR/mbpp_train.samples.jsonl.gz" --dataset mbpp --split train "${SLOTS[@]}"
sample "$DIR/spider_dev.samples.jsonl.gz" --dataset spider --split dev "${SLOTS[@]}"
# A seeded subset of Spider train (the same 1,000 problems on every run: random.Random(0)); its
# prompts (45 MB for all of train) stay outside the package, in WORK (default .cache/).
WORK="${WORK:-.cache/sample_qwen_pools}"
mkdir -p "$WORK"
"$LEVER" prompts --dataset spider --split train --output "$WORK/spider_train.prompts.jsonl"
python3 - "$WORK/spider_train.prompts.jsonl" "$WORK/spider_train_1000.prompts.jsonl" <<'PY'
import random, sys
lines = [l for l in open(sys.argv[1], encoding="utf-8") if l.strip()]
keep = sorted(random.Random(0).sample(range(len(lines)), 1000))
open(sys.argv[2], "w", encoding="utf-8").writelines(lines[i] for i in keep)
PY
# Spider prompts are ~1,700 tokens and consecutive train problems rarely share a database, so each
# problem's 5 samples are one request with 5 choices (--shared-prefill: the prompt's tail is
# prefilled once, not once per slot), with 12 slots: two problems (5 choices + the greedy decode each) at once.
sample "$DIR/spider_train_1000.samples.jsonl.gz" --input "$WORK/spider_train_1000.prompts.jsonl" --split train \
  --shared-prefill --parallel "${SPIDER_TRAIN_PARALLEL:-12}"
