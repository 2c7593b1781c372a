#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh needs on a GPU machine without network:
# Debian 12's packages of trainscope's build dependencies and the demo's
# Fashion-MNIST, downloaded from Debian (apt-get download, into
# .gpu-debs/), unpacked here into a staging folder, trimmed of what a build
# does not read (documentation, static libraries, the Boost headers that
# Boost.Math does not include), and packed into .gpu/root.tar.gz. Both
# folders are ignored by git; .gpu travels to the GPU machine (the device
# tool's `carry: [".gpu"]`), where gpu-check.sh unpacks it into .gpu/root,
# a folder of the tree, never into /. PyTorch, CUDA, CMake, ninja and the
# compiler are the GPU machine's own.
#   scripts/gpu-pack.sh            # on this Debian 12 machine, with network
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGES=(
  libsqlite3-dev libsqlite3-0 libyaml-cpp-dev libyaml-cpp0.7 nlohmann-json3-dev libcli11-dev
  libfmt-dev libfmt9 libssl-dev libssl3 zlib1g-dev zlib1g libxxhash-dev libxxhash0
  libmpfr-dev libmpfr6 libgmp-dev libgmp10 libboost1.74-dev
  libprotobuf-dev libprotobuf32 protobuf-compiler libprotoc32
  libcpp-httplib-dev libcpp-httplib0.11 libbrotli1 libbrotli-dev libgloo-dev
  libgtest-dev libgmock-dev libbenchmark-dev libbenchmark1debian
  pkgconf pkgconf-bin libpkgconf3
  dataset-fashion-mnist
)
mkdir -p .gpu-debs .gpu
(cd .gpu-debs && apt-get download "${PACKAGES[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for p in "${PACKAGES[@]}"; do
  deb=$(ls -t .gpu-debs/"${p}"_*.deb | head -1)
  dpkg -x "$deb" "$stage"
done
rm -rf "$stage"/usr/share/doc "$stage"/usr/share/man "$stage"/usr/share/lintian
find "$stage" -name '*.a' ! -name 'libgtest*' ! -name 'libgmock*' ! -name 'libbenchmark*' -delete
# Boost: what trainscope's includes reach (the compiler says), and all of
# Boost.Math, Config and Predef (reached under other compilers' macros).
keep=$(mktemp)
grep -rh '#include <boost/' src tests | sed 's/.*#include //' | sort -u |
  sed 's/.*/#include &/' | g++ -std=c++20 -MM -I"$stage/usr/include" -x c++ - |
  tr ' \\' '\n\n' | grep '/boost/' | sed "s|^$stage/||" >"$keep"
(cd "$stage" && find usr/include/boost/math usr/include/boost/config usr/include/boost/predef -type f) >>"$keep"
mv "$stage/usr/include/boost" "$stage/boost-all"
(cd "$stage" && sed 's|^usr/include/boost/|boost-all/|' "$keep" | sort -u |
  while read -r f; do mkdir -p "usr/include/boost/$(dirname "${f#boost-all/}")" &&
    cp "$f" "usr/include/boost/${f#boost-all/}"; done)
rm -rf "$stage/boost-all" "$keep"
tar -C "$stage" -czf .gpu/root.tar.gz .
echo "gpu-pack: .gpu/root.tar.gz $(du -m .gpu/root.tar.gz | cut -f1) MB, from ${#PACKAGES[@]} Debian packages"
git ls-files -z | du -cb --files0-from=- | tail -1 |
  awk '{printf "gpu-pack: with the tree that travels: %.1f MB more (64 MiB in all)\n", $1/1e6}'
