// Copying runs between stores (`trainscope store copy SRC DST`): SQLite to
// PostgreSQL and back, or one file into another. Backend-neutral: it reads
// and writes only through the Store interface.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "trainscope/store/store.h"

namespace trainscope::store {

// What copy_store reports after each run, on the calling thread.
struct CopyProgress {
  size_t done = 0, total = 0;  // runs
  std::string run;             // the UUID just handled
};

// What copy_store did, by run.
struct CopyResult {
  size_t copied = 0;    // runs written into the destination
  size_t skipped = 0;   // already there and equal: an earlier copy's work
  size_t recopied = 0;  // there but different (a copy cut short): copied again
  int64_t points = 0;   // metric points written
  int64_t artifacts = 0;
};

// Copies every run of `src` into `dst` with everything recorded for it:
// the run itself (UUID, times, status, host, config), params, tags, every
// metric point bit for bit, the environment, every capability's records
// byte for byte (fingerprints, profiles, histograms, events, ...) and
// artifact files. A run whose artifact file differs from its checksum, or
// whose records a capability's check refuses (check_run_records), is not
// copied: Error(kStore) names it. Parents come before their
// children. A run already in `dst` and equal to its source is skipped, so
// an interrupted copy is resumed by running it again; one that differs is
// deleted from `dst` and copied again. A run is copied as it is: one left
// "running" by a writer that is gone stays so (copied once; `dst`'s reaper
// may mark it killed later, which is no difference). An artifact's recorded creation time
// becomes the time of the copy.
CopyResult copy_store(Store& src, Store& dst,
                      const std::function<void(const CopyProgress&)>& progress = {});

// Empty when run `uuid` holds the same records in both stores; otherwise
// the first difference found, as one line ("metric train/loss: 120 points
// vs 80"). A run still "running" in `a` (its writer gone) that `b`'s reaper
// marked killed at its last heartbeat is the same run.
std::string compare_run(Store& a, Store& b, const std::string& uuid);

}  // namespace trainscope::store
