#!/usr/bin/env bash
# Data-parallel scaling on this machine (issue 32, docs/benchmarks.md): the
# demo CNN at the same global batch (128), one epoch, trained by one rank
# with 1 thread, one rank with 2 threads, and two ranks with 1 thread each
# (`train --nproc 2`, its all-reduce overlapped with backward, the default,
# and after backward), three and four ranks with 1 thread each (more ranks
# than cores); interleaved, order rotated.
#   bench/dist.sh [BUILD_DIR] [ROUNDS (default 5)] [EPOCHS (1)]
set -euo pipefail
build=${1:-build}
rounds=${2:-5}
epochs=${3:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
train="$build/bin/trainscope --store sqlite:{store} -q train $root/configs/demo.yaml --no-progress --set train.epochs=$epochs"
python3 "$root/bench/interleave.py" --rounds "$rounds" --trainscope "$build/bin/trainscope" \
  --case 1rank_1thread "$train --set compute.threads=1" \
  --case 1rank_2threads "$train --set compute.threads=2" \
  --case 2ranks_1thread "$train --nproc 2" \
  --case 2ranks_after_backward "$train --nproc 2 --set dist.overlap=false" \
  --case 3ranks_1thread "$train --nproc 3" \
  --case 4ranks_1thread "$train --nproc 4"
