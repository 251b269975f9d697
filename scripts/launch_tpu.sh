#!/usr/bin/env bash
# Launch LEVER verifier training on a Cloud TPU VM slice (all hosts), t5x style.
#
#   scripts/launch_tpu.sh --name lever-v4 --zone us-central2-b --accelerator-type v4-32 \
#       --gin_file gin_configs/runs/train.gin --gin_file gin_configs/tasks/spider.gin \
#       --gin_file gin_configs/models/t5_base.gin \
#       --gin_bindings "MODEL_DIR='gs://my-bucket/lever/spider_t5_base'" --gin_bindings TRAIN_STEPS=10000
#
# Steps (each a gcloud command; --dry-run prints them instead of running them). docs/cloud_tpu.md
# walks through them.
#   1. create the TPU VM slice          gcloud compute tpus tpu-vm create NAME ...
#   2. copy this repository (a tarball without .venv/.git) to every worker (scp --worker=all)
#      and install it there in a Python 3.11 virtualenv made by uv (the pins need Python >= 3.11;
#      the TPU images ship 3.10): uv pip install -c constraints.txt -e '.[all,cloud]' 'jax[tpu]'
#   3. (--data DIR_OR_GS_URL) stage the data files on every worker: a local folder is copied as a
#      tarball, a gs:// folder with `gcloud storage cp -r` on each worker; LEVER_JAX_DATA_DIR
#      then points there (~/lever-data)
#   4. run `python -m lever_jax.training.train --distributed --gin_file ... --gin_bindings ...` on all
#      workers at once (--worker=all); --distributed calls jax.distributed.initialize(), which
#      on Cloud TPU needs no arguments, and each host then loads only its rows of every batch.
#      Without a BATCH_SIZE binding, BATCH_SIZE is set to the slice's device count (the global
#      batch must divide the 'data' axis; train.gin's default 1 does not on a slice).
#   5. (--delete) delete the slice afterwards.
# MODEL_DIR: a folder on every worker (the default ~/lever-jax/...) or gs:// (orbax writes
# checkpoints there from every host).
# Options: --name, --zone, --accelerator-type (v4-8, v4-32, v5litepod-16, ...), --version
# (runtime image), --project, --spot, --data, --skip-create, --skip-install, --delete, --env K=V
# (exported on the workers), --dry-run; every --gin_file/--gin_bindings is passed through.
set -euo pipefail

NAME="lever-jax"
ZONE="us-central2-b"
ACCELERATOR="v4-8"
VERSION="tpu-ubuntu2204-base"
PROJECT=""
SPOT=0
DRY_RUN=0
SKIP_CREATE=0
SKIP_INSTALL=0
DELETE=0
REMOTE_DIR="lever-jax"
PYTHON_VERSION="3.11"   # setup.py python_requires and README agree: >= 3.11
DATA=""
GIN_ARGS=()
ENV_VARS=()

usage() { sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --name) NAME="$2"; shift 2 ;;
    --zone) ZONE="$2"; shift 2 ;;
    --accelerator-type) ACCELERATOR="$2"; shift 2 ;;
    --version) VERSION="$2"; shift 2 ;;
    --project) PROJECT="$2"; shift 2 ;;
    --spot) SPOT=1; shift ;;
    --skip-create) SKIP_CREATE=1; shift ;;
    --skip-install) SKIP_INSTALL=1; shift ;;
    --delete) DELETE=1; shift ;;
    --env) ENV_VARS+=("$2"); shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --gin_file|--gin_bindings|--gin_search_paths) GIN_ARGS+=("$1" "$2"); shift 2 ;;
    --dry-run) DRY_RUN=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "launch_tpu.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

