#include "trainscope/train/config.h"

#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/probes/probes.h"

namespace trainscope::train {
using core::Error;
using core::ErrorKind;
using core::fail;
using core::format_double;

namespace {

enum class Kind { kInt, kDouble, kBool, kString, kIntList };

struct Field {
  const char* key;
  const char* help;
  Kind kind;
  std::vector<std::string> choices;  // for kString enums; empty: free text
  std::function<std::string(const Config&)> get;
  std::function<void(Config&, const std::string&)> set;
};

std::string fmt_int_list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

int64_t parse_int(const std::string& key, const std::string& v) {
  int64_t out = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), out);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size())
    fail(ErrorKind::kUsage, "{}: expected an integer, got '{}'", key, v);
  return out;
}

double parse_double(const std::string& key, const std::string& v) {
  try {
    size_t pos = 0;
    double d = std::stod(v, &pos);
    if (pos == v.size()) return d;
  } catch (const std::exception&) {
  }
  fail(ErrorKind::kUsage, "{}: expected a number, got '{}'", key, v);
}

// As yaml-cpp reads a boolean (YAML 1.1: true/True/TRUE, yes, on, y and
// their negatives), and 1/0.
bool parse_bool(const std::string& key, const std::string& v) {
  if (v == "1") return true;
  if (v == "0") return false;
  bool out = false;
  if (YAML::convert<bool>::decode(YAML::Node(v), out)) return out;
  fail(ErrorKind::kUsage, "{}: expected true or false, got '{}'", key, v);
}

std::vector<int64_t> parse_int_list(const std::string& key, std::string v) {
  std::erase_if(v, [](char c) { return c == '[' || c == ']' || c == ' '; });
  std::vector<int64_t> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(parse_int(key, item));
  return out;
}

std::string fmt_num(double d) { return format_double(d); }

#define TS_INT(KEY, MEMBER, HELP)                                                        \
  Field {                                                                                \
    KEY, HELP, Kind::kInt, {}, [](const Config& c) { return std::to_string(c.MEMBER); }, \
        [](Config& c, const std::string& v) { c.MEMBER = parse_int(KEY, v); }            \
  }
#define TS_DBL(KEY, MEMBER, HELP)                                                    \
  Field {                                                                            \
    KEY, HELP, Kind::kDouble, {}, [](const Config& c) { return fmt_num(c.MEMBER); }, \
        [](Config& c, const std::string& v) { c.MEMBER = parse_double(KEY, v); }     \
  }
#define TS_BOOL(KEY, MEMBER, HELP)                                                \
  Field {                                                                         \
    KEY, HELP, Kind::kBool, {},                                                   \
        [](const Config& c) { return std::string(c.MEMBER ? "true" : "false"); }, \
        [](Config& c, const std::string& v) { c.MEMBER = parse_bool(KEY, v); }    \
  }
#define TS_STR(KEY, MEMBER, HELP, ...)                                                 \
  Field {                                                                              \
    KEY, HELP, Kind::kString, {__VA_ARGS__}, [](const Config& c) { return c.MEMBER; }, \
        [](Config& c, const std::string& v) { c.MEMBER = v; }                          \
  }

// The schema, one table per section; fields() joins them in this order.
std::vector<Field> run_and_seed_fields() {
  return {
      TS_STR("run.experiment", run.experiment, "Experiment the run is recorded under"),
      TS_INT("seeds.master", seeds.master, "Master seed; every named stream derives from it"),
      TS_INT("seeds.init", seeds.init, "Weight-initialisation stream (-1: derived from seed)"),
      TS_INT("seeds.data_order", seeds.data_order, "Shuffling and split stream (-1: derived)"),
      TS_INT("seeds.augment", seeds.augment, "Augmentation stream (-1: derived)"),
      TS_INT("seeds.dropout", seeds.dropout, "Dropout stream (-1: derived)"),
  };
}

