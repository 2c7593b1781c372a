#!/usr/bin/env bash
# The GPU check: on a machine with one NVIDIA GPU, PyTorch 2.x with CUDA,
# CMake, ninja and a C++ compiler, and no network, builds trainscope against
# that machine's torch from what the tree carries (.gpu/root.tar.gz, made by
# scripts/gpu-pack.sh from Debian's packages and unpacked into .gpu/root,
# never into /), runs the GPU tests and benchmarks, and prints their
# results. Its output goes into docs/gpu.md with the date and the machine.
#
#   scripts/gpu-pack.sh                       # here, once (network)
#   scripts/gpu-check.sh [--quick|--bench|--brief]  # there (device tool:
#                                                   # carry .gpu/root.tar.gz)
#
# --quick: the build, the tests, the demo and determinism (no benchmarks);
# --bench: the benchmarks alone, in a tree --quick built (a second call on
# the same warm machine); --brief: the GPU rows of docs/seeds.md (the
# studies' own tables, trained on the GPU as studies NAME_cuda), their
# store and tables in $OUT. Each stage says PASS or FAIL and the script goes
# on; it exits 1 if any failed. Under 8 minutes on an H100 with 16 cores.
set -uo pipefail
cd "$(dirname "$0")/.."
here=$(pwd)
mode=${1:-all}  # all | --quick | --bench | --brief
out=${OUT:-$here/.gpu/out}
mkdir -p "$out"
t0=$(date +%s)
failed=()
stage() { echo; echo "== [$(($(date +%s) - t0)) s] $*"; }
check() {  # check NAME COMMAND...: runs it, says PASS or FAIL
  local name=$1
  shift
  if "$@"; then echo "PASS $name"; else echo "FAIL $name"; failed+=("$name"); fi
}

stage "the machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit,clocks.max.sm \
  --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
  "cudnn", torch.backends.cudnn.version(), "gpu", torch.cuda.get_device_name(0))' 2>&1
echo "cpu: $(nproc) x $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "os: $(. /etc/os-release && echo "$PRETTY_NAME"); $(c++ --version | head -1); $(cmake --version | head -1)"

stage "unpacking Debian's packages into .gpu/root"
root=$here/.gpu/root
if [ ! -d "$root/usr" ]; then
  mkdir -p "$root" && tar -C "$root" -xzf .gpu/root.tar.gz || { echo "FAIL unpack"; exit 1; }
fi
lib=$root/usr/lib/x86_64-linux-gnu
# protoc and pkg-config run during the build: Debian's, each with its own
# libraries (only they see them: the machine's programs keep the machine's).
mkdir -p "$root/wrap"
for tool in protoc pkg-config; do
  printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$lib" "$root/usr/bin/$tool" >"$root/wrap/$tool"
  chmod +x "$root/wrap/$tool"
done
export PATH="$root/wrap:$PATH"
export PKG_CONFIG_SYSROOT_DIR=$root
export PKG_CONFIG_LIBDIR=$lib/pkgconfig:$root/usr/share/pkgconfig

