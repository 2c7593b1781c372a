#!/usr/bin/env bash
# C++ (trainscope's models and optimizer) vs Python PyTorch (the torch the
# build links: the same libtorch and the same BLAS), the same training
# step on the same data with the same threads, run interleaved.
#   bench/train_vs_python.sh [BUILD_DIR] [THREADS (default: nproc)] [ROUNDS (default 6)]
# PYTHON: the python of that torch (default: .venv/bin/python).
set -euo pipefail
build=${1:-build}
threads=${2:-$(nproc)}
rounds=${3:-6}
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-$here/../.venv/bin/python}
# The BLAS gets one thread on both sides, as the trainer gives it
# (compute.blas_threads: auto).
export OPENBLAS_NUM_THREADS=1
for model in mlp_b64 demo_cnn_b128; do
  echo "== $model, $threads intra-op threads, OPENBLAS_NUM_THREADS=1"
  python3 "$here/interleave.py" --rounds "$rounds" \
    --case "python" "$py $here/py_train_step.py $model 3 $threads" \
    --case "cpp" "$build/bench/cpp_train_step $model 3 $threads" 2>/dev/null |
    grep -E "case|step_us"
done
