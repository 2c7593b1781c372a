#!/usr/bin/env bash
# The torch wheel ships no gloo headers; dist/torch/world.cc compiles c10d's
# ProcessGroupGloo.hpp against Debian's (2022), whose gloo classes differ in
# layout from the gloo inside the wheel's libtorch_cpu (docs/torch.md). That
# is safe only while every gloo call stays inside libtorch: this library must
# define and reference no gloo symbol of its own (an inline gloo function or
# vtable emitted here could even replace libtorch's weak copy at load time).
set -euo pipefail
lib=$1
found=$(nm -DC "$lib" | grep -E 'gloo::' || true)
if [ -n "$found" ]; then
  echo "$lib holds gloo code compiled from Debian's gloo headers, which do not match the wheel's gloo:"
  echo "$found"
  exit 1
fi
echo "$(nm -DC "$lib" | grep -c 'ProcessGroupGloo') ProcessGroupGloo symbols, no gloo symbol of its own"
