// The profiler's records: encoding and reading back.
#include "trainscope/profile/records.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/store/payload.h"
#include "trainscope/store/views.h"

namespace trainscope::profile {

std::vector<store::Record> cell_records(const std::vector<ProfileCell>& cells) {
  std::map<int64_t, std::map<std::pair<std::string, std::string>, double>> by_step;
  for (const auto& c : cells) by_step[c.step][{c.layer, c.phase}] = c.us;
  std::vector<store::Record> out;
  for (const auto& [step, step_cells] : by_step) {
    store::PayloadWriter w;
    w.uvarint(step_cells.size());
    for (const auto& [at, us] : step_cells) w.bytes(at.first).bytes(at.second).f64(us);
    out.push_back({"", step, 0, w.take()});
  }
  return out;
}

store::Record layers_record(const std::vector<std::pair<std::string, std::string>>& layers) {
  store::PayloadWriter w;
  w.uvarint(layers.size());
  for (const auto& [name, info] : layers) w.bytes(name).bytes(info);
  return {"", 0, 0, w.take()};
}

std::vector<ProfileCell> read_cells(store::Store& store, std::string_view uuid) {
  std::vector<ProfileCell> out;
  for (const auto& rec : store.records(uuid, kStepsKind)) {
    store::checked_step(rec.step, "profile_steps record of run " + core::short_uuid(uuid));
    store::PayloadReader r(rec.payload, "profile_steps record of run " + core::short_uuid(uuid) +
                                            ", step " + std::to_string(rec.step));
    const uint64_t n = r.count(10);  // two empty strings and a double at least
    for (uint64_t i = 0; i < n; ++i) {
      ProfileCell c{rec.step, r.bytes(), r.bytes(), 0};
      c.us = r.f64();
      // A measured span: a time of 0 or more, shorter than any calendar
      // (the profiler's clock never gives another).
      if (!(c.us >= 0 && c.us < 3.2e17))
        core::fail(core::ErrorKind::kStore,
                   "profile_steps record of run {}, step {}: layer {} {} took {} us, which "
                   "cannot be; the store is damaged",
                   core::short_uuid(uuid), rec.step, core::escape_for_display(c.layer),
                   core::escape_for_display(c.phase), core::format_double(c.us));
      out.push_back(std::move(c));
    }
    r.finish();
  }
  std::stable_sort(out.begin(), out.end(), [](const ProfileCell& a, const ProfileCell& b) {
    return std::tie(a.step, a.layer, a.phase) < std::tie(b.step, b.layer, b.phase);
  });
  return out;
}

std::vector<std::pair<std::string, std::string>> read_layers(store::Store& store,
                                                             std::string_view uuid) {
  const auto records = store.records(uuid, kLayersKind);
  if (records.empty()) return {};
  store::PayloadReader r(records.front().payload,
                         "profile_layers record of run " + core::short_uuid(uuid));
  std::vector<std::pair<std::string, std::string>> out(r.count(2));
  for (auto& [name, info] : out) {
    name = r.bytes();
    info = r.bytes();
  }
  r.finish();
  return out;
}

// What store copy checks before it copies a run (store/views.h).
TRAINSCOPE_RECORD_CHECK(profile_steps,
                        store::RecordCheck{kStepsKind, [](store::Store& s, std::string_view uuid) {
                                             read_cells(s, uuid);
                                           }});
TRAINSCOPE_RECORD_CHECK(profile_layers,
                        store::RecordCheck{kLayersKind, [](store::Store& s, std::string_view uuid) {
                                             read_layers(s, uuid);
                                           }});

}  // namespace trainscope::profile
