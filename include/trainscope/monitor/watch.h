// Watching any program: run it as a child, sample its process tree, keep its
// output, read the metric lines it prints, and record all of it as a run.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/monitor/sampler.h"
#include "trainscope/store/run_recorder.h"
#include "trainscope/store/store.h"

namespace trainscope::monitor {

// Parses metric lines printed by a watched program into a run. Two formats:
//   trainscope: step=100 loss=0.53 acc=0.91     (step optional)
//   {"step": 100, "loss": 0.53, "acc": 0.91}    (a JSON object with "step")
// Anything else is ordinary output. A line that starts like one of these
// but does not parse is counted as malformed and skipped. A key without a
// step gets 0, 1, 2 ... in the order its values arrive. A step is truncated
// to an integer; NaN, infinite or out-of-range steps make the line
// malformed. Not thread-safe.
class MetricLineParser {
 public:
  explicit MetricLineParser(store::RunRecorder& run) : run_(run) {}
  void line(const std::string& raw);
  int64_t parsed() const { return parsed_; }
  int64_t malformed() const { return malformed_; }
  const std::string& first_malformed() const { return first_malformed_; }

 private:
  using Values = std::vector<std::pair<std::string, double>>;
  void bad(const std::string& l);
  void parse_kv(const std::string& l, const std::string& rest);
  void parse_json(const std::string& l);
  void emit(std::optional<int64_t> step, const Values& values);

  store::RunRecorder& run_;
  std::map<std::string, int64_t> next_step_;
  int64_t parsed_ = 0, malformed_ = 0;
  std::string first_malformed_;
};

struct WatchOptions {
  std::vector<std::string> command;  // program and arguments; the program is found in $PATH
  std::string name;                  // run name (default: the program's file name)
  std::string experiment = "watch";
  std::string command_line;  // recorded with the run (default: the command joined)
  double interval_s = 1.0;   // sampling interval
  double carbon_kg_per_kwh = 0.385;
};

struct WatchResult {
  std::string run_uuid;
  int exit_code = 0;  // the child's, or 128 + signal
  int64_t samples = 0;
  int64_t metric_lines = 0, malformed_lines = 0;
  std::string first_malformed;
  EnergySummary energy;
};

// Runs the command to its end with its stdout and stderr passed through to
// ours, forwarding SIGINT and SIGTERM to it, and records a run: resource
// samples, the machine's manifest, the output as artifacts stdout.txt and
// stderr.txt, metric lines, exit code (tag and metric), status finished
// (exit 0) or failed. Throws Error(kCommandNotFound) before recording
// anything when the program does not exist.
WatchResult watch(std::shared_ptr<store::Store> store, const WatchOptions& options);

// Where execvp would find `name`; empty when it is not an executable file.
std::string find_program(const std::string& name);

}  // namespace trainscope::monitor
