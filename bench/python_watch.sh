#!/usr/bin/env bash
# What watching a PyTorch model costs (issue 31): the demo CNN in Python,
# bare against watched (metrics every step and fingerprints every 10th; then
# with the per-layer profile, economy or standard probes every 10th step)
# and against torch.profiler on every 10th step, interleaved.
#   bench/python_watch.sh [BUILD_DIR] [ROUNDS (default 6)] [STEPS (default 300)] [THREADS (1)]
set -euo pipefail
build=${1:-build}
rounds=${2:-6}
steps=${3:-300}
threads=${4:-1}
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONPATH="$build/python" OMP_NUM_THREADS="$threads"
py="${PYTHON:-$here/../.venv/bin/python} $here/py_watch.py"  # the build's torch
args="$steps $threads \$(mktemp -u /tmp/pywatch-XXXXXX.db)"
python3 "$here/interleave.py" --rounds "$rounds" --trainscope "$build/bin/trainscope" \
  --case bare "$py bare $args" \
  --case metrics_fp "$py metrics_fp $args" \
  --case profile10 "$py profile10 $args" \
  --case economy10 "$py economy10 $args" \
  --case standard10 "$py standard10 $args" \
  --case torch_profiler10 "$py torch_profiler10 $args"
