#include "trainscope/store/accept.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "trainscope/core/util.h"

namespace trainscope::store {

std::optional<std::string> key_problem(std::string_view key) {
  if (key.empty()) return "is empty";
  if (key.size() > kMaxKeyBytes) return fmt::format("is longer than {} bytes", kMaxKeyBytes);
  const bool control = std::any_of(key.begin(), key.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  if (control) return "holds a control character";
  if (key.find_first_not_of(' ') == std::string_view::npos) return "is only blanks";
  return std::nullopt;
}

std::string shown_key(std::string_view key) {
  return core::escape_for_display(key.substr(0, 64)) + (key.size() > 64 ? "..." : "");
}

std::optional<std::string> key_refusal(std::string_view noun, std::string_view key) {
  auto why = key_problem(key);
  if (!why) return std::nullopt;
  return fmt::format("{} '{}' {}; {}", noun, shown_key(key), *why, kKeyRule);
}

std::optional<std::string> metric_key_problem(std::string_view key) {
  return key_refusal("metric key", key);
}

std::optional<std::string> tag_key_problem(std::string_view key) {
  return key_refusal("tag key", key);
}

std::optional<std::string> param_key_problem(std::string_view key) {
  return key_refusal("param", key);
}

std::optional<std::string> value_refusal(std::string_view noun, std::string_view key,
                                         std::string_view value) {
  if (value.size() <= kMaxValueBytes) return std::nullopt;
  return fmt::format("the value of {} '{}' is longer than {} bytes", noun, shown_key(key),
                     kMaxValueBytes);
}

std::optional<std::string> param_value_problem(std::string_view key, std::string_view value) {
  return value_refusal("param", key, value);
}

std::optional<std::string> tag_value_problem(std::string_view key, std::string_view value) {
  return value_refusal("tag", key, value);
}

namespace {

std::optional<std::string> name_refusal(std::string_view noun, std::string_view name) {
  auto why = key_problem(name);
  if (!why) return std::nullopt;
  return fmt::format("{} '{}' {}; {}", noun, shown_key(name), *why, kNameRule);
}

}  // namespace

std::optional<std::string> run_name_problem(std::string_view noun, std::string_view name) {
  if (name.empty()) return std::nullopt;
  return name_refusal(noun, name);
}

std::optional<std::string> experiment_problem(std::string_view noun, std::string_view experiment) {
  return name_refusal(noun, experiment);
}

std::string derived_name(std::string_view from, std::string_view fallback) {
  constexpr size_t kMax = kMaxKeyBytes - 16;
  std::string out(from.substr(0, kMax));
  // A cut inside a character drops its first bytes too (UTF-8's
  // continuation bytes are 10xxxxxx).
  if (from.size() > kMax) {
    size_t end = out.size();
    while (end > 0 && (static_cast<unsigned char>(from[end]) & 0xc0) == 0x80) --end;
    out.resize(end);
  }
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '_';
  if (out.find_first_not_of(' ') == std::string::npos) return std::string(fallback);
  return out;
}

std::string step_refusal(std::string_view written) {
  return fmt::format("step {} is not an integer from 0 to 2^53", written);
}

std::optional<std::string> step_problem(int64_t step) {
  if (step >= 0 && step <= kMaxStep) return std::nullopt;
  return step_refusal(std::to_string(step));
}

std::optional<std::string> step_problem(double step) {
  if (step >= 0 && step <= static_cast<double>(kMaxStep) && step == std::floor(step))
    return std::nullopt;
  return step_refusal(fmt::format("{}", step));
}

}  // namespace trainscope::store
