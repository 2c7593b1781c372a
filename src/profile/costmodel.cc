#include "trainscope/profile/costmodel.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <tuple>

#include "trainscope/core/error.h"
#include "trainscope/core/nesting.h"
#include "trainscope/core/nnls.h"
#include "trainscope/core/util.h"
#include "trainscope/profile/records.h"

namespace trainscope::profile {
using core::ErrorKind;
using core::fail;
using core::nnls;
using core::percentile;
using store::RunInfo;
using store::Store;

namespace {

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) s += a[i] * b[i];
  return s;
}

// Callers never pass an empty vector (a run has at least one iteration).
double median(std::vector<double> v) { return percentile(std::move(v), 0.5); }

// Rows divided by `scale`: least squares on errors relative to it.
struct Rows {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  void add(std::vector<double> f, double t, double scale) {
    for (auto& v : f) v /= scale;
    x.push_back(std::move(f));
    y.push_back(t / scale);
  }
};

}  // namespace

double vector_mflop(const LayerInfo& l, int lanes) {
  const double mflop = l.flops / 1e6;
  if (l.type != "Conv2d" && l.type != "Linear") return mflop;
  // Lanes a pass occupies per useful lane when `c` channels are spread over vectors.
  auto padding = [&](int64_t c) {
    if (l.type != "Conv2d" || c <= 0 || lanes <= 1) return 1.0;
    return static_cast<double>((c + lanes - 1) / lanes * lanes) / static_cast<double>(c);
  };
  const int64_t g = std::max<int64_t>(1, l.groups);
  const bool depthwise = g > 1 && l.in_channels == g && l.out_channels == g;
  const double out_pass = padding(depthwise ? g : l.out_channels / g);
  const double in_pass = padding(depthwise ? g : l.in_channels / g);
  return mflop * (2 * out_pass + (l.input_grad ? in_pass : 0.0)) / 3;
}

std::vector<double> compute_features(const LayerInfo& l, int lanes) {
  return {vector_mflop(l, lanes), std::max(0.0, l.bytes - l.param_bytes) / 1e6,
          static_cast<double>(l.params) / 1e6, 1.0};
}

std::vector<double> update_features(const LayerInfo& l) {
  return {static_cast<double>(l.params) / 1e6, static_cast<double>(l.param_tensors)};
}

std::vector<double> overhead_features(const std::vector<LayerInfo>& layers) {
  double act = 0;
  for (const auto& l : layers) act += l.activation_bytes;
  return {static_cast<double>(layers.size()), act / 1e6};
}

double CostModel::layer_us(const LayerInfo& l, bool* estimated) const {
  auto it = coef.find(l.type);
  if (estimated) *estimated = it == coef.end();
  double t =
      std::max(0.0, dot(it == coef.end() ? generic : it->second, compute_features(l, lanes)));
  if (l.params > 0) t += std::max(0.0, dot(update, update_features(l)));
  return t;
}

double CostModel::overhead_us(const std::vector<LayerInfo>& layers) const {
  return std::max(0.0, dot(overhead, overhead_features(layers)));
}

double CostModel::iteration_us(const std::vector<LayerInfo>& layers) const {
  double t = overhead_us(layers);
  for (const auto& l : layers) t += layer_us(l);
  return t;
}

std::string CostModel::to_json() const {
  return nlohmann::json{{"format", "trainscope-costmodel/4"},
                        {"compute_features", {"vector_mflop", "activation_mbytes", "mparams", "1"}},
                        {"simd_float_lanes", lanes},
                        {"update_features", {"mparams", "param_tensors"}},
                        {"overhead_features", {"layers", "activation_mbytes"}},
                        {"unit", "us"},
                        {"coef", coef},
                        {"generic", generic},
                        {"update", update},
                        {"overhead", overhead},
                        {"samples", samples},
                        {"threads", threads}}
      .dump(2);
}

