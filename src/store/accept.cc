#include "trainscope/store/accept.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

#include "trainscope/core/util.h"
#include "trainscope/store/query.h"
#include "trainscope/store/store.h"

namespace trainscope::store {

namespace {

// The length of the UTF-8 sequence that `lead` starts, in text that is
// valid UTF-8.
size_t sequence_length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

using core::holds_control;
using core::is_control_at;
using core::is_utf8;
using core::only_blanks;

}  // namespace

std::optional<std::string> key_problem(std::string_view key) {
  return core::text_problem(key, kMaxKeyBytes);
}

std::string shown_key(std::string_view key) { return core::escape_cut(key, 64); }

std::optional<std::string> key_refusal(std::string_view noun, std::string_view key) {
  auto why = key_problem(key);
  if (!why) return std::nullopt;
  return fmt::format("{} '{}' {}; {}", noun, shown_key(key), *why, kKeyRule);
}

std::optional<std::string> artifact_name_problem(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.size() > kMaxArtifactNameBytes)
    return fmt::format("is longer than {} bytes", kMaxArtifactNameBytes);
  if (!is_utf8(name)) return "is not UTF-8 text";
  if (holds_control(name)) return "holds a control character";
  if (name.front() == '/') return "is an absolute path";
  for (size_t start = 0; start <= name.size();) {
    const size_t end = std::min(name.find('/', start), name.size());
    const std::string_view part = name.substr(start, end - start);
    if (part == "." || part == "..") return "has a '.' or '..' part";
    // 'a/' or 'a//b' would name the folder, or the file 'a/b' under a
    // second name.
    if (part.empty()) return "has an empty part (a '/' at its end or '//')";
    if (part.size() > kMaxArtifactPartBytes)
      return fmt::format("has a part longer than {} bytes", kMaxArtifactPartBytes);
    if (!part.empty() && only_blanks(part)) return "has a part that is only blanks";
    start = end + 1;
  }
  return std::nullopt;
}

std::optional<std::string> metric_key_problem(std::string_view key) {
  return key_refusal("metric key", key);
}

bool is_own_metric(std::string_view key) {
  if (key.starts_with("gpu")) {  // gpu0/, gpu12/: not gpu_util or gpus
    const size_t digits = key.find_first_not_of("0123456789", 3);
    return digits != 3 && digits != std::string_view::npos && key[digits] == '/';
  }
  return key == "exit_code" || key.starts_with("proc/") || key.starts_with("sys/") ||
         key.starts_with("energy/");
}

std::optional<std::string> own_metric_problem(std::string_view key) {
  if (!is_own_metric(key) && !key.starts_with("probe/") && !key.starts_with("profile/"))
    return std::nullopt;
  return fmt::format(
      "metric '{}' is one trainscope records itself in this run (exit_code; proc/*, sys/*, "
      "gpuN/* and energy/* from its resource sampler; probe/* from its probes; profile/* from "
      "its profiler); log it under another key",
      shown_key(key));
}

std::optional<std::string> own_metric_value_problem(std::string_view key, double value) {
  if (!is_own_metric(key)) return std::nullopt;
  if (key == "exit_code") {
    if (value >= 0 && value <= 255 && value == std::floor(value)) return std::nullopt;
    return fmt::format("metric 'exit_code' is {}, which no program exits with (0 to 255)", value);
  }
  if (std::isfinite(value) && value >= 0) return std::nullopt;
  return fmt::format(
      "metric '{}' is {}, which trainscope's resource sampler never records (a count, rate or "
      "amount: finite and not negative)",
      shown_key(key), value);
}

std::optional<std::string> record_problem(std::string_view kind, std::string_view key,
                                          int64_t step) {
  std::string why;
  if (key.size() > kMaxRecordKeyBytes)
    why = fmt::format("is {} bytes, over {}", key.size(), kMaxRecordKeyBytes);
  else if (!is_utf8(key))
    why = "is not UTF-8 text";
  else if (holds_control(key))
    why = "holds a control character";
  else if (!key.empty() && only_blanks(key))  // empty: the run's own (trainscope's records)
    why = "is only blanks";
  if (!why.empty())
    return fmt::format("record key '{}' of kind {} {}", shown_key(key),
                       core::escape_for_display(kind), why);
  if (auto s = step_problem(step))
    return fmt::format("record '{}' of kind {}: step {}", shown_key(key),
                       core::escape_for_display(kind), *s);
  return std::nullopt;
}

