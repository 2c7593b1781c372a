#!/usr/bin/env bash
# trainscope on torch 2.x against its last build on Debian's libtorch 1.13
# (commit 843fd27), interleaved, on the same machine (docs/benchmarks.md,
# "torch 2.15 against 1.13"): each figure of issue 46 for both builds, and
# each build's own physical baseline.
#   bench/torch_versions.sh OLD_BUILD NEW_BUILD [ROUNDS (default 5)]
# OLD_BUILD: a build of 843fd27 with its benchmarks (bench/bare_loop,
# bench/cpp_train_step); OLD_PYTHON: a python with torch 1.13 (default
# Debian's /usr/bin/python3 with python3-torch); NEW_PYTHON: the new build's
# torch (default .venv/bin/python).
set -euo pipefail
old=$1
new=$2
rounds=${3:-5}
here=$(cd "$(dirname "$0")" && pwd)
root=$here/..
old_py=${OLD_PYTHON:-/usr/bin/python3}
new_py=${NEW_PYTHON:-$root/.venv/bin/python}
threads=$("$new/bin/trainscope" env | awk '$1 == "system.cpu.affinity_physical_cores" {print $2}')
il() { python3 "$here/interleave.py" --rounds "$rounds" --trainscope "$new/bin/trainscope" "$@"; }
train() {  # train BUILD EXTRA...: one epoch of the demo (its tree's) into a fresh store
  echo "$1/bin/trainscope --store sqlite:{store} -q train $1/../configs/demo.yaml --set train.epochs=1 --no-progress ${*:2}"
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); old $("$old/bin/trainscope" --version), new $("$new/bin/trainscope" --version)"

echo "== the demo, one epoch: the trainer against a bare libtorch loop, each torch"
il --case old_bare "$old/bench/bare_loop --epochs 1 --threads $threads --blas-threads 1" \
   --case new_bare "$new/bench/bare_loop --epochs 1 --threads $threads --blas-threads 1" \
   --case old_trainscope "$(train "$old")" \
   --case new_trainscope "$(train "$new")"

echo "== one training step of the demo CNN (batch 128): C++ against PyTorch-Python, each torch"
il --case old_cpp "$old/bench/cpp_train_step demo_cnn_b128 3 $threads" \
   --case new_cpp "$new/bench/cpp_train_step demo_cnn_b128 3 $threads" \
   --case old_python "$old_py $here/py_train_step.py demo_cnn_b128 3 $threads" \
   --case new_python "$new_py $here/py_train_step.py demo_cnn_b128 3 $threads"

echo "== the per-layer profiler every step and the economy probes every 10th step"
il --case old_off "$(train "$old")" \
   --case new_off "$(train "$new")" \
   --case old_profile1 "$(train "$old" --set profile.enabled=true --set profile.every=1)" \
   --case new_profile1 "$(train "$new" --set profile.enabled=true --set profile.every=1)" \
   --case old_economy10 "$(train "$old" --set probes=economy)" \
   --case new_economy10 "$(train "$new" --set probes=economy)"

echo "== CLI startup: torch-free, and with the torch half loaded"
il --case old_version "$old/bin/trainscope --version" \
   --case new_version "$new/bin/trainscope --version" \
   --case old_env_torch "$old/bin/trainscope env --with-torch" \
   --case new_env_torch "$new/bin/trainscope env --with-torch"

echo "== the quick sources study against its compute bound"
il --case old_study "$here/study_bound.py $old/bin/trainscope $old/../configs/studies/sources.yaml --quick" \
   --case new_study "$here/study_bound.py $new/bin/trainscope $new/../configs/studies/sources.yaml --quick"
