// The fingerprint records: encoding and reading back.
#include "trainscope/fingerprint/records.h"

#include <algorithm>
#include <cstring>

#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/store/payload.h"
#include "trainscope/store/views.h"

namespace trainscope::fingerprint {

store::Record names_record(const std::vector<std::string>& names) {
  store::PayloadWriter w;
  w.uvarint(names.size());
  for (const auto& n : names) w.bytes(n);
  return {"", 0, 0, w.take()};
}

store::Record step_record(const Fingerprint& f, double wall_time) {
  store::PayloadWriter w;
  for (uint64_t h : f.hashes) w.u64(h);
  return {"", f.step, wall_time, w.take()};
}

std::vector<std::string> read_names(store::Store& store, std::string_view uuid) {
  const auto records = store.records(uuid, kNamesKind);
  if (records.empty()) return {};
  store::PayloadReader r(records.front().payload,
                         "fingerprint_tensors record of run " + core::short_uuid(uuid));
  std::vector<std::string> names(r.count(1));
  for (auto& n : names) n = r.bytes();
  r.finish();
  return names;
}

FingerprintSet read(store::Store& store, std::string_view uuid) {
  FingerprintSet out;
  out.names = read_names(store, uuid);
  for (const auto& rec : store.records(uuid, kStepsKind)) {
    // A step no writer records: a damaged store, never a step to compare.
    store::checked_step(rec.step, "fingerprints record of run " + core::short_uuid(uuid));
    if (rec.payload.size() % 8 != 0)
      core::fail(core::ErrorKind::kStore,
                 "fingerprints record of run {}, step {}: {} bytes, not a multiple of 8; the store "
                 "is damaged",
                 core::short_uuid(uuid), rec.step, rec.payload.size());
    // A hash per recorded tensor name, as the writer logs them (twenty-third
    // hunt, A-D7: 10 hashes for 5 names were compared as data).
    if (rec.payload.size() / 8 != out.names.size())
      core::fail(core::ErrorKind::kStore,
                 "fingerprints record of run {}, step {}: {} hashes for the {} tensors its "
                 "fingerprint_tensors record names; the store is damaged",
                 core::short_uuid(uuid), rec.step, rec.payload.size() / 8, out.names.size());
    Fingerprint f{rec.step, std::vector<uint64_t>(rec.payload.size() / 8)};
    std::memcpy(f.hashes.data(), rec.payload.data(), rec.payload.size());
    out.steps.push_back(std::move(f));
  }
  std::stable_sort(out.steps.begin(), out.steps.end(),
                   [](const Fingerprint& a, const Fingerprint& b) { return a.step < b.step; });
  return out;
}

// What store copy checks before it copies a run (store/views.h).
TRAINSCOPE_RECORD_CHECK(fingerprint_names,
                        store::RecordCheck{kNamesKind, [](store::Store& s, std::string_view uuid) {
                                             read_names(s, uuid);
                                           }});
TRAINSCOPE_RECORD_CHECK(fingerprint_steps,
                        store::RecordCheck{kStepsKind, [](store::Store& s, std::string_view uuid) {
                                             read(s, uuid);
                                           }});

}  // namespace trainscope::fingerprint
