// The probes' publisher: a TrainObserver and a layer subscriber that copies
// what the subscribers want at a step and hands it to the probes' Hub.
//
// Hand-over is by copy (float32, contiguous), never by reference: the
// optimizer updates weights in place and the next forward pass reuses the
// activation memory, so a held reference would show the worker a later step
// (or a half-written one). Weights are copied after the step and, on the
// steps that want updates, also before it (update = after - before).
//
// Cost on the training thread is the copies, only on due steps (the every
// of each subscriber), plus on every step the loss's finiteness (free) and
// a meta packet appended to a list handed over once per period. Activations
// and layer gradients are copied for the first probes.activation_samples
// examples of the batch only (32 by default: they are the largest tensors
// of a step). On due steps the weight gradients are checked for
// non-finite values (backward origin); when the loss turns non-finite, the
// forward pass of that batch is replayed (buffers and the dropout stream
// restored afterwards) to name the first layer whose output is not finite.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/instrument/events.h"
#include "trainscope/layers/layers.h"
#include "trainscope/probes/builtin.h"
#include "trainscope/probes/hub.h"

namespace trainscope::probes {

using instrument::EpochInfo;
using instrument::EvalResult;
using instrument::Evaluation;
using instrument::RunContext;
using instrument::Step;
using instrument::TrainResult;

// Refuses (Error kUsage, listing the model's layers, or naming the line
// that gives a model layer events) probes that select no layer of the
// source's model, before a run is created for them. Nothing when probes
// are off or the source has no training inputs to look with.
void check_probe_layers(const config::Config& config, instrument::Source& source);

// The probes' unit attaches one with the config's preset (probes.preset
// != off); a user attaches subscribers of their own like any observer:
//   trainer.add_observer(std::make_shared<probes::ProbeObserver>(
//       std::vector<std::shared_ptr<probes::Subscriber>>{mine}));
// with the config's probe settings (period, layers, outputs) and without
// the preset's subscribers (the unit's observer runs those).
class ProbeObserver : public instrument::TrainObserver, public layers::LayerSubscriber {
 public:
  ProbeObserver();  // the preset's subscribers
  // Runs `subscribers` (held shared) with the config's probe settings and
  // without the preset's. Each run begin starts a Hub (its worker threads);
  // run end drains and closes it, records probe/dropped and the TensorBoard
  // file. Events come on the training thread, layer events on the thread
  // that runs the forward or backward.
  explicit ProbeObserver(std::vector<std::shared_ptr<probes::Subscriber>> subscribers);
  ~ProbeObserver() override;

  void on_run_begin(const RunContext& ctx) override;
  void on_batch_begin(const RunContext& ctx) override;
  void on_after_forward(const RunContext& ctx, const Step& step) override;
  void on_after_backward(const RunContext& ctx, const Step& step) override;
  void on_after_step(const RunContext& ctx, const Step& step) override;
  void on_batch_end(const RunContext& ctx, const Step& step) override;
  void on_evaluation_end(const RunContext& ctx, const Evaluation& evaluation) override;
  void on_epoch_end(const RunContext& ctx, const EpochInfo& epoch) override;
  void on_run_end(const RunContext& ctx, const TrainResult& result) override;

  void on_forward(const layers::ForwardEvent& event) override;
  void on_backward(const layers::BackwardEvent& event) override;
  bool wants_backward() const override;

 private:
  struct Layer;
  Layer* selected(const std::string& name);
  void discover_layers(const RunContext& ctx, const torch::Tensor& sample);
  void publish_step(const RunContext& ctx, const Step& step);
  void find_forward_origin(const RunContext& ctx, const Step& step);
  void check_gradients(const Step& step);
  void probe_test_accuracy(const RunContext& ctx, int64_t step);
  void capture_reference(const RunContext& ctx);
  void publish_evaluation(const std::string& split, const EvalResult& r,
                          const probes::Position& at);
  probes::Position position(const Step& step) const;
  torch::Tensor sample(const torch::Tensor& t) const;  // the first activation_samples rows

  std::vector<std::shared_ptr<probes::Subscriber>> extra_;
  bool with_preset_ = true;
  bool discovered_ = false;
  probes::ProbeSettings settings_;
  std::unique_ptr<probes::Hub> hub_;
  std::shared_ptr<probes::Output> tfevents_;
  std::vector<std::unique_ptr<Layer>> layers_;  // selected layers, forward order
  std::map<std::string, Layer*> by_name_;
  std::optional<layers::Subscription> subscription_;
  std::set<probes::Kind> due_;
  std::map<std::string, probes::LayerPacket> pending_;
  std::vector<probes::MetaPacket> metas_;  // gathered, handed over once per period
  torch::Tensor reference_;                // the reference batch (first 256 test examples)
  int64_t correct_before_ = 0;
  bool nan_reported_ = false;
};

}  // namespace trainscope::probes
