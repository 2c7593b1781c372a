// A capability's reader hook, its view: what every reader shows of the
// records one capability wrote into a run, the same way everywhere.
// `trainscope runs view RUN NAME` prints it as a table, CSV or JSON; the
// dashboard's run page lists a run's views (GET /api/runs/{ref}) and draws
// each (GET /api/runs/{ref}/views/NAME) as a chart and a table. A unit
// registers its view in the torch-free half of its folder with one line, so
// the CLI's torch-free half and `serve` have it without libtorch:
//
//   TRAINSCOPE_VIEW(drift, store::View{
//       .name = "drift", .title = "Distance from the initial weights",
//       .kind = "drift", .read = read_drift,
//       .chart = store::ViewChart{.series = "tensor", .y = "drift"}});
//
// Thread-safety: views register while their library or program loads;
// views(), find_view() and views_of() are safe from any thread afterwards.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "trainscope/core/at_load.h"
#include "trainscope/store/store.h"

namespace trainscope::store {

// One cell of a view: absent, a whole number, a number or text.
using ViewCell = std::variant<std::monostate, int64_t, double, std::string>;

// A view's rows, each with one cell per column, in the order shown.
struct ViewTable {
  std::vector<std::string> columns;
  std::vector<std::vector<ViewCell>> rows;
};

// How a chart draws a view: one line per distinct value of column `series`
// (empty: one line), column `y` over column `x`. The columns must be the
// view's; `x` and `y` hold numbers.
struct ViewChart {
  std::string series;
  std::string x = "step";
  std::string y;
  bool log_y = false;  // positive values on a log scale (norms, ratios)
};

// A capability's view (see the file comment); register_view copies it.
struct View {
  std::string name;   // what `runs view RUN NAME` takes: "drift"
  std::string title;  // a heading: "Distance from the initial weights"
  // The record kind whose records make the view: a run has the view when
  // it holds at least one record of it (Store::record_kinds).
  std::string kind;
  // Reads the run's records into the table. Throws what the store throws,
  // and Error(kStore) naming the record for a payload it cannot decode.
  std::function<ViewTable(Store&, const RunInfo&)> read;
  std::optional<ViewChart> chart;  // none: a table only
};

// Adds a view. Throws Error(kUsage) for an empty name or title, a kind
// check_record_kind refuses, no read function, a chart naming no column
// it could draw, or a name already taken.
void register_view(View view);
// Every registered view, by name.
std::vector<View> views();
// The view called `name`; Error(kNotFound) naming it and every registered
// view when there is none.
View find_view(std::string_view name);
// The view called `name` of `run`: find_view's, and Error(kNotFound) naming
// the run and the kind when the run holds no record of its kind.
View find_view_of(Store& store, const RunInfo& run, std::string_view name);
// The views `uuid` holds records of, by name (empty for an unknown run).
std::vector<View> views_of(Store& store, std::string_view uuid);
// `view` read for `run`, its rows checked against its columns (Error
// kRuntime naming the view for a row of another width: a bug in it).
ViewTable read_view(Store& store, const RunInfo& run, const View& view);

// `view` read for `run` as at most `max_rows` rows (0 is taken as 1), as
// the dashboard shows it: every k-th row from the first (k =
// sample_stride(rows, max_rows)), so that the sample spans every step and
// series, with `total` set to how many rows the whole view has. A view
// whose read makes one row per record of its kind, in their order (as
// read_number_records does, and every view trainscope registers), is read
// from the sampled records alone (RecordSampling): memory holds the
// sample, not the run's records, and the rows are those of the whole view
// sampled. Another view is read whole, then sampled. Throws what
// read_view throws.
ViewTable read_view_sample(Store& store, const RunInfo& run, const View& view, size_t max_rows,
                           int64_t& total);

// The commonest view's read: one number per record, a payload of one f64
// (PayloadWriter::f64), as rows (key, step, value) under the column names
// given, in the order recorded.
ViewTable read_number_records(Store& store, const RunInfo& run, const std::string& kind,
                              const std::string& key_column, const std::string& value_column);

// A capability's check of its own records of one kind: reads a run's
// records of `kind` as the capability's readers do and throws
// Error(kStore) naming the record for one they would refuse. `store copy`
// checks a run before it copies it, so that it never calls "verified" a
// copy of a record that diff or rerun --verify refuse (twenty-ninth hunt,
// A-D2).
struct RecordCheck {
  std::string kind;
  std::function<void(Store&, std::string_view uuid)> check;
};

// Adds a check. Throws Error(kUsage) for a kind check_record_kind refuses
// or no check function. A kind may have several.
void register_record_check(RecordCheck check);
// Runs every registered check, and every view's read, of each kind `run`
// holds records of. Throws what they throw.
void check_run_records(Store& store, const RunInfo& run);

// Registers a record check while the library or program that defines it
// loads (core/at_load.h).
#define TRAINSCOPE_RECORD_CHECK(ID, ...)           \
  TRAINSCOPE_AT_LOAD(trainscope_record_check_##ID, \
                     ::trainscope::store::register_record_check(__VA_ARGS__))

// Registers a view while the library or program that defines it loads
// (core/at_load.h).
#define TRAINSCOPE_VIEW(ID, ...) \
  TRAINSCOPE_AT_LOAD(trainscope_view_##ID, ::trainscope::store::register_view(__VA_ARGS__))

}  // namespace trainscope::store
