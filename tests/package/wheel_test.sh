#!/usr/bin/env bash
# `pip install .` as a PyTorch user runs it, checked end to end: a fresh
# virtual environment whose torch is the project's (.venv's site-packages
# joined by a .pth file, so no second copy of several GB), then pip install
# of the source tree with build isolation on (scikit-build-core from the
# pinned wheels in WHEELHOUSE: offline, as nothing may be downloaded at test
# time), then `import trainscope`, the `trainscope` command it puts on PATH,
# and a short training of the demo config. The build must take the
# environment's torch, not fetch one (no torch in WHEELHOUSE).
#   wheel_test.sh SOURCE_DIR TORCH_PYTHON WHEELHOUSE BUILD_DIR
set -euo pipefail
src=$1; torch_python=$2; wheelhouse=$3; build=$4
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$torch_python" -m venv --without-pip "$tmp/env"  # pip, setuptools: the .venv's, as torch
py=$tmp/env/bin/python
purelib='import sysconfig; print(sysconfig.get_paths()["purelib"])'
"$torch_python" -c "$purelib" > "$("$py" -c "$purelib")/project-torch.pth"
"$py" -c 'import torch; print("torch", torch.__version__, "from", torch.__file__)'
# The web dashboard's front end needs npm at build time: off here (offline).
# Make's generator, as the build that ran the suite used: with the Makefile's
# ccache settings (relative paths) this build then takes its compiled objects.
export CMAKE_GENERATOR="Unix Makefiles" CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
start=$(date +%s)
"$py" -m pip install --no-index --find-links "$wheelhouse" --no-cache-dir -q \
  -C build-dir="$build" -C cmake.define.TRAINSCOPE_WEB=OFF "$src"
echo "pip install . took $(( $(date +%s) - start )) s"
"$py" -m pip show trainscope | sed -n '1,2p'
cd "$tmp"
"$py" -c 'import trainscope, torch; print("import trainscope: ok, on torch", torch.__version__)'
ts=$tmp/env/bin/trainscope
"$ts" --version
"$ts" train "$src/configs/demo.yaml" --name wheel --no-progress \
  --set data.train_subset=512 --set data.test_subset=128 --set train.epochs=1
"$ts" env --with-torch | grep -E '^libraries\.torch\.(version|distribution|installer) '
"$py" - <<'PY'
import trainscope
with trainscope.start_run(name="py-wheel") as run:
    run.log({"x": 1.0}, step=0)
print("a Python run recorded:", run.name)
PY
"$ts" runs list
echo "pip install . works"
