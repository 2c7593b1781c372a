// A program outside the trainscope tree that finds the installed package.
#include <trainscope/core/version.h>
#include <trainscope/store/run_recorder.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  std::shared_ptr<trainscope::store::Store> store =
      trainscope::store::Store::open({.uri = argv[1]});
  auto run =
      trainscope::store::RunRecorder::start(store, {.experiment = "external", .name = "consumer"});
  run->log_metric("loss", 0.25, 1);
  run->end();
  std::printf("%s %zu\n", trainscope::core::version(), store->metric(run->uuid(), "loss").size());
  return 0;
}