if [[ ${#GIN_ARGS[@]} -eq 0 ]]; then
  echo "launch_tpu.sh: pass at least one --gin_file (see --help)" >&2
  exit 2
fi

COMMON=(--zone="$ZONE")
[[ -n "$PROJECT" ]] && COMMON+=(--project="$PROJECT")

# Print (dry run) or run one command; arguments are shell-quoted when printed.
run() {
  if [[ $DRY_RUN -eq 1 ]]; then
    local out="" arg
    for arg in "$@"; do
      if [[ "$arg" =~ ^[A-Za-z0-9_./:=,@+~-]+$ ]]; then out+="$arg "; else out+="'${arg//\'/\'\\\'\'}' "; fi
    done
    echo "${out% }"
  else
    "$@"
  fi
}

quote_all() { local out="" arg; for arg in "$@"; do out+="$(printf '%q' "$arg") "; done; echo "${out% }"; }

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Devices of the slice (TPU VM names count TensorCores for v2/v3/v4, chips for v5e/v5p/v6e; one
# JAX device per chip on v4/v5p (megacore), per core on v2/v3).
accelerator_devices() {
  local kind="${1%%-*}" count="${1##*-}"
  case "$kind" in
    v4|v5p) echo $(( count / 2 )) ;;
    *) echo "$count" ;;
  esac
}
DEVICES="$(accelerator_devices "$ACCELERATOR")"
if ! printf '%s\n' "${GIN_ARGS[@]}" | grep -q '^ *BATCH_SIZE *='; then
  GIN_ARGS+=(--gin_bindings "BATCH_SIZE = $DEVICES")
  echo "launch_tpu.sh: $ACCELERATOR has $DEVICES devices: BATCH_SIZE = $DEVICES (pass --gin_bindings BATCH_SIZE=... to change)" >&2
fi
EXPORTS=""
[[ -n "$DATA" ]] && EXPORTS+='export LEVER_JAX_DATA_DIR=$HOME/lever-data; '

for kv in "${ENV_VARS[@]+"${ENV_VARS[@]}"}"; do EXPORTS+="export $(printf '%q' "$kv"); "; done

if [[ $SKIP_CREATE -eq 0 ]]; then
  CREATE=(gcloud compute tpus tpu-vm create "$NAME" "${COMMON[@]}"
          --accelerator-type="$ACCELERATOR" --version="$VERSION")
  [[ $SPOT -eq 1 ]] && CREATE+=(--spot)
  run "${CREATE[@]}"
fi

if [[ $SKIP_INSTALL -eq 0 ]]; then
  TARBALL="${TMPDIR:-/tmp}/lever-jax-src.tar.gz"
  run tar -czf "$TARBALL" -C "$REPO_ROOT" --exclude=./.venv --exclude=./.git --exclude=./results .
  run gcloud compute tpus tpu-vm scp "$TARBALL" "$NAME:~/lever-jax-src.tar.gz" --worker=all "${COMMON[@]}"
  INSTALL="mkdir -p ~/$REMOTE_DIR && tar -xzf ~/lever-jax-src.tar.gz -C ~/$REMOTE_DIR && cd ~/$REMOTE_DIR && python3 -m pip install -q --user uv && ~/.local/bin/uv venv -q --python $PYTHON_VERSION ~/lever-venv && ~/.local/bin/uv pip install -q --python ~/lever-venv/bin/python -c constraints.txt -e '.[all,cloud]' 'jax[tpu]' -f https://storage.googleapis.com/jax-releases/libtpu_releases.html"
  run gcloud compute tpus tpu-vm ssh "$NAME" --worker=all "${COMMON[@]}" --command="$INSTALL"
fi

if [[ -n "$DATA" ]]; then
  if [[ "$DATA" == gs://* ]]; then
    run gcloud compute tpus tpu-vm ssh "$NAME" --worker=all "${COMMON[@]}" \
      --command="mkdir -p ~/lever-data && gcloud storage cp -r $(printf '%q' "${DATA%/}")/'*' ~/lever-data/"
  else
    DATA_TARBALL="${TMPDIR:-/tmp}/lever-jax-data.tar.gz"
    run tar -czf "$DATA_TARBALL" -C "$DATA" .
    run gcloud compute tpus tpu-vm scp "$DATA_TARBALL" "$NAME:~/lever-jax-data.tar.gz" --worker=all "${COMMON[@]}"
    run gcloud compute tpus tpu-vm ssh "$NAME" --worker=all "${COMMON[@]}" \
      --command="mkdir -p ~/lever-data && tar -xzf ~/lever-jax-data.tar.gz -C ~/lever-data"
  fi
fi

TRAIN="${EXPORTS}cd ~/$REMOTE_DIR && ~/lever-venv/bin/python -m lever_jax.training.train --distributed $(quote_all "${GIN_ARGS[@]}")"
run gcloud compute tpus tpu-vm ssh "$NAME" --worker=all "${COMMON[@]}" --command="$TRAIN"

if [[ $DELETE -eq 1 ]]; then
  run gcloud compute tpus tpu-vm delete "$NAME" "${COMMON[@]}" --quiet
fi
