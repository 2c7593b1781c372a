// The training configuration: sections of keys, every key with a default,
// read from YAML and `--set section.key=value` overrides. Every key lives
// in a section, in the struct and in YAML alike. The training loop's own
// sections are members of Config; a capability's section (fingerprint,
// profile, probes, monitor, and any a user adds) is declared in the
// capability's folder (config/section.h) and read with
// config.section<T>():
//
//   run:          experiment
//   seeds:        master, init, data_order, augment, dropout
//   data:         dataset, path, subsets, augmentation, synthetic.*
//   model:        name, init, dropout, width, hidden
//   optimizer:    name, lr, momentum, ...
//   schedule:     name, milestones, gamma, ...
//   train:        epochs, batch_size, max_steps, on_nan, log_every_steps
//   eval:         batch_size, target_accuracy
//   compute:      dtype, threads
//   allocator:    keep_memory
//   checkpoint:   every_epochs, every_steps
//   determinism:  deterministic_algorithms, mkldnn, cudnn_*
//   ... then the capabilities' sections, in name order:
//   dist:         (dist/), drift: every (drift/)
//   fingerprint:  every_steps                       (fingerprint/)
//   monitor:      interval_s, carbon_kg_per_kwh, cpu_tdp_watts (monitor/)
//   probes:       preset (`probes: standard` for short), every, ... (probes/)
//   profile:      enabled, warmup_steps, every      (profile/)
//
// Every section, the loop's included, is a config::Section in one registry
// (section.h: sections()); the loop's values are members of Config, where
// the loop reads them on every step without a lookup.
//
// Keys are dotted paths ("optimizer.lr"); an unknown key is an error that
// suggests the nearest one. The top-level spellings of earlier versions
// (epochs, batch_size, seed, experiment, dtype, threads, ...) still work and
// mean the sectioned key (renamed_config_keys()).
#pragma once

#include <any>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace trainscope::config {

// `run:` — the experiment the run is recorded under. Like every section, a
// plain value: the schema (config.cc) checks each field when a config is
// parsed.
struct RunConfig {
  std::string experiment = "default";  // experiment the run is recorded under
};

// `seeds:` — the master seed and the named streams derived from it (-1:
// derived; config/seeds.h resolves them).
struct SeedConfig {
  int64_t master = 0;  // every stream below derives from it (see seeds.h)
  // -1: derived from the master seed. Set one to vary only that source.
  int64_t init = -1;
  int64_t data_order = -1;
  int64_t augment = -1;
  int64_t dropout = -1;
};

// `data.synthetic:` — the shape of the generated dataset (dataset:
// synthetic), the same images for the same seeds.
struct SyntheticDataConfig {
  int64_t size = 2048;  // samples
  int64_t classes = 10;
  int64_t channels = 1;
  int64_t height = 28;
  int64_t width = 28;
};

// `data:` — which dataset, how much of it, and its augmentation; read by
// data::load_dataset and the loaders.
struct DataConfig {
  std::string dataset = "fashion-mnist";  // fashion-mnist | mnist | cifar10 | cifar100 | synthetic
  std::string path;                       // empty: the dataset's default location
  double val_fraction = 0.0;              // held out from train with seeds.data_order's split
  int64_t train_subset = 0;               // 0: all
  int64_t test_subset = 0;                // 0: all
  bool normalize = true;                  // per-channel mean/std of the training set
  bool shuffle = true;
  int64_t crop_padding = 0;  // augmentation: random crop after zero padding
  bool hflip = false;        // augmentation: random horizontal flip
  // Batches prepared ahead on a worker thread; "auto": 2 when a core is left
  // over by compute.threads, else 0 (the worker would take a core from the
  // compute threads: 35% slower steps measured on 2 cores).
  std::string prefetch = "auto";
  SyntheticDataConfig synthetic;  // the synthetic dataset's shape
};

