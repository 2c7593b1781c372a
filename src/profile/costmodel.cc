#include "trainscope/profile/costmodel.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <set>

#include "trainscope/core/error.h"

namespace trainscope::profile {
namespace {

// Features without an intercept: a layer that does no work takes no time,
// so small networks are not charged the big ones' constant.
std::vector<double> features(const LayerInfo& l) {
  return {l.flops / 1e6, l.bytes / 1e6, static_cast<double>(l.params) / 1e6};
}
std::vector<double> overhead_features(const std::vector<LayerInfo>& layers, int64_t batch) {
  double params = 0;
  for (const auto& l : layers) params += static_cast<double>(l.params);
  return {static_cast<double>(layers.size()), static_cast<double>(batch), params / 1e6};
}

// Least squares with a small ridge term (keeps sparse types well posed).
std::vector<double> solve(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                          double ridge = 1e-6) {
  const size_t k = x.empty() ? 0 : x[0].size();
  std::vector<std::vector<double>> a(k, std::vector<double>(k + 1, 0.0));
  for (size_t r = 0; r < x.size(); ++r)
    for (size_t i = 0; i < k; ++i) {
      for (size_t j = 0; j < k; ++j) a[i][j] += x[r][i] * x[r][j];
      a[i][k] += x[r][i] * y[r];
    }
  for (size_t i = 0; i < k; ++i) a[i][i] += ridge * (1 + a[i][i]);
  for (size_t c = 0; c < k; ++c) {  // Gauss-Jordan with partial pivoting
    size_t p = c;
    for (size_t r = c + 1; r < k; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[p][c])) p = r;
    std::swap(a[c], a[p]);
    if (std::fabs(a[c][c]) < 1e-300) continue;
    for (size_t r = 0; r < k; ++r) {
      if (r == c) continue;
      double f = a[r][c] / a[c][c];
      for (size_t j = c; j <= k; ++j) a[r][j] -= f * a[c][j];
    }
  }
  std::vector<double> out(k, 0.0);
  for (size_t i = 0; i < k; ++i) out[i] = std::fabs(a[i][i]) < 1e-300 ? 0.0 : a[i][k] / a[i][i];
  return out;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

double CostModel::layer_us(const LayerInfo& l, bool* estimated) const {
  auto it = coef.find(l.type);
  if (estimated) *estimated = it == coef.end();
  if (it == coef.end()) return l.flops * fallback_us_per_flop;
  return std::max(0.0, dot(it->second, features(l)));
}

double CostModel::iteration_us(const std::vector<LayerInfo>& layers, int64_t batch) const {
  double t = overhead.empty() ? 0.0 : std::max(0.0, dot(overhead, overhead_features(layers, batch)));
  for (const auto& l : layers) t += layer_us(l);
  return t;
}

std::string CostModel::to_json() const {
  return nlohmann::json{{"coef", coef},
                        {"overhead", overhead},
                        {"fallback_us_per_flop", fallback_us_per_flop},
                        {"samples", samples},
                        {"features", {"mflops", "mbytes", "mparams", "1"}}}
      .dump(2);
}

CostModel CostModel::from_json(const std::string& text) {
  auto j = nlohmann::json::parse(text);
  CostModel m;
  m.coef = j.at("coef").get<std::map<std::string, std::vector<double>>>();
  m.overhead = j.at("overhead").get<std::vector<double>>();
  m.fallback_us_per_flop = j.at("fallback_us_per_flop").get<double>();
  m.samples = j.value("samples", int64_t{0});
  return m;
}

std::vector<ProfiledArch> load_profiled(Store& store, const std::vector<std::string>& runs) {
  std::vector<RunInfo> infos;
  if (runs.empty()) {
    for (const auto& r : store.list_runs({}))
      if (!store.profile_layers(r.uuid).empty()) infos.push_back(r);
  } else {
    for (const auto& ref : runs) infos.push_back(store.resolve_run(ref));
  }
  std::vector<ProfiledArch> out;
  for (const auto& r : infos) {
    ProfileSummary s = summarize(store, r.uuid);
    if (s.iterations == 0) continue;
    ProfiledArch a;
    a.run = r.uuid;
    auto p = store.params(r.uuid);
    a.model = p.count("model.name") ? p.at("model.name") : "?";
    a.layers = layers_from_json(store.profile_layers(r.uuid));
    a.batch = a.layers.empty() || a.layers[0].in_shape.empty() ? 0 : a.layers[0].in_shape[0];
    std::map<std::string, double> t;
    for (const auto& l : s.layers) t[l.layer] = l.total();
    for (const auto& l : a.layers) a.layer_us.push_back(t.count(l.name) ? t[l.name] : 0.0);
    a.iteration_us = s.wall_us;
    out.push_back(std::move(a));
  }
  return out;
}

CostModel fit(const std::vector<ProfiledArch>& data) {
  if (data.empty())
    fail(ErrorKind::kNotFound,
         "no profiled runs to fit; record some with `trainscope profile grid configs/profile_grid.yaml`");
  CostModel m;
  std::map<std::string, std::pair<std::vector<std::vector<double>>, std::vector<double>>> by_type;
  std::vector<std::vector<double>> ox;
  std::vector<double> oy;
  double flops = 0, us = 0;
  for (const auto& a : data) {
    double in_layers = 0;
    for (size_t i = 0; i < a.layers.size(); ++i) {
      if (a.layer_us[i] <= 0) continue;
      // Rows scaled by 1/t: least squares on relative errors, so small
      // layers count as much as large ones.
      auto f = features(a.layers[i]);
      for (auto& v : f) v /= a.layer_us[i];
      by_type[a.layers[i].type].first.push_back(f);
      by_type[a.layers[i].type].second.push_back(1.0);
      in_layers += a.layer_us[i];
      flops += a.layers[i].flops;
      us += a.layer_us[i];
      ++m.samples;
    }
    const double rest = std::max(1.0, a.iteration_us - in_layers);
    auto f = overhead_features(a.layers, a.batch);
    for (auto& v : f) v /= rest;
    ox.push_back(f);
    oy.push_back(1.0);
  }
  for (auto& [type, xy] : by_type) m.coef[type] = solve(xy.first, xy.second);
  m.overhead = solve(ox, oy);
  m.fallback_us_per_flop = flops > 0 ? us / flops : 0;
  return m;
}

CostModelEval leave_one_architecture_out(const std::vector<ProfiledArch>& data) {
  std::set<std::string> models;
  for (const auto& a : data) models.insert(a.model);
  if (models.size() < 2)
    fail(ErrorKind::kUsage, "leave-one-architecture-out needs profiles of at least 2 architectures (have {})",
         models.size());
  CostModelEval ev;
  double ape = 0, lape = 0;
  int64_t ln = 0;
  for (const auto& held : models) {
    std::vector<ProfiledArch> train;
    for (const auto& a : data)
      if (a.model != held) train.push_back(a);
    CostModel m = fit(train);
    for (const auto& a : data) {
      if (a.model != held) continue;
      double pred = m.iteration_us(a.layers, a.batch);
      ev.rows.push_back({a.model, a.batch, a.iteration_us, pred});
      ape += std::fabs(pred - a.iteration_us) / a.iteration_us;
      for (size_t i = 0; i < a.layers.size(); ++i) {
        if (a.layer_us[i] < 0.01 * a.iteration_us) continue;
        lape += std::fabs(m.layer_us(a.layers[i]) - a.layer_us[i]) / a.layer_us[i];
        ++ln;
      }
    }
  }
  ev.iteration_mape = 100 * ape / static_cast<double>(ev.rows.size());
  ev.layer_mape = ln ? 100 * lape / static_cast<double>(ln) : 0;
  return ev;
}

}  // namespace trainscope::profile