std::vector<Field> data_fields() {
  return {
      TS_STR("data.dataset", data.dataset, "Dataset", "fashion-mnist", "mnist", "cifar10",
             "cifar100", "synthetic"),
      TS_STR("data.path", data.path, "Folder with the dataset files (empty: its default)"),
      TS_DBL("data.val_fraction", data.val_fraction, "Fraction of train held out for validation"),
      TS_INT("data.train_subset", data.train_subset, "Use only N training samples (0: all)"),
      TS_INT("data.test_subset", data.test_subset, "Use only N test samples (0: all)"),
      TS_BOOL("data.normalize", data.normalize, "Normalise with the training set's mean/std"),
      TS_BOOL("data.shuffle", data.shuffle, "Shuffle training data every epoch"),
      TS_INT("data.crop_padding", data.crop_padding, "Random-crop augmentation padding (0: off)"),
      TS_BOOL("data.hflip", data.hflip, "Random horizontal-flip augmentation"),
      TS_STR("data.prefetch", data.prefetch,
             "Batches prepared ahead on a worker thread (auto: 2 if a core is spare, else 0)"),
      TS_INT("data.synthetic.size", data.synthetic.size, "Synthetic dataset: samples"),
      TS_INT("data.synthetic.classes", data.synthetic.classes, "Synthetic dataset: classes"),
      TS_INT("data.synthetic.channels", data.synthetic.channels, "Synthetic dataset: channels"),
      TS_INT("data.synthetic.height", data.synthetic.height, "Synthetic dataset: height"),
      TS_INT("data.synthetic.width", data.synthetic.width, "Synthetic dataset: width"),
  };
}

std::vector<Field> model_and_optimizer_fields() {
  return {
      TS_STR("model.name", model.name, "Model", "mlp", "demo_cnn", "lenet5", "alexnet_mini",
             "vgg11_seed", "vgg11", "vgg16", "resnet18", "preact_resnet18", "mobilenet_v1"),
      TS_STR("model.init", model.init, "Weight init", "default", "kaiming", "xavier"),
      TS_DBL("model.dropout", model.dropout, "Dropout probability before the classifier"),
      TS_DBL("model.width", model.width, "Width multiplier (mobilenet_v1, mlp)"),
      TS_INT("model.hidden", model.hidden, "mlp hidden units"),
      TS_INT("model.flip_bit", model.flip_bit,
             "Flip the lowest bit of one initial weight chosen by N (0: off)"),
      TS_STR("optimizer.name", optimizer.name, "Optimizer", "sgd", "adam", "adamw", "adadelta",
             "rmsprop"),
      TS_DBL("optimizer.lr", optimizer.lr, "Learning rate"),
      TS_DBL("optimizer.momentum", optimizer.momentum, "Momentum (sgd, rmsprop)"),
      TS_BOOL("optimizer.nesterov", optimizer.nesterov, "Nesterov momentum (sgd)"),
      TS_DBL("optimizer.weight_decay", optimizer.weight_decay, "Weight decay"),
      TS_DBL("optimizer.beta1", optimizer.beta1, "Adam/AdamW beta1"),
      TS_DBL("optimizer.beta2", optimizer.beta2, "Adam/AdamW beta2"),
      TS_DBL("optimizer.eps", optimizer.eps, "Epsilon"),
      TS_DBL("optimizer.rho", optimizer.rho, "Adadelta rho"),
      TS_DBL("optimizer.alpha", optimizer.alpha, "RMSprop alpha"),
  };
}

