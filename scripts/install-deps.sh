#!/usr/bin/env bash
# Installs the Debian packages trainscope needs: --build, what building the CLI
# and running the demo need (`make demo`); --all (the default), also what the
# tests need (`make test`). Idempotent: when every package is already
# installed it does not touch apt at all. Must run as root (or with sudo
# available) the first time.
set -euo pipefail

# What building the CLI (its libtorch half, the dashboard, PostgreSQL stores)
# and training the demo need: `make demo` installs these only.
BUILD_PACKAGES=(
  build-essential cmake ccache pkg-config git python3 python3-venv python3-dev
  libsqlite3-dev
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libfmt-dev
  libssl-dev zlib1g-dev libxxhash-dev
  libmpfr-dev libboost-math-dev
  dataset-fashion-mnist
  libprotobuf-dev protobuf-compiler  # TensorBoard event files
  libcpp-httplib-dev     # trainscope serve (the dashboard)
  libpqxx-dev            # the PostgreSQL store backend
  libgloo-dev            # headers c10d's ProcessGroupGloo.hpp includes (train --nproc; docs/torch.md)
)

# What the tests, the benchmarks and the Python package add: `make test`
# (and `install-deps.sh --all`) installs these as well.
TEST_PACKAGES=(
  clang-format sqlite3
  clang-tidy     # Style.NamesFollowTheHouseRules (scripts/naming_check.py)
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-scipy  # the statistics are tested against SciPy
  python3-statsmodels r-cran-lme4 r-base-core  # stats_models_test: REML, ANOVA and power vs statsmodels and lme4
  chromium       # HTML reports are tested in a headless browser
  python3-protobuf  # an independent runtime decodes TensorBoard files in the tests
  clang libclang-rt-dev  # the sanitizer build and its libFuzzer targets
  slurm-wlm munge        # studies through Slurm; the tests start a one-node cluster
  postgresql             # the tests start their own server (initdb, pg_ctl) on a loopback port
  faketime               # a writer whose clock is off, for the cross-host reaper test
  python3-pytest            # its tests
  dpkg-repack fakeroot      # env recreate --check rebuilds versions no archive serves from the installed files
)

case "${1:---all}" in
  --build) PACKAGES=("${BUILD_PACKAGES[@]}") ;;
  --all) PACKAGES=("${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}") ;;
  *) echo "usage: $0 [--build|--all]  (--build: what building the CLI and the demo need)" >&2; exit 2 ;;
esac

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
