// A store file from elsewhere: arbitrary bytes opened as an SQLite store
// (read-only, as `runs list/show/export` open it) and read back.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fuzz_common.h"
#include "trainscope/store/query.h"
#include "trainscope/store/store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainscope;
  static const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                            ("trainscope-fuzz-" + std::to_string(getpid()) + ".db");
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  fuzz::expect_clean([&] {
    store::StoreOptions o;
    o.uri = "sqlite:" + path.string();
    o.read_only = true;
    auto s = store::Store::open(o);
    store::RunQuery q;
    q.columns = {"params.*", "metrics.*", "tags.*"};
    for (const auto& row : store::query_runs(*s, q).rows)
      for (const auto& m : row.metrics) (void)s->metric(row.info.uuid, m.first);
  });
  return 0;
}