std::vector<Field> schedule_fields() {
  return {
      TS_STR("schedule.name", schedule.name, "LR schedule", "constant", "step", "multistep",
             "exponential", "cosine"),
      TS_INT("schedule.step_size", schedule.step_size, "step: epochs between decays"),
      TS_DBL("schedule.gamma", schedule.gamma, "Decay factor"),
      Field{"schedule.milestones",
            "multistep: epochs at which lr *= gamma",
            Kind::kIntList,
            {},
            [](const Config& c) { return fmt_int_list(c.schedule.milestones); },
            [](Config& c, const std::string& v) {
              c.schedule.milestones = parse_int_list("schedule.milestones", v);
            }},
      TS_INT("schedule.t_max", schedule.t_max, "cosine: period in epochs (0: train.epochs)"),
      TS_DBL("schedule.eta_min", schedule.eta_min, "cosine: final lr"),
      TS_INT("schedule.warmup_steps", schedule.warmup_steps, "Linear warm-up steps (0: none)"),
  };
}

std::vector<Field> loop_fields() {
  return {
      TS_INT("train.epochs", train.epochs, "Training epochs"),
      TS_INT("train.batch_size", train.batch_size, "Training batch size"),
      TS_INT("train.max_steps", train.max_steps, "Stop after this many steps (0: no limit)"),
      TS_STR("train.on_nan", train.on_nan, "What a NaN loss does", "fail", "continue"),
      TS_INT("train.log_every_steps", train.log_every_steps, "Record step metrics every N steps"),
      TS_INT("eval.batch_size", eval.batch_size, "Evaluation batch size"),
      TS_DBL("eval.target_accuracy", eval.target_accuracy,
             "Record time and epochs until test accuracy reaches this (0: off)"),
      TS_STR("compute.dtype", compute.dtype, "Floating-point type of model and data", "float32",
             "float64"),
      TS_STR("compute.threads", compute.threads,
             "libtorch intra- and inter-op threads (auto: the physical cores available; "
             "default: libtorch's choice)"),
      TS_STR("compute.memory_format", compute.memory_format,
             "Layout of images, conv weights and activations", "contiguous", "channels_last"),
      TS_STR("compute.blas_threads", compute.blas_threads,
             "Threads of the BLAS libtorch calls (auto: 1, beside libtorch's own)"),
      TS_BOOL("allocator.keep_memory", allocator.keep_memory,
              "Keep freed tensor memory in the process instead of returning it to the OS and "
              "page-faulting it back every step (glibc: no mmap, no trim)"),
  };
}

