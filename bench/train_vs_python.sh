#!/usr/bin/env bash
# C++ (trainscope) vs Python (Debian python3-torch, same libtorch 1.13)
# training-step time, measured in one run on the same machine and data.
#   bench/train_vs_python.sh [BUILD_DIR] [THREADS (default: nproc)]
set -euo pipefail
build=${1:-build}
threads=${2:-$(nproc)}
export TRAINSCOPE_BENCH_THREADS=$threads
here=$(cd "$(dirname "$0")" && pwd)
cpp=$("$build/bench/train_step_bench" --benchmark_format=json 2>/dev/null)
# Debian's interpreter, which has python3-torch (a pyenv python3 on PATH would not).
py=$(/usr/bin/python3 "$here/py_train_step.py" 3 "$threads")
/usr/bin/python3 - "$cpp" "$py" <<'PY'
import json, sys
cpp = {b["name"].split("/")[1]: b["real_time"]
       for b in json.loads(sys.argv[1])["benchmarks"]}
targets = {"mlp_b64": 0.9, "demo_cnn_b128": 1.0}
print(f"{'step':<16}{'C++ us':>10}{'Python us':>12}{'C++/Py':>9}{'target':>9}")
for line in sys.argv[2].splitlines():
    p = json.loads(line)
    c = cpp[p["name"]]
    r = c / p["step_us"]
    ok = "ok" if r <= targets[p["name"]] else "MISSED"
    print(f"{p['name']:<16}{c:>10.0f}{p['step_us']:>12.0f}{r:>9.2f}{'<= ' + str(targets[p['name']]):>9} {ok}")
print(f"(torch {p['torch']}, {p['threads']} intra-op threads on both sides)")
PY
