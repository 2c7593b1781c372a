// From a study spec to the list of runs it makes.
#include <fmt/format.h>

#include "trainscope/study/spec.h"

namespace trainscope::study {

namespace {

using Sets = std::vector<std::pair<std::string, std::string>>;

// The settings of replicate r of a cell that varies `vary`.
Sets replicate_sets(const std::string& vary, int r) {
  const std::string v = std::to_string(r + 1);
  if (vary == "none" || vary == "deterministic") return {};
  if (vary == "all") return {{"seeds.master", v}};
  if (vary == "bitflip") return {{"model.flip_bit", v}};
  if (vary == "implementation") {
    // 16 implementations: intra-op threads 1..4, oneDNN on/off, BLAS 1..2;
    // the first replicates differ in the setting that changes most kernels.
    return {{"compute.threads", std::to_string(1 + r % 4)},
            {"determinism.mkldnn", (r / 4) % 2 == 0 ? "true" : "false"},
            {"compute.blas_threads", std::to_string(1 + (r / 8) % 2)}};
  }
  if (vary.find('.') != std::string::npos) return {{vary, v}};
  return {{"seeds." + vary, v}};  // init, data_order, augment, dropout
}

void add_cell(const StudySpec& s, const std::string& cell, const Sets& cell_sets,
              const std::string& vary, int replicates, std::vector<PlannedRun>& out) {
  for (int r = 0; r < replicates; ++r) {
    PlannedRun p;
    p.name = fmt::format("{}/r{}", cell, r + 1);
    p.cell = cell;
    p.replicate = r + 1;
    p.vary = vary;
    p.set.emplace_back("compute.threads", std::to_string(s.threads_per_run));
    for (const auto& kv : s.set) p.set.push_back(kv);
    for (const auto& kv : cell_sets) p.set.push_back(kv);
    for (const auto& kv : replicate_sets(vary, r)) p.set.push_back(kv);
    out.push_back(std::move(p));
  }
}

// Deterministic cells repeat exactly; three runs are enough to see whether
// they do.
int audit_replicates(const StudySpec& s) { return std::min(s.replicates, 3); }

}  // namespace

std::vector<PlannedRun> plan(const StudySpec& s) {
  std::vector<PlannedRun> out;
  if (!s.sources.empty()) {
    for (const auto& src : s.sources)
      add_cell(s, src, {}, src, src == "deterministic" ? audit_replicates(s) : s.replicates, out);
    return out;
  }
  // Odometer over the grid, the last factor fastest.
  std::vector<size_t> at(s.grid.size(), 0);
  while (true) {
    Sets cell_sets;
    std::string cell;
    for (size_t i = 0; i < s.grid.size(); ++i) {
      cell_sets.emplace_back(s.grid[i].key, s.grid[i].values[at[i]]);
      cell += (i ? "," : "") + s.grid[i].key + "=" + s.grid[i].values[at[i]];
    }
    add_cell(s, cell, cell_sets, s.vary, s.replicates, out);
    if (s.deterministic && s.vary != "none")
      add_cell(s, cell + ",deterministic", cell_sets, "none", audit_replicates(s), out);
    size_t i = s.grid.size();
    while (i > 0 && ++at[i - 1] == s.grid[i - 1].values.size()) at[--i] = 0;
    if (i == 0) break;
  }
  return out;
}

std::vector<std::string> set_lines(const PlannedRun& run) {
  std::vector<std::string> out;
  for (const auto& [k, v] : run.set) out.push_back(k + "=" + v);
  return out;
}

}  // namespace trainscope::study