std::vector<Field> recording_fields() {
  return {
      TS_INT("checkpoint.every_epochs", checkpoint.every_epochs,
             "Checkpoint every N epochs (0: off)"),
      TS_INT("checkpoint.every_steps", checkpoint.every_steps, "Checkpoint every N steps (0: off)"),
      TS_INT("fingerprint.every_steps", fingerprint.every_steps,
             "Hash every parameter, buffer and the loss every N steps (0: off)"),
      TS_BOOL("profile.enabled", profile.enabled, "Per-layer time profiling"),
      TS_INT("profile.warmup_steps", profile.warmup_steps, "Steps before the first profiled one"),
      TS_INT("profile.every", profile.every, "Profile every Nth step after the warm-up"),
      TS_STR("probes.preset", probes.preset, "Live per-layer probes", "off", "economy", "standard",
             "full"),
      TS_STR("probes.every", probes.every, "Probe steps N, 2N, ... (preset: 10, full 1)"),
      TS_STR("probes.layers", probes.layers, "Glob over layer names to probe"),
      TS_STR("probes.types", probes.types, "Comma-separated module types to probe (empty: all)"),
      TS_INT("probes.max_depth", probes.max_depth, "Deepest layer name level to probe (0: any)"),
      TS_STR("probes.kinds", probes.kinds, "Comma-separated kinds narrowing the preset's"),
      TS_INT("probes.histogram_bins", probes.histogram_bins, "Bins per histogram"),
      TS_INT("probes.activation_samples", probes.activation_samples,
             "Examples of the batch whose activations and layer gradients are probed (0: all)"),
      TS_INT("probes.test_every", probes.test_every, "Test accuracy every N steps (0: off)"),
      TS_INT("probes.workers", probes.workers, "Threads computing the probes"),
      TS_INT("probes.queue", probes.queue, "Packets waiting per probe worker"),
      TS_STR("probes.when_full", probes.when_full, "When the queue is full", "block", "drop"),
      TS_BOOL("probes.tensorboard", probes.tensorboard, "Write a TensorBoard event file"),
      TS_INT("probes.alert_patience", probes.alert_patience,
             "Consecutive observations before an alert"),
      TS_DBL("probes.alert_update_ratio_high", probes.alert_update_ratio_high,
             "Update/weight ratio above which the learning rate is too high"),
      TS_DBL("probes.alert_update_ratio_low", probes.alert_update_ratio_low,
             "Update/weight ratio below which the learning rate is too low"),
      TS_DBL("probes.alert_dead_fraction", probes.alert_dead_fraction,
             "Fraction of dead ReLU units that raises an alert"),
      TS_DBL("probes.alert_grad_depth_ratio", probes.alert_grad_depth_ratio,
             "First/last layer gradient-norm ratio that raises an alert"),
      TS_DBL("probes.alert_overfit_drop", probes.alert_overfit_drop,
             "Test-accuracy drop from its best (train rising) that means overfitting"),
      TS_DBL("monitor.interval_s", monitor.interval_s, "Resource sampling interval (0: off)"),
      TS_DBL("monitor.carbon_kg_per_kwh", monitor.carbon_kg_per_kwh,
             "Grid carbon intensity for CO2"),
      TS_DBL("monitor.cpu_tdp_watts", monitor.cpu_tdp_watts,
             "CPU TDP for the energy estimate without RAPL (0: 10 W per physical core)"),
      TS_BOOL("determinism.deterministic_algorithms", determinism.deterministic_algorithms,
              "libtorch's deterministic-algorithms switch"),
      TS_BOOL("determinism.mkldnn", determinism.mkldnn, "Use oneDNN (mkldnn) kernels"),
      TS_BOOL("determinism.cudnn_benchmark", determinism.cudnn_benchmark,
              "cuDNN autotuning (CUDA builds)"),
      TS_BOOL("determinism.cudnn_deterministic", determinism.cudnn_deterministic,
              "cuDNN deterministic kernels (CUDA builds)"),
  };
}

const std::vector<Field>& fields() {
  static const std::vector<Field> kFields = [] {
    std::vector<Field> all;
    for (auto part : {run_and_seed_fields, data_fields, model_and_optimizer_fields, schedule_fields,
                      loop_fields, recording_fields}) {
      auto f = part();
      all.insert(all.end(), std::make_move_iterator(f.begin()), std::make_move_iterator(f.end()));
    }
    return all;
  }();
  return kFields;
}

// An earlier spelling of `key`, replaced by its sectioned key; `noted`
// collects the spellings met, for the caller to mention.
std::string current_key(const std::string& key, std::vector<std::string>* noted) {
  if (key == "probes") return "probes.preset";  // `probes: standard`, `--set probes=full`
  const auto& renamed = renamed_config_keys();
  auto it = renamed.find(key);
  if (it == renamed.end()) return key;
  if (noted) noted->push_back(key);
  return it->second;
}

// The keys of a section ("model" -> model.name, model.init, ...).
std::vector<std::string> section_keys(const std::string& section) {
  std::vector<std::string> out;
  for (const auto& f : fields())
    if (std::string(f.key).rfind(section + ".", 0) == 0) out.push_back(f.key);
  return out;
}

