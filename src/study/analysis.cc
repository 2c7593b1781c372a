// A study's runs, cell by cell: spread, cross-run agreement, audit, cost.
#include <algorithm>
#include <cmath>
#include <map>

#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/predictions/predictions.h"
#include "trainscope/repro/diff.h"
#include "trainscope/study/report.h"
#include "trainscope/study/study.h"

namespace trainscope::study {

using predictions::kPredictionsArtifact;
using predictions::Predictions;
using predictions::read_predictions;

using store::RunInfo;
using store::RunStatus;

namespace {

// NaN when a logit is not a number (a diverged run): no correlation.
double pearson(const std::vector<float>& a, const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return std::nan("");
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) ma += a[i], mb += b[i];
  ma /= a.size(), mb /= b.size();
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 1.0;
}

double ensemble(const std::vector<Predictions>& runs) {
  const size_t n = runs[0].labels.size();
  size_t right = 0;
  for (size_t i = 0; i < n; ++i) {
    std::map<int32_t, std::pair<int, float>> votes;  // class -> (votes, best logit)
    for (const auto& r : runs) {
      auto& v = votes[r.predicted[i]];
      v.first += 1;
      v.second = v.first == 1 ? r.top_logit[i] : std::max(v.second, r.top_logit[i]);
    }
    auto best = std::max_element(votes.begin(), votes.end(), [](const auto& x, const auto& y) {
      return std::tie(x.second.first, x.second.second) < std::tie(y.second.first, y.second.second);
    });
    right += best->first == runs[0].labels[i];
  }
  return static_cast<double>(right) / n;
}

}  // namespace

std::optional<CrossRun> cross_run(const std::vector<Predictions>& runs) {
  if (runs.size() < 2) return std::nullopt;
  for (const auto& r : runs)
    if (r.labels != runs[0].labels) return std::nullopt;  // different test sets
  if (runs[0].labels.empty()) return std::nullopt;        // nothing to compare
  CrossRun c;
  c.runs = static_cast<int>(runs.size());
  int pairs = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    c.mean_accuracy += runs[i].accuracy() / runs.size();
    for (size_t j = i + 1; j < runs.size(); ++j, ++pairs) {
      size_t differ = 0;
      for (size_t k = 0; k < runs[i].predicted.size(); ++k)
        differ += runs[i].predicted[k] != runs[j].predicted[k];
      c.disagreement += static_cast<double>(differ) / runs[i].predicted.size();
      c.logit_correlation += pearson(runs[i].top_logit, runs[j].top_logit);
    }
  }
  c.disagreement /= pairs;
  c.logit_correlation /= pairs;
  c.ensemble_accuracy = ensemble(runs);
  return c;
}

namespace {

std::optional<double> last(store::Store& s, const std::string& run, const std::string& key) {
  auto pts = s.metric(run, key);
  if (pts.empty()) return std::nullopt;
  return pts.back().value;
}

// The mean of a run's points of `key`; none when it recorded none.
std::optional<double> mean_of(store::Store& s, const std::string& run, const std::string& key) {
  auto pts = s.metric(run, key);
  if (pts.empty()) return std::nullopt;
  double m = 0;
  for (const auto& p : pts) m += p.value / pts.size();
  return m;
}

Audit audit(store::Store& s, const std::vector<RunInfo>& runs) {
  Audit a;
  for (size_t i = 1; i < runs.size(); ++i) {
    repro::RunDiff d = repro::diff_runs(s, runs[0], runs[i]);
    ++a.compared;
    if (!d.have_fingerprints) {
      a.note = "no fingerprints recorded: set fingerprint.every_steps to audit";
      a.identical = false;
      return a;
    }
    if (!d.identical) {
      a.identical = false;
      a.first_differing_run = runs[i].name;
      a.first_diff_step = d.first_diff_step;
      return a;
    }
  }
  return a;
}

struct CellRuns {
  std::string vary;
  std::vector<std::pair<std::string, std::string>> factors;
  std::vector<RunInfo> runs;
};

// The finished counted run of each planned run (study_runs: what every
// reader counts), by cell in plan order.
std::vector<std::pair<std::string, CellRuns>> finished_by_cell(store::Store& s,
                                                               const StudyAnalysis& a) {
  std::vector<std::pair<std::string, CellRuns>> cells;
  for (const auto& planned : study_runs(s, a.study).planned) {
    const PlannedRun& p = planned.planned;
    if (cells.empty() || cells.back().first != p.cell) {
      CellRuns c{p.vary, {}, {}};
      c.factors = p.levels;  // each grid factor's value or level name
      cells.emplace_back(p.cell, c);
    }
    const RunInfo* r = planned.counted();
    if (r && r->status == RunStatus::kFinished) cells.back().second.runs.push_back(*r);
  }
  return cells;
}

// A cost series over a cell's runs: the mean (or sum) of the runs that
// recorded it, a run lacking it left out rather than taken as 0; NaN or
// none when no run recorded it (`-`, null).
struct CostSeries {
  double sum = 0;
  int n = 0;
  void add(std::optional<double> v) {
    if (v) sum += *v, ++n;
  }
  double mean() const { return n ? sum / n : std::nan(""); }
  double total() const { return n ? sum : std::nan(""); }
  std::optional<double> mean_if_any() const {
    return n ? std::optional<double>(sum / n) : std::nullopt;
  }
};

struct CellCost {
  CostSeries samples_per_s, epoch_s, energy_kwh, time_to_target_s, epochs_to_target;

