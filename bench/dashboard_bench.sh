#!/usr/bin/env bash
# The dashboard at scale in a real browser: `trainscope serve` over the
# benchmark stores (10,000 runs; a 1M-point series, built by serve_bench),
# pages timed in headless Chromium by dashboard_bench.mjs.
#   bench/dashboard_bench.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
build=${1:-build}
rounds=${2:-7}
"$build/bench/serve_bench" --rounds "${rounds}"
tmp=${TMPDIR:-/tmp}
serve() {  # serve STORE -> prints the base URL; the server's pid in $!
  "$build/bin/trainscope" --store "sqlite:$1" serve --port 0 > "$2" &
  for _ in $(seq 100); do grep -q " at http" "$2" 2>/dev/null && break; sleep 0.05; done
}
serve "$tmp/trainscope-cli-startup-v1.db" "$tmp/dash-bench-runs.out"; runs_pid=$!
serve "$tmp/trainscope-bench-million-v1.db" "$tmp/dash-bench-long.out"; long_pid=$!
trap 'kill $runs_pid $long_pid' EXIT
base() { sed -n 's/.* at \(http[^ ]*\)\/ .*/\1/p' "$1"; }
cp "$(dirname "$0")/dashboard_bench.mjs" "$build/tests/browser/"
node "$build/tests/browser/dashboard_bench.mjs" "$(base "$tmp/dash-bench-runs.out")" \
  "$(base "$tmp/dash-bench-long.out")" "$rounds"