const Field& find_field(const std::string& key, const std::string& source) {
  for (const auto& f : fields())
    if (key == f.key) return f;
  if (auto keys = section_keys(key); !keys.empty())  // `model: demo_cnn`
    fail(ErrorKind::kUsage,
         "{}: '{}' is a section, not a value; give one of its keys ({}{}), e.g. {}: value", source,
         key,
         fmt::format(
             "{}", fmt::join(keys.begin(), keys.begin() + std::min<size_t>(4, keys.size()), ", ")),
         keys.size() > 4 ? ", ..." : "", keys.front());
  // Suggest only a near miss: a third of the word at most (lr -> optimizer.lr,
  // optimizer.nam -> optimizer.name), never an unrelated key; farther
  // distances are not computed to the end.
  const std::string own_last =
      key.substr(key.rfind('.') == std::string::npos ? 0 : key.rfind('.') + 1);
  const size_t near = std::max<size_t>(1, own_last.size() / 3) + 1;
  const Field* best = nullptr;
  size_t best_d = near + 1;
  for (const auto& f : fields()) {
    // Compare with the full key and with its last component, so "lr" finds
    // "optimizer.lr".
    std::string k = f.key;
    std::string last = k.substr(k.rfind('.') == std::string::npos ? 0 : k.rfind('.') + 1);
    size_t d =
        std::min(core::edit_distance(key, k, near), core::edit_distance(key, last, near) + 1);
    if (d < best_d) best_d = d, best = &f;
  }
  if (best && best_d <= near)
    fail(ErrorKind::kUsage, "{}: unknown key '{}'; did you mean '{}'?", source, key, best->key);
  fail(ErrorKind::kUsage, "{}: unknown key '{}'; `trainscope config keys` lists every key", source,
       key);
}

void set_value(Config& c, const std::string& given, const std::string& value,
               const std::string& source, std::vector<std::string>* noted) {
  const std::string key = current_key(given, noted);
  const Field& f = find_field(key, source);
  if (f.kind == Kind::kString && !f.choices.empty() &&
      std::find(f.choices.begin(), f.choices.end(), value) == f.choices.end()) {
    std::string list;
    for (const auto& ch : f.choices) list += (list.empty() ? "" : ", ") + ch;
    fail(ErrorKind::kUsage, "{}: {} must be one of {} (got '{}')", source, key, list, value);
  }
  try {
    f.set(c, value);
  } catch (const Error& e) {
    throw Error(source + ": " + e.what(), ErrorKind::kUsage);
  }
}

void flatten_yaml(const YAML::Node& node, const std::string& prefix,
                  std::vector<std::pair<std::string, std::string>>& out,
                  const std::string& source) {
  if (node.IsMap()) {
    for (const auto& kv : node) {
      std::string k = kv.first.as<std::string>();
      flatten_yaml(kv.second, prefix.empty() ? k : prefix + "." + k, out, source);
    }
  } else if (node.IsSequence()) {
    std::string s = "[";
    for (size_t i = 0; i < node.size(); ++i) {
      if (!node[i].IsScalar())
        fail(ErrorKind::kUsage, "{}: {} must be a list of numbers", source, prefix);
      s += (i ? ", " : "") + node[i].as<std::string>();
    }
    out.emplace_back(prefix, s + "]");
  } else if (node.IsScalar()) {
    out.emplace_back(prefix, node.as<std::string>());
  } else if (node.IsNull() && !prefix.empty()) {
    out.emplace_back(prefix, "");
  }
}

// A count that may also be one of `words` ("auto", ...).
void check_count(const char* key, const std::string& v, std::initializer_list<const char*> words,
                 int64_t min, const std::string& source) {
  for (const char* w : words)
    if (v == w) return;
  int64_t n = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), n);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size() || n < min)
    fail(ErrorKind::kUsage, "{}: {} must be {} or an integer >= {} (got '{}')", source, key,
         *words.begin(), min, v);
}

// Names where a key's value came from: the --set that overrode it, else the
// config file (so an error blames the input that holds the bad value).
using Where = std::function<std::string(const std::string& key)>;

