// Printing helpers shared by every command, in the executable and in the
// torch half: aligned tables for people, files written atomically, the
// example line of --help. Encoding (JSON, CSV) is format/format.h's.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "trainscope/env/manifest.h"
#include "trainscope/store/store.h"

namespace trainscope::cli {

class Table {
 public:
  // The header's cells are escaped for display as rows' are (a column may
  // be named by a run: `report throughput`).
  explicit Table(std::vector<std::string> header);
  // Cells are escaped for display, a value longer than any writer records
  // cut (core::escape_shown); numbers should be preformatted.
  void add_row(std::vector<std::string> row);
  // Right-aligns the given column (for numbers).
  void align_right(size_t column) { right_.push_back(column); }
  void print(std::ostream& out) const;
  size_t size() const { return rows_.size(); }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<size_t> right_;
};

// Writes to `out_path` atomically, or to stdout when it is empty or "-" (a
// stdout that fails is reported once by main: core/output.h).
void write_output(const std::string& out_path, const std::function<void(std::ostream&)>& body);

// Whether what was written to `out_path` is all there, so that a "wrote ..."
// line may say so: a file is written whole or its writer threw; stdout
// (empty or "-") only while no write to it failed (`> /dev/full`, a reader
// that left), which main then says once in the line for a cut output.
bool written_whole(const std::string& out_path);

// Names the run a command recorded for the line that says its output was
// cut (core/output.h): "the run NAME (SHORT-UUID)", the name as the store
// has it; never throws (the run is recorded by now).
void note_recorded_run(store::Store& store, const std::string& uuid);

// "[12/40] runs exported" on stderr, rewritten in place, when stderr is a
// terminal and not quieted; an empty function otherwise.
std::function<void(size_t done, size_t total)> counter(const std::string& what);

// Prints differences grouped by manifest group: key, then each side's value.
void print_differences(std::ostream& out, const std::vector<env::Difference>& diffs,
                       const std::string& a_label, const std::string& b_label);

// Checks of a numeric option's text before CLI11 converts it: a finite
// decimal number in [lo, hi] (NaN and the infinities are outside every
// range), or a whole number in [lo, hi] (no fraction, and no "-1" wrapped
// into a huge unsigned value). A value outside is one line:
// "--threads: 100000 is not a whole number from 1 to 256".
CLI::Validator number_in(double lo, double hi);
CLI::Validator integer_in(int64_t lo, int64_t hi);

// Checks of a run's --name and --experiment by the store's one rule
// (store/accept.h): "--name: name 'a\nb' holds a control character; ...".
CLI::Validator run_name_rule();
CLI::Validator experiment_rule();

// Appends "Example:\n  <example>" to a command's help.
inline void set_example(CLI::App* cmd, const std::string& example) {
  cmd->footer("\nExample:\n  " + example + "\n");
}

}  // namespace trainscope::cli