// `model:` — which network of the model zoo (models.h) and how its weights
// start.
struct ModelConfig {
  std::string name = "demo_cnn";  // see models.h for the list
  std::string init = "default";   // default | kaiming | xavier
  double dropout = 0.0;
  double width = 1.0;    // width multiplier (mobilenet_v1, mlp hidden units)
  int64_t hidden = 256;  // mlp hidden units before the multiplier
  // > 0: flip the lowest bit of one initial weight, chosen by this number
  // (the smallest change to a run: studies' bitflip source).
  int64_t flip_bit = 0;
  // A PyTorch state dict (torch.save(model.state_dict(), path)) the weights
  // start from instead of the init ("" : none); its hash joins the run's
  // data.* entries.
  std::string init_from;
};

// `optimizer:` — the update rule and its hyperparameters (optim.h builds it).
struct OptimizerConfig {
  std::string name = "adam";  // sgd | adam | adamw | adadelta | rmsprop
  double lr = 1e-3;
  double momentum = 0.0;
  bool nesterov = false;
  double weight_decay = 0.0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double rho = 0.9;     // adadelta
  double alpha = 0.99;  // rmsprop
};

// `schedule:` — the learning rate over steps (optim::scheduled_lr).
struct ScheduleConfig {
  std::string name = "constant";    // constant | step | multistep | exponential | cosine
  int64_t step_size = 30;           // step: epochs between decays
  double gamma = 0.1;               // step, multistep, exponential
  std::vector<int64_t> milestones;  // multistep: epochs
  int64_t t_max = 0;                // cosine: epochs (0: train.epochs)
  double eta_min = 0.0;             // cosine
  int64_t warmup_steps = 0;         // linear warm-up from 0 over this many steps
};

// `train:` — the loop: epochs, batch size, a step limit, what a non-finite
// loss does, how often step metrics are recorded.
struct TrainLoopConfig {
  int64_t epochs = 3;
  int64_t batch_size = 128;
  int64_t max_steps = 0;        // 0: no limit; stops early after this many steps
  std::string on_nan = "fail";  // fail | continue
  int64_t log_every_steps = 1;  // step metrics every N steps
};

// `eval:` — the evaluation batch, and an accuracy whose time to reach is
// recorded.
struct EvalConfig {
  // 64: a batch's activations stay in cache. On the demo CNN, evaluation is
  // 18% faster than with 256 on one thread and 12% on two, with less peak
  // memory (docs/benchmarks.md). A recorded config keeps its own value.
  int64_t batch_size = 64;
  double target_accuracy = 0;  // > 0: record time and epochs to reach it
};

// Threads: one setting for libtorch's intra-op and inter-op threads.
// "auto" is the physical cores this process may use (affinity and cgroup
// quota respected, env/cpus.h); "default" (or 0, the spelling of earlier
// versions) leaves libtorch's own choice. The BLAS libtorch calls gets
// blas_threads: "auto" is 1, because libtorch parallelises around its BLAS
// calls and a BLAS with threads of its own beside them fights them for the
// cores (an MLP stepped 2.5x slower with both at 2 on 2 cores).
struct ComputeConfig {
  std::string dtype = "float32";      // float32 | float64
  std::string threads = "auto";       // auto | default | N >= 1
  std::string blas_threads = "auto";  // auto | N >= 1
  // How 4-D tensors (images, conv weights, activations) lie in memory:
  // contiguous (NCHW) or channels_last (NHWC, what oneDNN's pooling and
  // convolutions prefer on CPUs).
  std::string memory_format = "contiguous";
  // Where the model, its optimizer state and the batches live: cpu, cuda
  // (the current GPU) or cuda:N (train/device.h).
  std::string device = "cpu";
  // TensorFloat-32 on CUDA: off, cudnn (convolutions only: PyTorch's
  // default) or on (convolutions and float32 matmuls).
  std::string tf32 = "cudnn";
  // Mixed precision: off, bf16 or fp16 (autocast of the forward pass and
  // the loss; fp16 with a dynamic loss scale, whose skipped steps are
  // recorded). Weights, gradients and the optimizer stay float32.
  std::string autocast = "off";
};

// `allocator:` — whether the allocator keeps freed memory (torch_env.h).
struct AllocatorConfig {
  bool keep_memory = true;  // see torch_env.h
};