namespace {

// A fit's coefficients are non-negative microseconds per unit of a feature
// (NNLS); one past this is no fit's but a file edited or damaged.
constexpr double kMaxCoefficient = 1e9;
constexpr int kMaxLanes = 256;  // float32 lanes: 16 on AVX-512, 64 on a 2048-bit SVE

[[noreturn]] void bad_model(const std::string& what) {
  fail(ErrorKind::kUsage, "cost model file: {}; fit the cost model again", what);
}

// `v` as a list of numbers (a JSON array of numbers), or a usage error
// naming `what`.
std::vector<double> number_list(const nlohmann::json& v, const std::string& what) {
  if (!v.is_array()) bad_model(what + " must be a list of numbers");
  std::vector<double> out;
  for (const auto& x : v) {
    if (!x.is_number()) bad_model(fmt::format("{} holds {}, not a number", what, x.dump()));
    out.push_back(x.get<double>());
  }
  return out;
}

// `key` of `j` as a whole number from lo to hi (`fallback` when absent; -1:
// required), or a usage error naming the key and the value.
int64_t whole_field(const nlohmann::json& j, const char* key, int64_t lo, int64_t hi,
                    int64_t fallback) {
  if (!j.contains(key)) {
    if (fallback < 0) bad_model(fmt::format("{} is missing", key));
    return fallback;
  }
  const auto& v = j[key];
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    bad_model(fmt::format("{} is {}, not a whole number from {} to {}", key, v.dump(), lo, hi));
  return v.get<int64_t>();
}

void check_coefficients(const std::string& what, const std::vector<double>& c, size_t n) {
  if (c.size() != n)
    bad_model(
        fmt::format("{} has {} coefficients, not the {} its features need", what, c.size(), n));
  for (size_t i = 0; i < c.size(); ++i)
    if (!std::isfinite(c[i]) || c[i] < 0 || c[i] > kMaxCoefficient)
      bad_model(fmt::format("coefficient {} of {} is {}: a fit gives a finite number from 0 to {}",
                            i, what, core::format_double(c[i]), kMaxCoefficient));
}

// Every number a prediction reads, and the features it assumes, as the
// fit wrote them (to_json): a file is untrusted bytes.
void check_model(const CostModel& m, const nlohmann::json& j) {
  const nlohmann::json written = nlohmann::json::parse(m.to_json());
  // A file in seconds was read as microseconds (twenty-seventh hunt, A-D5).
  if (j.value("unit", nlohmann::json()) != written.at("unit"))
    bad_model(fmt::format("unit is {}, not {} (microseconds, as a fit writes it)",
                          j.value("unit", nlohmann::json()).dump(), written.at("unit").dump()));
  for (const char* names : {"compute_features", "update_features", "overhead_features"})
    if (j.value(names, nlohmann::json()) != written.at(names))
      bad_model(fmt::format("{} are {}, not {}", names, j.value(names, nlohmann::json()).dump(),
                            written.at(names).dump()));
  const size_t compute = compute_features(LayerInfo{}, 1).size();
  for (const auto& [type, c] : m.coef)
    check_coefficients("type " + core::escape_for_display(type), c, compute);
  check_coefficients("generic", m.generic, compute);
  check_coefficients("update", m.update, update_features(LayerInfo{}).size());
  check_coefficients("overhead", m.overhead, overhead_features({}).size());
}

// `text` as JSON, a key given twice in one object refused: nlohmann keeps
// the last silently, so a coefficient given twice changed a prediction
// without a word (twenty-seventh hunt, A-D5).
nlohmann::json parse_once(const std::string& text) {
  using Event = nlohmann::json::parse_event_t;
  std::vector<std::set<std::string>> open;  // the keys of each object being read
  std::optional<std::string> twice;
  const auto seen = [&](int, Event e, nlohmann::json& v) {
    if (e == Event::object_start) open.emplace_back();
    if (e == Event::object_end && !open.empty()) open.pop_back();
    if (e == Event::key && !open.empty() && !open.back().insert(v.get<std::string>()).second &&
        !twice)
      twice = v.get<std::string>();
    return true;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text, seen);
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::kUsage, "cost model file is not valid JSON ({}); fit the cost model again",
         e.what());
  }
  if (twice) bad_model(fmt::format("the key '{}' is given twice", core::escape_cut(*twice, 64)));
  return j;
}

}  // namespace

CostModel CostModel::from_json(const std::string& text) {
  CostModel m;
  core::check_json_nesting(text, "the cost model");
  const nlohmann::json j = parse_once(text);
  if (!j.is_object() || j.value("format", nlohmann::json()) != "trainscope-costmodel/4")
    fail(ErrorKind::kUsage,
         "not a trainscope cost model (format {}); fit it again from profiled runs",
         j.is_object() && j.contains("format") ? j["format"].dump() : "missing");
  if (!j.contains("coef") || !j["coef"].is_object()) bad_model("coef must be an object");
  for (const auto& [type, c] : j["coef"].items())
    m.coef[type] = number_list(c, "coef of type " + core::escape_for_display(type));
  m.generic = number_list(j.value("generic", nlohmann::json()), "generic");
  m.update = number_list(j.value("update", nlohmann::json()), "update");
  m.overhead = number_list(j.value("overhead", nlohmann::json()), "overhead");
  m.samples = whole_field(j, "samples", 0, int64_t{1} << 53, 0);
  m.threads = whole_field(j, "threads", 0, 1 << 20, 0);
  m.lanes = static_cast<int>(whole_field(j, "simd_float_lanes", 1, kMaxLanes, -1));
  check_model(m, j);
  return m;
}

