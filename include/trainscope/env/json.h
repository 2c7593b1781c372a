// JSON of environment differences (`env diff`, a run diff's environment)
// and of `env recreate`'s recipe. Pure functions: they hold nothing and
// may run on any thread.
#pragma once

#include <vector>

#include "trainscope/env/manifest.h"
#include "trainscope/env/recreate.h"
#include "trainscope/format/format.h"

namespace trainscope::env {

// [{group, key, a, b}] in the given order.
format::Json differences_json(const std::vector<Difference>& diffs);
// The release, the pinned packages (each with its pool URL and its
// repacked file, "" when none, and its check when `checks` holds one per
// package, as check_pins returns: ok, message, source, note), the Python
// packages and trainscope's commit.
format::Json recipe_json(const Recipe& r, const std::vector<PinCheck>& checks);

}  // namespace trainscope::env
