// A capability's configuration section: its keys, their defaults, meanings
// (for `trainscope config keys`), ranges, and the checks across its keys.
// A capability declares its section in its own folder, once:
//
//   struct FingerprintConfig {
//     static constexpr const char* kName = "fingerprint";
//     int64_t every_steps = 1;  // the default
//   };
//   TRAINSCOPE_CONFIG_SECTION(fingerprint, config::Section{
//       .name = FingerprintConfig::kName,
//       .fields = {config::int_key("fingerprint.every_steps", &FingerprintConfig::every_steps,
//                                  0, config::kMaxSteps, "Hash every N steps (0: off)")}});
//
// and reads it with config.section<FingerprintConfig>(). From then on
// configs parse, check, print (to_yaml) and
// list its keys like the loop's own. The loop's own sections (run, seeds,
// data, ..., determinism) are Sections in the same registry, first, in
// Config's member order; the capabilities' come after them, in the order
// of their names.
//
// Thread-safety: register sections before any config is parsed (the macro
// does so while the library or program loads); parsing is safe from any
// thread once they are.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/config/config.h"
#include "trainscope/core/at_load.h"
#include "trainscope/core/error.h"

namespace trainscope::config {

// What a Field's value is; `config keys` and the YAML writer read it.
enum class Kind { kInt, kDouble, kBool, kString, kIntList };

// One key: how to read, write and check its value in a Config.
struct Field {
  std::string key;   // "probes.every"
  std::string help;  // one line for `config keys`
  Kind kind = Kind::kString;
  std::vector<std::string> choices;  // a string key's only values; empty: free text
  std::function<std::string(const Config&)> get;
  // Throws Error(kUsage) naming the key when `value` is not of its kind.
  std::function<void(Config&, const std::string& value)> set;
  // Why the key's value is outside its range ("must be in [0, 1] (got 2)"),
  // or empty.
  std::function<std::string(const Config&)> check;
  std::string range;  // what the key accepts, for `config keys`
};

// The values a double key accepts: lo..hi, either end open; NaN and the
// infinities are outside every interval.
struct Interval {
  double lo, hi;
  bool lo_open, hi_open;
};
// The open end of an Interval (a double key without an upper bound).
inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr Interval kUnit{0, 1, false, false};           // [0, 1]
inline constexpr Interval kUnitBelowOne{0, 1, false, true};    // [0, 1)
inline constexpr Interval kPositive{0, kInf, true, true};      // finite, > 0
inline constexpr Interval kNonNegative{0, kInf, false, true};  // finite, >= 0

// Limits of the keys that count things: far above any training this
// machine could run, low enough that no product of two overflows an int64.
inline constexpr int64_t kMaxSamples = 1'000'000'000;
inline constexpr int64_t kMaxEpochs = 1'000'000;
inline constexpr int64_t kMaxSteps = 1'000'000'000'000;
inline constexpr int64_t kMaxBatch = 1 << 24;
inline constexpr int64_t kMaxThreads = 1024;

// The keys of a section struct S (see the file comment), by member.
namespace detail {
Field int_field(std::string key, std::string help, int64_t lo, int64_t hi,
                std::function<int64_t(const Config&)> get,
                std::function<void(Config&, int64_t)> set);
Field double_field(std::string key, std::string help, Interval range,
                   std::function<double(const Config&)> get,
                   std::function<void(Config&, double)> set);
Field bool_field(std::string key, std::string help, std::function<bool(const Config&)> get,
                 std::function<void(Config&, bool)> set);
Field string_field(std::string key, std::string help, std::vector<std::string> choices,
                   std::string range, std::function<std::string(const std::string&)> check,
                   std::function<std::string(const Config&)> get,
                   std::function<void(Config&, const std::string&)> set);
}  // namespace detail

// The key `key` of member `m` of S, an integer in [lo, hi]. Its set throws
// Error(kUsage) naming the key for text that is not an integer (or is one
// beyond int64); its check says why a value outside [lo, hi] is refused.
template <typename S>
Field int_key(std::string key, int64_t S::*m, int64_t lo, int64_t hi, std::string help) {
  return detail::int_field(
      std::move(key), std::move(help), lo, hi, [m](const Config& c) { return c.section<S>().*m; },
      [m](Config& c, int64_t v) { c.section<S>().*m = v; });
}
// The key `key` of member `m` of S, a number in `range`. Its set throws
// Error(kUsage) naming the key for text strtod does not read whole; its
// check refuses NaN, the infinities and numbers outside `range`.
template <typename S>
Field double_key(std::string key, double S::*m, Interval range, std::string help) {
  return detail::double_field(
      std::move(key), std::move(help), range, [m](const Config& c) { return c.section<S>().*m; },
      [m](Config& c, double v) { c.section<S>().*m = v; });
}
// The key `key` of member `m` of S, a boolean as YAML 1.1 spells it (true,
// yes, on, y and their negatives, any case) or 1/0. Its set throws
// Error(kUsage) naming the key otherwise.
template <typename S>
Field bool_key(std::string key, bool S::*m, std::string help) {
  return detail::bool_field(
      std::move(key), std::move(help), [m](const Config& c) { return c.section<S>().*m; },
      [m](Config& c, bool v) { c.section<S>().*m = v; });
}
// A string of fixed choices (checked when set).
template <typename S>
Field choice_key(std::string key, std::string S::*m, std::vector<std::string> choices,
                 std::string help) {
  return detail::string_field(
      std::move(key), std::move(help), std::move(choices), "", nullptr,
      [m](const Config& c) { return c.section<S>().*m; },
      [m](Config& c, const std::string& v) { c.section<S>().*m = v; });
}
// Free text; `check` says why a value is refused (empty: accepted) and
// `range` what is accepted.
template <typename S>
Field text_key(std::string key, std::string S::*m, std::string range,
               std::function<std::string(const std::string&)> check, std::string help) {
  return detail::string_field(
      std::move(key), std::move(help), {}, std::move(range), std::move(check),
      [m](const Config& c) { return c.section<S>().*m; },
      [m](Config& c, const std::string& v) { c.section<S>().*m = v; });
}

// Why a value of text is refused: more than `max` bytes or fewer than
// `min`, or a control character; empty when it is accepted.
std::string text_violation(const std::string& v, size_t min, size_t max);
// For a key that holds a count as text ("preset" or an integer): empty when
// `v` is one of `words` or an integer in [lo, hi].
std::string count_violation(const std::string& v, const std::vector<std::string>& words, int64_t lo,
                            int64_t hi);

// A check across keys that failed: the keys whose values are blamed (the
// --set or line that gave them is named), the key it is about, and why.
struct Violation {
  std::vector<std::string> keys;
  std::string subject;
  std::string why;
};

// A capability's section: what register_section takes and sections()
// returns (a copy). The fields' keys all start with `name` and a dot.
struct Section {
  std::string name;  // the first part of its keys: "probes"
  std::vector<Field> fields;
  // A key that the section's name alone sets: `probes: standard` and
  // `--set probes=full` mean probes.preset. Empty: none.
  std::string shorthand;
  // Checks across the section's keys, after every key was checked alone.
  std::function<std::optional<Violation>(const Config&)> check_together;
};

// Adds a capability's section. Throws Error(kUsage) when its name is taken
// (by the loop's sections too) or a key is outside it.
void register_section(Section section);
// Every section: the loop's, then the capabilities' in the order of their
// names (a config's YAML and `config keys` list them so).
std::vector<Section> sections();

// Registers a section while the library or program that defines it loads.
#define TRAINSCOPE_CONFIG_SECTION(ID, ...)           \
  TRAINSCOPE_AT_LOAD(trainscope_config_section_##ID, \
                     ::trainscope::config::register_section(__VA_ARGS__))

}  // namespace trainscope::config
