// ts_store_writer: a separate process that records one run, for the
// multi-process and crash tests.
//
//   ts_store_writer STORE NAME POINTS KEYS            write, then finish
//   ts_store_writer STORE NAME POINTS KEYS --hang     write, flush, print
//       "flushed <uuid> <points>", then keep logging until killed, or until
//       its run's lease is lost: then it prints the error and exits 4
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "trainscope/core/error.h"
#include "trainscope/store/run_recorder.h"

int main(int argc, char** argv) {
  using namespace trainscope::core;
  using namespace trainscope::store;
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s STORE NAME POINTS KEYS [--hang]\n", argv[0]);
    return 2;
  }
  try {
    StoreOptions o;
    o.uri = argv[1];
    std::shared_ptr<Store> store = Store::open(o);
    NewRun nr;
    nr.experiment = "multi";
    nr.name = argv[2];
    const long points = std::stol(argv[3]);
    const int keys = std::stoi(argv[4]);
    const bool hang = argc > 5 && std::strcmp(argv[5], "--hang") == 0;
    auto rec = RunRecorder::start(store, nr);
    rec->set_param("writer", argv[2]);
    rec->set_tag("pid", std::to_string(getpid()));
    for (long i = 0; i < points; ++i)
      for (int k = 0; k < keys; ++k) rec->log_metric("key" + std::to_string(k), i * 0.5, i);
    if (!hang) {
      rec->end(RunStatus::kFinished);
      return 0;
    }
    rec->flush();
    std::printf("flushed %s %ld\n", rec->uuid().c_str(), points);
    std::fflush(stdout);
    for (long i = points;; ++i) {
      for (int k = 0; k < keys; ++k) rec->log_metric("key" + std::to_string(k), i * 0.5, i);
      if (i % 1000 == 0) {
        rec->check();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
  } catch (const LeaseLost& e) {
    std::fprintf(stderr, "ts_store_writer: lost: %s\n", e.what());
    return 4;
  } catch (const Error& e) {
    std::fprintf(stderr, "ts_store_writer: %s\n", e.what());
    return 1;
  }
}
