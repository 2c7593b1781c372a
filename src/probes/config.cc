// The probes section of a config (config/section.h), and the settings it
// gives the probes.
#include "trainscope/probes/config.h"

#include <fmt/format.h>

#include "trainscope/config/section.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/probes/probes.h"

namespace trainscope::probes {

namespace {

using C = ProbesConfig;
using config::kMaxBatch;
using config::kMaxSteps;

// probes.kinds: each a kind parse_kind knows.
std::string kinds_violation(const std::string& kinds) {
  try {
    for (const auto& k : core::split_list(kinds)) parse_kind(k);
  } catch (const core::Error& e) {
    return e.what();
  }
  return config::text_violation(kinds, 0, 1024);
}

std::vector<config::Field> selection_fields() {
  return {
      config::choice_key("probes.preset", &C::preset, {"off", "economy", "standard", "full"},
                         "Live per-layer probes"),
      config::text_key(
          "probes.every", &C::every, "preset or an integer >= 1",
          [](const std::string& v) { return config::count_violation(v, {"preset"}, 1, kMaxSteps); },
          "Probe steps N, 2N, ... (preset: 10, full 1)"),
      config::text_key(
          "probes.layers", &C::layers, "a glob of 1 to 1024 bytes",
          [](const std::string& v) { return config::text_violation(v, 1, 1024); },
          "Glob over layer names to probe"),
      config::text_key(
          "probes.types", &C::types, "at most 1024 bytes",
          [](const std::string& v) { return config::text_violation(v, 0, 1024); },
          "Comma-separated module types to probe (empty: all)"),
      config::int_key("probes.max_depth", &C::max_depth, 0, 1000,
                      "Deepest layer name level to probe (0: any)"),
      config::text_key("probes.kinds", &C::kinds, "kinds as `trainscope probes --help` lists them",
                       kinds_violation, "Comma-separated kinds narrowing the preset's"),
      config::int_key("probes.histogram_bins", &C::histogram_bins, 2, 10000, "Bins per histogram"),
      config::int_key(
          "probes.activation_samples", &C::activation_samples, 0, kMaxBatch,
          "Examples of the batch whose activations and layer gradients are probed (0: all)"),
      config::int_key("probes.test_every", &C::test_every, 0, kMaxSteps,
                      "Test accuracy every N steps (0: off)"),
      config::int_key("probes.workers", &C::workers, 1, 64, "Threads computing the probes"),
      config::int_key("probes.queue", &C::queue, 1, 65536, "Packets waiting per probe worker"),
      config::choice_key("probes.when_full", &C::when_full, {"block", "drop"},
                         "When the queue is full"),
      config::bool_key("probes.tensorboard", &C::tensorboard, "Write a TensorBoard event file"),
  };
}

std::vector<config::Field> alert_fields() {
  return {
      config::int_key("probes.alert_patience", &C::alert_patience, 1, 1000000,
                      "Consecutive observations before an alert"),
      config::double_key("probes.alert_update_ratio_high", &C::alert_update_ratio_high,
                         config::kPositive,
                         "Update/weight ratio above which the learning rate is too high"),
      config::double_key("probes.alert_update_ratio_low", &C::alert_update_ratio_low,
                         config::kNonNegative,
                         "Update/weight ratio below which the learning rate is too low"),
      config::double_key("probes.alert_dead_fraction", &C::alert_dead_fraction,
                         config::Interval{0, 1, true, false},
                         "Fraction of dead ReLU units that raises an alert"),
      config::double_key("probes.alert_saturated_fraction", &C::alert_saturated_fraction,
                         config::Interval{0, 1, true, false},
                         "Fraction of saturated tanh/sigmoid outputs that raises an alert"),
      config::double_key("probes.alert_grad_depth_ratio", &C::alert_grad_depth_ratio,
                         config::Interval{1, config::kInf, false, true},
                         "First/last layer gradient-norm ratio that raises an alert"),
      config::double_key("probes.alert_overfit_drop", &C::alert_overfit_drop, config::kUnit,
                         "Test-accuracy drop from its best (train rising) that means overfitting"),
  };
}

std::optional<config::Violation> check(const config::Config& config) {
  const C& c = config.section<C>();
  if (c.alert_update_ratio_low < c.alert_update_ratio_high) return std::nullopt;
  return config::Violation{{"probes.alert_update_ratio_low", "probes.alert_update_ratio_high"},
                           "probes.alert_update_ratio_low",
                           fmt::format("must be below probes.alert_update_ratio_high ({}) (got {})",
                                       core::format_double(c.alert_update_ratio_high),
                                       core::format_double(c.alert_update_ratio_low))};
}

config::Section section() {
  auto fields = selection_fields();
  for (auto& f : alert_fields()) fields.push_back(std::move(f));
  return config::Section{.name = C::kName,
                         .fields = std::move(fields),
                         .shorthand = "preset",
                         .check_together = check};
}

}  // namespace

TRAINSCOPE_CONFIG_SECTION(probes, section());

ProbeSettings probe_settings(const config::Config& config) {
  const C& c = config.section<C>();
  ProbeSettings s;
  s.preset = c.preset;
  s.every = c.every == "preset" ? 0 : std::stoll(c.every);
  s.layers = c.layers;
  s.types = core::split_list(c.types);
  s.max_depth = static_cast<int>(c.max_depth);
  for (const auto& k : core::split_list(c.kinds)) s.kinds.insert(parse_kind(k));
  s.histogram_bins = static_cast<int>(c.histogram_bins);
  s.activation_samples = c.activation_samples;
  s.test_every = c.test_every;
  s.workers = static_cast<int>(c.workers);
  s.queue_capacity = static_cast<size_t>(c.queue);
  s.block_when_full = c.when_full == "block";
  s.tensorboard = c.tensorboard;
  s.alerts.patience = static_cast<int>(c.alert_patience);
  s.alerts.update_ratio_high = c.alert_update_ratio_high;
  s.alerts.update_ratio_low = c.alert_update_ratio_low;
  s.alerts.dead_fraction = c.alert_dead_fraction;
  s.alerts.saturated_fraction = c.alert_saturated_fraction;
  s.alerts.grad_depth_ratio = c.alert_grad_depth_ratio;
  s.alerts.overfit_drop = c.alert_overfit_drop;
  return s;
}

}  // namespace trainscope::probes
