#include "trainscope/format/axes.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <string_view>

namespace trainscope::format {

namespace {

// The splits a key may begin with ("test/loss"); the rest names the quantity.
constexpr std::array<std::string_view, 6> kSplits = {"train", "test",       "val",
                                                     "valid", "validation", "eval"};
// What the trainer records once per epoch (metrics/observer.h), besides
// the evaluation of a split.
const std::set<std::string, std::less<>> kEpochKeys = {
    "train/epoch_loss", "train/accuracy", "epoch_time_s",     "eval_time_s",
    "samples_per_s",    "steps_per_s",    "time_to_target_s", "epochs_to_target"};
const std::set<std::string, std::less<>> kEvalQuantities = {"loss", "accuracy", "macro_f1", "top5",
                                                            "roc_auc"};
const std::set<std::string, std::less<>> kBookkeeping = {"epoch",
                                                         "lr",
                                                         "epoch_time_s",
                                                         "eval_time_s",
                                                         "train/step_ms",
                                                         "samples_per_s",
                                                         "steps_per_s",
                                                         "time_to_first_batch_s",
                                                         "time_to_target_s",
                                                         "epochs_to_target"};

// {split, quantity} of "split/quantity", or {"", key}.
std::pair<std::string_view, std::string_view> split_of(std::string_view key) {
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos) return {"", key};
  const std::string_view split = key.substr(0, slash);
  if (std::find(kSplits.begin(), kSplits.end(), split) == kSplits.end()) return {"", key};
  return {split, key.substr(slash + 1)};
}

bool recorded_per_epoch(std::string_view key) {
  if (kEpochKeys.count(key)) return true;
  auto [split, quantity] = split_of(key);
  return !split.empty() && split != "train" && kEvalQuantities.count(quantity);
}

}  // namespace

const char* to_string(XKind x) { return x == XKind::kEpoch ? "epoch" : "step"; }
const char* to_string(SeriesGroup g) {
  return g == SeriesGroup::kBookkeeping ? "bookkeeping" : "learning";
}

SeriesGroup series_group(const std::string& key) {
  const bool timing = key.ends_with("_time_s") || key.ends_with("_ms") || key.ends_with("_per_s");
  return kBookkeeping.count(key) || timing ? SeriesGroup::kBookkeeping : SeriesGroup::kLearning;
}

std::string chart_of(const std::string& key) {
  if (series_group(key) == SeriesGroup::kBookkeeping) return key;
  auto [split, quantity] = split_of(key);
  if (split.empty() || quantity.empty()) return key;
  if (quantity == "epoch_loss") return "loss";  // the epoch's mean training loss
  return std::string(quantity);
}

double EpochEnds::step_at_end(int64_t epoch) const {
  if (step_of.empty()) return static_cast<double>(epoch);
  if (auto it = step_of.find(epoch); it != step_of.end()) return static_cast<double>(it->second);
  auto last = std::prev(step_of.end());
  if (epoch < last->first) {  // a gap: between the neighbouring ends
    auto next = step_of.upper_bound(epoch);
    auto prev = next == step_of.begin() ? step_of.end() : std::prev(next);
    const double s0 = prev == step_of.end() ? 0 : static_cast<double>(prev->second);
    const double e0 = prev == step_of.end() ? 0 : static_cast<double>(prev->first);
    return s0 + (static_cast<double>(next->second) - s0) * (static_cast<double>(epoch) - e0) /
                    (static_cast<double>(next->first) - e0);
  }
  const double length = static_cast<double>(last->second) / static_cast<double>(last->first);
  const double guess =
      static_cast<double>(last->second) + length * static_cast<double>(epoch - last->first);
  return std::min(guess,
                  std::max(static_cast<double>(last->second), static_cast<double>(last_step)));
}

double EpochEnds::epoch_at(double step) const {
  if (step_of.empty()) return 0;
  double e0 = 0, s0 = 0;
  for (const auto& [e, s] : step_of) {
    const double e1 = static_cast<double>(e), s1 = static_cast<double>(s);
    if (step <= s1) return s1 > s0 ? e0 + (e1 - e0) * (step - s0) / (s1 - s0) : e1;
    e0 = e1;
    s0 = s1;
  }
  // Past the last end: at the last epoch's pace.
  auto last = std::prev(step_of.end());
  const double per_epoch = static_cast<double>(last->second) / static_cast<double>(last->first);
  return per_epoch > 0 ? e0 + (step - s0) / per_epoch : e0;
}

const SeriesAxis& RunAxes::of(const std::string& key) const {
  static const SeriesAxis kNone;
  auto it = series.find(key);
  return it == series.end() ? kNone : it->second;
}

RunAxes run_axes(store::Store& store, const std::string& uuid) {
  return run_axes(store, uuid, store.metric_summaries(uuid));
}

RunAxes run_axes(store::Store& store, const std::string& uuid,
                 const std::vector<store::MetricSummary>& summaries) {
  RunAxes a;
  const bool has_epoch = std::any_of(summaries.begin(), summaries.end(),
                                     [](const auto& m) { return m.key == "epoch"; });
  if (has_epoch)
    for (const auto& p : store.metric(uuid, "epoch"))
      if (p.value >= 1 && std::isfinite(p.value))
        a.epochs.step_of[static_cast<int64_t>(std::llround(p.value))] = p.step;
  for (const auto& m : summaries)
    if (!recorded_per_epoch(m.key)) a.epochs.last_step = std::max(a.epochs.last_step, m.last_step);
  const int64_t last_epoch = a.epochs.empty() ? 0 : std::prev(a.epochs.step_of.end())->first;
  for (const auto& m : summaries) {
    SeriesAxis s{m.key, XKind::kStep, series_group(m.key), chart_of(m.key)};
    if (!a.epochs.empty() && recorded_per_epoch(m.key) && m.last_step <= last_epoch + 1)
      s.x = XKind::kEpoch;
    a.series.emplace(m.key, std::move(s));
  }
  return a;
}

PointX point_x(const RunAxes& axes, const SeriesAxis& series, int64_t recorded_step) {
  if (series.x == XKind::kEpoch)
    return {axes.epochs.step_at_end(recorded_step), static_cast<double>(recorded_step)};
  const double step = static_cast<double>(recorded_step);
  return {step, axes.epochs.epoch_at(step)};
}

}  // namespace trainscope::format
