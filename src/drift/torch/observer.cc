// drift's observer: keeps a copy of each weight tensor as the session
// began and, every drift.every steps, records how far each has moved.
#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>

#include "../drift.h"
#include "trainscope/core/log.h"
#include "trainscope/instrument/unit.h"
#include "trainscope/store/accept.h"

namespace trainscope::drift {
namespace {

class DriftObserver : public instrument::TrainObserver {
 public:
  // The weights to measure from: the run's initial ones, or a resumed
  // session's first (recorded as from_step, see drift.h).
  void on_run_begin(const instrument::RunContext& ctx) override {
    from_step_ = ctx.first_step;
    for (const auto& p : ctx.model.named_parameters()) {
      if (p.value().dim() < 2) continue;  // weights, not biases or norms' scales
      // A name no record key can hold (a Python model's parameter of 600
      // bytes, or one with a control character): left out, said once.
      if (auto why = store::record_problem(kKind, p.key(), 0)) {
        core::log_warn("drift: {}: that tensor is not measured", *why);
        continue;
      }
      torch::Tensor w0 = p.value().detach().clone();
      const double norm = w0.norm().item<double>();
      if (norm > 0) origin_.emplace(p.key(), Origin{std::move(w0), norm});
    }
  }

  void on_after_step(const instrument::RunContext& ctx, const instrument::Step& step) override {
    const int64_t every = ctx.config.section<DriftConfig>().every;
    if (step.number % every != 0) return;
    for (const auto& p : ctx.model.named_parameters()) {
      auto it = origin_.find(p.key());
      if (it == origin_.end()) continue;
      const double moved = (p.value().detach() - it->second.w0).norm().item<double>();
      ctx.run.log_record(kKind,
                         {p.key(), step.number, 0,
                          encode({.relative = moved / it->second.norm, .from_step = from_step_})});
    }
  }

 private:
  struct Origin {
    torch::Tensor w0;  // on the model's device: no copy back each step
    double norm = 0;
  };
  std::map<std::string, Origin> origin_;
  int64_t from_step_ = 0;
};

}  // namespace

TRAINSCOPE_UNIT(drift, instrument::Unit{.name = "drift", .observers = [](const config::Config& c) {
                                          instrument::Observers out;
                                          if (c.section<DriftConfig>().every > 0)
                                            out.push_back(std::make_shared<DriftObserver>());
                                          return out;
                                        }});

}  // namespace trainscope::drift
