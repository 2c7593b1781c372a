#include "trainscope/train/trainer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>

#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/train/data.h"
#include "trainscope/train/optim.h"
#include "trainscope/train/seeds.h"
#include "trainscope/train/torch_env.h"
#include "trainscope/monitor/sampler.h"
#include "trainscope/profile/profiler.h"
#include "trainscope/profile/report.h"

namespace fs = std::filesystem;

namespace trainscope::train {
using core::ErrorKind;
using core::Verbosity;
using core::fail;
using core::format_double;
using core::log_info;
using core::log_warn;
using core::monotonic_now;
using core::new_uuid;
using core::sha256_hex;
using core::verbosity;
using store::ArtifactInfo;
using store::NewRun;
using store::RunInfo;
using store::RunRecorder;
using store::RunStatus;
using store::Store;

namespace {

volatile std::sig_atomic_t g_stop = 0;

constexpr const char* kCheckpointKind = "checkpoint";

ModelShape shape_of(const DataSplits& d) {
  return {d.train.images.size(1), d.train.images.size(2), d.train.images.size(3),
          d.train.classes};
}

torch::ScalarType dtype_of(const Config& c) {
  return c.dtype == "float64" ? torch::kFloat64 : torch::kFloat32;
}

// Everything needed to continue a run exactly.
struct Position {
  int64_t epoch = 0;         // epoch in progress (0-based)
  int64_t batch = 0;         // next batch within that epoch
  int64_t step = 0;          // optimizer steps done
  double epoch_loss_sum = 0; // accumulators of the epoch in progress
  int64_t epoch_correct = 0;
  int64_t epoch_seen = 0;
};

EvalResult evaluate(Classifier& model, const Dataset& data, const DataSplits& splits,
                    int64_t batch_size, torch::ScalarType dtype) {
  torch::NoGradGuard ng;
  bool was_training = model.is_training();
  model.eval();
  const int64_t k = data.classes;
  EvalResult r;
  r.confusion.assign(static_cast<size_t>(k), std::vector<int64_t>(static_cast<size_t>(k), 0));
  double loss_sum = 0;
  int64_t top5 = 0;
  std::vector<double> scores;  // P(class 1) for two-class ROC-AUC
  std::vector<int64_t> truth;
  for (int64_t begin = 0; begin < data.size(); begin += batch_size) {
    int64_t len = std::min(batch_size, data.size() - begin);
    auto x = to_input(data.images.narrow(0, begin, len), splits.mean, splits.std, dtype);
    auto y = data.labels.narrow(0, begin, len);
    auto out = model.forward(x);
    loss_sum += torch::nn::functional::cross_entropy(
                    out, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
    auto pred = out.argmax(1);
    auto pa = pred.accessor<int64_t, 1>();
    auto ya = y.accessor<int64_t, 1>();
    for (int64_t i = 0; i < len; ++i) ++r.confusion[ya[i]][pa[i]];
    if (k > 5) {
      auto top = std::get<1>(out.topk(5, 1));
      top5 += top.eq(y.unsqueeze(1)).any(1).sum().item<int64_t>();
    }
    if (k == 2) {
      auto p1 = torch::softmax(out.to(torch::kFloat64), 1).select(1, 1);
      auto pacc = p1.accessor<double, 1>();
      for (int64_t i = 0; i < len; ++i) {
        scores.push_back(pacc[i]);
        truth.push_back(ya[i]);
      }
    }
  }
  model.train(was_training);
  r.samples = data.size();
  if (r.samples == 0) return r;
  r.loss = loss_sum / static_cast<double>(r.samples);
  int64_t correct = 0;
  double f1_sum = 0;
  int64_t f1_classes = 0;
  for (int64_t c = 0; c < k; ++c) {
    int64_t tp = r.confusion[c][c], row = 0, col = 0;
    for (int64_t j = 0; j < k; ++j) {
      row += r.confusion[c][j];
      col += r.confusion[j][c];
    }
    correct += tp;
    r.per_class_accuracy.push_back(row ? static_cast<double>(tp) / static_cast<double>(row) : 0.0);
    if (row + col > 0) {
      f1_sum += 2.0 * static_cast<double>(tp) / static_cast<double>(row + col);
      ++f1_classes;
    }
  }
  r.accuracy = static_cast<double>(correct) / static_cast<double>(r.samples);
  r.macro_f1 = f1_classes ? f1_sum / static_cast<double>(f1_classes) : 0.0;
  if (k > 5) r.top5 = static_cast<double>(top5) / static_cast<double>(r.samples);
  if (k == 2) {
    // ROC-AUC as the Mann-Whitney statistic (ties count one half).
    std::vector<size_t> idx(scores.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
    double rank_sum = 0;
    int64_t pos = 0;
    for (size_t i = 0; i < idx.size();) {
      size_t j = i;
      while (j < idx.size() && scores[idx[j]] == scores[idx[i]]) ++j;
      double avg_rank = (static_cast<double>(i) + static_cast<double>(j) + 1) / 2.0;
      for (size_t t = i; t < j; ++t)
        if (truth[idx[t]] == 1) rank_sum += avg_rank, ++pos;
      i = j;
    }
    int64_t neg = static_cast<int64_t>(scores.size()) - pos;
    if (pos > 0 && neg > 0)
      r.roc_auc = (rank_sum - static_cast<double>(pos) * static_cast<double>(pos + 1) / 2.0) /
                  (static_cast<double>(pos) * static_cast<double>(neg));
  }
  return r;
}

void write_checkpoint(const fs::path& path, Classifier& model, Optimizer& opt,
                      const at::Generator& dropout_gen, const Position& pos) {
  torch::serialize::OutputArchive a;
  torch::serialize::OutputArchive model_a, opt_a;
  model.save(model_a);
  opt.save(opt_a);
  a.write("model", model_a);
  a.write("optimizer", opt_a);
  a.write("rng.dropout", dropout_gen.get_state(), true);
  a.write("pos", torch::tensor({pos.epoch, pos.batch, pos.step, pos.epoch_correct, pos.epoch_seen},
                               torch::kInt64),
          true);
  a.write("pos.loss_sum", torch::tensor({pos.epoch_loss_sum}, torch::kFloat64), true);
  a.save_to(path.string());
}

Position read_checkpoint(const fs::path& path, Classifier& model, Optimizer* opt,
                         at::Generator* dropout_gen) {
  torch::serialize::InputArchive a;
  try {
    a.load_from(path.string());
  } catch (const c10::Error& e) {
    fail(ErrorKind::kStore, "checkpoint '{}' cannot be read; it is damaged or not a trainscope "
                            "checkpoint",
         path.string());
  }
  torch::serialize::InputArchive model_a, opt_a;
  a.read("model", model_a);
  model.load(model_a);
  if (opt) {
    a.read("optimizer", opt_a);
    opt->load(opt_a);
  }
  torch::Tensor state, p, loss;
  if (dropout_gen) {
    a.read("rng.dropout", state, true);
    dropout_gen->set_state(state);
  }
  a.read("pos", p, true);
  a.read("pos.loss_sum", loss, true);
  Position pos;
  auto pa = p.accessor<int64_t, 1>();
  pos.epoch = pa[0];
  pos.batch = pa[1];
  pos.step = pa[2];
  pos.epoch_correct = pa[3];
  pos.epoch_seen = pa[4];
  pos.epoch_loss_sum = loss.item<double>();
  return pos;
}

// The newest checkpoint artifact of a run (names sort by step).
std::optional<ArtifactInfo> latest_checkpoint(Store& store, const std::string& uuid,
                                              const std::string& name = {}) {
  std::optional<ArtifactInfo> best;
  for (auto& a : store.artifacts(uuid)) {
    if (a.kind != kCheckpointKind) continue;
    if (!name.empty()) {
      if (a.name == name || a.name == "checkpoints/" + name) return a;
      continue;
    }
    if (!best || a.name > best->name) best = a;
  }
  return best;
}

class Progress {
 public:
  Progress(bool enabled, int64_t total_steps)
      : enabled_(enabled && verbosity() >= Verbosity::kNormal),
        tty_(isatty(2) != 0),
        total_(total_steps),
        start_(monotonic_now()) {}
  ~Progress() {
    if (enabled_ && tty_ && drawn_) std::fprintf(stderr, "\n");
  }
  void update(int64_t epoch, int64_t epochs, int64_t step, double loss, double samples_per_s,
              int64_t steps_this_session) {
    if (!enabled_) return;
    double now = monotonic_now();
    if (now - last_ < (tty_ ? 0.1 : 10.0) && step != total_) return;
    last_ = now;
    double elapsed = now - start_;
    double eta = steps_this_session > 0
                     ? elapsed / static_cast<double>(steps_this_session) *
                           static_cast<double>(std::max<int64_t>(0, total_ - step))
                     : 0;
    int width = 24;
    int filled = total_ > 0 ? static_cast<int>(width * step / std::max<int64_t>(1, total_)) : 0;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(static_cast<size_t>(width), '.');
    std::string line = fmt::format("epoch {}/{} [{}] step {}/{} loss {:.4f} {:.0f} samples/s ETA {}",
                                   epoch + 1, epochs, bar, step, total_, loss, samples_per_s,
                                   eta < 3600 ? fmt::format("{:.0f}s", eta)
                                              : fmt::format("{:.1f}h", eta / 3600));
    if (tty_) {
      std::fprintf(stderr, "\r%s\x1b[K", line.c_str());
      drawn_ = true;
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
  }
  void message(const std::string& m) {
    if (!enabled_ && verbosity() < Verbosity::kNormal) return;
    if (tty_ && drawn_) std::fprintf(stderr, "\r\x1b[K");
    std::fprintf(stderr, "%s\n", m.c_str());
    drawn_ = false;
  }

 private:
  bool enabled_, tty_;
  int64_t total_;
  double start_, last_ = 0;
  bool drawn_ = false;
};

void log_eval(RunRecorder& rec, const std::string& prefix, const EvalResult& r, int64_t step) {
  rec.log_metric(prefix + "/loss", r.loss, step);
  rec.log_metric(prefix + "/accuracy", r.accuracy, step);
  rec.log_metric(prefix + "/macro_f1", r.macro_f1, step);
  if (r.top5 >= 0) rec.log_metric(prefix + "/top5", r.top5, step);
  if (r.roc_auc >= 0) rec.log_metric(prefix + "/roc_auc", r.roc_auc, step);
}

}  // namespace

std::vector<std::pair<std::string, torch::Tensor>> fingerprint_tensors(torch::nn::Module& model) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& item : model.named_modules("", /*include_self=*/true)) {
    std::string prefix = item.key().empty() ? "" : item.key() + ".";
    for (const auto& p : item.value()->named_parameters(/*recurse=*/false))
      out.emplace_back(prefix + p.key(), p.value());
    for (const auto& b : item.value()->named_buffers(/*recurse=*/false))
      out.emplace_back(prefix + b.key(), b.value());
  }
  return out;
}

void request_stop() { g_stop = 1; }
bool stop_requested() { return g_stop != 0; }

Trainer::Trainer(Config config, std::shared_ptr<Store> store, TrainOptions options)
    : config_(std::move(config)), store_(std::move(store)), options_(std::move(options)) {}
Trainer::~Trainer() = default;

void Trainer::set_model(std::shared_ptr<Classifier> model, bool keep_init) {
  model_ = std::move(model);
  keep_init_ = keep_init;
}

TrainResult Trainer::run() {
  const Config& cfg = config_;
  const double t_start = monotonic_now();
  apply_determinism(cfg);
  const StreamSeeds seeds = derive_seeds(cfg);
  // A safety net: anything that still reaches for the global generator gets
  // a value fixed by the master seed.
  torch::manual_seed(static_cast<uint64_t>(cfg.seed));
  const auto dtype = dtype_of(cfg);

  DataSplits data = load_data(cfg.data, seeds.data_order);
  ModelShape shape = shape_of(data);

  at::Generator dropout_gen = at::detail::createCPUGenerator(seeds.dropout);
  at::Generator init_gen = at::detail::createCPUGenerator(seeds.init);
  bool custom = model_ != nullptr;
  if (!custom) model_ = make_model(cfg.model, shape, dropout_gen);
  if (!custom || !keep_init_) init_weights(*model_, cfg.model.init, init_gen);
  model_->to(dtype);
  // Shapes that do not fit fail here with a clear message, before a run exists.
  try {
    torch::NoGradGuard ng;
    model_->eval();
    model_->forward(to_input(data.train.images.narrow(0, 0, 1), data.mean, data.std, dtype));
    model_->train();
  } catch (const c10::Error& e) {
    std::string what = e.what_without_backtrace();
    fail(ErrorKind::kUsage, "model '{}' does not fit {}x{}x{} inputs with {} classes: {}",
         cfg.model.name, shape.channels, shape.height, shape.width, shape.classes,
         what.substr(0, what.find('\n')));
  }
  auto opt = make_optimizer(cfg.optimizer, model_->parameters());

  const std::string config_text = to_yaml(cfg);
  std::unique_ptr<RunRecorder> rec;
  Position pos;
  if (!options_.resume.empty()) {
    RunInfo prev = store_->resolve_run(options_.resume);
    if (prev.status == RunStatus::kFinished)
      fail(ErrorKind::kUsage, "run {} already finished; nothing to resume", prev.uuid.substr(0, 8));
    if (prev.status == RunStatus::kRunning)
      fail(ErrorKind::kConflict, "run {} is still running (pid {} on {}); stop it first",
           prev.uuid.substr(0, 8), prev.pid, prev.host);
    if (prev.config_hash != sha256_hex(config_text))
      fail(ErrorKind::kConflict,
           "refusing to resume run {}: its config differs from this one; resume with the same "
           "config and --set values (see `trainscope runs show {}`)",
           prev.uuid.substr(0, 8), prev.uuid.substr(0, 8));
    auto ck = latest_checkpoint(*store_, prev.uuid);
    if (!ck)
      fail(ErrorKind::kNotFound, "run {} has no checkpoint to resume from", prev.uuid.substr(0, 8));
    pos = read_checkpoint(ck->path, *model_, opt.get(), &dropout_gen);
    rec = RunRecorder::attach(store_, prev.uuid);
    rec->set_tag("resumed_from", ck->name);
    log_info("resuming run {} from {} (epoch {}, step {})", prev.uuid.substr(0, 8), ck->name,
             pos.epoch + 1, pos.step);
  } else {
    if (!options_.init_checkpoint.empty())
      pos = read_checkpoint(options_.init_checkpoint, *model_, opt.get(), &dropout_gen);
    NewRun nr;
    nr.experiment = cfg.experiment;
    nr.name = options_.name;
    nr.command_line = options_.command_line;
    nr.config_text = config_text;
    rec = RunRecorder::start(store_, nr);
    rec->set_params(flatten(cfg));
    if (custom) rec->set_tag("model.custom", "true");
    rec->set_tag("torch.threads", std::to_string(torch::get_num_threads()));
    for (const auto& f : data.files) rec->set_tag("data.file." + f.filename().string(), f.string());
    if (options_.record_environment)
      rec->set_environment(capture_run_environment(data.files, options_.config_path));
  }
  const auto fp_tensors = fingerprint_tensors(*model_);
  if (cfg.fingerprint_every_steps > 0) {
    std::vector<std::string> names;
    for (const auto& [n, t] : fp_tensors) names.push_back(n);
    names.push_back("loss");
    rec->set_fingerprint_names(names);
  }

  std::unique_ptr<monitor::ResourceSampler> sampler;
  if (cfg.monitor_interval_s > 0) {
    monitor::SamplerOptions so;
    so.interval_s = cfg.monitor_interval_s;
    so.carbon_kg_per_kwh = cfg.carbon_kg_per_kwh;
    so.cpu_tdp_watts = cfg.cpu_tdp_watts;
    sampler = std::make_unique<monitor::ResourceSampler>(*rec, so);
  }
  bool target_reached = false;
  TrainResult result;
  result.run_uuid = rec->uuid();
  const std::string uuid = rec->uuid();
  try {
    LoaderOptions lo;
    lo.batch_size = cfg.batch_size;
    lo.shuffle = cfg.data.shuffle;
    lo.crop_padding = cfg.data.crop_padding;
    lo.hflip = cfg.data.hflip;
    lo.prefetch = cfg.data.prefetch;
    lo.dtype = dtype;
    lo.mean = data.mean;
    lo.std = data.std;
    const int64_t batches_per_epoch = (data.train.size() + cfg.batch_size - 1) / cfg.batch_size;
    int64_t total_steps = batches_per_epoch * cfg.epochs;
    if (cfg.max_steps > 0) total_steps = std::min(total_steps, cfg.max_steps);
    Progress progress(options_.progress, total_steps);

    // Metrics are flushed first, so everything up to a checkpoint is durable
    // when the checkpoint is; a resumed run then has no gap in its series.
    // (Points logged after the last checkpoint of a killed run may appear
    // twice after resuming: once from the killed process, once replayed.)
    int64_t last_checkpoint_step = -1;
    auto checkpoint = [&](const Position& p) {
      if (p.step == last_checkpoint_step) return;  // e.g. an epoch end that is also the run's end
      last_checkpoint_step = p.step;
      rec->flush();
      fs::path tmp = fs::temp_directory_path() /
                     fmt::format("trainscope-ckpt-{}-{}.pt", getpid(), new_uuid().substr(0, 8));
      write_checkpoint(tmp, *model_, *opt, dropout_gen, p);
      rec->add_artifact(tmp, kCheckpointKind, fmt::format("checkpoints/step-{:09d}.pt", p.step));
      fs::remove(tmp);
    };

    // The initial state, so that `trainscope diff` can replay from step 0
    // when two runs differ from their first step.
    if (options_.resume.empty() && options_.init_checkpoint.empty() && pos.step == 0 &&
        (cfg.checkpoint_every_epochs > 0 || cfg.checkpoint_every_steps > 0))
      checkpoint(pos);
    const int64_t steps_at_start = pos.step;
    // Per-layer profiling (see profile/profiler.h): a schedule of steps,
    // profiles kept in memory and written at the end so that store I/O does
    // not land inside measured iterations.
    std::unique_ptr<profile::IterationProfiler> profiler;
    std::vector<profile::IterationProfile> profiles;
    auto profile_step = [&](int64_t step) {
      return step > cfg.profile_warmup_steps &&
             (step - cfg.profile_warmup_steps - 1) % cfg.profile_every == 0;
    };
    if (cfg.profile_enabled) {
      if (total_steps <= cfg.profile_warmup_steps)
        log_warn("profiling: the run has {} steps, not more than profile.warmup_steps = {}; "
                 "nothing will be profiled (lower the warm-up or train longer)",
                 total_steps, cfg.profile_warmup_steps);
      profiler = std::make_unique<profile::IterationProfiler>(
          *model_, /*keep_events=*/true, [&opt] { return opt->state_tensors(); });
      auto sample = to_input(data.train.images.narrow(0, 0, std::min<int64_t>(cfg.batch_size, data.train.size())),
                             data.mean, data.std, dtype);
      auto layers = profile::describe_layers(
          *model_, [&](torch::Tensor x) { return model_->forward(x); }, sample);
      store_->set_profile_layers(uuid, profile::layers_to_json(layers));
    }
    auto save_profiles = [&] {
      if (profiles.empty()) return;
      store_->append_profile(uuid, profile::to_cells(profiles));
      // The first profiled iteration as a Chrome trace.
      fs::path tmp = fs::temp_directory_path() /
                     fmt::format("trainscope-trace-{}.json", new_uuid().substr(0, 8));
      std::ofstream(tmp) << profile::chrome_trace(profiles.front());
      rec->add_artifact(tmp, "trace", fmt::format("profile_trace_step{}.json", profiles.front().step));
      fs::remove(tmp);
      for (const auto& p : profiles) rec->log_metric("profile/coverage", p.coverage, p.step);
      profiles.clear();
    };
    bool stop = false, done = false;
    for (int64_t epoch = pos.epoch; epoch < cfg.epochs && !stop && !done; ++epoch) {
      const double t_epoch = monotonic_now();
      model_->train();
      EpochLoader loader(data.train, lo, epoch, seeds.data_order, seeds.augment,
                         epoch == pos.epoch ? pos.batch : 0);
      if (epoch != pos.epoch) pos.epoch_loss_sum = 0, pos.epoch_correct = 0, pos.epoch_seen = 0;
      pos.epoch = epoch;
      int64_t samples_this_epoch = 0, steps_this_epoch = 0;
      bool first_batch = true;
      for (;;) {
        const bool profiled = profiler && profile_step(pos.step + 1);
        const double t_iter = monotonic_now();
        if (profiled) {
          profiler->begin(pos.step + 1, /*keep_events=*/profiles.empty());
          profiler->phase(profile::Phase::kData);
        }
        auto batch = loader.next();
        if (!batch) {
          if (profiled) profiler->end();  // no step happened
          break;
        }
        auto mark = [&](profile::Phase p) {
          if (profiled) profiler->phase(p);
        };
        if (first_batch && epoch == 0 && batch->index == 0)
          rec->log_metric("time_to_first_batch_s", monotonic_now() - t_start, 0);
        first_batch = false;
        mark(profile::Phase::kZeroGrad);
        const double lr = scheduled_lr(cfg, epoch, pos.step);
        opt->set_lr(lr);
        opt->zero_grad();
        mark(profile::Phase::kForward);
        auto out = model_->forward(batch->x);
        mark(profile::Phase::kLoss);
        auto loss = torch::nn::functional::cross_entropy(out, batch->y);
        mark(profile::Phase::kBackward);
        loss.backward();
        mark(profile::Phase::kUpdate);
        opt->step();
        mark(profile::Phase::kRecording);
        const double loss_v = loss.item<double>();
        if (cfg.fingerprint_every_steps > 0 && (pos.step + 1) % cfg.fingerprint_every_steps == 0) {
          std::vector<uint64_t> hashes;
          hashes.reserve(fp_tensors.size() + 1);
          for (const auto& [n, t] : fp_tensors) hashes.push_back(tensor_hash(t));
          hashes.push_back(tensor_hash(loss.detach()));
          rec->log_fingerprint(pos.step + 1, std::move(hashes));
        }
        const int64_t bs = batch->y.size(0);
        ++pos.step;
        pos.batch = batch->index + 1;
        if (!std::isfinite(loss_v) && cfg.on_nan == "fail") {
          rec->log_metric("train/loss", loss_v, pos.step);
          fail(ErrorKind::kRuntime,
               "loss became {} at step {} (epoch {}); the last finite loss was {}; lower "
               "optimizer.lr or set on_nan: continue",
               format_double(loss_v), pos.step, epoch + 1,
               pos.epoch_seen > 0 ? format_double(pos.epoch_loss_sum / static_cast<double>(pos.epoch_seen)) : "none this epoch");
        }
        pos.epoch_loss_sum += loss_v * static_cast<double>(bs);
        pos.epoch_correct += out.argmax(1).eq(batch->y).sum().item<int64_t>();
        pos.epoch_seen += bs;
        samples_this_epoch += bs;
        ++steps_this_epoch;
        if (pos.step % cfg.log_every_steps == 0) {
          rec->log_metric("train/loss", loss_v, pos.step);
          rec->log_metric("lr", lr, pos.step);
        }
        if (callbacks_.on_step) callbacks_.on_step({epoch, batch->index, pos.step, loss_v, lr});
        progress.update(epoch, cfg.epochs, pos.step, loss_v,
                        static_cast<double>(samples_this_epoch) / (monotonic_now() - t_epoch),
                        pos.step - steps_at_start);
        if (profiler) {
          if (profiled) profiles.push_back(profiler->end());
          rec->log_metric(profiled ? "profile/step_ms_profiled" : "profile/step_ms_unprofiled",
                          (monotonic_now() - t_iter) * 1e3, pos.step);
        }
        if (cfg.max_steps > 0 && pos.step >= cfg.max_steps) {
          done = true;
          break;
        }
        if (stop_requested()) {
          stop = true;
          break;
        }
        if (cfg.checkpoint_every_steps > 0 && pos.step % cfg.checkpoint_every_steps == 0 &&
            pos.batch < loader.num_batches())
          checkpoint(pos);
      }
      if (stop) break;
      const bool epoch_complete = pos.batch >= loader.num_batches();
      if (!epoch_complete) break;  // max_steps inside an epoch
      const double seconds = monotonic_now() - t_epoch;
      EpochInfo info;
      info.epoch = epoch;
      info.seconds = seconds;
      info.train_loss = pos.epoch_loss_sum / static_cast<double>(std::max<int64_t>(1, pos.epoch_seen));
      info.train_accuracy =
          static_cast<double>(pos.epoch_correct) / static_cast<double>(std::max<int64_t>(1, pos.epoch_seen));
      info.test = evaluate(*model_, data.test, data, cfg.eval_batch_size, dtype);
      if (data.val.size() > 0)
        info.val = evaluate(*model_, data.val, data, cfg.eval_batch_size, dtype);
      const int64_t e1 = epoch + 1;
      rec->log_metric("train/epoch_loss", info.train_loss, e1);
      rec->log_metric("train/accuracy", info.train_accuracy, e1);
      log_eval(*rec, "test", info.test, e1);
      if (info.val) log_eval(*rec, "val", *info.val, e1);
      rec->log_metric("epoch_time_s", seconds, e1);
      rec->log_metric("samples_per_s", static_cast<double>(samples_this_epoch) / seconds, e1);
      rec->log_metric("steps_per_s",
                      static_cast<double>(steps_this_epoch) / seconds, e1);
      if (cfg.target_accuracy > 0 && !target_reached && info.test.accuracy >= cfg.target_accuracy) {
        target_reached = true;
        rec->log_metric("time_to_target_s", monotonic_now() - t_start, e1);
        rec->log_metric("epochs_to_target", static_cast<double>(e1), e1);
        rec->set_tag("target_accuracy.reached_at_epoch", std::to_string(e1));
      }
      rec->log_metric("epoch", static_cast<double>(e1), pos.step);
      progress.message(fmt::format("epoch {}/{}: train loss {:.4f} acc {:.4f} | test loss {:.4f} "
                                   "acc {:.4f} macro-F1 {:.4f} | {:.1f}s",
                                   e1, cfg.epochs, info.train_loss, info.train_accuracy,
                                   info.test.loss, info.test.accuracy, info.test.macro_f1, seconds));
      if (callbacks_.on_epoch) callbacks_.on_epoch(info);
      result.test = info.test;
      result.epochs_completed = e1;
      pos.epoch = epoch + 1;
      pos.batch = 0;
      pos.epoch_loss_sum = 0;
      pos.epoch_correct = 0;
      pos.epoch_seen = 0;
      if (cfg.checkpoint_every_epochs > 0 && e1 % cfg.checkpoint_every_epochs == 0 &&
          e1 < cfg.epochs)
        checkpoint(pos);
    }
    checkpoint(pos);
    // Stopped by max_steps inside an epoch: evaluate and record the final
    // model anyway, under the number of the epoch in progress.
    if (done && pos.batch > 0) {
      result.test = evaluate(*model_, data.test, data, cfg.eval_batch_size, dtype);
      log_eval(*rec, "test", result.test, pos.epoch + 1);
    }
    result.steps = pos.step;
    result.status = stop ? RunStatus::kStopped : RunStatus::kFinished;
    if (stop) progress.message(fmt::format("stopped at step {}; resume with `trainscope train CONFIG --resume {}`",
                                           pos.step, uuid.substr(0, 8)));
    if (cfg.target_accuracy > 0 && !target_reached)
      rec->set_tag("target_accuracy.reached_at_epoch", "not reached");
    save_profiles();
    if (sampler) sampler->stop();
    rec->end(result.status);
  } catch (...) {
    try {
      if (sampler) sampler->stop();
      rec->end(RunStatus::kFailed);
    } catch (const std::exception&) {
    }
    throw;
  }
  result.seconds = monotonic_now() - t_start;
  return result;
}

CheckpointEval evaluate_run(Store& store, const RunInfo& run, const std::string& checkpoint) {
  if (run.config_text.empty())
    fail(ErrorKind::kUsage, "run {} was not recorded by `trainscope train`", run.uuid.substr(0, 8));
  Config cfg = parse_config(run.config_text, {}, "run " + run.uuid.substr(0, 8));
  auto ck = latest_checkpoint(store, run.uuid, checkpoint);
  if (!ck) {
    std::string have;
    for (const auto& a : store.artifacts(run.uuid))
      if (a.kind == kCheckpointKind) have += (have.empty() ? "" : ", ") + a.name;
    fail(ErrorKind::kNotFound, "run {} has no checkpoint{}; available: {}", run.uuid.substr(0, 8),
         checkpoint.empty() ? "" : " '" + checkpoint + "'", have.empty() ? "none" : have);
  }
  apply_determinism(cfg);
  const StreamSeeds seeds = derive_seeds(cfg);
  DataSplits data = load_data(cfg.data, seeds.data_order);
  ModelShape shape = shape_of(data);
  at::Generator g = at::detail::createCPUGenerator(seeds.dropout);
  auto model = make_model(cfg.model, shape, g);
  model->to(dtype_of(cfg));
  read_checkpoint(ck->path, *model, nullptr, nullptr);
  CheckpointEval out;
  out.checkpoint = ck->name;
  out.result = evaluate(*model, data.test, data, cfg.eval_batch_size, dtype_of(cfg));
  out.class_names = data.test.class_names;
  return out;
}

}  // namespace trainscope::train
