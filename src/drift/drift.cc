// drift's torch-free half: its config section, its records' codec and its
// view (what `trainscope runs view RUN drift` and the dashboard show).
#include "drift.h"

#include <cmath>

#include "trainscope/config/section.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/store/accept.h"
#include "trainscope/store/payload.h"
#include "trainscope/store/views.h"

namespace trainscope::drift {

TRAINSCOPE_CONFIG_SECTION(
    drift, config::Section{
               .name = DriftConfig::kName,
               .fields = {config::int_key("drift.every", &DriftConfig::every, 0, config::kMaxSteps,
                                          "Distance of each weight tensor from its initial values, "
                                          "||w - w0|| / ||w0||, every N steps (0: off)")}});

std::string encode(const Drift& d) {
  store::PayloadWriter w;
  w.f64(d.relative).uvarint(static_cast<uint64_t>(d.from_step));
  return w.take();
}

Drift decode(const store::Record& r, const std::string& run_uuid) {
  store::PayloadReader in(
      r.payload, fmt::format("drift record {} of run {}, step {}", core::escape_for_display(r.key),
                             core::short_uuid(run_uuid), r.step));
  Drift d;
  d.relative = in.f64();
  const uint64_t from = in.uvarint();
  in.finish();
  // What a recorder writes: a step a run accepts, measured from a step at
  // or before it, a distance of 0 or more, or NaN (weights gone NaN: a
  // diverged training's own records were called damage; twenty-seventh
  // hunt, B-D3). Anything else is no drift's.
  if (auto why = store::record_problem(kKind, r.key, r.step))
    core::fail(core::ErrorKind::kStore, "run {}: {}; the store is damaged",
               core::short_uuid(run_uuid), *why);
  if (from > static_cast<uint64_t>(r.step) || (!(d.relative >= 0) && !std::isnan(d.relative)))
    core::fail(core::ErrorKind::kStore,
               "drift record {} of run {}, step {}: from step {}, distance {} cannot be; the "
               "store is damaged",
               core::escape_for_display(r.key), core::short_uuid(run_uuid), r.step, from,
               core::format_double(d.relative));
  d.from_step = static_cast<int64_t>(from);
  return d;
}

namespace {

store::ViewTable read_drift(store::Store& s, const store::RunInfo& run) {
  store::ViewTable t{{"tensor", "step", "drift", "from_step"}, {}};
  for (auto& r : s.records(run.uuid, kKind)) {
    store::checked_step(r.step, "drift record of run " + core::short_uuid(run.uuid));
    const Drift d = decode(r, run.uuid);
    t.rows.push_back({std::move(r.key), r.step, d.relative, d.from_step});
  }
  return t;
}

}  // namespace

TRAINSCOPE_VIEW(drift, store::View{.name = "drift",
                                   .title = "Distance from the initial weights",
                                   .kind = kKind,
                                   .read = read_drift,
                                   .chart = store::ViewChart{.series = "tensor", .y = "drift"}});

}  // namespace trainscope::drift
