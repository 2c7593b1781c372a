// Runs out as TensorBoard log folders (`runs export --format tfevents`).
#include <set>

#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/probes/outputs.h"
#include "trainscope/probes/records.h"
#include "trainscope/tensorboard/tensorboard.h"
#include "trainscope/tfevents/tfevents.h"

namespace trainscope::tensorboard {

namespace fs = std::filesystem;
using core::ErrorKind;
using core::fail;

ScalarType parse_scalar_type(const std::string& name) {
  if (name == "double") return ScalarType::kDouble;
  if (name == "float32") return ScalarType::kFloat32;
  fail(ErrorKind::kUsage,
       "--scalars '{}' is not a scalar type; give double (exact, the default) or float32 "
       "(TensorBoard's simple_value)",
       name);
}

namespace {

// A run name as a relative folder: '/' separates folders, as in the names
// the import gives ("keras/train"); other bytes outside [A-Za-z0-9._-]
// become '_', empty parts are dropped, and "." and ".." never name a folder.
std::string folder_name(const std::string& name) {
  std::string out, part;
  auto flush = [&] {
    if (part == "." || part == "..") part = std::string(part.size(), '_');
    if (!part.empty()) out += (out.empty() ? "" : "/") + part;
    part.clear();
  };
  for (char c : name) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '_' || c == '-';
    if (c == '/') {
      flush();
    } else {
      part += plain ? c : '_';
    }
  }
  flush();
  return out;
}

// Whether `dir` already holds an event file (TensorBoard would merge it).
bool holds_event_files(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && tfevents::is_event_file(e.path())) return true;
  return false;
}

// One run into `w`: its metric points and, if asked, its histograms.
ExportedRun write_run(store::Store& store, const store::RunInfo& run, tfevents::Writer& w,
                      const ExportOptions& o) {
  ExportedRun out{run.uuid, w.path(), 0, 0};
  for (const auto& summary : store.metric_summaries(run.uuid)) {
    for (const auto& p : store.metric(run.uuid, summary.key)) {
      if (o.scalars == ScalarType::kDouble) {
        w.scalar_double(summary.key, p.step, p.wall_time, p.value);
      } else {
        w.scalar(summary.key, p.step, p.wall_time, p.value);
      }
      ++out.points;
    }
  }
  if (!o.histograms) return out;
  for (const auto& h : probes::read_histograms(store, run.uuid)) {
    auto t = probes::tensorboard_histogram(h.histogram);
    if (!t) continue;
    w.histogram(h.key, h.step, h.wall_time, *t);
    ++out.histograms;
  }
  return out;
}

}  // namespace

std::vector<std::string> run_folders(const std::vector<store::RunInfo>& runs) {
  std::vector<std::string> out;
  std::set<std::string> taken;
  for (const auto& r : runs) {
    // The UUID too is a store's bytes: "../../x" must not leave the folder.
    const std::string id = folder_name(r.uuid);
    std::string name = folder_name(r.name);
    if (name.empty()) name = id.empty() ? "run" : id;
    if (taken.count(name)) name += "-" + folder_name(core::short_uuid(id));
    taken.insert(name);
    out.push_back(name);
  }
  return out;
}

std::vector<ExportedRun> export_runs(store::Store& store, const std::vector<store::RunInfo>& runs,
                                     const ExportOptions& options,
                                     const std::function<void(size_t)>& progress) {
  core::check_output_folder(options.dir);
  const auto folders = run_folders(runs);
  for (const auto& f : folders)
    if (holds_event_files(options.dir / f))
      fail(ErrorKind::kConflict,
           "'{}' already holds TensorBoard event files, which TensorBoard would merge with the "
           "export; export into an empty folder, or remove them first",
           (options.dir / f).string());
  std::vector<ExportedRun> out;
  for (size_t i = 0; i < runs.size(); ++i) {
    tfevents::Writer w(options.dir / folders[i], runs[i].start_time);
    out.push_back(write_run(store, runs[i], w, options));
    w.close();
    if (progress) progress(i + 1);
  }
  return out;
}

}  // namespace trainscope::tensorboard
