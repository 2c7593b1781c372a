#!/usr/bin/env bash
# `make demo`: trains the demo CNN on the real Fashion-MNIST files, records
# the run into ./trainscope.db, and says where to look next.
set -euo pipefail
TS=${1:-build/bin/trainscope}
echo "== trainscope demo: demo_cnn on Fashion-MNIST (configs/demo.yaml)"
out=$("$TS" train configs/demo.yaml --name demo)
echo "$out"
run=$(echo "$out" | sed -n 's/^run \(........\).*/\1/p')
echo
"$TS" runs list --limit 5
echo
echo "Next:"
echo "  $TS runs show $run                  # params, metric summaries, checkpoints"
echo "  $TS metrics $run test/accuracy      # one series (add --format csv)"
echo "  $TS eval $run                       # confusion matrix, per-class accuracy"
echo "  $TS runs export $run --format json --out run.json"
echo "  $TS config show configs/demo.yaml   # every config field with its value"