void validate_probes(const ProbesConfig& p, const Where& where) {
  auto bad = [&](const char* key, const std::string& why) {
    fail(ErrorKind::kUsage, "{}: probes.{} {}", where(std::string("probes.") + key), key, why);
  };
  const std::string source = where("probes.kinds");
  check_count("probes.every", p.every, {"preset"}, 1, where("probes.every"));
  if (p.max_depth < 0) bad("max_depth", "must be >= 0");
  if (p.histogram_bins < 2 || p.histogram_bins > 10000) bad("histogram_bins", "must be 2..10000");
  if (p.test_every < 0) bad("test_every", "must be >= 0");
  if (p.activation_samples < 0) bad("activation_samples", "must be >= 0");
  if (p.workers < 1 || p.workers > 64) bad("workers", "must be 1..64");
  if (p.queue < 1) bad("queue", "must be >= 1");
  if (p.alert_patience < 1) bad("alert_patience", "must be >= 1");
  std::stringstream ss(p.kinds);
  std::string k;
  try {
    while (std::getline(ss, k, ','))
      if (!k.empty()) probes::parse_kind(k);
  } catch (const Error& e) {
    throw Error(source + ": probes.kinds: " + e.what(), ErrorKind::kUsage);
  }
}

void validate(const Config& c, const Where& where) {
  auto bad = [&](const char* key, const std::string& why) {
    fail(ErrorKind::kUsage, "{}: {} {}", where(key), key, why);
  };
  if (!(c.optimizer.lr > 0))
    bad("optimizer.lr", fmt::format("must be > 0 (got {})", c.optimizer.lr));
  if (c.train.batch_size <= 0)
    bad("train.batch_size", fmt::format("must be >= 1 (got {})", c.train.batch_size));
  if (c.eval.batch_size <= 0) bad("eval.batch_size", "must be >= 1");
  if (c.train.epochs <= 0)
    bad("train.epochs", fmt::format("must be >= 1 (got {})", c.train.epochs));
  if (c.train.max_steps < 0) bad("train.max_steps", "must be >= 0");
  if (!(c.data.val_fraction >= 0 && c.data.val_fraction < 1))
    bad("data.val_fraction", "must be in [0, 1)");
  if (c.data.train_subset < 0 || c.data.test_subset < 0) bad("data.*_subset", "must be >= 0");
  if (c.data.crop_padding < 0) bad("data.crop_padding", "must be >= 0");
  check_count("data.prefetch", c.data.prefetch, {"auto"}, 0, where("data.prefetch"));
  check_count("compute.threads", c.compute.threads, {"auto", "default", "0"}, 1,
              where("compute.threads"));
  check_count("compute.blas_threads", c.compute.blas_threads, {"auto"}, 1,
              where("compute.blas_threads"));
  if (c.data.synthetic.size <= 0 || c.data.synthetic.classes < 2 ||
      c.data.synthetic.channels <= 0 || c.data.synthetic.height < 8 || c.data.synthetic.width < 8)
    bad("data.synthetic.*", "must describe at least 1 sample, 2 classes and 8x8 images");
  if (!(c.model.dropout >= 0 && c.model.dropout < 1)) bad("model.dropout", "must be in [0, 1)");
  if (!(c.model.width > 0)) bad("model.width", "must be > 0");
  if (c.model.hidden <= 0) bad("model.hidden", "must be >= 1");
  if (c.model.flip_bit < 0) bad("model.flip_bit", "must be >= 0");
  if (c.optimizer.momentum < 0) bad("optimizer.momentum", "must be >= 0");
  if (c.optimizer.nesterov && c.optimizer.momentum <= 0)
    bad("optimizer.nesterov", "needs optimizer.momentum > 0");
  if (c.optimizer.weight_decay < 0) bad("optimizer.weight_decay", "must be >= 0");
  if (!(c.schedule.gamma > 0)) bad("schedule.gamma", "must be > 0");
  if (c.schedule.step_size <= 0) bad("schedule.step_size", "must be >= 1");
  if (c.schedule.warmup_steps < 0) bad("schedule.warmup_steps", "must be >= 0");
  if (!std::is_sorted(c.schedule.milestones.begin(), c.schedule.milestones.end()))
    bad("schedule.milestones", "must be increasing");
  if (c.checkpoint.every_epochs < 0 || c.checkpoint.every_steps < 0)
    bad("checkpoint.*", "must be >= 0");
  if (c.train.log_every_steps <= 0) bad("train.log_every_steps", "must be >= 1");
  if (c.fingerprint.every_steps < 0) bad("fingerprint.every_steps", "must be >= 0");
  if (c.profile.warmup_steps < 0) bad("profile.warmup_steps", "must be >= 0");
  if (c.profile.every < 1) bad("profile.every", "must be >= 1");
  if (!(c.eval.target_accuracy >= 0 && c.eval.target_accuracy <= 1))
    bad("eval.target_accuracy", "must be in [0, 1]");
  validate_probes(c.probes, where);
  if (!(c.monitor.interval_s >= 0)) bad("monitor.interval_s", "must be >= 0");
  if (c.monitor.interval_s > 0 && c.monitor.interval_s < 0.05)
    bad("monitor.interval_s", "must be at least 0.05 s (or 0 to turn sampling off)");
  if (!(c.monitor.carbon_kg_per_kwh >= 0)) bad("monitor.carbon_kg_per_kwh", "must be >= 0");
}

}  // namespace