  void add(store::Store& s, const RunInfo& r) {
    samples_per_s.add(mean_of(s, r.uuid, "samples_per_s"));
    epoch_s.add(mean_of(s, r.uuid, "epoch_time_s"));
    energy_kwh.add(last(s, r.uuid, "energy/total_kwh"));
    time_to_target_s.add(last(s, r.uuid, "time_to_target_s"));
    epochs_to_target.add(last(s, r.uuid, "epochs_to_target"));
  }

  void fill(CellAnalysis& c) const {
    c.mean_samples_per_s = samples_per_s.mean();
    c.mean_epoch_s = epoch_s.mean();
    c.energy_kwh = energy_kwh.total();
    c.mean_time_to_target_s = time_to_target_s.mean_if_any();
    c.mean_epochs_to_target = epochs_to_target.mean_if_any();
  }
};

// A run's test predictions, checked against what the store recorded; a
// missing or damaged file is a note of the report, not its end.
std::optional<Predictions> predictions_of(store::Store& s, const RunInfo& r, StudyAnalysis& a) {
  for (const auto& art : s.artifacts(r.uuid)) {
    if (art.name != kPredictionsArtifact || art.kind != predictions::kPredictionsKind) continue;
    try {
      store::verify_artifact(art);
      return read_predictions(art.path);
    } catch (const core::Error& e) {
      a.notes.push_back(fmt::format("{} ({}) is left out of the cross-run measures: {}", r.name,
                                    core::short_uuid(r.uuid), e.what()));
    }
  }
  return std::nullopt;
}

CellAnalysis analyse_cell(store::Store& s, const std::string& name, const CellRuns& cr,
                          StudyAnalysis& a) {
  CellAnalysis c;
  c.cell = name;
  c.vary = cr.vary;
  c.runs = static_cast<int>(cr.runs.size());
  std::vector<Predictions> preds;
  int n = c.runs;
  std::map<int64_t, std::vector<double>> by_epoch;
  CellCost cost;
  for (const auto& r : cr.runs) {
    c.run_uuids.push_back(r.uuid);
    const auto points = s.metric(r.uuid, a.metric);
    if (!points.empty()) c.values.push_back(points.back().value);
    std::map<int64_t, double> at;  // a repeated step (a resumed epoch): its last value
    for (const auto& p : points) at[p.step] = p.value;
    for (const auto& [epoch, v] : at) by_epoch[epoch].push_back(v);
    c.mean_run_s += store::run_seconds(r, 0) / n;  // NaN (none shown) if one run's times give none
    cost.add(s, r);
    if (auto p = predictions_of(s, r, a)) preds.push_back(std::move(*p));
    Curve curve{name, r.name, {}, {}};
    for (const auto& p : s.metric(r.uuid, "train/loss"))
      curve.x.push_back(p.step), curve.y.push_back(p.value);
    a.loss_curves.push_back(std::move(curve));
  }
  for (auto& [epoch, values] : by_epoch) c.epochs.push_back({epoch, std::move(values)});
  cost.fill(c);
  if (c.runs == 0) c.mean_run_s = std::nan("");  // no finished run: no mean, not 0 (`-`, null)
  c.levels = cr.factors;
  for (const auto& [k, v] : cr.factors) {
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (end && *end == 0) c.factors.emplace_back(k, std::vector<double>{d});
  }
  c.cross = cross_run(preds);
  const bool exact = cr.vary == "none" || cr.vary == "deterministic";
  if (exact && cr.runs.size() >= 2) c.audit = audit(s, cr.runs);
  return c;
}

}  // namespace

