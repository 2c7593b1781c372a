// From a study spec to the runs it makes, computed one at a time.
#include <fmt/format.h>

#include <limits>

#include "trainscope/core/error.h"
#include "trainscope/study/spec.h"

namespace trainscope::study {

namespace {

using Sets = std::vector<std::pair<std::string, std::string>>;
constexpr uint64_t kSaturated = std::numeric_limits<uint64_t>::max();

// a * b, or kSaturated when it does not fit.
uint64_t times(uint64_t a, uint64_t b) {
  if (a != 0 && b > kSaturated / a) return kSaturated;
  return a * b;
}

uint64_t plus(uint64_t a, uint64_t b) { return a > kSaturated - b ? kSaturated : a + b; }

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
  if (vary == "world_size") {
    // 1 to 4 ranks at the same global batch, seeds fixed: only the order of
    // the gradient sums differs (dist/README.md).
    return {{"dist.nproc", std::to_string(1 + r % 4)}};
  }
  if (vary == "kernels")  // every seed fixed; a GPU's non-deterministic kernels allowed
    return {{"determinism.deterministic_algorithms", "false"},
            {"determinism.cudnn_deterministic", "false"}};
  if (vary == "precision") {  // float32, TensorFloat-32, bfloat16 autocast, in turn
    static const char* const tf32[] = {"off", "on", "off"};
    static const char* const autocast[] = {"off", "off", "bf16"};
    return {{"compute.tf32", tf32[r % 3]}, {"compute.autocast", autocast[r % 3]}};
  }
  if (vary.find('.') != std::string::npos) return {{vary, v}};
  return {{"seeds." + vary, v}};  // init, data_order, augment, dropout
}

PlannedRun make_run(const StudySpec& s, const std::string& cell, const Sets& cell_sets,
                    const std::string& vary, int r) {
  PlannedRun p;
  p.name = fmt::format("{}/r{}", cell, r + 1);
  p.cell = cell;
  p.replicate = r + 1;
  p.vary = vary;
  p.set.emplace_back("compute.threads", std::to_string(s.threads_per_run));
  for (const auto& kv : s.set) p.set.push_back(kv);
  for (const auto& kv : cell_sets) p.set.push_back(kv);
  for (const auto& kv : replicate_sets(vary, r)) p.set.push_back(kv);
  return p;
}

// Deterministic cells repeat exactly; three runs are enough to see whether
// they do.
int audit_replicates(const StudySpec& s) { return std::min(s.replicates, 3); }

int source_runs(const StudySpec& s, const std::string& source) {
  return source == "deterministic" ? audit_replicates(s) : s.replicates;
}

bool has_exact_cells(const StudySpec& s) { return s.deterministic && s.vary != "none"; }

}  // namespace

Plan::Plan(const StudySpec& spec) : spec_(spec) {
  if (!spec.sources.empty()) {
    for (const auto& src : spec.sources) size_ = plus(size_, source_runs(spec, src));
    return;
  }
  per_cell_ = spec.replicates + (has_exact_cells(spec) ? audit_replicates(spec) : 0);
  uint64_t cells = spec.grid.empty() || per_cell_ == 0 ? 0 : 1;
  for (const auto& f : spec.grid) cells = times(cells, f.values.size());
  size_ = times(cells, per_cell_);
}

PlannedRun Plan::at(uint64_t i) const {
  if (!spec_.sources.empty()) {
    for (const auto& src : spec_.sources) {
      const uint64_t n = source_runs(spec_, src);
      if (i < n) return make_run(spec_, src, {}, src, static_cast<int>(i));
      i -= n;
    }
    core::fail(core::ErrorKind::kRuntime, "planned run index beyond the plan");
  }
  uint64_t cell = i / per_cell_;
  const int r = static_cast<int>(i % per_cell_);
  // The cell's factor values: an odometer, the last factor fastest.
  std::vector<size_t> at(spec_.grid.size());
  for (size_t k = spec_.grid.size(); k-- > 0;) {
    at[k] = cell % spec_.grid[k].values.size();
    cell /= spec_.grid[k].values.size();
  }
  Sets cell_sets, levels;
  std::string name;
  for (size_t k = 0; k < spec_.grid.size(); ++k) {
    const Factor& f = spec_.grid[k];
    if (f.level_sets.empty())
      cell_sets.emplace_back(f.key, f.values[at[k]]);
    else
      cell_sets.insert(cell_sets.end(), f.level_sets[at[k]].begin(), f.level_sets[at[k]].end());
    levels.emplace_back(f.key, f.values[at[k]]);
    name += (k ? "," : "") + f.key + "=" + f.values[at[k]];
  }
  PlannedRun p = r < spec_.replicates ? make_run(spec_, name, cell_sets, spec_.vary, r)
                                      : make_run(spec_, name + ",deterministic", cell_sets, "none",
                                                 r - spec_.replicates);
  p.levels = std::move(levels);
  return p;
}

std::optional<uint64_t> Plan::find(const std::string& name) const {
  for (uint64_t i = 0; i < size_; ++i)
    if (at(i).name == name) return i;
  return std::nullopt;
}

std::vector<PlannedRun> plan(const StudySpec& s, uint64_t max_runs) {
  const Plan p(s);
  if (p.size() > max_runs)
    core::fail(
        core::ErrorKind::kUsage,
        "study {} plans {} runs, more than {} can be listed at once: shrink its grid", s.name,
        p.size() == kSaturated ? "more than 18 quintillion" : std::to_string(p.size()), max_runs);
  std::vector<PlannedRun> out;
  out.reserve(p.size());
  for (uint64_t i = 0; i < p.size(); ++i) out.push_back(p.at(i));
  return out;
}

std::vector<std::string> set_lines(const PlannedRun& run) {
  std::vector<std::string> out;
  for (const auto& [k, v] : run.set) out.push_back(k + "=" + v);
  return out;
}

}  // namespace trainscope::study
