#!/usr/bin/env bash
# The demo (3 epochs) with the default threads (auto) against threads=1,
# interleaved: epoch time, CPU time, and the monitor's CPU% against the
# process's own (user+sys)/wall.
#   bench/demo_threads.sh [BUILD_DIR] [ROUNDS (default 5)]
set -euo pipefail
build=${1:-build}
rounds=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
ts="$build/bin/trainscope --store sqlite:{store} -q train $here/../configs/demo.yaml --no-progress"
python3 "$here/interleave.py" --rounds "$rounds" --trainscope "$build/bin/trainscope" \
  --case default "$ts" --case threads1 "$ts --set compute.threads=1"