namespace {

// One profiled run reduced to medians over its profiled steps.
struct ReducedRun {
  std::string uuid;
  std::vector<LayerInfo> layers;
  std::map<std::string, double> compute_us, update_us;  // layer -> median us
  double wall = 0;
};
// Runs are grouped by (model, batch, threads).
using GroupKey = std::tuple<std::string, int64_t, int64_t>;

std::optional<ReducedRun> reduce_run(Store& store, const RunInfo& r) {
  auto cells = read_cells(store, r.uuid);
  if (cells.empty()) return std::nullopt;
  ReducedRun o;
  o.uuid = r.uuid;
  o.layers = layers_from_json(read_layers(store, r.uuid));
  // layer -> step -> us, for compute (forward, backward) and update
  // (update, zero_grad).
  std::map<std::string, std::map<int64_t, double>> compute, update;
  std::vector<int64_t> steps;
  std::vector<double> walls;
  for (const auto& c : cells) {
    if (c.layer == "(wall)") {
      steps.push_back(c.step);
      walls.push_back(c.us);
    } else if (!c.layer.empty() && c.layer[0] != '(') {
      auto& m = c.phase == "update" || c.phase == "zero_grad" ? update : compute;
      m[c.layer][c.step] += c.us;
    }
  }
  if (walls.empty()) return std::nullopt;
  o.wall = median(walls);
  auto median_over_steps = [&](std::map<int64_t, double>& per_step) {
    std::vector<double> v;
    for (int64_t s : steps) v.push_back(per_step.count(s) ? per_step[s] : 0.0);
    return median(v);
  };
  for (const auto& l : o.layers) {
    o.compute_us[l.name] = median_over_steps(compute[l.name]);
    o.update_us[l.name] = median_over_steps(update[l.name]);
  }
  return o;
}

// A stored thread count, as the model file holds it (0 to 2^20): any other
// text is a damaged store, never a model the reader then refuses.
int64_t stored_threads(const std::string& text, const char* what, const std::string& uuid) {
  const auto v = core::whole_in(text, 0, 1 << 20);
  if (!v)
    core::fail(core::ErrorKind::kStore,
               "run {}: its {} is '{}', not a thread count from 0 to 1048576; the store is damaged",
               core::short_uuid(uuid), what, core::escape_cut(text, 64));
  return *v;
}

GroupKey group_of(Store& store, const ReducedRun& o) {
  auto p = store.params(o.uuid);
  std::string model = p.count("model.name") ? p.at("model.name") : "?";
  int64_t batch = o.layers.empty() || o.layers[0].in_shape.empty() ? 0 : o.layers[0].in_shape[0];
  // The threads the run really had (its environment), else its config
  // ("threads" in runs recorded before config keys had sections).
  int64_t threads = 0;
  for (const char* key : {"compute.threads", "threads"})
    if (p.count(key) && p.at(key) != "auto" && p.at(key) != "default")  // 0: not fixed
      threads = stored_threads(p.at(key), key, o.uuid);
  auto e = store.environment(o.uuid);
  if (e.count("threads.torch.intra_op"))
    threads = stored_threads(e.at("threads.torch.intra_op"), "threads.torch.intra_op", o.uuid);
  return {model, batch, threads};
}

// Repeats of one configuration merged by medians.
ProfiledArch merge(const GroupKey& key, std::vector<ReducedRun>& ones) {
  ProfiledArch a;
  std::tie(a.model, a.batch, a.threads) = key;
  a.layers = ones[0].layers;
  std::vector<double> walls;
  for (const auto& o : ones) {
    a.runs.push_back(o.uuid);
    walls.push_back(o.wall);
  }
  a.iteration_us = median(walls);
  for (const auto& l : a.layers) {
    std::vector<double> c, u;
    for (auto& o : ones) {
      c.push_back(o.compute_us[l.name]);
      u.push_back(o.update_us[l.name]);
    }
    a.layer_compute_us.push_back(median(c));
    a.layer_update_us.push_back(median(u));
    a.layer_us.push_back(a.layer_compute_us.back() + a.layer_update_us.back());
  }
  return a;
}

}  // namespace

