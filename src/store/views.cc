// The registry of the capabilities' views (store/views.h).
#include "trainscope/store/views.h"

#include <algorithm>
#include <mutex>

#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/store/accept.h"
#include "trainscope/store/payload.h"

namespace trainscope::store {

namespace {

using core::ErrorKind;

struct Registry {
  std::mutex mu;
  std::vector<View> views;          // by name
  std::vector<RecordCheck> checks;  // in the order registered
};

Registry& registry() {
  static Registry r;
  return r;
}

void check_view(const View& v) {
  if (v.name.empty() || v.title.empty())
    core::fail(ErrorKind::kUsage, "a view needs a name and a title (view '{}')", v.name);
  check_record_kind(v.kind);
  if (!v.read) core::fail(ErrorKind::kUsage, "view {} has no read function", v.name);
  if (v.chart && v.chart->y.empty())
    core::fail(ErrorKind::kUsage, "view {}'s chart names no column to draw (chart.y)", v.name);
}

std::string names(const std::vector<View>& views) {
  std::string out;
  for (const auto& v : views) out += (out.empty() ? "" : ", ") + v.name;
  return out.empty() ? "none" : out;
}

}  // namespace

void register_view(View view) {
  check_view(view);
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto at = std::lower_bound(r.views.begin(), r.views.end(), view.name,
                             [](const View& v, const std::string& n) { return v.name < n; });
  if (at != r.views.end() && at->name == view.name)
    core::fail(ErrorKind::kUsage, "view {} is registered twice", view.name);
  r.views.insert(at, std::move(view));
}

std::vector<View> views() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  return r.views;
}

View find_view(std::string_view name) {
  const auto all = views();
  for (const auto& v : all)
    if (v.name == name) return v;
  core::fail(ErrorKind::kNotFound, "no view '{}': the views are {}", core::escape_for_display(name),
             names(all));
}

View find_view_of(Store& store, const RunInfo& run, std::string_view name) {
  View v = find_view(name);
  if (!store.record_kinds(run.uuid).count(v.kind))
    core::fail(ErrorKind::kNotFound, "run {} holds no {} records, so no view {}",
               core::short_uuid(run.uuid), v.kind, v.name);
  return v;
}

std::vector<View> views_of(Store& store, std::string_view uuid) {
  const auto kinds = store.record_kinds(uuid);
  std::vector<View> out;
  for (auto& v : views())
    if (kinds.count(v.kind)) out.push_back(std::move(v));
  return out;
}

void register_record_check(RecordCheck check) {
  check_record_kind(check.kind);
  if (!check.check)
    core::fail(ErrorKind::kUsage, "the record check of kind {} has no function", check.kind);
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.checks.push_back(std::move(check));
}

void check_run_records(Store& store, const RunInfo& run) {
  const auto kinds = store.record_kinds(run.uuid);
  std::vector<RecordCheck> checks;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    checks = r.checks;
  }
  for (const auto& c : checks)
    if (kinds.count(c.kind)) c.check(store, run.uuid);
  for (const auto& v : views_of(store, run.uuid)) read_view(store, run, v);
}

ViewTable read_view(Store& store, const RunInfo& run, const View& view) {
  ViewTable t = view.read(store, run);
  for (const auto& row : t.rows)
    if (row.size() != t.columns.size())
      core::fail(ErrorKind::kRuntime, "view {} gave a row of {} cells for {} columns", view.name,
                 row.size(), t.columns.size());
  if (view.chart)
    for (const auto* col : {&view.chart->x, &view.chart->y, &view.chart->series})
      if (!col->empty() && std::find(t.columns.begin(), t.columns.end(), *col) == t.columns.end())
        core::fail(ErrorKind::kRuntime, "view {}'s chart draws column '{}', which it has not",
                   view.name, *col);
  return t;
}

ViewTable read_view_sample(Store& store, const RunInfo& run, const View& view, size_t max_rows,
                           int64_t& total) {
  max_rows = std::max<size_t>(max_rows, 1);
  {
    RecordSampling sampling(store, view.kind, max_rows);
    ViewTable t = read_view(store, run, view);
    // One read of its kind and a row per record it gave: the rows of the
    // records sampled are the view's rows sampled.
    if (sampling.reads() == 1 && std::ssize(t.rows) == sampling.taken()) {
      total = sampling.count();
      return t;
    }
  }
  ViewTable t = read_view(store, run, view);
  total = std::ssize(t.rows);
  const auto stride = static_cast<size_t>(sample_stride(total, max_rows));
  if (stride == 1) return t;
  size_t kept = 0;
  for (size_t i = 0; i < t.rows.size(); i += stride, ++kept)
    if (i != kept) t.rows[kept] = std::move(t.rows[i]);  // not onto itself: that empties it
  t.rows.resize(kept);
  t.rows.shrink_to_fit();
  return t;
}

ViewTable read_number_records(Store& store, const RunInfo& run, const std::string& kind,
                              const std::string& key_column, const std::string& value_column) {
  ViewTable t{{key_column, "step", value_column}, {}};
  for (auto& r : store.records(run.uuid, kind)) {
    PayloadReader in(r.payload, fmt::format("{} record {} of run {}, step {}", kind,
                                            core::escape_for_display(r.key),
                                            core::short_uuid(run.uuid), r.step));
    const double v = in.f64();
    in.finish();
    if (auto why = record_problem(kind, r.key, r.step))
      core::fail(ErrorKind::kStore, "{} of run {}; the store is damaged", *why,
                 core::short_uuid(run.uuid));
    t.rows.push_back({std::move(r.key), r.step, v});
  }
  return t;
}

}  // namespace trainscope::store
