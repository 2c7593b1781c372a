#include "trainscope/probes/observer.h"

#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <sstream>
#include <utility>

#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/instrument/unit.h"
#include "trainscope/probes/config.h"
#include "trainscope/probes/outputs.h"

namespace fs = std::filesystem;

namespace trainscope::probes {

// (The instrument names it uses are declared in observer.h.)
struct ProbeObserver::Layer {
  probes::LayerInfo info;
  torch::Tensor weight, bias;  // the model's own; undefined when the layer has none
  torch::Tensor weight_before, bias_before;
};

namespace {

probes::BufferPtr copy(const torch::Tensor& t) {
  auto c = t.detach().to(torch::kFloat).contiguous();
  auto b = std::make_shared<probes::Buffer>();
  b->shape = c.sizes().vec();
  const float* data = c.data_ptr<float>();
  b->values.assign(data, data + c.numel());  // one pass: no zero-fill first
  return b;
}

bool finite(const torch::Tensor& t) { return torch::isfinite(t).all().item<bool>(); }

std::string module_type(const torch::nn::Module* m, const std::string& functional) {
  if (!m) return functional;
  std::string name = m->name();
  auto colon = name.rfind("::");
  std::string t = colon == std::string::npos ? name : name.substr(colon + 2);
  if (t.size() > 4 && t.compare(t.size() - 4, 4, "Impl") == 0) t.resize(t.size() - 4);
  return t;
}

// Records each layer of one forward pass: name, type, module.
struct LayerLister : layers::LayerSubscriber {
  struct Seen {
    std::string name, type;
    const torch::nn::Module* module;
  };
  std::vector<Seen> seen;
  void on_forward(const layers::ForwardEvent& e) override {
    for (const auto& s : seen)
      if (s.name == e.name) return;
    seen.push_back({e.name, module_type(e.module, e.type), e.module});
  }
};

// The first layer whose output is not finite, in forward order.
struct NonFiniteFinder : layers::LayerSubscriber {
  std::string layer, type, what;
  bool input_finite = true;
  void on_forward(const layers::ForwardEvent& e) override {
    if (!layer.empty() || finite(e.output)) return;
    layer = e.name;
    type = module_type(e.module, e.type);
    what = torch::isnan(e.output).any().item<bool>() ? "NaN" : "Inf";
    for (const auto& in : e.inputs) input_finite = input_finite && finite(in);
  }
};

}  // namespace

ProbeObserver::ProbeObserver() : with_preset_(true) {}

ProbeObserver::ProbeObserver(std::vector<std::shared_ptr<probes::Subscriber>> subscribers)
    : extra_(std::move(subscribers)), with_preset_(false) {}

ProbeObserver::~ProbeObserver() = default;

void ProbeObserver::on_run_begin(const RunContext& ctx) {
  settings_ = probe_settings(ctx.config);
  if (!settings_.enabled()) settings_.preset = "economy", settings_.kinds = {}, settings_.every = 0;
  auto subs = with_preset_ && ctx.config.section<ProbesConfig>().preset != "off"
                  ? probes::builtin_subscribers(settings_)
                  : std::vector<std::shared_ptr<probes::Subscriber>>{};
  subs.insert(subs.end(), extra_.begin(), extra_.end());
  std::vector<std::shared_ptr<probes::Output>> outputs = {probes::store_output(ctx.run),
                                                          probes::console_output()};
  if (settings_.tensorboard) {
    fs::path dir =
        fs::temp_directory_path() / ("trainscope-tb-" + core::short_uuid(ctx.run.uuid()));
    tfevents_ = std::make_shared<probes::TfEventsWriter>(dir);
    outputs.push_back(tfevents_);
  }
  probes::HubOptions o{settings_.workers, settings_.queue_capacity, settings_.block_when_full,
                       settings_.period()};
  hub_ = std::make_unique<probes::Hub>(std::move(subs), std::move(outputs), o);
  // Which layers there are, from a training batch; a source without
  // training inputs gives its first step's.
  if (auto sample = ctx.source.train_inputs(2); sample.defined()) discover_layers(ctx, sample);
}

namespace {

// The layers of one forward pass over `sample`, in forward order; nothing
// of the model changes (eval mode, no gradients).
std::vector<LayerLister::Seen> list_layers(instrument::Source& source,
                                           const torch::Tensor& sample) {
  LayerLister lister;
  torch::NoGradGuard no_grad;
  torch::nn::Module& model = source.model();
  bool was_training = model.is_training();
  model.eval();  // no dropout draw, no batch-norm statistics update
  {
    layers::Subscription sub(lister);
    source.forward(sample);
  }
  model.train(was_training);
  return lister.seen;
}

probes::LayerInfo layer_info(const LayerLister::Seen& s, size_t index) {
  return {s.name, s.type, 1 + static_cast<int>(std::count(s.name.begin(), s.name.end(), '.')),
          static_cast<int>(index)};
}

[[noreturn]] void fail_no_layer(const config::Config& c, const std::string& model,
                                const probes::ProbeSettings& settings,
                                const std::vector<LayerLister::Seen>& seen) {
  if (seen.empty())
    core::fail(core::ErrorKind::kUsage,
               "probes: model '{}' publishes no layer events, so there is nothing to probe: name "
               "its layers with layers::run_layer(), or call trainscope::layers::instrument(model) "
               "once after building it (trainscope/layers/layers.h)",
               model);
  std::string all;
  for (const auto& s : seen) all += (all.empty() ? "" : ", ") + s.name + " (" + s.type + ")";
  core::fail(
      core::ErrorKind::kUsage, "probes: no layer matches layers '{}'{}{}; the layers of {} are: {}",
      settings.layers, settings.types.empty() ? "" : ", types " + c.section<ProbesConfig>().types,
      settings.max_depth ? fmt::format(", max_depth {}", settings.max_depth) : "", model, all);
}

}  // namespace

void check_probe_layers(const config::Config& config, instrument::Source& source) {
  if (config.section<ProbesConfig>().preset == "off") return;
  const torch::Tensor sample = source.train_inputs(2);
  if (!sample.defined()) return;  // checked on the run's first step
  const probes::ProbeSettings settings = probe_settings(config);
  const auto seen = list_layers(source, sample);
  for (size_t i = 0; i < seen.size(); ++i)
    if (probes::layer_selected(settings, layer_info(seen[i], i))) return;
  fail_no_layer(config, source.model_name(), settings, seen);
}

void ProbeObserver::discover_layers(const RunContext& ctx, const torch::Tensor& sample) {
  discovered_ = true;
  const auto seen = list_layers(ctx.source, sample);
  for (size_t i = 0; i < seen.size(); ++i) {
    const auto& s = seen[i];
    const probes::LayerInfo info = layer_info(s, i);
    if (!probes::layer_selected(settings_, info)) continue;
    auto layer = std::make_unique<Layer>();
    layer->info = info;
    if (s.module)
      for (const auto& p : s.module->named_parameters(/*recurse=*/false)) {
        if (p.key() == "weight") layer->weight = p.value();
        if (p.key() == "bias") layer->bias = p.value();
      }
    by_name_[s.name] = layer.get();
    layers_.push_back(std::move(layer));
  }
  if (layers_.empty()) fail_no_layer(ctx.config, ctx.source.model_name(), settings_, seen);
}

ProbeObserver::Layer* ProbeObserver::selected(const std::string& name) {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

probes::Position ProbeObserver::position(const Step& step) const {
  return {step.number, step.epoch, step.batch};
}

void ProbeObserver::on_batch_begin(const RunContext& ctx) {
  due_ = hub_->kinds_due(ctx.position.step + 1);
  pending_.clear();
  correct_before_ = ctx.position.epoch_correct;
  if (due_.count(Kind::kActivations) || due_.count(Kind::kLayerGradients))
    subscription_.emplace(*this);
}

torch::Tensor ProbeObserver::sample(const torch::Tensor& t) const {
  int64_t n = settings_.activation_samples;
  if (n <= 0 || t.dim() == 0 || t.size(0) <= n) return t;
  return t.narrow(0, 0, n);
}

void ProbeObserver::on_forward(const layers::ForwardEvent& e) {
  if (!due_.count(Kind::kActivations)) return;
  if (selected(e.name)) pending_[e.name].tensors[Kind::kActivations] = copy(sample(e.output));
}

void ProbeObserver::on_backward(const layers::BackwardEvent& e) {
  if (selected(e.name))
    pending_[e.name].tensors[Kind::kLayerGradients] = copy(sample(e.grad_output));
}

bool ProbeObserver::wants_backward() const { return due_.count(Kind::kLayerGradients) > 0; }

void ProbeObserver::on_after_forward(const RunContext& ctx, const Step& step) {
  if (!nan_reported_ && !std::isfinite(step.loss.item<double>())) find_forward_origin(ctx, step);
}

void ProbeObserver::find_forward_origin(const RunContext& ctx, const Step& step) {
  nan_reported_ = true;
  subscription_.reset();
  NonFiniteFinder finder;
  {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> buffers, saved;
    for (auto& b : ctx.model.buffers()) buffers.push_back(b), saved.push_back(b.clone());
    // A handle on the run's dropout stream, if the source has one.
    std::optional<at::Generator> gen = ctx.source.dropout_generator();
    torch::Tensor gen_state = gen ? gen->get_state() : torch::Tensor();
    {
      layers::Subscription sub(finder);
      ctx.source.forward(step.inputs);
    }
    for (size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(saved[i]);
    if (gen) gen->set_state(gen_state);
  }
  probes::Alert a{"nan_origin", finder.layer, position(step), {}};
  if (finder.layer.empty()) {
    a.source = "loss";
    a.message = fmt::format("the loss is {} at step {} while every layer's output is finite",
                            step.loss.item<double>(), step.number);
  } else if (!finder.input_finite) {
    a.message = fmt::format("the input of {} ({}) is already non-finite at step {}", finder.layer,
                            finder.type, step.number);
  } else {
    a.message = fmt::format(
        "first non-finite value ({}) at step {} in the forward pass: output of {} ({}), whose "
        "inputs are finite",
        finder.what, step.number, finder.layer, finder.type);
  }
  hub_->sink().alert(a);
}

void ProbeObserver::check_gradients(const Step& step) {
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) {  // backward order
    Layer& l = **it;
    for (const auto* p : {&l.weight, &l.bias}) {
      if (!p->defined() || !p->grad().defined() || finite(p->grad())) continue;
      nan_reported_ = true;
      hub_->sink().alert(
          {"nan_origin", l.info.name, position(step),
           fmt::format("first non-finite value at step {} in the backward pass: the {} "
                       "gradient of {} ({}), with a finite loss",
                       step.number, p == &l.weight ? "weight" : "bias", l.info.name, l.info.type)});
      return;
    }
  }
}

void ProbeObserver::on_after_backward(const RunContext& ctx, const Step& step) {
  if (due_.empty()) return;
  if (!nan_reported_) check_gradients(step);
  bool updates = due_.count(Kind::kWeightUpdates) || due_.count(Kind::kBiasUpdates);
  for (auto& lp : layers_) {
    Layer& l = *lp;
    auto& t = pending_[l.info.name].tensors;
    if (l.weight.defined()) {
      if (updates) l.weight_before = l.weight.detach().clone();
      if (due_.count(Kind::kWeightGradients) && l.weight.grad().defined())
        t[Kind::kWeightGradients] = copy(l.weight.grad());
    }
    if (l.bias.defined()) {
      if (updates) l.bias_before = l.bias.detach().clone();
      if (due_.count(Kind::kBiasGradients) && l.bias.grad().defined())
        t[Kind::kBiasGradients] = copy(l.bias.grad());
    }
  }
}

// Each selected layer's output on the reference batch: eval mode and no
// gradients, so no dropout draw and no batch-norm statistics change.
void ProbeObserver::capture_reference(const RunContext& ctx) {
  // The first test inputs; a source without a test set has no reference.
  if (!reference_.defined()) reference_ = ctx.source.test_inputs(256);
  if (!reference_.defined()) return;
  struct Capture : layers::LayerSubscriber {
    ProbeObserver* self;
    void on_forward(const layers::ForwardEvent& e) override {
      if (self->selected(e.name))
        self->pending_[e.name].tensors[Kind::kReferenceActivations] = copy(e.output);
    }
  } capture;
  capture.self = this;
  subscription_.reset();
  torch::NoGradGuard no_grad;
  bool was_training = ctx.model.is_training();
  ctx.model.eval();
  {
    layers::Subscription sub(capture);
    ctx.source.forward(reference_);
  }
  ctx.model.train(was_training);
}

void ProbeObserver::on_after_step(const RunContext& ctx, const Step& step) {
  if (due_.count(Kind::kReferenceActivations)) capture_reference(ctx);
  if (!due_.empty()) publish_step(ctx, step);
  if (hub_->wants_meta()) {
    probes::MetaPacket m;
    m.at = position(step);
    m.loss = step.loss_value;
    m.correct = ctx.position.epoch_correct - correct_before_;
    m.labelled = step.targets.defined();
    m.samples = step.samples;
    if (hub_->wants_batch_tensors()) {
      m.labels = copy(step.targets);
      m.output = copy(step.output);
    }
    metas_.push_back(std::move(m));
    if (!due_.empty() || static_cast<int64_t>(metas_.size()) >= settings_.period())
      hub_->publish(std::exchange(metas_, {}));
  }
  if (settings_.test_every > 0 && step.number % settings_.test_every == 0)
    probe_test_accuracy(ctx, step.number);
}

void ProbeObserver::publish_step(const RunContext& ctx, const Step& step) {
  for (auto& lp : layers_) {
    Layer& l = *lp;
    auto& t = pending_[l.info.name].tensors;
    auto add = [&](Kind value, Kind update, torch::Tensor& now, torch::Tensor& before) {
      if (!now.defined()) return;
      if (due_.count(value) || due_.count(update)) t[value] = copy(now);
      if (due_.count(update) && before.defined()) t[update] = copy(now.detach() - before);
      before = torch::Tensor();
    };
    add(Kind::kWeights, Kind::kWeightUpdates, l.weight, l.weight_before);
    add(Kind::kBiases, Kind::kBiasUpdates, l.bias, l.bias_before);
    if (t.empty()) continue;
    probes::LayerPacket packet = std::move(pending_[l.info.name]);
    packet.layer = &l.info;
    packet.at = position(step);
    hub_->publish(std::move(packet));
  }
  pending_.clear();
}

// Accuracy on (up to) the first 1000 test examples, as an evaluation of
// split "test_probe": not a published layer event, no model state changed.
void ProbeObserver::probe_test_accuracy(const RunContext& ctx, int64_t step) {
  if (auto r = ctx.source.evaluate_test(1000))
    publish_evaluation("test_probe", *r, {step, ctx.position.epoch, ctx.position.batch});
}

// An evaluation as a meta packet, handed over with the batches before it.
void ProbeObserver::publish_evaluation(const std::string& split, const EvalResult& r,
                                       const probes::Position& at) {
  probes::MetaPacket m;
  m.event = probes::MetaPacket::Event::kEvaluation;
  m.at = at;
  m.split = split;
  m.loss = r.loss;
  m.samples = r.samples;
  m.correct = std::llround(r.accuracy * static_cast<double>(r.samples));
  metas_.push_back(std::move(m));
  hub_->publish(std::exchange(metas_, {}));
}

void ProbeObserver::on_batch_end(const RunContext& ctx, const Step& step) {
  subscription_.reset();
  if (!discovered_ && step.inputs.defined()) discover_layers(ctx, step.inputs);
  due_.clear();
}

void ProbeObserver::on_evaluation_end(const RunContext& ctx, const Evaluation& ev) {
  publish_evaluation(ev.split, ev.result, {ctx.position.step, ev.epoch - 1, 0});
}

void ProbeObserver::on_epoch_end(const RunContext& ctx, const EpochInfo& epoch) {
  probes::MetaPacket m;
  m.event = probes::MetaPacket::Event::kEpochFinished;
  m.at = {ctx.position.step, epoch.epoch, epoch.steps};
  m.loss = epoch.train_loss;
  m.samples = epoch.samples;
  m.correct = std::llround(epoch.train_accuracy * static_cast<double>(epoch.samples));
  metas_.push_back(std::move(m));
  hub_->publish(std::exchange(metas_, {}));
}

void ProbeObserver::on_run_end(const RunContext& ctx, const TrainResult& result) {
  subscription_.reset();
  if (!hub_) return;
  hub_->publish(std::exchange(metas_, {}));
  hub_->close();
  ctx.run.log_metric("probe/dropped", static_cast<double>(hub_->dropped()), ctx.position.step);
  if (tfevents_) {
    auto* w = static_cast<probes::TfEventsWriter*>(tfevents_.get());
    ctx.run.add_artifact(w->path(), "tensorboard", "tensorboard/" + w->path().filename().string());
    fs::remove_all(w->path().parent_path());
  }
}

}  // namespace trainscope::probes

namespace trainscope::probes {

TRAINSCOPE_UNIT(probes, instrument::Unit{.name = "probes",
                                         .observers =
                                             [](const config::Config& c) {
                                               instrument::Observers out;
                                               if (c.section<ProbesConfig>().preset != "off")
                                                 out.push_back(std::make_shared<ProbeObserver>());
                                               return out;
                                             },
                                         .check = check_probe_layers});

}  // namespace trainscope::probes
