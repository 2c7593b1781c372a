// trainscope's own identity, recorded with every run.
#pragma once

namespace trainscope::core {

// Semantic version, e.g. "0.1.0".
const char* version();
// Git commit trainscope was built from ("unknown" outside a checkout), with a
// "-dirty" suffix when the tree had uncommitted changes.
const char* build_commit();
// Compiler and flags trainscope was built with.
const char* build_compiler();

}  // namespace trainscope::core