namespace {

void add_statistics(StudyAnalysis& a) {
  std::vector<stats::RunValue> values;
  for (const auto& c : a.cells)
    for (double v : c.values) values.push_back({"", "", c.cell, v});
  if (values.empty()) {
    a.notes.push_back("no finished run has " + a.metric + " yet");
    return;
  }
  stats::MetricStats m;
  try {
    m = stats::analyse(a.metric, values);
  } catch (const core::Error& e) {
    a.notes.push_back(e.what());
    return;
  }
  for (auto& c : a.cells)
    for (const auto& g : m.groups)
      if (g.group == c.cell) c.result = g;
  a.comparison = m.comparison;
  a.notes.insert(a.notes.end(), m.notes.begin(), m.notes.end());
  const CellAnalysis* all = nullptr;
  for (const auto& c : a.cells)
    if (c.cell == "all" && c.result.summary.sd) all = &c;
  if (!a.spec.sources.empty() && all && *all->result.summary.sd > 0)
    for (auto& c : a.cells)
      if (c.result.summary.sd) c.sd_ratio = *c.result.summary.sd / *all->result.summary.sd;
}

void add_deterministic_twins(StudyAnalysis& a) {
  std::map<std::string, const CellAnalysis*> by_name;
  for (const auto& c : a.cells) by_name[c.cell] = &c;
  for (auto& c : a.cells) {
    auto twin = by_name.find(c.cell + ",deterministic");
    if (twin == by_name.end() || twin->second->values.empty() || c.values.empty()) continue;
    const double det = twin->second->values.front();
    c.deterministic_value = det;
    const double mean = stats::mean(c.values);
    if (mean != 0) c.diff_percent_vs_deterministic = (det - mean) / mean * 100;
    try {
      c.t_vs_deterministic = stats::t_test_one_sample(c.values, det);
    } catch (const core::Error& e) {
      a.notes.push_back(c.cell + " against its deterministic run: " + e.what());
    }
  }
}

// Each cell's SD across its runs at each epoch, and in a sources study its
// ratio to the "all" source's SD at the same epoch.
void add_epoch_spread(StudyAnalysis& a) {
  for (auto& c : a.cells)
    for (auto& e : c.epochs) {
      e.mean = stats::mean(e.values);
      if (e.values.size() < 2) continue;
      try {
        e.sd = stats::sd(e.values);
        if (*e.sd > 0) e.sd_ci = stats::bootstrap_sd_ci(e.values);
      } catch (const core::Error& err) {
        a.notes.push_back(fmt::format("{} at epoch {}: {}", c.cell, e.epoch, err.what()));
      }
    }
  if (a.spec.sources.empty()) return;
  std::map<int64_t, double> all_sd;
  for (const auto& c : a.cells)
    if (c.cell == "all")
      for (const auto& e : c.epochs)
        if (e.sd && *e.sd > 0) all_sd[e.epoch] = *e.sd;
  for (auto& c : a.cells)
    for (auto& e : c.epochs)
      if (e.sd && all_sd.count(e.epoch)) e.sd_ratio = *e.sd / all_sd[e.epoch];
}

// The cells whose pairs are compared: every source, or a grid's varied
// cells (their exact-repeat twins have a table of their own), with two
// values or more.
std::vector<const CellAnalysis*> comparable_cells(StudyAnalysis& a) {
  std::vector<const CellAnalysis*> cells;
  for (const auto& c : a.cells) {
    if (a.spec.sources.empty() && c.vary != a.spec.vary) continue;
    if (c.values.size() >= 2) {
      cells.push_back(&c);
      continue;
    }
    a.notes.push_back(fmt::format(
        "{} has {} value(s) of {}: left out of the comparisons of pairs (2 a side needed)", c.cell,
        c.values.size(), a.metric));
  }
  return cells;
}

// stats::compare of pairs of cells on their final values: every pair up to
// kMaxAllPairsCells cells, else each cell against the first.
void add_pairs(StudyAnalysis& a) {
  const auto cells = comparable_cells(a);
  a.pairs_cells = static_cast<int>(cells.size());
  if (cells.size() < 2) return;
  const bool all_pairs = cells.size() <= kMaxAllPairsCells;
  if (!all_pairs) a.pairs_reference = cells[0]->cell;
  for (size_t i = 0; i < cells.size(); ++i)
    for (size_t j = i + 1; j < cells.size() && (all_pairs || i == 0); ++j) {
      stats::CompareOptions o;
      o.name_a = cells[i]->cell, o.name_b = cells[j]->cell;
      try {
        a.pairs.push_back(
            {o.name_a, o.name_b, stats::compare(cells[i]->values, cells[j]->values, o)});
      } catch (const core::Error& e) {
        a.notes.push_back(
            fmt::format("{} against {} is not compared: {}", o.name_a, o.name_b, e.what()));
      }
    }
}

// A grid of two or more factors: variance components per factor over the
// varied cells' runs (every factor random, interactions automatic).
void add_factor_components(StudyAnalysis& a) {
  if (!a.spec.sources.empty()) return;
  stats::FactorData d;
  for (const auto& g : a.spec.grid)
    if (g.values.size() >= 2) d.factors.push_back(g.key);
  if (d.factors.size() < 2) return;  // the one-way components say it all
  for (const auto& c : a.cells) {
    if (c.vary != a.spec.vary) continue;
    std::vector<std::string> levels;
    for (const auto& f : d.factors) {
      auto it = std::find_if(c.levels.rbegin(), c.levels.rend(),
                             [&](const auto& kv) { return kv.first == f; });  // later wins
      if (it != c.levels.rend()) levels.push_back(it->second);
    }
    if (levels.size() != d.factors.size()) continue;
    for (double v : c.values) d.rows.push_back({levels, v});
  }
  try {
    a.factor_components = stats::analyse_factors(d);
  } catch (const core::Error& e) {
    a.factor_notes.push_back(std::string("no variance components by factor: ") + e.what());
  }
}

void add_cost(store::Store& s, StudyAnalysis& a) {
  double det = 0, other = 0;
  int nd = 0, no = 0;
  for (const auto& c : a.cells) {
    if (c.runs == 0) continue;
    if (std::isfinite(c.energy_kwh)) a.energy_kwh += c.energy_kwh;
    bool is_det = c.vary == "none" || c.vary == "deterministic";
    (is_det ? det : other) += c.mean_run_s;
    ++(is_det ? nd : no);
  }
  // Only a grid's exact-repeat cells run the same work as the varied ones.
  if (nd > 0 && no > 0 && a.spec.sources.empty()) a.determinism_cost = (det / nd) / (other / no);
  // The carbon intensity one of the counted runs recorded.
  for (const auto& c : a.cells) {
    if (c.run_uuids.empty()) continue;
    auto tags = s.tags(c.run_uuids.front());
    if (tags.count("energy.carbon_kg_per_kwh")) {
      // What monitor.carbon_kg_per_kwh takes (0 to 10), as the sampler wrote it.
      const std::string& text = tags["energy.carbon_kg_per_kwh"];
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !(v >= 0 && v <= 10))
        core::fail(core::ErrorKind::kStore,
                   "run {}: its tag energy.carbon_kg_per_kwh is '{}', not a carbon intensity "
                   "(0 to 10 kg per kWh); the store is damaged",
                   core::short_uuid(c.run_uuids.front()), core::escape_for_display(text));
      a.carbon_kg_per_kwh = v;
    }
    break;
  }
  a.co2_kg = a.energy_kwh * a.carbon_kg_per_kwh;
}

}  // namespace

StudyAnalysis analyse_study(store::Store& s, const std::string& ref, const std::string& metric) {
  StudyAnalysis a;
  a.study = resolve_study(s, ref);
  a.liveness = s.liveness(a.study, s.now());
  a.spec = recorded_spec(s, a.study);
  a.metric = metric;
  a.planned = static_cast<int>(Plan(a.spec).size());
  for (const auto& [name, cr] : finished_by_cell(s, a)) {
    a.cells.push_back(analyse_cell(s, name, cr, a));
    a.finished += a.cells.back().runs;
  }
  // The study named by its UUID: a stored name is never a shell command.
  if (a.finished < a.planned)
    a.notes.push_back(
        fmt::format("{} of {} planned runs have finished: `trainscope study resume "
                    "{}` runs the rest",
                    a.finished, a.planned, core::short_uuid(a.study.uuid)));

  add_statistics(a);
  add_deterministic_twins(a);
  add_epoch_spread(a);
  add_pairs(a);
  add_factor_components(a);
  add_cost(s, a);
  return a;
}

}  // namespace trainscope::study
