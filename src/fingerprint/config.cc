// The fingerprint section of a config (config/section.h).
#include "trainscope/fingerprint/config.h"

#include "trainscope/config/section.h"

namespace trainscope::fingerprint {

TRAINSCOPE_CONFIG_SECTION(
    fingerprint,
    config::Section{
        .name = FingerprintConfig::kName,
        .fields = {config::int_key(
            "fingerprint.every_steps", &FingerprintConfig::every_steps, 0, config::kMaxSteps,
            "Hash every parameter, buffer and the loss every N steps (0: off)")}});

}  // namespace trainscope::fingerprint
