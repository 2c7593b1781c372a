#!/usr/bin/env bash
# Installs trainscope from BUILD_DIR into a temporary prefix, builds a program
# that uses find_package(trainscope), and checks that it records a run.
set -euo pipefail
build_dir=$1; src_dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cmake --install "$build_dir" --prefix "$tmp/prefix" > /dev/null
cmake -S "$src_dir" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$tmp/build" > /dev/null
out=$("$tmp/build/c" "sqlite:$tmp/x.db")
echo "$out"
[ "$(echo "$out" | awk '{print $2}')" = "1" ]
