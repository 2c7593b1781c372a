// The fingerprint capability's config section: how often every parameter,
// buffer and the loss are hashed (what `trainscope diff` and `rerun
// --verify` compare).
#pragma once

#include <cstdint>

namespace trainscope::fingerprint {

// The `fingerprint` section (config.section<FingerprintConfig>()):
// fingerprints are taken at the steps that are multiples of every_steps.
struct FingerprintConfig {
  static constexpr const char* kName = "fingerprint";
  int64_t every_steps = 1;  // 0: off
};

}  // namespace trainscope::fingerprint