bool same_param_value(std::string_view stored, std::string_view given) {
  if (stored == given) return true;
  const auto a = parse_number(stored), b = parse_number(given);  // as a filter reads them
  return a && b && (*a == *b || (std::isnan(*a) && std::isnan(*b)));
}

std::optional<std::string> own_artifact_kind_problem(std::string_view kind) {
  if (kind != "checkpoint" && kind != "trace" && kind != "predictions" && kind != "code")
    return std::nullopt;
  return fmt::format(
      "artifact kind '{}' is one trainscope writes and reads itself (checkpoint: a training's "
      "checkpoints, which resume and rerun load; trace: the profiler's trace, which profile show "
      "--ops reads; predictions: a training's test predictions, which study report compares; "
      "code: the git diff that env recreate applies); log it under another kind",
      kind);
}

std::optional<std::string> own_tag_problem(std::string_view key) {
  static constexpr std::string_view kOwn[] = {"kind",
                                              "exit_code",
                                              "killed_by_signal",
                                              "resumed_from",
                                              "torch.threads",
                                              "fingerprint.hash",
                                              "git.diff_stored",
                                              "model.custom",
                                              "model.flipped_weight",
                                              "monitor.interval_s",
                                              "compute.device.resumed_on",
                                              "output.held_open_by_a_descendant",
                                              "target_accuracy.reached_at_epoch",
                                              "rerun_of"};
  static constexpr std::string_view kOwnPrefixes[] = {
      "study.", "watch.", "dist.", "import.", "metric_lines.", "energy.", "slurm."};
  bool own = std::find(std::begin(kOwn), std::end(kOwn), key) != std::end(kOwn);
  for (auto p : kOwnPrefixes) own = own || key.starts_with(p);
  if (!own) return std::nullopt;
  return fmt::format(
      "tag '{}' is one trainscope records itself (kind, exit_code, resumed_from, and study.*, "
      "watch.*, dist.*, import.*, slurm.*, ...), which its readers act on; tag with another key",
      shown_key(key));
}

std::optional<std::string> tag_key_problem(std::string_view key) {
  if (auto why = key_refusal("tag key", key)) return why;
  return own_tag_problem(key);
}

std::optional<std::string> param_key_problem(std::string_view key) {
  return key_refusal("param", key);
}

std::optional<std::string> value_refusal(std::string_view noun, std::string_view key,
                                         std::string_view value) {
  if (value.size() > kMaxValueBytes)
    return fmt::format("the value of {} '{}' is longer than {} bytes", noun, shown_key(key),
                       kMaxValueBytes);
  // Text, as every reader gives it back (JSON and the API would give
  // U+FFFD for bytes that are not, and the value could not be given again).
  if (!is_utf8(value))
    return fmt::format("the value of {} '{}' is not UTF-8 text", noun, shown_key(key));
  return std::nullopt;
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
  // A byte that is not UTF-8 becomes U+FFFD, a control character '_'; the
  // name ends before the character that would pass kMax bytes.
  const std::string text = core::valid_utf8(from);
  std::string out;
  for (size_t i = 0, n = 0; i < text.size(); i += n) {
    n = sequence_length(static_cast<unsigned char>(text[i]));
    const std::string_view piece =
        is_control_at(text, i, n) ? "_" : std::string_view(text).substr(i, n);
    if (out.size() + piece.size() > kMax) break;
    out += piece;
  }
  if (only_blanks(out)) return std::string(fallback);
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

std::optional<std::string> StepOrder::problem(std::string_view key, int64_t step) const {
  const auto before = last(key);
  if (!before || step >= *before) return std::nullopt;
  return fmt::format(
      "metric '{}' at step {} goes back: it was logged at step {} before; steps of a key only go "
      "forward",
      shown_key(key), step, *before);
}

void StepOrder::take(std::string_view key, int64_t step) {
  if (auto it = last_.find(key); it != last_.end())
    it->second = std::max(it->second, step);
  else
    last_.emplace(std::string(key), step);
}

std::optional<int64_t> StepOrder::last(std::string_view key) const {
  if (auto it = last_.find(key); it != last_.end()) return it->second;
  return std::nullopt;
}

}  // namespace trainscope::store