namespace {

Config parse_text(const std::string& yaml_text, const std::vector<std::string>& overrides,
                  const std::string& source, std::vector<std::string>* noted) {
  Config c;
  std::vector<std::pair<std::string, std::string>> kv;
  try {
    YAML::Node root = YAML::Load(yaml_text);
    if (!root.IsNull() && !root.IsMap())
      fail(ErrorKind::kUsage, "{}: expected a mapping of keys to values at the top level", source);
    flatten_yaml(root, "", kv, source);
  } catch (const YAML::Exception& e) {
    fail(ErrorKind::kUsage, "{}: invalid YAML at line {}: {}", source, e.mark.line + 1,
         core::escape_for_display(e.msg));
  }
  for (const auto& [k, v] : kv) set_value(c, k, v, source, noted);
  std::map<std::string, std::string> overridden;  // key -> the --set that gave it
  for (const auto& o : overrides) {
    auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0)
      fail(ErrorKind::kUsage, "--set '{}': expected key=value, e.g. optimizer.lr=0.1", o);
    set_value(c, o.substr(0, eq), o.substr(eq + 1), "--set " + o, noted);
    overridden[current_key(o.substr(0, eq), nullptr)] = o;
  }
  validate(c, [&](const std::string& key) {
    std::string prefix = key.substr(0, key.find('*'));  // "checkpoint.*" covers its keys
    for (const auto& [k, o] : overridden)
      if (k == key || (prefix.size() < key.size() && k.rfind(prefix, 0) == 0)) return "--set " + o;
    return source;
  });
  return c;
}

// Every message about a config is one line: a key or value that holds
// control characters (a YAML block scalar, a stray byte) is escaped.
Config parse(const std::string& yaml_text, const std::vector<std::string>& overrides,
             const std::string& source, std::vector<std::string>* noted) {
  try {
    return parse_text(yaml_text, overrides, source, noted);
  } catch (const core::Error& e) {
    const std::string_view m = e.what();
    if (std::none_of(m.begin(), m.end(), [](char ch) { return ch == '\n' || ch == '\r'; })) throw;
    throw core::Error(core::escape_for_display(m), e.kind());
  }
}

}  // namespace

const std::map<std::string, std::string>& renamed_config_keys() {
  static const std::map<std::string, std::string> kRenamed = {
      {"experiment", "run.experiment"},
      {"seed", "seeds.master"},
      {"epochs", "train.epochs"},
      {"batch_size", "train.batch_size"},
      {"max_steps", "train.max_steps"},
      {"on_nan", "train.on_nan"},
      {"log_every_steps", "train.log_every_steps"},
      {"eval_batch_size", "eval.batch_size"},
      {"target_accuracy", "eval.target_accuracy"},
      {"dtype", "compute.dtype"},
      {"threads", "compute.threads"},
  };
  return kRenamed;
}

