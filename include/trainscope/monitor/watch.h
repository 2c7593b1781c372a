// Watching any program: run it as a child, sample its process tree, keep its
// output, read the metric lines it prints, and record all of it as a run.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/monitor/sampler.h"
#include "trainscope/store/accept.h"
#include "trainscope/store/run_recorder.h"
#include "trainscope/store/store.h"

namespace trainscope::monitor {

struct JsonMember;

// Parses metric lines printed by a watched program into a run. Two forms:
//   trainscope: step=100 loss=0.53 acc=0.91     (step optional)
//   {"step": 100, "loss": 0.53, "acc": 0.91}    (a JSON object with "step")
// and two for the run's params (hyperparameters), in any line:
//   trainscope: param lr=0.1 optimizer=adam      (values up to a space)
//   {"params": {"lr": 0.1, "optimizer": {"name": "adam"}}}
// (nested objects flatten to optimizer.name, as a config's params do;
// strings, numbers, true, false and null as written; lists are refused).
// A param is set once: the same value again is nothing new, another value
// makes the line malformed. Anything else is ordinary output. One rule for
// the metric forms (docs/monitor.md):
//   - a key is 1 to 256 bytes of UTF-8 text without control characters
//     (NUL, DEL and C1 included), and appears once in a line;
//   - a number is written as JSON writes one (-1, 0.5, 1e-3), or NaN,
//     Infinity, -Infinity (Python's json) or nan, inf, -inf (Python's
//     str); both forms accept exactly these. A JSON value that is not a
//     number (a string, true, null, a list or object) is not a metric;
//   - a step is an integer from 0 to 2^53 (as a number: 100, 1e3), read
//     exactly from its digits (2^53 + 1 is refused, not rounded);
//   - a line needs at least one metric besides its step;
//   - a key's steps only go forward: a line giving a key a step below its
//     last one is malformed (store::StepOrder, the rule of every entry
//     point), nothing of it recorded.
// A line that starts like a metric line and breaks a rule is skipped and
// counted as malformed; the first such line is kept with the reason. A key
// in a line without a step gets the step after its last one: 0, 1, 2 ...
// in the order its values arrive while no line gives it a step. Not
// thread-safe.
class MetricLineParser {
 public:
  // `params`: those the run already has (`watch --param`).
  explicit MetricLineParser(store::RunRecorder& run, std::map<std::string, std::string> params = {})
      : run_(run), params_(std::move(params)) {}
  // One line, without its terminator ('\n', '\r' or "\r\n" were cut).
  void line(const std::string& raw);
  // A line too long to be a metric line (MetricLineSplitter): counted only.
  void overlong_line() { ++overlong_; }
  // Lines recorded as metric points, malformed lines (skipped), overlong
  // lines (counted only), lines that set params, and the first malformed
  // line as it was read ("" when none).
  int64_t parsed() const { return parsed_; }
  int64_t malformed() const { return malformed_; }
  int64_t overlong() const { return overlong_; }
  int64_t param_lines() const { return param_lines_; }
  const std::string& first_malformed() const { return first_malformed_; }
  // Why the first malformed line was refused ("step 1.5 is not an integer
  // from 0 to 2^53", ...).
  const std::string& first_malformed_reason() const { return first_reason_; }

  // The metrics of one line, key and value, in the order written.
  using Values = std::vector<std::pair<std::string, double>>;

 private:
  void bad(const std::string& l, const std::string& why);
  std::optional<std::string> parse_kv(const std::string& rest);
  std::optional<std::string> parse_json(std::vector<JsonMember>& members);
  std::optional<std::string> add(std::string key, std::string_view token, bool json);
  int64_t step_of(const std::string& key) const;
  std::optional<std::string> order_problem() const;
  void emit();
  std::optional<std::string> add_param(std::string key, std::string value);
  std::optional<std::string> parse_param_kv(const std::string& rest);
  std::optional<std::string> param_object(std::string_view text, const std::string& prefix,
                                          int depth);
  std::optional<std::string> set_line_params();

