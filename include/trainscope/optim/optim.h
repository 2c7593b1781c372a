// Optimizers and learning-rate schedules.
//
// Optimizer wraps libtorch's SGD (momentum, Nesterov, weight decay), Adam,
// AdamW and RMSprop, and adds Adadelta (absent from libtorch's C++ API, 1.13 and 2.x),
// behind one interface whose state can be checkpointed.
//
// Schedules are pure functions of (epoch, step), so a resumed run needs no
// scheduler state beyond its counters.
#pragma once

#include <torch/serialize/archive.h>
#include <torch/types.h>

#include <memory>
#include <utility>
#include <vector>

#include "trainscope/config/config.h"

namespace trainscope::optim {

// One optimizer over the parameters make_optimizer was given (held as
// tensors sharing their storage). Used from the training thread only.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Zeroes (or drops) the parameters' gradients.
  virtual void zero_grad() = 0;
  // Updates the parameters in place from their gradients, at the current
  // learning rate; creates the per-parameter state on the first call.
  virtual void step() = 0;
  // The learning rate of the next steps (every parameter group).
  virtual void set_lr(double lr) = 0;
  // Writes the optimizer's state (momenta, moments) into `archive`.
  virtual void save(torch::serialize::OutputArchive& archive) = 0;
  // Reads the state save() wrote for the same optimizer over the same
  // parameters; throws libtorch's c10::Error when the archive lacks it.
  virtual void load(torch::serialize::InputArchive& archive) = 0;
  // Per-parameter state tensors (momentum, Adam moments, ...) as
  // (parameter, state) pairs, so a profiler can charge the optimizer's work
  // on them to the parameter's layer. Empty before the first step.
  virtual std::vector<std::pair<torch::Tensor, torch::Tensor>> state_tensors() const = 0;
};

// The optimizer `c` names (sgd, adam, adamw, rmsprop, adadelta) over
// `params` with c's hyperparameters. Throws Error(kUsage) listing the
// valid names for any other.
std::unique_ptr<Optimizer> make_optimizer(const config::OptimizerConfig& c,
                                          std::vector<torch::Tensor> params);

// Learning rate for the given epoch (0-based) and global step (0-based),
// including linear warm-up.
double scheduled_lr(const config::Config& c, int64_t epoch, int64_t step);

}  // namespace trainscope::optim
