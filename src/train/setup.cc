// What Trainer::run() does before its first step: determinism, seeds, data,
// model and optimizer, and the run in the store (new, resumed, or started
// from a checkpoint's state).
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "session.h"
#include "trainscope/checkpoint/checkpoint.h"
#include "trainscope/checkpoint/state_dict.h"
#include "trainscope/config/seeds.h"
#include "trainscope/core/error.h"
#include "trainscope/core/flat_yaml.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/dist/config.h"
#include "trainscope/env/nvml.h"
#include "trainscope/instrument/run_identity.h"
#include "trainscope/instrument/unit.h"
#include "trainscope/train/torch_env.h"
#include "trainscope/train/trainer.h"

namespace trainscope::train {
using checkpoint::find_checkpoint;
using checkpoint::read_checkpoint;
using checkpoint::read_state_dict;
using config::derive_seeds;
using core::ErrorKind;
using core::fail;
using data::channels_last;
using data::DataSplits;
using data::dtype_of;
using data::load_data;
using data::loader_options;
using data::to_input;
using models::Classifier;
using models::flip_lowest_bit;
using models::init_weights;
using models::make_model;
using models::ModelShape;
using models::shape_of;
using models::to_channels_last;
using optim::make_optimizer;
using store::RunStatus;

namespace {

// Shapes that do not fit fail here with a clear message, before a run exists.
void check_model_fits(Classifier& model, const config::Config& cfg, const DataSplits& data,
                      const torch::Device& device) {
  const ModelShape shape = shape_of(data);
  try {
    torch::NoGradGuard ng;
    model.eval();
    model.forward(to_input(data.train.images.narrow(0, 0, 1), data.mean, data.std, dtype_of(cfg),
                           channels_last(cfg))
                      .to(device));
    model.train();
  } catch (const c10::Error& e) {
    std::string what = e.what_without_backtrace();
    if (auto oom = allocation_failure(what); !oom.empty())
      fail(ErrorKind::kUsage,
           "model '{}' on {}x{}x{} inputs needs {} for one example; lower model.width or the "
           "input's "
           "size (data.synthetic.channels, height, width)",
           cfg.model.name, shape.channels, shape.height, shape.width, oom);
    fail(ErrorKind::kUsage, "model '{}' does not fit {}x{}x{} inputs with {} classes: {}",
         cfg.model.name, shape.channels, shape.height, shape.width, shape.classes,
         what.substr(0, what.find('\n')));
  }
}

// Whether `prev` was recorded with this config, but for the device: a run
// may go on on another device (a GPU run resumed on a CPU). Runs recorded
// before a key was renamed hold the old spelling: their config is compared
// as parsed.
bool same_config(const store::RunInfo& prev, const config::Config& cfg,
                 const std::string& config_text) {
  if (prev.config_hash == core::sha256_hex(config_text)) return true;
  try {
    config::Config recorded =
        config::parse_recorded_config(prev.config_text, "run " + core::short_uuid(prev.uuid));
    recorded.compute.device = cfg.compute.device;
    return config::to_yaml(recorded) == config_text;
  } catch (const core::Error&) {
    return false;
  }
}

// Refuses to resume a run that cannot be continued with this config.
void check_resumable(store::Store& store, const store::RunInfo& prev, const config::Config& cfg,
                     const std::string& config_text) {
  const std::string id = core::short_uuid(prev.uuid);
  // Its recorded config is the one compared below (a key's old spelling),
  // never one changed in the store since.
  store::verify_config(prev);
  if (prev.status == RunStatus::kRunning)
    fail(ErrorKind::kConflict, "run {} is still running (pid {} on {}); stop it first", id,
         prev.pid, prev.host);
  if (auto what = not_a_training(store, prev); !what.empty())
    fail(ErrorKind::kUsage, "run {} is {}, not a training: only trainings can be resumed", id,
         what);
  if (prev.status == RunStatus::kFinished)
    fail(ErrorKind::kUsage, "run {} already finished; nothing to resume", id);
  if (!same_config(prev, cfg, config_text)) {
    std::string which;
    try {
      const config::Config recorded = config::parse_recorded_config(prev.config_text, "run " + id);
      if (auto d = core::first_difference(config::flatten(recorded), config::flatten(cfg)))
        which = fmt::format("{} was {} when run {} started and is {} now", d->key,
                            d->was.value_or("unset"), id, d->now.value_or("unset"));
    } catch (const core::Error&) {
    }
    fail(ErrorKind::kConflict,
         "refusing to resume run {}: its config differs from this one{}; resume with the config "
         "and overrides the run was started with (recorded as its params)",
         id, which.empty() ? "" : " (" + which + ")");
  }
}

// The training set's size and what made it so, for messages.
std::string training_set(const config::Config& cfg, int64_t n) {
  std::string from = cfg.data.dataset == "synthetic"
                         ? fmt::format("data.synthetic.size {}", cfg.data.synthetic.size)
                         : "data.dataset " + cfg.data.dataset;
  if (cfg.data.val_fraction > 0)
    from += ", data.val_fraction " + core::format_double(cfg.data.val_fraction);
  if (cfg.data.train_subset > 0)
    from += fmt::format(", data.train_subset {}", cfg.data.train_subset);
  return fmt::format("{} training samples ({})", n, from);
}

// The checks that need the data loaded (a dataset file's images may have
// any size): made before the model is built and before a run exists.
void check_data(const config::Config& cfg, const DataSplits& data) {
  const int64_t h = data.train.images.size(2), w = data.train.images.size(3);
  if (cfg.data.crop_padding > std::min(h, w))
    fail(ErrorKind::kUsage, "data.crop_padding must be at most the images' side ({}x{}) (got {})",
         h, w, cfg.data.crop_padding);
  const int64_t n = data.train.size();
  if (cfg.train.batch_size > n)
    fail(ErrorKind::kUsage,
         "train.batch_size must be at most the {} (got {}); lower it or train on more data",
         training_set(cfg, n), cfg.train.batch_size);
}

// Builds the model and its optimizer. libtorch's own failures here (an
// allocation of weights larger than memory, a shape it refuses) become a
// one-line usage error: nothing has been recorded yet.
template <typename F>
void build_or_refuse(const config::Config& cfg, F&& build) {
  try {
    build();
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    if (auto oom = allocation_failure(what); !oom.empty())
      fail(ErrorKind::kUsage,
           "model '{}' cannot be built with this config: its weights need {}; lower model.width or "
           "model.hidden, or the input's size (data.synthetic.channels, height, width)",
           cfg.model.name, oom);
    fail(ErrorKind::kUsage, "model '{}' cannot be built with this config: {}", cfg.model.name,
         what.substr(0, what.find('\n')));
  }
}

// bf16 autocast needs a GPU that computes in bfloat16 (compute capability
// 8.0, Ampere, or newer; older ones emulate it, slowly and not as a newer
// one rounds). NVML's order of GPUs need not be CUDA's: refused only when
// every GPU here is older.
void check_bf16(const config::Config& cfg, const torch::Device& device) {
  if (cfg.compute.autocast != "bf16" || !device.is_cuda()) return;
  const env::Nvml nvml;
  const auto gpus = nvml.gpus();
  if (gpus.empty()) return;
  for (const auto& g : gpus)
    if (g.cc_major == 0 || g.cc_major >= 8) return;
  fail(ErrorKind::kUsage,
       "compute.autocast is bf16 but {} is of compute capability {}.{}, without bfloat16 "
       "arithmetic (8.0, Ampere, or newer has it); use compute.autocast: fp16",
       gpus.front().name, gpus.front().cc_major, gpus.front().cc_minor);
}

}  // namespace

std::unique_ptr<Trainer::Session> Trainer::open_session() {
  // The run's experiment (given, or the environment's) is its config's.
  if (!options_.experiment.empty()) config_.run.experiment = options_.experiment;
  // A parent that refuses the run (a study: a run it does not plan, or
  // another config under a planned name) does before the data loads.
  if (options_.record && options_.resume.empty()) {
    instrument::RunIdentity id = options_;
    id.config_text = config::to_yaml(config_);
    instrument::admitted_parent(*store_, id);
  }
  auto s = std::make_unique<Session>(config_);
  const config::Config& cfg = config_;
  config::check_config(cfg);
  if (const int64_t n = cfg.section<dist::DistConfig>().nproc; n != options_.shards)
    fail(ErrorKind::kUsage,
         "dist.nproc is {} but this process trains {} of them: a data-parallel config is "
         "trained by `trainscope train CONFIG --nproc {}`",
         n,
         options_.shards == 1 ? std::string("alone")
                              : fmt::format("one shard of {}", options_.shards),
         n);
  // First: before the data loads (a GPU that is not there fails at once)
  // and before anything asks libtorch about CUDA.
  s->device = device_of(cfg);
  check_bf16(cfg, s->device);
  apply_determinism(cfg);
  s->seeds = derive_seeds(cfg);
  // A safety net: anything that still reaches for the global generators
  // (the CPU's and every GPU's) gets a value fixed by the master seed.
  torch::manual_seed(static_cast<uint64_t>(cfg.seeds.master));
  s->data = load_data(cfg.data, s->seeds.data_order);
  if (!cfg.model.init_from.empty()) s->data.files.push_back(cfg.model.init_from);  // hashed too
  check_data(cfg, s->data);
  s->dropout_gen = make_generator(s->device, s->seeds.dropout);
  // Weights are drawn on the CPU and then moved: the same initial model on
  // every device.
  at::Generator init_gen = at::detail::createCPUGenerator(s->seeds.init);
  const bool custom = model_ != nullptr;
  build_or_refuse(cfg, [&] {
    if (!custom) model_ = make_model(cfg.model, shape_of(s->data), s->dropout_gen);
    if (!custom || !keep_init_) init_weights(*model_, cfg.model.init, init_gen);
    if (!cfg.model.init_from.empty()) read_state_dict(cfg.model.init_from, *model_);
    model_->to(dtype_of(cfg));
    if (cfg.model.flip_bit > 0) s->flipped = flip_lowest_bit(*model_, cfg.model.flip_bit);
    if (channels_last(cfg)) to_channels_last(*model_);
    model_->to(s->device);
  });
  check_model_fits(*model_, cfg, s->data, s->device);
  if (cfg.compute.autocast != "off")
    s->autocast = cfg.compute.autocast == "bf16" ? torch::kBFloat16 : torch::kHalf;
  if (cfg.compute.autocast == "fp16") s->scaler = std::make_unique<optim::LossScaler>(s->device);
  s->source = make_source(*s);
  instrument::check_units(cfg, *s->source);  // before the run exists (probes' layers)
  build_or_refuse(cfg, [&] { s->opt = make_optimizer(cfg.optimizer, model_->parameters()); });
  s->batches_per_epoch = (s->data.train.size() + cfg.train.batch_size - 1) / cfg.train.batch_size;
  s->total_steps = s->batches_per_epoch * cfg.train.epochs;
  if (cfg.train.max_steps > 0) s->total_steps = std::min(s->total_steps, cfg.train.max_steps);
  if (s->total_steps < 1)
    fail(ErrorKind::kUsage, "this config would train 0 steps ({} samples, batch {}, {} epochs)",
         s->data.train.size(), cfg.train.batch_size, cfg.train.epochs);
  if (options_.check_steps) options_.check_steps(s->total_steps, s->batches_per_epoch);
  open_run(*s);
  // A checkpoint's loss scale goes on where it was.
  if (s->scaler && s->pos.loss_scale > 0)
    s->scaler->restore(s->pos.loss_scale, s->pos.scale_growth);
  if (custom && !s->resumed) s->run->set_tag("model.custom", "true");
  s->loader = loader_options(cfg, s->data, torch::get_num_threads());
  s->loader.shard = options_.shard;
  s->loader.shards = options_.shards;
  s->result.run_uuid = s->run->uuid();
  return s;
}

// Attaches to the run to resume, or creates a new one (instrument::start_run)
// with its params, tags and environment.
void Trainer::open_run(Session& s) {
  const std::string config_text = config::to_yaml(s.cfg);
  if (!options_.resume.empty()) {
    store::RunInfo prev = store_->resolve_run(options_.resume);
    check_resumable(*store_, prev, s.cfg, config_text);
    auto ck = find_checkpoint(*store_, prev.uuid);
    if (!ck)
      fail(ErrorKind::kNotFound, "run {} has no checkpoint to resume from",
           core::short_uuid(prev.uuid));
    s.pos = read_checkpoint(ck->path, *model_, s.opt.get(), &s.dropout_gen);
    // The trainer names a checkpoint by its step: one holding another step
    // was put in its place (thirtieth hunt, B-D4: another run's step 20 as
    // step 769 rewound the run, which then failed), before the run is touched.
    if (ck->name.starts_with("checkpoints/step-") &&
        ck->name != checkpoint::checkpoint_name(s.pos.step))
      fail(ErrorKind::kStore,
           "checkpoint '{}' of run {} holds step {}, not the step its name says: it was replaced; "
           "the store is damaged, nothing was resumed",
           core::escape_for_display(ck->name), core::short_uuid(prev.uuid), s.pos.step);
    s.run = store::RunRecorder::attach(store_, prev.uuid);
    s.run->set_tag("resumed_from", ck->name);
    // The device it goes on on, when not the one it started on.
    const auto params = store_->params(prev.uuid);
    const auto started = params.find("compute.device");
    if ((started == params.end() ? "cpu" : started->second) != s.cfg.compute.device)
      s.run->set_tag("compute.device.resumed_on", s.cfg.compute.device);
    s.resumed = true;
    core::log_info("resuming run {} from {} (epoch {}, step {})", core::short_uuid(prev.uuid),
                   ck->name, s.pos.epoch + 1, s.pos.step);
    return;
  }
  if (!options_.init_checkpoint.empty())
    s.pos = read_checkpoint(options_.init_checkpoint, *model_, s.opt.get(), &s.dropout_gen);
  instrument::RunIdentity id = options_;
  id.experiment = s.cfg.run.experiment;
  id.config_text = config_text;
  std::optional<env::Manifest> environment;
  if (options_.record_environment) environment = env::capture_run_environment(s.data.files);
  s.run = options_.record ? instrument::start_run(store_, id, std::move(environment))
                          : instrument::start_unrecorded_run(id);
  if (!s.flipped.empty()) s.run->set_tag("model.flipped_weight", s.flipped);
  s.run->set_params(config::flatten(s.cfg));
  s.run->set_tag("torch.threads", std::to_string(torch::get_num_threads()));
  for (const auto& f : s.data.files)
    s.run->set_tag("data.file." + f.filename().string(), f.string());
}

std::string not_a_training(store::Store& store, const store::RunInfo& run) {
  auto tags = store.tags(run.uuid);
  if (tags.count("kind") && tags["kind"] == "study") return "a study";
  if (tags.count("watch.command")) return "a `watch` run";
  if (run.config_text.empty()) return "a run without a recorded training config";
  try {
    config::parse_recorded_config(run.config_text, "run " + core::short_uuid(run.uuid));
  } catch (const core::Error&) {
    return run.experiment == "numerics" ? "a `numerics` run"
                                        : "a run whose recorded config is not a training config";
  }
  return {};
}

}  // namespace trainscope::train
