// A run's identity from the environment, for every command that starts a
// run (`train`, `watch`, a study's children): what W&B's WANDB_* and
// MLflow's MLFLOW_* variables do. Explicit options win over these, which
// win over a config.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>

namespace trainscope::store {

// What the environment says of a run (run_env()): empty values when the
// variables are unset.
struct RunEnv {
  std::string experiment;                   // $TRAINSCOPE_EXPERIMENT; "" when unset or empty
  std::string name;                         // $TRAINSCOPE_RUN_NAME
  std::map<std::string, std::string> tags;  // $TRAINSCOPE_TAGS: "k=v,k2=v2"
};

// Reads the variables; throws Error(kUsage) naming an item of
// TRAINSCOPE_TAGS that is not key=value.
RunEnv run_env();

// "key=value" split at its first '='. Throws Error(kUsage) naming `what`
// (e.g. "--param") and showing `example` when the item has no '=' or an
// empty key, and naming `what` when the key or the value breaks the rule
// of accept.h (a key of 1 to 256 bytes, a value of at most 4096).
std::pair<std::string, std::string> parse_key_value(std::string_view item, std::string_view what,
                                                    std::string_view example);

}  // namespace trainscope::store
