// Private to the train component: the state of one Trainer::run(), shared
// by its setup (setup.cc) and its loop (trainer.cc).
#pragma once

#include <memory>
#include <optional>

#include "trainscope/config/seeds.h"
#include "trainscope/core/util.h"
#include "trainscope/data/data.h"
#include "trainscope/instrument/events.h"
#include "trainscope/optim/loss_scaler.h"
#include "trainscope/optim/optim.h"
#include "trainscope/store/run_recorder.h"
#include "trainscope/train/trainer.h"

namespace trainscope::train {

// Everything one call of run() works on.
struct Trainer::Session {
  explicit Session(const config::Config& c) : cfg(c) {}
  const config::Config& cfg;
  double t_start = core::monotonic_now();
  config::StreamSeeds seeds;
  torch::Device device = torch::kCPU;  // compute.device, checked
  // compute.autocast: the type the forward pass is lowered to, if any, and
  // fp16's loss scale.
  std::optional<at::ScalarType> autocast;
  std::unique_ptr<optim::LossScaler> scaler;
  data::DataSplits data;
  at::Generator dropout_gen;
  std::unique_ptr<optim::Optimizer> opt;
  std::unique_ptr<store::RunRecorder> run;
  instrument::TrainPosition pos;
  data::LoaderOptions loader;
  int64_t batches_per_epoch = 0, total_steps = 0;
  bool resumed = false, max_steps_reached = false, stopped = false;
  std::string flipped;  // the weight model.flip_bit changed, if any
  instrument::TrainResult result;
  // What the units ask of the loop beyond its events (source.cc).
  std::unique_ptr<instrument::Source> source;
};

}  // namespace trainscope::train
