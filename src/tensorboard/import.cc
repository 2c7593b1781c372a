// Event files others wrote into the store as runs (`import tfevents`).
#include "trainscope/store/import.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>

#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/regular_file.h"
#include "trainscope/core/util.h"
#include "trainscope/store/accept.h"
#include "trainscope/tensorboard/tensorboard.h"
#include "trainscope/tfevents/tfevents.h"

namespace trainscope::tensorboard {

namespace fs = std::filesystem;
using core::ErrorKind;
using core::fail;

namespace {

inline constexpr const char* kSourceTag = "import.source";
inline constexpr const char* kDigestTag = "import.sha256";

// A folder of event files, read and checked, not yet written.
struct Folder {
  fs::path path;                // absolute
  std::vector<fs::path> files;  // by name
  std::string base_name;        // relative to the import's folder
  std::string digest;           // of the files' names and bytes
  std::vector<store::MetricSeries> series;
  int64_t points = 0, skipped = 0;
  double start = 0, end = 0;
  // The first scalar whose step goes back, as the refusal says it (empty:
  // none); refused after a changed earlier import is, which says more.
  std::string going_back;
};

// Whether an entry named as an event file is one to read: a regular file
// (or a link to one), or a link that leads nowhere (its reader says it
// cannot be read); not a folder so named. Anything else (a FIFO, a device
// or a link to one, a socket) refuses the import, never opened, where a
// FIFO would block and /dev/zero never end, and never skipped in silence.
bool to_read(const fs::path& dir, const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return true;
  if (S_ISDIR(st.st_mode)) return false;
  fail(ErrorKind::kUsage,
       "cannot read event file '{}': it is {}, not a regular file; move it out of '{}' to import "
       "the rest; nothing was imported",
       core::escape_for_display(file.string()), core::file_kind(st.st_mode),
       core::escape_for_display(dir.string()));
}

// Every folder under `dir` (itself included) holding event files, each
// with its files sorted by name.
std::map<fs::path, std::vector<fs::path>> event_folders(const fs::path& dir) {
  std::error_code ec;
  // Nothing there is "not found" (3); a file or a device where the folder
  // belongs is a usage error (2), as everywhere else (twenty-ninth hunt, A-D4).
  if (!fs::exists(fs::status(dir, ec)))
    fail(ErrorKind::kNotFound, "'{}' does not exist; give the folder that holds the event files",
         dir.string());
  if (!fs::is_directory(dir, ec))
    fail(ErrorKind::kUsage, "'{}' is not a folder; give the folder that holds the event files",
         dir.string());
  std::map<fs::path, std::vector<fs::path>> out;
  fs::recursive_directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (tfevents::is_event_file(it->path()) && to_read(dir, it->path()))
      out[it->path().parent_path()].push_back(it->path());
  }
  if (ec)
    fail(ErrorKind::kUsage, "cannot read the folder '{}': {}; check its permissions", dir.string(),
         ec.message());
  if (out.empty())
    fail(ErrorKind::kNotFound,
         "no TensorBoard event file (a name containing 'tfevents') under '{}'; give the log "
         "folder TensorBoard reads (its --logdir)",
         dir.string());
  for (auto& [folder, files] : out) std::sort(files.begin(), files.end());
  return out;
}

// A scalar whose tag or step no other entry point would take (the rule of
// store/accept.h) refuses the import before anything is written, and so
// does a value of trainscope's own series (proc/*, energy/*, exit_code,
// which its own export brings back) that its sampler never records. A step
// that goes back (the folder's files read in name order, as TensorBoard
// reads them) is one: a writer that restarted in the same folder writes
// steps it wrote before again, which Python and `watch` refuse as well.
void check_scalar(const fs::path& file, const tfevents::Scalar& s, store::StepOrder& order,
                  std::string& going_back) {
  auto why = store::metric_key_problem(s.tag);
  if (!why) why = store::step_problem(s.step);
  if (!why) why = store::own_metric_value_problem(s.tag, s.value);
  if (why)
    fail(ErrorKind::kUsage, "{}: the scalar '{}': {}; nothing was imported", file.string(),
         store::shown_key(s.tag), *why);
  if (auto back = order.problem(s.tag, s.step); back && going_back.empty())
    going_back = fmt::format(
        "{}: the scalar '{}': {}; if its writer restarted, move the event files it wrote "
        "since into a folder of their own (another run); nothing was imported",
        file.string(), store::shown_key(s.tag), *back);
  if (going_back.empty()) order.take(s.tag, s.step);
}

// Reads and checks every file of one folder, its scalars gathered by tag.
Folder read_folder(const fs::path& root, const fs::path& path, const std::vector<fs::path>& files) {
  Folder f{path, files, {}, {}, {}, 0, 0, 0, 0};
  const fs::path rel = path.lexically_relative(root);
  f.base_name = store::derived_name(
      rel.empty() || rel == "." ? root.filename().string() : rel.generic_string(), "run");
  std::string hashed;
  std::map<std::string, size_t> index;  // tag -> series
  bool any_time = false;
  tfevents::TagPlugins plugins;  // carried from file to file, as TensorBoard does
  store::StepOrder order;        // the folder is one run: its files' steps run on
  for (const auto& file : files) {
    const auto read = tfevents::read_scalars(file, plugins);
    hashed += file.filename().string() + "\n" + core::sha256_file(file) + "\n";
    for (const auto& s : read.scalars) {
      check_scalar(file, s, order, f.going_back);
      auto [at, added] = index.emplace(s.tag, f.series.size());
      if (added) f.series.push_back({s.tag, {}});
      f.series[at->second].points.push_back({s.step, s.wall_time, s.value});
    }
    f.points += static_cast<int64_t>(read.scalars.size());
    f.skipped += read.skipped;
    if (read.records == 0) continue;
    f.start = any_time ? std::min(f.start, read.first_wall_time) : read.first_wall_time;
    f.end = any_time ? std::max(f.end, read.last_wall_time) : read.last_wall_time;
    any_time = true;
  }
  f.digest = core::sha256_hex(hashed);
  return f;
}

// What the store holds of earlier imports: runs by digest and by source.
struct Earlier {
  std::map<std::string, store::RunInfo> by_digest;  // finished imports
  std::map<std::string, std::vector<store::RunInfo>> by_source;
  std::map<std::string, std::string> digest_of;  // uuid -> digest ("" if none yet)
  std::vector<std::string> names;
};

Earlier earlier_imports(store::Store& store) {
  Earlier e;
  const auto runs = store.list_runs();
  std::vector<std::string> uuids;
  for (const auto& r : runs) {
    uuids.push_back(r.uuid);
    e.names.push_back(r.name);
  }
  const auto fields = store.run_fields(uuids, false, true, false);
  for (const auto& r : runs) {
    auto f = fields.find(r.uuid);
    if (f == fields.end()) continue;
    const auto& tags = f->second.tags;
    auto source = tags.find(kSourceTag);
    if (source == tags.end()) continue;
    auto digest = tags.find(kDigestTag);
    e.digest_of[r.uuid] = digest == tags.end() ? "" : digest->second;
    e.by_source[source->second].push_back(r);
    if (digest != tags.end()) e.by_digest.emplace(digest->second, r);
  }
  return e;
}

// One folder as a run, or none: a failed write deletes what it wrote.
std::string write_run(store::Store& store, const Folder& f, const std::string& name,
                      const ImportOptions& o) {
  store::RunInfo run;
  run.uuid = core::new_uuid();
  run.experiment = o.experiment;
  run.name = name;
  run.status = store::RunStatus::kFinished;
  run.start_time = f.start;
  run.end_time = std::max(f.end, f.start);
  run.heartbeat = run.end_time;
  run.command_line = o.command_line;
  store::import_whole(store, run, [&] {
    store.set_tag(run.uuid, kSourceTag, f.path.string());
    store.append_metrics(run.uuid, f.series);
    store.set_tag(run.uuid, kDigestTag, f.digest);  // last: the import is whole
  });
  return run.uuid;
}

// Refuses a folder imported before whose files have changed since.
void refuse_changed(const Folder& f, Earlier& e) {
  if (e.by_digest.count(f.digest)) return;
  for (const auto& r : e.by_source[f.path.string()])
    if (!e.digest_of[r.uuid].empty())
      fail(ErrorKind::kConflict,
           "'{}' was imported before as run {} ({}) and its files have changed since; delete "
           "that run first (trainscope runs delete {} --yes) to import them again",
           f.path.string(), r.name, core::short_uuid(r.uuid), core::short_uuid(r.uuid));
}

// Skips a folder whose files were imported already; removes the runs of an
// import of it that was cut short. True when the folder is to be imported.
bool check_earlier(store::Store& store, const Folder& f, Earlier& e, ImportedRun& out) {
  if (auto d = e.by_digest.find(f.digest); d != e.by_digest.end()) {
    out.already_imported = true;
    out.uuid = d->second.uuid;
    out.name = d->second.name;
    return false;
  }
  for (const auto& r : e.by_source[f.path.string()]) {
    core::log_warn("replacing run {} ({}), left by an import of '{}' that did not finish", r.name,
                   core::short_uuid(r.uuid), f.path.string());
    store.delete_run(r.uuid);
    // Its name is free again: the new run takes it.
    if (auto n = std::find(e.names.begin(), e.names.end(), r.name); n != e.names.end())
      e.names.erase(n);
  }
  return true;
}

}  // namespace

