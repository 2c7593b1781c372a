// The probes' records: encoding and reading back.
#include "trainscope/probes/records.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "trainscope/core/util.h"
#include "trainscope/store/payload.h"
#include "trainscope/store/store.h"
#include "trainscope/store/views.h"

namespace trainscope::probes {

namespace {
uint64_t count(int64_t v) { return static_cast<uint64_t>(std::max<int64_t>(v, 0)); }
}  // namespace

store::Record histogram_record(const StepHistogram& s) {
  const Histogram& h = s.histogram;
  store::PayloadWriter w;
  w.f64(std::isfinite(h.low) ? h.low : 0.0).f64(std::isfinite(h.high) ? h.high : 0.0);
  w.uvarint(count(h.nan)).uvarint(count(h.pos_inf)).uvarint(count(h.neg_inf));
  w.uvarint(h.counts.size());
  for (int64_t c : h.counts) w.uvarint(count(c));
  // The finite values' sum and sum of squares (TensorBoard's histogram
  // carries them: its mean and SD); a record written before them ends at
  // the counts, and reads back with 0s.
  w.f64(std::isfinite(h.sum) ? h.sum : 0.0).f64(std::isfinite(h.sum_squares) ? h.sum_squares : 0.0);
  return {s.key, s.step, s.wall_time, w.take()};
}

std::string event_key(const std::string& kind, const std::string& name, const std::string& source) {
  auto escaped = [](const std::string& s) {
    std::string out;
    for (char c : s) out += c == '%' ? "%25" : c == '/' ? "%2F" : std::string(1, c);
    return out;
  };
  std::string key = escaped(kind) + "/" + escaped(name) + "/" + source;
  if (key.size() <= store::kMaxRecordKeyBytes) return key;
  // Cut at a character's start: the record key stays UTF-8.
  return std::string(core::utf8_prefix(key, store::kMaxRecordKeyBytes - 17)) + "#" +
         core::sha256_hex(key).substr(0, 16);
}

store::Record event_record(const RunEvent& e) {
  store::PayloadWriter w;
  w.bytes(e.kind).bytes(e.name).bytes(e.source).bytes(e.message);
  return {event_key(e.kind, e.name, e.source), e.step, e.wall_time, w.take()};
}

std::vector<StepHistogram> read_histograms(store::Store& store, std::string_view uuid,
                                           std::string_view key) {
  std::vector<StepHistogram> out;
  const auto records = key.empty() ? store.records(uuid, kHistogramsKind)
                                   : store.records(uuid, kHistogramsKind, key);
  for (const auto& rec : records) {
    store::checked_step(rec.step, "histograms record " + core::escape_for_display(rec.key) +
                                      " of run " + core::short_uuid(uuid));
    store::PayloadReader r(rec.payload, "histograms record " + rec.key + " of run " +
                                            core::short_uuid(uuid) + ", step " +
                                            std::to_string(rec.step));
    StepHistogram s{rec.key, rec.step, rec.wall_time, {}};
    // 0 (unknown) or a time of day, as the writers record it: a TensorBoard
    // export of anything else is a file no reader takes back.
    if (rec.wall_time != 0 && !store::is_point_time(rec.wall_time))
      r.damaged(fmt::format("its wall time {} is not a time of day", rec.wall_time));
    Histogram& h = s.histogram;
    h.low = r.f64();
    h.high = r.f64();
    // The writer's bounds are finite, low <= high (twenty-third hunt, A-D6:
    // NaN or swapped bounds were drawn as y="nan"), and a count is of a
    // tensor's elements: at most 2^53, not 2^63 read as negative.
    if (!std::isfinite(h.low) || !std::isfinite(h.high) || h.low > h.high)
      r.damaged(fmt::format("its range [{}, {}] is no range of values", h.low, h.high));
    auto count = [&r] {
      const uint64_t c = r.uvarint();
      if (c > (uint64_t{1} << 53)) r.damaged(fmt::format("a count of {} is no element count", c));
      return static_cast<int64_t>(c);
    };
    h.nan = count();
    h.pos_inf = count();
    h.neg_inf = count();
    h.counts.resize(r.count(1));
    for (auto& c : h.counts) c = count();
    if (!r.done()) h.sum = r.f64(), h.sum_squares = r.f64();  // none before they were kept
    r.finish();
    out.push_back(std::move(s));
  }
  std::stable_sort(out.begin(), out.end(), [](const StepHistogram& a, const StepHistogram& b) {
    return std::tie(a.key, a.step) < std::tie(b.key, b.step);
  });
  return out;
}

std::vector<RunEvent> read_events(store::Store& store, std::string_view uuid) {
  std::vector<RunEvent> out;
  for (const auto& rec : store.records(uuid, kEventsKind)) {
    store::checked_step(rec.step, "events record of run " + core::short_uuid(uuid));
    store::PayloadReader r(rec.payload, "events record of run " + core::short_uuid(uuid) +
                                            ", step " + std::to_string(rec.step));
    // 0 (unknown) or a time of day, as for histograms (thirty-eighth hunt,
    // A-D8: inf and -5 were shown as the alert's time).
    if (rec.wall_time != 0 && !store::is_point_time(rec.wall_time))
      r.damaged(fmt::format("its wall time {} is not a time of day", rec.wall_time));
    RunEvent e{rec.step, rec.wall_time, r.bytes(), r.bytes(), r.bytes(), r.bytes()};
    r.finish();
    out.push_back(std::move(e));
  }
  return out;
}

// What store copy checks before it copies a run (store/views.h).
TRAINSCOPE_RECORD_CHECK(probes_histograms,
                        store::RecordCheck{kHistogramsKind,
                                           [](store::Store& s, std::string_view uuid) {
                                             read_histograms(s, uuid, "");
                                           }});
TRAINSCOPE_RECORD_CHECK(probes_events,
                        store::RecordCheck{kEventsKind, [](store::Store& s, std::string_view uuid) {
                                             read_events(s, uuid);
                                           }});

}  // namespace trainscope::probes
