#!/usr/bin/env bash
# The demo (one epoch) with probes off, economy every 10th step, economy
# every step and standard every 10th step, interleaved. The figure to read
# is epoch_s (the whole first epoch: probed and unprobed steps alike; the
# median step time would hide a cost paid one step in ten) and its paired
# ratio to "off".
#   bench/probes.sh [BUILD_DIR] [ROUNDS (default 6)]
set -euo pipefail
build=${1:-build}
rounds=${2:-6}
here=$(cd "$(dirname "$0")" && pwd)
ts="$build/bin/trainscope --store sqlite:{store} -q train $here/../configs/demo.yaml --set train.epochs=1 --no-progress"
python3 "$here/interleave.py" --rounds "$rounds" --trainscope "$build/bin/trainscope" \
  --case off "$ts" \
  --case economy_every10 "$ts --set probes=economy" \
  --case economy_every1 "$ts --set probes=economy --set probes.every=1" \
  --case standard_every10 "$ts --set probes=standard"
