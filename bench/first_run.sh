#!/usr/bin/env bash
# Times `make demo`, then `make test`'s build, from a clean clone the way a
# newcomer runs them: the Debian packages present, no ccache (CCACHE_DISABLE),
# torch downloaded from PyPI into the clone's .venv (pip's cache disabled,
# as on a fresh machine), each step of the Makefile timed on its own
# (docs/first-run.md).
#
#   bench/first_run.sh [REPO] [--with-test-build]
#   FIRST_RUN_CMAKE_FLAGS=-DTRAINSCOPE_UNITY=OFF bench/first_run.sh   (one object per file)
set -euo pipefail
SRC=$(cd "${1:-.}" && pwd)
DIR=$(mktemp -d /tmp/trainscope-first-run.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
git clone -q "$SRC" "$DIR/ts"
cd "$DIR/ts"
export CCACHE_DISABLE=1 PIP_NO_CACHE_DIR=1

step() {  # step NAME COMMAND...
  local t0 t1
  t0=$(date +%s.%N)
  "${@:2}" > "$DIR/$1.log" 2>&1 || { cat "$DIR/$1.log"; exit 1; }
  t1=$(date +%s.%N)
  printf '%-28s %7.1f s\n' "$1" "$(awk "BEGIN{print $t1 - $t0}")"
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit:  $(git rev-parse --short HEAD) ${FIRST_RUN_CMAKE_FLAGS:-}"
start=$(date +%s.%N)
step "make deps-build (apt)" make --no-print-directory deps-build
step "make venv (torch, PyPI)" make --no-print-directory venv
step "configure (demo)" cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
  -DTRAINSCOPE_BUILD_TESTS=OFF -DTRAINSCOPE_BUILD_BENCH=OFF -DTRAINSCOPE_PYTHON=OFF \
  -DTRAINSCOPE_TORCH_PYTHON="$PWD/.venv/bin/python" ${FIRST_RUN_CMAKE_FLAGS:-}
step "build (CLI + torch half)" cmake --build build -j"$(nproc)" --target trainscope_cli trainscope_torch_commands
step "train the demo" ./scripts/demo.sh build/bin/trainscope
printf '%-28s %7.1f s\n' "make demo, all steps" "$(awk "BEGIN{print $(date +%s.%N) - $start}")"
grep -E "^run |test accuracy" "$DIR/train the demo.log" | head -2 || true
if [ "${2:-}" = "--with-test-build" ]; then
  step "make venv-full (torch's rest)" make --no-print-directory venv-full
  step "make build (the rest)" make --no-print-directory build
fi