std::vector<ProfiledArch> load_profiled(Store& store, const std::vector<std::string>& runs) {
  std::vector<RunInfo> infos;
  if (runs.empty()) {
    for (const auto& r : store.list_runs({}))
      if (store.record_kinds(r.uuid).count(kLayersKind)) infos.push_back(r);
  } else {
    infos = store.resolve_runs(runs);  // a run named twice counts once
  }
  std::map<GroupKey, std::vector<ReducedRun>> groups;
  for (const auto& r : infos) {
    if (auto o = reduce_run(store, r)) {
      groups[group_of(store, *o)].push_back(std::move(*o));
    } else if (!runs.empty()) {
      // A run the user named is fitted or refused, never left out without
      // a word (thirtieth hunt, A-D4); the default takes the profiled ones.
      fail(ErrorKind::kNotFound,
           "run {} ({}) has no profiled step to fit; profile it (--set profile.enabled=true) or "
           "leave it out",
           core::short_uuid(r.uuid), core::escape_for_display(r.name));
    }
  }
  std::vector<ProfiledArch> out;
  for (auto& [key, ones] : groups) out.push_back(merge(key, ones));
  return out;
}

CostModel fit(const std::vector<ProfiledArch>& data, int lanes) {
  if (data.empty())
    fail(ErrorKind::kNotFound,
         "no profiled runs to fit; profile some models first (configs/profile_grid.yaml)");
  CostModel m;
  m.lanes = lanes;
  std::map<std::string, Rows> by_type;
  Rows all, update, rest;
  std::set<int64_t> threads;
  for (const auto& a : data) {
    threads.insert(a.threads);
    const double wall = std::max(1.0, a.iteration_us);
    double in_layers = 0;
    for (size_t i = 0; i < a.layers.size(); ++i) {
      const auto& l = a.layers[i];
      const double c = i < a.layer_compute_us.size() ? a.layer_compute_us[i] : a.layer_us[i];
      const double u = i < a.layer_update_us.size() ? a.layer_update_us[i] : 0.0;
      in_layers += c + u;
      if (c > 0) {  // a layer that does nothing (dropout at p = 0) says nothing
        by_type[l.type].add(compute_features(l, lanes), c, wall);
        all.add(compute_features(l, lanes), c, c);
        ++m.samples;
      }
      if (u > 0 && l.params > 0) update.add(update_features(l), u, u);
    }
    const double r = std::max(1.0, a.iteration_us - in_layers);
    rest.add(overhead_features(a.layers), r, r);
  }
  for (auto& [type, rows] : by_type) m.coef[type] = nnls(rows.x, rows.y);
  m.generic = nnls(all.x, all.y);
  m.update = update.x.empty() ? std::vector<double>{0.0, 0.0} : nnls(update.x, update.y);
  m.overhead = nnls(rest.x, rest.y);
  m.threads = threads.size() == 1 ? *threads.begin() : 0;
  return m;
}

CostModelEval leave_one_architecture_out(const std::vector<ProfiledArch>& data, int lanes) {
  std::set<std::string> models;
  for (const auto& a : data) models.insert(a.model);
  if (models.size() < 2)
    fail(ErrorKind::kUsage,
         "leave-one-architecture-out needs profiles of at least 2 architectures (have {}); "
         "profile a grid of models first (configs/profile_grid.yaml)",
         models.size());
  CostModelEval ev;
  double ape = 0, lape = 0;
  for (const auto& held : models) {
    std::vector<ProfiledArch> train;
    for (const auto& a : data)
      if (a.model != held) train.push_back(a);
    CostModel m = fit(train, lanes);
    for (const auto& a : data) {
      if (a.model != held) continue;
      double pred = m.iteration_us(a.layers);
      ev.rows.push_back({a.model, a.batch, a.iteration_us, pred});
      ape += std::fabs(pred - a.iteration_us) / a.iteration_us;
      for (size_t i = 0; i < a.layers.size(); ++i) {
        if (a.layer_us[i] < 0.01 * a.iteration_us) continue;
        const double p = m.layer_us(a.layers[i]);
        ev.layer_rows.push_back(
            {a.model, a.layers[i].name, a.layers[i].type, a.batch, a.layer_us[i], p});
        lape += std::fabs(p - a.layer_us[i]) / a.layer_us[i];
      }
    }
  }
  ev.iteration_mape = 100 * ape / static_cast<double>(ev.rows.size());
  ev.layer_mape =
      ev.layer_rows.empty() ? 0 : 100 * lape / static_cast<double>(ev.layer_rows.size());
  return ev;
}

}  // namespace trainscope::profile
