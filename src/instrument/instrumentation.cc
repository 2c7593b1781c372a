// The instruments of one run, driven by any event source.
#include "trainscope/instrument/instrumentation.h"

#include <algorithm>

#include "trainscope/core/log.h"

namespace trainscope::instrument {

const char* to_string(StepPhase p) {
  static constexpr const char* kNames[] = {"data",     "zero_grad", "forward",  "loss",
                                           "backward", "update",    "recording"};
  return kNames[static_cast<int>(p)];
}

Observers unit_observers(const Config& config, const std::vector<std::string>& only) {
  Observers out;
  for (const auto& u : units()) {
    if (!u.observers) continue;
    if (!only.empty() && std::find(only.begin(), only.end(), u.name) == only.end()) continue;
    for (auto& o : u.observers(config)) out.push_back(std::move(o));
  }
  return out;
}

Instrumentation::Instrumentation(const Config& config, store::RunRecorder& run, Source& source,
                                 const TrainPosition& position, Observers observers, Observers last,
                                 const std::vector<std::string>& units)
    : observers_(unit_observers(config, units)),
      ctx_(config, run, source, position, [this](const CheckpointInfo& c) { checkpoint(c); }) {
  observers_.insert(observers_.end(), observers.begin(), observers.end());
  observers_.insert(observers_.end(), last.begin(), last.end());
}

void Instrumentation::run_failed(const TrainResult& result) {
  for (const auto& o : observers_) {
    try {
      o->on_run_end(ctx_, result);
    } catch (const std::exception& e) {
      core::log_warn("while ending the failed run: {}", e.what());
    }
  }
}

}  // namespace trainscope::instrument