std::vector<ImportedRun> import_tfevents(store::Store& store, const ImportOptions& options) {
  if (auto why = store::experiment_problem("--experiment", options.experiment))
    fail(ErrorKind::kUsage, "{}", *why);
  const fs::path root = fs::weakly_canonical(fs::absolute(options.dir));
  std::vector<Folder> folders;
  for (const auto& [path, files] : event_folders(root))
    folders.push_back(read_folder(root, path, files));
  Earlier earlier = earlier_imports(store);
  for (const auto& f : folders) refuse_changed(f, earlier);  // before anything is written
  for (const auto& f : folders)
    if (!f.going_back.empty() && !earlier.by_digest.count(f.digest))
      fail(ErrorKind::kUsage, "{}", f.going_back);
  std::vector<ImportedRun> out;
  for (const auto& f : folders) {
    ImportedRun r{f.path, {}, {}, static_cast<int64_t>(f.files.size()), f.points, f.skipped, false};
    if (check_earlier(store, f, earlier, r)) {
      r.name = store::next_free_name(f.base_name, earlier.names);
      earlier.names.push_back(r.name);
      r.uuid = write_run(store, f, r.name, options);
      earlier.by_digest.emplace(f.digest, store::RunInfo{.uuid = r.uuid, .name = r.name});
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace trainscope::tensorboard
