// `key=value` items of a run's params and tags, as every entry point reads
// them: the CLI's --param and --tag, $TRAINSCOPE_TAGS (read with the rest
// of a run's identity by instrument/run_identity.h).
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace trainscope::store {

// "key=value" split at its first '='. Throws Error(kUsage) naming `what`
// (e.g. "--param") and showing `example` when the item has no '=' or an
// empty key, and naming `what` when the key or the value breaks the rule
// of accept.h (a key of 1 to 256 bytes, a value of at most 4096).
std::pair<std::string, std::string> parse_key_value(std::string_view item, std::string_view what,
                                                    std::string_view example);

}  // namespace trainscope::store
