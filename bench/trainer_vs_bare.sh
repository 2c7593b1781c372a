#!/usr/bin/env bash
# `trainscope train configs/demo.yaml` (one epoch) against bench/bare_loop, a
# hand-written libtorch loop of the same model, data, batch, optimizer and
# threads, against the trainer with its recording off, and with a
# fingerprint every step, interleaved.
#   bench/trainer_vs_bare.sh [BUILD_DIR] [ROUNDS (default 8)]
set -euo pipefail
build=${1:-build}
rounds=${2:-8}
here=$(cd "$(dirname "$0")" && pwd)
ts="$build/bin/trainscope --store sqlite:{store} -q train $here/../configs/demo.yaml --set train.epochs=1 --no-progress"
threads=$("$build/bin/trainscope" env | awk '$1 == "system.cpu.affinity_physical_cores" {print $2}')
python3 "$here/interleave.py" --rounds "$rounds" --trainscope "$build/bin/trainscope" \
  --case bare_loop "$build/bench/bare_loop --epochs 1 --threads $threads --blas-threads 1" \
  --case trainscope "$ts" \
  --case no_recording "$ts --set fingerprint.every_steps=0 --set monitor.interval_s=0 --set checkpoint.every_epochs=0" \
  --case fingerprint_every_step "$ts --set fingerprint.every_steps=1"
