// Every rank of a data-parallel run side by side (ranks.h).
#include "trainscope/dist/ranks.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace trainscope::dist {

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t comma = std::min(s.find(',', at), s.size());
    out.push_back(s.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

// The q-quantile (nearest rank) of the finite values; NaN without any.
double quantile(std::vector<double> v, double q) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

int tag_int(const std::map<std::string, std::string>& tags, const std::string& key) {
  const auto it = tags.find(key);
  return it == tags.end() ? 0 : std::atoi(it->second.c_str());
}

}  // namespace

RankSummary rank_summary(store::Store& store, const std::string& uuid) {
  RankSummary s;
  const auto tags = store.tags(uuid);
  s.world_size = std::clamp(tag_int(tags, "dist.world_size"), 0, 256);
  if (s.world_size == 0) return s;
  s.backend = tags.count("dist.backend") ? tags.at("dist.backend") : "";
  s.rendezvous = tags.count("dist.rendezvous") ? tags.at("dist.rendezvous") : "";
  s.buckets = tag_int(tags, "dist.buckets");
  const auto hosts = split(tags.count("dist.hosts") ? tags.at("dist.hosts") : "");
  const auto addresses = split(tags.count("dist.addresses") ? tags.at("dist.addresses") : "");
  std::vector<double> bytes;
  for (const auto& p : store.metric(uuid, "dist/bytes_reduced")) bytes.push_back(p.value);
  s.bytes_reduced = bytes.empty() ? 0 : quantile(bytes, 0.5);
  s.fields = kRankFields;
  for (const auto& f : kRankGpuFields)
    if (!store.metric(uuid, "dist/rank0/" + f).empty()) s.fields.push_back(f);
  double fastest = INFINITY, slowest = -INFINITY, slowest_step = -INFINITY;
  for (int r = 0; r < s.world_size; ++r) {
    RankFigures f;
    f.rank = r;
    f.host = static_cast<size_t>(r) < hosts.size() ? hosts[static_cast<size_t>(r)] : "";
    f.address = static_cast<size_t>(r) < addresses.size() ? addresses[static_cast<size_t>(r)] : "";
    for (const auto& field : s.fields) {
      std::vector<double> v;
      for (const auto& p : store.metric(uuid, "dist/rank" + std::to_string(r) + "/" + field))
        v.push_back(p.value);
      f.median[field] = quantile(v, 0.5);
      f.p95[field] = quantile(v, 0.95);
    }
    const double compute = f.median["compute_ms"], step = f.median["step_ms"];
    if (std::isfinite(compute)) fastest = std::min(fastest, compute);
    if (std::isfinite(compute)) slowest = std::max(slowest, compute);
    if (std::isfinite(step) && step > slowest_step) {
      slowest_step = step;
      s.slowest = r;
    }
    s.ranks.push_back(std::move(f));
  }
  if (std::isfinite(fastest)) s.compute_spread_ms = slowest - fastest;
  return s;
}

}  // namespace trainscope::dist