Config parse_config(const std::string& yaml_text, const std::vector<std::string>& overrides,
                    const std::string& source) {
  return parse(yaml_text, overrides, source, nullptr);
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    fail(ErrorKind::kUsage, "config '{}' is a directory; give a YAML file, e.g. configs/demo.yaml",
         path);
  std::ifstream in(path);
  if (!in)
    fail(ErrorKind::kNotFound, "cannot read config '{}': {}; see configs/ for examples", path,
         std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<std::string> noted;
  Config c = parse(ss.str(), overrides, path, &noted);
  std::sort(noted.begin(), noted.end());
  noted.erase(std::unique(noted.begin(), noted.end()), noted.end());
  for (const auto& k : noted)
    core::log_info("{}: '{}' is now '{}' (the old spelling still works)", path, k,
                   renamed_config_keys().at(k));
  return c;
}

std::map<std::string, std::string> flatten(const Config& c) {
  std::map<std::string, std::string> out;
  for (const auto& f : fields()) out[f.key] = f.get(c);
  return out;
}

std::string to_yaml(const Config& c) {
  // Nested sections in the order their first key appears in the schema;
  // scalars quoted by yaml-cpp's emitter when they need it.
  struct Entry {
    std::vector<std::string> parts;
    std::string value;
  };
  std::vector<Entry> entries;
  for (const auto& f : fields()) {
    Entry e;
    std::stringstream ss(f.key);
    std::string p;
    while (std::getline(ss, p, '.')) e.parts.push_back(p);
    if (f.kind == Kind::kIntList) {
      e.value = f.get(c);
    } else {
      YAML::Emitter em;
      em << f.get(c);
      e.value = em.c_str();
      if (e.value.empty()) e.value = "\"\"";
    }
    entries.push_back(std::move(e));
  }
  // Stable grouping by every prefix level.
  std::stable_sort(entries.begin(), entries.end(), [&](const Entry& a, const Entry& b) {
    auto rank = [&](const Entry& e, size_t depth) {
      for (size_t i = 0; i < entries.size(); ++i) {
        if (entries[i].parts.size() <= depth) continue;
        bool same = true;
        for (size_t d = 0; d <= depth && same; ++d) same = entries[i].parts[d] == e.parts[d];
        if (same) return i;
      }
      return entries.size();
    };
    size_t depth = std::min(a.parts.size(), b.parts.size()) - 1;
    for (size_t d = 0; d <= depth; ++d) {
      size_t ra = rank(a, d), rb = rank(b, d);
      if (ra != rb) return ra < rb;
    }
    return false;
  });
  std::string out;
  std::vector<std::string> open;
  for (const auto& e : entries) {
    size_t common = 0;
    while (common < open.size() && common + 1 < e.parts.size() && open[common] == e.parts[common])
      ++common;
    open.resize(common);
    for (size_t d = common; d + 1 < e.parts.size(); ++d) {
      out += std::string(2 * d, ' ') + e.parts[d] + ":\n";
      open.push_back(e.parts[d]);
    }
    out += std::string(2 * (e.parts.size() - 1), ' ') + e.parts.back() + ": " + e.value + "\n";
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> config_keys() {
  std::vector<std::pair<std::string, std::string>> out;
  Config defaults;
  for (const auto& f : fields()) {
    std::string help = f.help;
    if (!f.choices.empty()) {
      help += " (";
      for (size_t i = 0; i < f.choices.size(); ++i) help += (i ? "|" : "") + f.choices[i];
      help += ")";
    }
    out.emplace_back(f.key, help + "; default " + f.get(defaults));
  }
  return out;
}

}  // namespace trainscope::train