// `checkpoint:` — how often checkpoints are written: every N epochs, every
// N steps (0: not by that measure).
struct CheckpointConfig {
  int64_t every_epochs = 1;
  int64_t every_steps = 0;
};

// Settings that trade speed for repeatability; recorded with every run.
// (Thread count and dtype are compute.threads and compute.dtype.)
struct DeterminismConfig {
  bool deterministic_algorithms = false;  // at::Context::setDeterministicAlgorithms
  bool mkldnn = true;                     // oneDNN kernels (the CPU's algorithm choice)
  bool cudnn_benchmark = false;           // CUDA builds only
  bool cudnn_deterministic = false;       // CUDA builds only
  // With deterministic_algorithms: an op without a deterministic kernel
  // warns instead of failing, and whether uninitialised memory is filled
  // (NaN or the largest integer) so that reading it is reproducible.
  bool warn_only = false;
  bool fill_uninitialized_memory = true;
};

// A whole training config: the loop's sections as values, plus every
// registered capability's section (sections()). A plain value, copied freely;
// parse_config and apply_overrides check every field against the schema and
// throw Error(kUsage) naming the key, so a Config in hand is always valid.
struct Config {
  RunConfig run;
  SeedConfig seeds;
  DataConfig data;
  ModelConfig model;
  OptimizerConfig optimizer;
  ScheduleConfig schedule;
  TrainLoopConfig train;
  EvalConfig eval;
  ComputeConfig compute;
  AllocatorConfig allocator;
  CheckpointConfig checkpoint;
  DeterminismConfig determinism;

  // A capability's section: a struct S with default member initialisers
  // and `static constexpr const char* kName` (its section name), declared
  // with register_section() (config/section.h). A section never set holds
  // S's defaults.
  template <typename S>
  const S& section() const {
    auto it = sections_.find(S::kName);
    if (it == sections_.end()) it = sections_.emplace(S::kName, S{}).first;
    return std::any_cast<const S&>(it->second);
  }
  template <typename S>
  S& section() {
    auto it = sections_.find(S::kName);
    if (it == sections_.end()) it = sections_.emplace(S::kName, S{}).first;
    return std::any_cast<S&>(it->second);
  }

 private:
  // By section name; filled on first use, so that a Config made before a
  // capability registered its section still reads its defaults.
  mutable std::map<std::string, std::any> sections_;
};

// Parses YAML text (may be empty) then applies "key=value" overrides, checks
// every value, and returns the resolved config. `source` names the text in
// error messages. Throws Error(kUsage) naming the key and what is allowed.
Config parse_config(const std::string& yaml_text, const std::vector<std::string>& overrides,
                    const std::string& source = "config");
// A config recorded with a run (its resolved YAML), read as parse_config
// reads one but without checking the values' ranges: a run recorded by an
// earlier version, under looser ranges, can still be evaluated and
// compared. Whatever trains again with it checks it (Trainer::run).
Config parse_recorded_config(const std::string& yaml_text, const std::string& source);
// The same, for a run known to be a training (it holds the trainer's
// checkpoints): a config that does not read is a damaged store, Error
// kStore (exit 5) "SOURCE: its recorded config does not read (...)", not
// the user's input (kUsage).
Config parse_trained_config(const std::string& yaml_text, const std::string& source);
// Checks a config built in code as parse_config checks one it reads: every
// key within its range, the keys that depend on each other, and a
// synthetic dataset that fits this machine's memory. Throws Error(kUsage)
// naming `source`, the key, its value and what is allowed.
void check_config(const Config& config, const std::string& source = "config");
// Reads a YAML file, then as parse_config. Notes each earlier spelling of a
// key it meets (once, on stderr).
Config load_config(const std::string& path, const std::vector<std::string>& overrides);

// The resolved config as YAML with every field (the text recorded with a run).
std::string to_yaml(const Config& c);
// The resolved config flattened to dotted keys (recorded as params).
std::map<std::string, std::string> flatten(const Config& c);
// Every valid key with its description, for `config keys`.
std::vector<std::pair<std::string, std::string>> config_keys();
// Earlier spelling -> key, for every key that moved into a section.
const std::map<std::string, std::string>& renamed_config_keys();

}  // namespace trainscope::config
