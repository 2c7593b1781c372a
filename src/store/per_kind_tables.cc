// The C++ step of SQLite's migration 6 and PostgreSQL's 2: the rows of the
// per-kind tables of schema 5 become records. The layouts are spelled out
// here as they were when the migration shipped (docs/store_format.md,
// "Records"); the capabilities' codecs (src/fingerprint/records.cc,
// src/profile/records.cc, src/probes/records.cc) read them, and
// tests/store/migration_test.cc checks that they read what this writes
// and write the same bytes. Never edit this file: a new layout is a new
// migration.
#include <algorithm>
#include <string>
#include <vector>

#include "migrations.h"
#include "trainscope/core/util.h"
#include "trainscope/store/payload.h"

namespace trainscope::store {

namespace {

using Row = MigrationTxn::Row;

// Records of one kind of one run, as the step builds them.
struct Batch {
  const char* kind;
  std::vector<Record> records;
};

// A count, a size: never negative in a store, clamped if one was.
uint64_t count(int64_t v) { return static_cast<uint64_t>(std::max<int64_t>(v, 0)); }

void query(MigrationTxn& txn, const char* sql, int64_t run_id,
           const std::function<void(const Row&)>& row) {
  std::string text(sql);
  text.replace(text.find("RUN"), 3, std::to_string(run_id));
  txn.query(text, row);
}

// fingerprint_tensors: one record per run: uvarint n, n x bytes name.
Batch tensor_names(MigrationTxn& txn, int64_t run_id) {
  std::vector<std::string> names;
  query(txn, "SELECT name FROM fingerprint_tensors WHERE run_id = RUN ORDER BY idx", run_id,
        [&](const Row& r) { names.push_back(r.text(0)); });
  Batch b{"fingerprint_tensors", {}};
  if (names.empty()) return b;
  PayloadWriter w;
  w.uvarint(names.size());
  for (const auto& n : names) w.bytes(n);
  b.records.push_back({"", 0, 0, w.take()});
  return b;
}

// fingerprints: one record per step: the hashes as uint64, in tensor order
// (the blob as it was).
Batch fingerprints(MigrationTxn& txn, int64_t run_id) {
  Batch b{"fingerprints", {}};
  query(txn, "SELECT step, hashes FROM fingerprints WHERE run_id = RUN ORDER BY step", run_id,
        [&](const Row& r) {
          b.records.push_back({"", r.integer(0), 0, r.bytes(1)});
        });
  return b;
}

// profile_steps: one record per profiled step: uvarint n, n x (bytes
// layer, bytes phase, f64 us), cells by layer then phase.
Batch profile_steps(MigrationTxn& txn, int64_t run_id) {
  struct Cell {
    int64_t step;
    std::string layer, phase;
    double us;
  };
  std::vector<Cell> cells;
  query(txn,
        "SELECT step, layer, phase, us FROM profile_cells WHERE run_id = RUN "
        "ORDER BY step, layer, phase",
        run_id, [&](const Row& r) {
          cells.push_back({r.integer(0), r.text(1), r.text(2), r.real(3)});
        });
  Batch b{"profile_steps", {}};
  for (size_t at = 0; at < cells.size();) {
    size_t end = at;
    while (end < cells.size() && cells[end].step == cells[at].step) ++end;
    PayloadWriter w;
    w.uvarint(end - at);
    for (size_t i = at; i < end; ++i)
      w.bytes(cells[i].layer).bytes(cells[i].phase).f64(cells[i].us);
    b.records.push_back({"", cells[at].step, 0, w.take()});
    at = end;
  }
  return b;
}

// profile_layers: one record per run: uvarint n, n x (bytes name, bytes
// info JSON).
Batch profile_layers(MigrationTxn& txn, int64_t run_id) {
  std::vector<std::pair<std::string, std::string>> layers;
  query(txn, "SELECT name, info FROM profile_layers WHERE run_id = RUN ORDER BY idx", run_id,
        [&](const Row& r) { layers.emplace_back(r.text(0), r.text(1)); });
  Batch b{"profile_layers", {}};
  if (layers.empty()) return b;
  PayloadWriter w;
  w.uvarint(layers.size());
  for (const auto& [name, info] : layers) w.bytes(name).bytes(info);
  b.records.push_back({"", 0, 0, w.take()});
  return b;
}

// histograms: key "<layer>/<kind>": f64 low, f64 high, uvarint nan,
// pos_inf, neg_inf, uvarint n, n x uvarint count. The counts blob was
// those n varints already.
Batch histograms(MigrationTxn& txn, int64_t run_id) {
  Batch b{"histograms", {}};
  query(txn,
        "SELECT key, step, wall_time, low, high, nan, pos_inf, neg_inf, counts FROM histograms "
        "WHERE run_id = RUN ORDER BY key, step",
        run_id, [&](const Row& r) {
          const std::string counts = r.bytes(8);
          const auto n = std::count_if(counts.begin(), counts.end(),
                                       [](char c) { return !(static_cast<uint8_t>(c) & 0x80); });
          PayloadWriter w;
          w.f64(r.real(3)).f64(r.real(4));
          w.uvarint(count(r.integer(5))).uvarint(count(r.integer(6))).uvarint(count(r.integer(7)));
          w.uvarint(static_cast<uint64_t>(n));
          std::string payload = w.take() + counts;
          b.records.push_back({r.text(0), r.integer(1), r.real(2), std::move(payload)});
        });
  return b;
}

// The key of an event: kind and name with '%' and '/' escaped (%25, %2F),
// then the source, joined by '/'; one that would be longer than
// kMaxRecordKeyBytes is cut and ends in '#' and 16 hex digits of the
// whole key's SHA-256.
std::string event_key(const std::string& kind, const std::string& name, const std::string& source) {
  auto escaped = [](const std::string& s) {
    std::string out;
    for (char c : s) out += c == '%' ? "%25" : c == '/' ? "%2F" : std::string(1, c);
    return out;
  };
  std::string key = escaped(kind) + "/" + escaped(name) + "/" + source;
  if (key.size() <= kMaxRecordKeyBytes) return key;
  // Cut at a character's start: the record key stays UTF-8.
  return std::string(core::utf8_prefix(key, kMaxRecordKeyBytes - 17)) + "#" +
         core::sha256_hex(key).substr(0, 16);
}

// events: key event_key(kind, name, source): bytes kind, bytes name, bytes
// source, bytes message; in the order they were recorded.
Batch events(MigrationTxn& txn, int64_t run_id) {
  Batch b{"events", {}};
  query(txn,
        "SELECT step, wall_time, kind, name, source, message FROM run_events WHERE run_id = RUN "
        "ORDER BY id",
        run_id, [&](const Row& r) {
          const std::string kind = r.text(2), name = r.text(3), source = r.text(4);
          PayloadWriter w;
          w.bytes(kind).bytes(name).bytes(source).bytes(r.text(5));
          b.records.push_back({event_key(kind, name, source), r.integer(0), r.real(1), w.take()});
        });
  return b;
}

}  // namespace

void copy_per_kind_tables(MigrationTxn& txn) {
  std::vector<int64_t> runs;
  txn.query("SELECT id FROM runs ORDER BY id", [&](const Row& r) { runs.push_back(r.integer(0)); });
  // One run at a time, so that memory holds one run's records at most.
  for (const int64_t run_id : runs) {
    for (auto* copy :
         {tensor_names, fingerprints, profile_steps, profile_layers, histograms, events}) {
      const Batch b = copy(txn, run_id);
      if (!b.records.empty()) txn.insert_records(run_id, b.kind, b.records);
    }
  }
}

}  // namespace trainscope::store
