#!/usr/bin/env bash
# Installs the Debian packages trainscope needs. Idempotent: when every package
# is already installed it does not touch apt at all. Must run as root (or with
# sudo available) the first time.
set -euo pipefail

PACKAGES=(
  build-essential cmake ccache pkg-config git clang-format python3
  libsqlite3-dev sqlite3
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libssl-dev zlib1g-dev libxxhash-dev
  libmpfr-dev libboost-math-dev
  libtorch-dev libopenblas0-pthread dataset-fashion-mnist
  python3-torch  # the watch tests train with Debian's PyTorch; benchmarks compare against it
  python3-scipy  # the statistics are tested against SciPy
  python3-statsmodels r-cran-lme4 r-base-core  # stats_models_test: REML, ANOVA and power vs statsmodels and lme4
  chromium       # HTML reports are tested in a headless browser
  libprotobuf-dev protobuf-compiler  # TensorBoard event files
  python3-protobuf  # an independent runtime decodes them in the tests
  clang libclang-rt-dev  # the sanitizer build and its libFuzzer targets
  libcpp-httplib-dev     # trainscope serve (the dashboard)
  slurm-wlm munge        # studies through Slurm; the tests start a one-node cluster
  libpqxx-dev            # the PostgreSQL store backend
  postgresql             # the tests start their own server (initdb, pg_ctl) on a loopback port
  faketime               # a writer whose clock is off, for the cross-host reaper test
  pybind11-dev python3-dev  # the Python package (import trainscope)
  python3-pytest            # its tests
  libgloo-dev               # headers c10d's ProcessGroupGloo.hpp includes (train --nproc)
)

# Node.js and npm come with the machine (not from Debian's packages, whose
# npm would replace that Node): the dashboard's front end and the browser
# tests install their npm packages from lock files at build time.
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "install-deps: '$tool' is missing; install Node.js 20 with npm" >&2; exit 1; }
done

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} Debian packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO="sudo"; else
    echo "install-deps: missing packages (${missing[*]}) and not root; run 'sudo $0'" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