stage "configuring and building against this machine's torch"
build=$here/build-gpu
# Debian's libraries are found through the binaries' RPATH, for their own
# dependencies too (DT_RPATH, not RUNPATH: brotli for cpp-httplib, say).
linkflags="-L$lib -Wl,--disable-new-dtags -Wl,-rpath-link,$lib"
# The style checks, fuzzers and browser tests need clang, clang-format,
# clang-tidy and node, which a GPU machine need not have; none of the
# targets built here uses them, so each is named as absent (/bin/false).
absent=()
for tool in TS_CLANGXX CLANG_FORMAT CLANG_TIDY NPM NODE; do absent+=("-D$tool=/bin/false"); done
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S . -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DTRAINSCOPE_TORCH_PYTHON="$(command -v "${PYTHON:-python3}")" -DTRAINSCOPE_PYTHON=OFF \
  -DTRAINSCOPE_WEB=OFF -DTRAINSCOPE_POSTGRES=OFF -DTRAINSCOPE_WERROR=OFF \
  -DCMAKE_PREFIX_PATH="$root/usr" -DProtobuf_PROTOC_EXECUTABLE="$root/wrap/protoc" \
  -DPKG_CONFIG_EXECUTABLE="$root/wrap/pkg-config" \
  -DCMAKE_CXX_FLAGS="-isystem $root/usr/include -isystem $root/usr/include/x86_64-linux-gnu" -DCMAKE_BUILD_RPATH="$lib" \
  -DCMAKE_EXE_LINKER_FLAGS="$linkflags" -DCMAKE_SHARED_LINKER_FLAGS="$linkflags" \
  -DCMAKE_MODULE_LINKER_FLAGS="$linkflags" "${absent[@]}" >"$out/configure.log" 2>&1
rc=$?
grep -E "torch [0-9]|CMake Error" "$out/configure.log"
[ $rc -eq 0 ] || { tail -30 "$out/configure.log"; echo "FAIL configure"; exit 1; }
[ "${GPU_CHECK_STOP:-}" = configure ] && exit 0
cmake --build "$build" -j "$(nproc)" --target trainscope_cli trainscope_torch_commands \
  device_test bare_loop >"$out/build.log" 2>&1
rc=$?
grep -cE "warning:" "$out/build.log" | sed 's/^/build warnings (the machine'"'"'s compiler, not -Werror): /'
[ $rc -eq 0 ] || { grep -E "error|Error" -A3 "$out/build.log" | head -40; echo "FAIL build"; exit 1; }
echo "PASS build"
TS=$build/bin/trainscope
data=$root/usr/share/datasets/fashion-mnist

db=$out/gpu.db
if [ "$mode" = all ] || [ "$mode" = --quick ]; then
stage "the GPU tests (tests/train/device_test.cc)"
check device_test "$build/tests/device_test" --gtest_brief=1

stage "the manifest of a run on the GPU"
db=$out/gpu.db
rm -f "$db"
check demo_cuda "$TS" --store "sqlite:$db" train configs/demo.yaml --no-progress --name demo-cuda \
  --set compute.device=cuda --set data.path="$data"
"$TS" --store "sqlite:$db" runs show demo-cuda --json >"$out/demo-cuda.json" 2>&1
"$TS" --store "sqlite:$db" env | grep -E "^(gpu|driver|libraries\.(cuda|cudnn|cublas|nccl|torch\.(version|cuda|has_cuda)))" | head -30
python3 - "$db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for k, v in db.execute("select e.key, e.value from environment e join runs r on r.id = e.run_id "
                       "where r.name = 'demo-cuda' and (e.key like 'libraries.c%' or e.key like "
                       "'libraries.nccl%' or e.key like 'flags.%' or e.key like 'hardware.gpu%' or "
                       "e.key like 'driver.%') order by e.key"):
    print("manifest:", k, "=", v)
PY

stage "the demo on the CPU of this machine, for its accuracy"
check demo_cpu "$TS" --store "sqlite:$db" train configs/demo.yaml --no-progress --name demo-cpu \
  --set data.path="$data"
