#!/usr/bin/env bash
# Installs trainscope from BUILD_DIR into a temporary prefix, builds a program
# that uses find_package(trainscope), and checks that it records a run; with
# the torch half, builds the sign-flips unit against the installed package
# and checks that the installed CLI loads it (TRAINSCOPE_UNITS) and trains
# with it.
set -euo pipefail
build_dir=$1; src_dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cmake --install "$build_dir" --prefix "$tmp/prefix" > /dev/null
cmake -S "$src_dir" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$tmp/build" > /dev/null
out=$("$tmp/build/c" "sqlite:$tmp/x.db")
echo "$out"
[ "$(echo "$out" | awk '{print $2}')" = "1" ]
if [ -f "$tmp/build/libsign_flips.so" ]; then
  ts=$tmp/prefix/bin/trainscope
  TRAINSCOPE_UNITS=$tmp/build/libsign_flips.so "$ts" config keys | grep -q '^sign_flips.every '
  TRAINSCOPE_UNITS=$tmp/build/libsign_flips.so "$ts" --store "sqlite:$tmp/u.db" -q train \
    "$src_dir/../../configs/demo.yaml" --no-progress --name flips --set sign_flips.every=2 \
    --set data.dataset=synthetic --set data.synthetic.size=256 --set train.epochs=1
  n=$("$ts" --store "sqlite:$tmp/u.db" --json runs show flips |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["records"].get("sign_flips", 0))')
  echo "an out-of-tree unit in the installed CLI: $n sign_flips records"
  [ "$n" -gt 0 ]
fi
