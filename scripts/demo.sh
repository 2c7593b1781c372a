#!/usr/bin/env bash
# `make demo`: records a real run into ./trainscope.db and says where to look.
set -euo pipefail
TS=${1:-build/bin/trainscope}
echo "== trainscope demo: the logistic map in float32, float64 and long double"
out=$("$TS" numerics logmap --x0 0.4 --r 3.7 --steps 2000 --name demo-logmap)
echo "$out"
run=$(echo "$out" | sed -n 's/^recorded run \(........\).*/\1/p')
echo
"$TS" runs list --limit 5
echo
echo "Next:"
echo "  $TS runs show $run                 # params, metric summaries"
echo "  $TS metrics $run x/float32         # one series (add --format csv)"
echo "  $TS runs export $run --format json --out run.json"
