#!/usr/bin/env bash
# One model, two frameworks (issue 31, docs/frameworks.md): the demo CNN of
# configs/demo.yaml trained by `trainscope train` (C++ on libtorch) and by
# examples/python/demo_cnn.py (PyTorch-Python on the same libtorch, the same
# initial weights and batches), both recording a run with fingerprints every
# step, interleaved. Also the bare loops of bench/ as the physical baseline.
#   bench/frameworks.sh [BUILD_DIR] [ROUNDS (default 5)] [THREADS (default 1)] [EPOCHS (1)]
set -euo pipefail
build=${1:-build}
rounds=${2:-5}
threads=${3:-1}
epochs=${4:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
sets="--set train.epochs=$epochs --set compute.threads=$threads"
export PYTHONPATH="$build/python" OMP_NUM_THREADS="$threads"
python3 "$root/bench/interleave.py" --rounds "$rounds" --trainscope "$build/bin/trainscope" \
  --case libtorch "$build/bin/trainscope --store sqlite:{store} -q train $root/configs/demo.yaml $sets --no-progress" \
  --case pytorch "TRAINSCOPE_STORE={store} ${PYTHON:-$root/.venv/bin/python} $root/examples/python/demo_cnn.py $root/configs/demo.yaml $sets"
