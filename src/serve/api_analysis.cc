// Profiles, probes, diffs and studies: what the analysis pages show, through
// the same library readers as `profile show`, `probes`, `diff` and `study
// report`.
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "api_internal.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/probes/read.h"
#include "trainscope/profile/json.h"
#include "trainscope/profile/report.h"
#include "trainscope/repro/diff.h"
#include "trainscope/repro/json.h"
#include "trainscope/store/query.h"
#include "trainscope/study/json.h"
#include "trainscope/study/report.h"
#include "trainscope/study/study.h"

namespace trainscope::serve::detail {

using core::ErrorKind;
using core::fail;

namespace {

// A recorded mean, 0 when the run has none (the page shows "not recorded").
double mean_of(store::Store& s, const std::string& uuid, const std::string& key) {
  const double v = profile::mean_metric(s, uuid, key);
  return std::isnan(v) ? 0 : v;
}

profile::ProfileSummary summary_or_404(store::Store& s, const store::RunInfo& run) {
  auto summary = profile::summarize(s, run.uuid);
  if (summary.iterations == 0)
    fail(ErrorKind::kNotFound, "run {} has no profile; record one with `trainscope profile`",
         core::short_uuid(run.uuid));
  return summary;
}

// A run's operator table, parsed once per trace (by its SHA-256) and shared
// by every request: eight requests for a 75 MB trace parsed it eight times
// at once, holding every worker for 20-30 s and 7 GB (thirty-sixth hunt,
// A-D9). One parse at a time; the last 8 traces kept.
profile::OperatorTable operators_of(store::Store& s, const store::RunInfo& run,
                                    const store::ArtifactInfo& trace) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const profile::OperatorTable>> parsed;
  std::lock_guard lock(mu);
  if (auto it = parsed.find(trace.sha256); it != parsed.end()) return *it->second;
  auto t = std::make_shared<const profile::OperatorTable>(profile::operator_table(s, run.uuid));
  if (parsed.size() >= 8) parsed.erase(parsed.begin());
  parsed.emplace(trace.sha256, t);
  return *t;
}

std::string histogram_key(const Request& r) { return required(r, "key"); }

std::vector<probes::StepHistogram> histograms_or_404(store::Store& s, const store::RunInfo& run,
                                                     const std::string& key) {
  auto hs = probes::read_histograms(s, run.uuid, key);
  if (hs.empty())
    fail(ErrorKind::kNotFound, "run {} has no histograms under '{}'", core::short_uuid(run.uuid),
         core::escape_for_display(key));
  return hs;
}

}  // namespace

Json profile(store::Store& s, const store::RunInfo& run) {
  const auto summary = summary_or_404(s, run);
  const profile::ProfileExtras extras{mean_of(s, run.uuid, "profile/step_ms_profiled"),
                                      mean_of(s, run.uuid, "profile/step_ms_unprofiled"),
                                      mean_of(s, run.uuid, "profile/peak_gflops")};
  Json j = profile::profile_json(run.uuid, summary, extras);
  j["operators"] = Json::array();
  j["trace_url"] = nullptr;
  for (const auto& a : s.artifacts(run.uuid))
    if (a.name == profile::kTraceArtifact && a.kind == profile::kTraceKind) {
      j["trace_url"] = artifact_url(run.uuid, a.name);
      j["operators"] =
          profile::operator_table_json(run.uuid, operators_of(s, run, a), 20)["operators"];
    }
  return j;
}

std::string profile_svg(store::Store& s, const store::RunInfo& run) {
  return profile::layer_chart_svg(summary_or_404(s, run), run.name);
}

Json probes(store::Store& s, const store::RunInfo& run) {
  Json series = Json::array();
  for (const auto& ref : probes::probe_series(s, run.uuid))
    series.push_back({{"key", ref.key},
                      {"layer", ref.layer},
                      {"kind", ref.kind},
                      {"stat", ref.stat},
                      {"count", ref.summary.count},
                      {"last", format::number(ref.summary.last_value)}});
  std::set<std::string> keys;
  for (const auto& r : s.records(run.uuid, probes::kHistogramsKind)) keys.insert(r.key);
  Json alerts = Json::array();
  for (const auto& e : probes::probe_alerts(s, run.uuid))
    alerts.push_back(
        {{"step", e.step}, {"name", e.name}, {"source", e.source}, {"message", e.message}});
  return {{"series", series}, {"histograms", keys}, {"alerts", alerts}};
}

Json histograms(store::Store& s, const store::RunInfo& run, const Request& r) {
  const std::string key = histogram_key(r);
  Json steps = Json::array();
  for (const auto& at : histograms_or_404(s, run, key)) {
    const probes::Histogram& h = at.histogram;
    steps.push_back({{"step", at.step},
                     {"low", format::number(h.low)},
                     {"high", format::number(h.high)},
                     {"counts", h.counts},
                     {"nan", h.nan},
                     {"pos_inf", h.pos_inf},
                     {"neg_inf", h.neg_inf}});
  }
  return {{"key", key}, {"steps", steps}};
}

std::string histogram_svg(store::Store& s, const store::RunInfo& run, const Request& r) {
  const std::string key = histogram_key(r);
  return probes::histogram_heatmap_svg(histograms_or_404(s, run, key), run.name + " " + key);
}

Json diff(store::Store& s, const Request& r) {
  const auto a = s.resolve_run(required(r, "a"));
  const auto b = s.resolve_run(required(r, "b"));
  return repro::run_diff_json(repro::diff_runs(s, a, b));
}

Json studies(store::Store& s) {
  store::RunQuery q;
  q.filter = "tags.kind = 'study'";
  Json out = Json::array();
  for (const auto& row : store::query_runs(s, q).rows) {
    Json j = format::run(row.info, false, s.liveness(row.info, s.now()));
    j["children"] = study::counted_children(s, row.info.uuid);
    out.push_back(std::move(j));
  }
  return {{"studies", out}};
}

Json study(store::Store& s, const std::string& ref) {
  const study::StudyStatus st = study::study_status(s, ref);
  return {{"analysis", study::study_analysis_json(study::analyse_study(s, ref))},
          {"status", study::study_status_json(st)}};
}

std::string study_html(store::Store& s, const std::string& ref) {
  return study::html_report(study::analyse_study(s, ref));
}

}  // namespace trainscope::serve::detail