python3 - "$TS" "$db" <<'PY'
import json, subprocess, sys
ts, db = sys.argv[1], sys.argv[2]
def acc(name):
    out = subprocess.run([ts, "--store", "sqlite:" + db, "metrics", name, "test/accuracy", "--json"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["points"][-1]["value"]
g, c = acc("demo-cuda"), acc("demo-cpu")
print(f"demo accuracy: cuda {g:.4f}, cpu {c:.4f}, difference {abs(g - c) * 100:.2f} points "
      f"({'PASS' if abs(g - c) <= 0.01 else 'FAIL'}: within one point)")
PY

stage "determinism on the GPU: rerun --verify, and diff of two default runs"
det=(--set compute.device=cuda --set data.path="$data" --set train.epochs=1
     --set determinism.deterministic_algorithms=true --set determinism.cudnn_deterministic=true)
"$TS" --store "sqlite:$db" -q train configs/demo.yaml --no-progress --name det "${det[@]}"
verify() {
  local said
  said=$("$TS" --store "sqlite:$db" rerun det --verify 2>&1)
  echo "$said"
  echo "$said" | grep -qi 'bit-identical at all'
}
check rerun_verify_bit_identical verify
for n in a b; do
  "$TS" --store "sqlite:$db" -q train configs/demo.yaml --no-progress --name "default-$n" \
    --set compute.device=cuda --set data.path="$data" --set train.max_steps=300
done
"$TS" --store "sqlite:$db" diff default-a default-b 2>&1 | head -20

stage "numerics logmap on the GPU: torch ops, and a CUDA kernel with and without FMA contraction"
"$TS" numerics logmap 2>&1 | grep -iE "cuda|variant" | head -12
if command -v nvcc >/dev/null; then
  for fmad in true false; do
    nvcc -O3 -fmad=$fmad -DTS_FMAD=$([ $fmad = true ] && echo 1 || echo 0) \
      bench/logmap_cuda.cu -o "$build/logmap_cuda_$fmad" && "$build/logmap_cuda_$fmad"
  done
  echo "(seed 000's GPU value: x(2000) = 0.29076236)"
else
  echo "no nvcc here: the CUDA kernel is skipped"
fi

fi

if [ "$mode" = all ] || [ "$mode" = --bench ]; then
  stage "the trainer against a bare libtorch loop on the GPU, 400 steps, interleaved (5 rounds)"
  ts="$TS --store sqlite:{store} -q train configs/demo.yaml --no-progress --set train.max_steps=400 --set compute.device=cuda --set data.path=$data"
  python3 bench/interleave.py --rounds 5 --trainscope "$TS" --json "$out/interleave.json" \
    --case bare_loop "$build/bench/bare_loop --steps 400 --device cuda --data $data" \
    --case trainscope "$ts" \
    --case fingerprint_off "$ts --set fingerprint.every_steps=0" \
    --case fingerprint_every_10 "$ts --set fingerprint.every_steps=10"

  stage "the GPU's sources (configs/studies/gpu_sources.yaml --quick)"
  study=$out/gpu_sources.yaml
  sed -e "s|^base: .*|base: $here/configs/demo.yaml|" -e "s|^set:|set:\n  data.path: $data|" \
    configs/studies/gpu_sources.yaml >"$study"
  check gpu_sources_study "$TS" --store "sqlite:$db" -q study run "$study" --quick
  "$TS" --store "sqlite:$db" study report gpu_sources --format md 2>&1 | head -40
fi

if [ "$mode" = --brief ]; then
  stage "the studies' own tables on the GPU (docs/seeds.md; scripts/brief_tables.py --suffix _cuda)"
  brief=(python3 scripts/brief_tables.py run --store "sqlite:$out/brief.db" --work "$out/brief-files"
    --suffix _cuda --set compute.device=cuda --set data.path="$data")
  export TRAINSCOPE=$TS
  check brief_cuda "${brief[@]}" --only brief1_precision brief3_alexnet brief3_vgg11 brief5_probes
  check brief_cuda_seeds "${brief[@]}" --quick --only brief2_seeds
  python3 scripts/brief_tables.py tables --store "sqlite:$out/brief.db" --suffix _cuda \
    --only brief1_precision brief2_seeds brief3_alexnet brief3_vgg11 brief5_probes \
    --out "$out/brief-cuda.md" && head -60 "$out/brief-cuda.md"
fi

stage "done in $(($(date +%s) - t0)) s"
cp "$db" "$out/" 2>/dev/null
if [ ${#failed[@]} -gt 0 ]; then echo "FAILED: ${failed[*]}"; exit 1; fi
echo "all passed"
