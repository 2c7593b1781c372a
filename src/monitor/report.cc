#include "trainscope/monitor/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "trainscope/core/error.h"
#include "trainscope/core/svg.h"
#include "trainscope/core/util.h"
#include "trainscope/store/accept.h"
#include "trainscope/store/store.h"

namespace trainscope::monitor {

namespace {

std::optional<double> mean_of(const std::vector<SeriesStats>& st, const std::string& key) {
  for (const auto& s : st)
    if (s.key == key) return s.mean;
  return std::nullopt;
}

std::optional<double> last_metric(store::Store& store, const std::string& uuid,
                                  const std::string& key) {
  auto pts = store.metric(uuid, key);
  if (pts.empty()) return std::nullopt;
  return pts.back().value;
}

std::optional<double> mean_metric(store::Store& store, const std::string& uuid,
                                  const std::string& key) {
  std::vector<double> v;
  for (const auto& p : store.metric(uuid, key)) v.push_back(p.value);
  if (v.empty()) return std::nullopt;
  return core::mean(v);
}

SeriesStats stats_of(const std::string& key, const std::vector<double>& v) {
  SeriesStats s;
  s.key = key;
  s.n = static_cast<int64_t>(v.size());
  s.mean = core::mean(v);
  s.p50 = core::percentile(v, 0.5);
  s.p95 = core::percentile(v, 0.95);
  s.max = *std::max_element(v.begin(), v.end());
  return s;
}

// Whether a series belongs on a chart: an exact key, or "gpu*" for every
// GPU series of the chart's unit.
bool charted(const std::string& key, const std::vector<std::string>& keys, const char* unit) {
  return std::any_of(keys.begin(), keys.end(), [&](const std::string& p) {
    if (key == p) return true;
    return p.back() == '*' && key.rfind(p.substr(0, p.size() - 1), 0) == 0 &&
           key.find(unit) != std::string::npos;
  });
}

}  // namespace

bool is_resource_key(std::string_view k) {
  // The sampler's keys, as the writers reserve them (gpuN/, not gpu_util).
  return k != "exit_code" && store::is_own_metric(k);
}

std::vector<SeriesStats> resource_stats(store::Store& store, const store::RunInfo& run,
                                        double warmup_s) {
  std::vector<SeriesStats> out;
  for (const auto& m : store.metric_summaries(run.uuid)) {
    if (!is_resource_key(m.key)) continue;
    std::vector<double> kept, all;
    for (const auto& p : store.metric(run.uuid, m.key)) {
      if (!std::isfinite(p.value)) continue;
      all.push_back(p.value);
      if (store::since_start(run, p.wall_time) >= warmup_s) kept.push_back(p.value);
    }
    if (kept.empty()) kept = all;
    if (!kept.empty()) out.push_back(stats_of(m.key, kept));
  }
  return out;
}

const std::vector<ThroughputRow>& throughput_rows() {
  static const std::vector<ThroughputRow> kRows = {{"CPU % (1 core = 100)", "{:.1f}"},
                                                   {"RSS MiB", "{:.0f}"},
                                                   {"GPU %", "{:.1f}"},
                                                   {"GPU MiB", "{:.0f}"},
                                                   {"steps/s", "{:.2f}"},
                                                   {"samples/s", "{:.0f}"},
                                                   {"epochs run", "{:.0f}"},
                                                   {"test accuracy", "{:.4f}"},
                                                   {"time to target s", "{:.1f}"},
                                                   {"epochs to target", "{:.0f}"},
                                                   {"energy kWh", "{:.3g}"}};
  return kRows;
}

ThroughputColumn throughput_column(store::Store& store, const store::RunInfo& r, double warmup_s) {
  auto st = resource_stats(store, r, warmup_s);
  auto p = store.params(r.uuid);
  ThroughputColumn c;
  c.run_uuid = r.uuid;
  c.label = r.name.empty() ? core::short_uuid(r.uuid) : r.name;
  auto param = [&](const std::string& key, const std::string& before) -> std::string {
    if (p.count(key)) return p.at(key);  // else the spelling of runs from earlier versions
    return p.count(before) ? p.at(before) : "";
  };
  c.batch_size = param("train.batch_size", "batch_size");
  if (c.batch_size.empty()) c.batch_size = "-";
  c.values = {mean_of(st, "proc/cpu_percent"),
              mean_of(st, "proc/rss_mib"),
              mean_of(st, "gpu0/util_percent"),
              mean_of(st, "gpu0/proc_mem_mib"),
              mean_metric(store, r.uuid, "steps_per_s"),
              mean_metric(store, r.uuid, "samples_per_s"),
              last_metric(store, r.uuid, "epoch"),
              last_metric(store, r.uuid, "test/accuracy"),
              last_metric(store, r.uuid, "time_to_target_s"),
              last_metric(store, r.uuid, "epochs_to_target"),
              last_metric(store, r.uuid, "energy/total_kwh")};
  const std::string target = param("eval.target_accuracy", "target_accuracy");
  c.target_missed = !c.values[8] && !target.empty() && target != "0";
  return c;
}

std::string resource_chart_svg(store::Store& store, const store::RunInfo& run,
                               std::string_view kind) {
  const bool cpu = kind == "cpu";
  core::SvgChart c;
  c.title = std::string(cpu ? "CPU and GPU utilisation" : "Memory") + " — run " +
            core::short_uuid(run.uuid);
  c.x_label = "seconds since start";
  c.y_label = cpu ? "%" : "MiB";
  const std::vector<std::string> keys =
      cpu ? std::vector<std::string>{"proc/cpu_percent", "sys/cpu_percent", "gpu*"}
          : std::vector<std::string>{"proc/rss_mib", "sys/mem_used_mib", "gpu*"};
  for (const auto& m : store.metric_summaries(run.uuid)) {
    if (!charted(m.key, keys, cpu ? "percent" : "mib")) continue;
    core::SvgSeries s;
    s.name = m.key;
    for (const auto& p : store.metric(run.uuid, m.key)) {
      s.x.push_back(store::since_start(run, p.wall_time));
      s.y.push_back(p.value);
    }
    c.series.push_back(std::move(s));
  }
  return c.render();
}

}  // namespace trainscope::monitor