  store::RunRecorder& run_;
  std::map<std::string, std::string> params_;       // the run's
  std::map<std::string, std::string> line_params_;  // the line being read's
  int64_t param_lines_ = 0;
  store::StepOrder order_;  // each key's last step
  int64_t parsed_ = 0, malformed_ = 0, overlong_ = 0;
  std::string first_malformed_, first_reason_;
  // The line being read.
  Values values_;
  std::optional<int64_t> step_;
};

// The longest line read as a metric line. A longer one is passed through
// and stored like any output, but not parsed; memory stays bounded by it
// whatever a program prints (a 100 MB line, or none at all).
inline constexpr size_t kMaxMetricLine = 64 * 1024;
// The longest value of a param from a metric line.
inline constexpr size_t kMaxParamValue = 4096;

// Cuts a stream's bytes into lines for a MetricLineParser: a line ends at
// '\n' or '\r' (so the '\r'-redrawn progress bars of tqdm and the like are
// lines, not one line growing for the whole run), and one longer than
// kMaxMetricLine is counted (overlong_line) instead of parsed. Linear in
// the bytes fed. `mu`, when given, is held while the parser runs (two
// streams may feed one parser).
class MetricLineSplitter {
 public:
  // Holds `parser` and `mu` by reference: both must outlive the splitter.
  // One splitter per stream, fed from one thread.
  explicit MetricLineSplitter(MetricLineParser& parser, std::mutex* mu = nullptr)
      : parser_(parser), mu_(mu) {}
  void feed(std::string_view bytes);
  // The last line, when the stream ended without a terminator.
  void finish();

 private:
  void end_line();

  MetricLineParser& parser_;
  std::mutex* mu_;
  std::string line_;
  bool overlong_ = false, after_cr_ = false;
};

// What watch() runs and how the run is named and sampled (interval_s and
// carbon_kg_per_kwh as SamplerOptions'). Name, experiment and tags are the
// ones given; watch() adds the environment's (instrument/run_identity.h:
// $TRAINSCOPE_RUN_NAME, _EXPERIMENT and _TAGS; never a study's planned
// child).
struct WatchOptions {
  std::vector<std::string> command;  // program and arguments; the program is found in $PATH
  // Run name; empty: $TRAINSCOPE_RUN_NAME, else the program's file name.
  std::string name;
  std::string experiment;                     // empty: $TRAINSCOPE_EXPERIMENT, else "watch"
  std::string command_line;                   // recorded with the run (default: the command joined)
  std::map<std::string, std::string> params;  // the run's params (`--param k=v`)
  std::map<std::string, std::string> tags;    // the run's tags (`--tag`; over $TRAINSCOPE_TAGS)
  double interval_s = 1.0;                    // sampling interval
  double carbon_kg_per_kwh = 0.385;
};

// How a watched program ended and what its run holds: the run's UUID and
// name, the sample count, the metric-line counts of its MetricLineParser,
// and the energy of its ResourceSampler.
struct WatchResult {
  std::string run_uuid;
  std::string run_name;
  int exit_code = 0;  // the child's, or 128 + signal
  int signal = 0;     // the signal that killed it (exit_code 128 + signal); 0: it exited
  // A process the program started still held its output a second after it
  // exited: not waited for (tag output.held_open_by_a_descendant).
  bool output_held = false;
  // What the run's stdout.txt and stderr.txt could not keep of the output
  // ($TMPDIR full, past `ulimit -f`): "stdout: its first N of M bytes
  // (File too large)", each "" when whole (tags watch.stdout_cut,
  // watch.stderr_cut).
  std::array<std::string, 2> output_cut;
  // Processes the program started and left running when it exited: ended
  // with it, SIGTERM then SIGKILL after 5 s (tag watch.left_behind).
  size_t left_behind = 0;
  // Its keeper (the process that holds the program's tree) was killed
  // before the program ended, which watch then stopped (tag
  // watch.keeper_killed).
  bool keeper_lost = false;
  int64_t samples = 0;
  int64_t metric_lines = 0, malformed_lines = 0;
  int64_t param_lines = 0;     // lines that set params
  int64_t overlong_lines = 0;  // longer than kMaxMetricLine: not parsed
  std::string first_malformed, first_malformed_reason;
  EnergySummary energy;
};

// Runs the command to its end with its stdout and stderr passed through to
// ours, forwarding SIGINT and SIGTERM to it, and records a run: resource
// samples, the machine's manifest, the output as artifacts stdout.txt and
// stderr.txt, metric lines, exit code (tag and metric), status finished
// (exit 0), stopped (non-zero after a signal to watch was passed on: the
// user stopped it) or failed. Throws Error(kCommandNotFound) before recording
// anything when the program does not exist or is not a file that can run
// (a folder, a file without execute permission), and Error(kUsage) for a
// TRAINSCOPE_ variable the run cannot take (read_run_environment).
WatchResult watch(std::shared_ptr<store::Store> store, const WatchOptions& options);

// "11 (SIGSEGV)".
std::string signal_name(int signal);

// Where execvp would find `name`; empty when it is not an executable
// regular file (a folder is not).
std::string find_program(const std::string& name);

}  // namespace trainscope::monitor
