// The metric lines a watched program prints (`trainscope watch`), split
// and parsed as watch reads them (MetricLineSplitter, MetricLineParser),
// into a real in-memory store. One run takes the lines of many inputs; it is
// replaced every 5,000 inputs so the store stays small.
#include <memory>

#include "fuzz_common.h"
#include "trainscope/monitor/watch.h"

namespace {

using namespace trainscope;

struct Target {
  std::shared_ptr<store::Store> store = [] {
    store::StoreOptions o;
    o.uri = "sqlite::memory:";
    return std::shared_ptr<store::Store>(store::Store::open(o));
  }();
  std::unique_ptr<store::RunRecorder> run;
  int64_t inputs = 0;

  store::RunRecorder& recorder() {
    if (run && ++inputs % 5000 == 0) {
      run->end();
      store->delete_run(run->uuid());
      run.reset();
    }
    if (!run) run = store::RunRecorder::start(store, {});
    return *run;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Target target;
  monitor::MetricLineParser parser(target.recorder());
  const std::string_view text = fuzz::as_text(data, size);
  // As watch reads a stream: in pieces (here two), lines cut at '\n' or
  // '\r', long ones counted.
  monitor::MetricLineSplitter lines(parser);
  fuzz::expect_clean([&] {
    lines.feed(text.substr(0, size / 2));
    lines.feed(text.substr(size / 2));
    lines.finish();
  });
  if (parser.parsed() + parser.malformed() + parser.overlong() > static_cast<int64_t>(size) + 1)
    std::abort();
  return 0;
}
