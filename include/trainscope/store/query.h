// Finding runs: a filter expression, a sort order and columns over the runs
// of a store, as `trainscope runs list` and the web server use them.
//
// Fields name what is recorded for a run, in the spirit of `mlflow runs
// search`:
//   metrics.KEY   the latest value of a metric (e.g. metrics.test/accuracy)
//   params.KEY    a param (e.g. params.optimizer.name)
//   tags.KEY      a tag
//   uuid, name, experiment, status, start_time, end_time, duration, host
//                 the run's attributes ("attributes." or "run." may prefix them)
// `status` is the status every reader shows (Store::liveness): a run
// recorded "running" whose writer is gone is "stale", not "running", in a
// filter, a sort, a column and RunQuery::status alike.
// A key holding spaces or operator characters is written in backquotes:
// params.`my key`.
//
// Filter grammar (keywords in any case):
//   expr  := term ('or' term)*          term := factor ('and' factor)*
//   factor:= 'not' factor | '(' expr ')' | FIELD OP VALUE
//          | FIELD 'like' STRING | FIELD 'ilike' STRING
//          | FIELD 'in' '(' VALUE (',' VALUE)* ')' | FIELD 'exists'
//   OP    := '=' '==' '!=' '<>' '<' '<=' '>' '>='
//   VALUE := a number (1, -2.5e-3, nan, inf) or a quoted string ('adam',
//            "adam"); like-patterns use % (any run of characters) and _ (one).
// Parentheses and 'not' nest at most 64 levels (core::kMaxNesting); any
// number of conditions may be joined by 'and' and 'or'.
// Two numbers compare as numbers; otherwise both sides compare as text, so
// params.lr = 0.1 matches the param "0.1" and "1e-1". A run without the
// field never matches a comparison (not even !=).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "trainscope/store/store.h"

namespace trainscope::store {

// What the query knows about one run; params, tags and metrics are loaded
// only when a filter, sort key or column asks for them.
struct RunRow {
  RunInfo info;
  std::map<std::string, std::string> params;
  std::map<std::string, std::string> tags;
  std::map<std::string, MetricSummary> metrics;
  // The status readers show (Store::liveness(info, store.now()).status),
  // set by query_runs; empty: field_value judges it by liveness() at this
  // machine's clock.
  std::string status;
};

// A field's value: absent, a number or text.
using FieldValue = std::variant<std::monostate, double, std::string>;

// The value of FIELD ("metrics.loss", "status", ...) for a run.
FieldValue field_value(const RunRow& row, std::string_view field);

// The statuses readers show a run with, for a message: the recorded ones
// and "stale".
inline constexpr std::string_view kShownStatuses =
    "created, running, finished, failed, killed, stopped, stale";

// Whether NAME is a run attribute the fields name bare (name, experiment,
// status, host, start_time, ...), case-insensitively.
bool is_run_attribute(std::string_view name);

// The whole of `text` as a number, as a filter compares a param's or tag's
// text with a number ("0.1", "1e-3", "nan", "-inf"); nullopt for text that
// is not one (a leading blank, anything after the number).
std::optional<double> parse_number(std::string_view text);

// A parsed filter (the grammar above): immutable once parsed, so any
// thread may match with it; movable, not copyable.
class RunFilterExpr {
 public:
  // Parses a filter; throws Error(kUsage) with one line naming the column of
  // the first error: "filter column 14: expected a value after '>'".
  static RunFilterExpr parse(std::string_view text);
  // The empty filter: matches every run.
  RunFilterExpr();
  // Moves leave the source empty (matching every run).
  RunFilterExpr(RunFilterExpr&&) noexcept;
  RunFilterExpr& operator=(RunFilterExpr&&) noexcept;  // likewise
  // Frees the parsed tree.
  ~RunFilterExpr();

  // Whether `row` satisfies the filter, reading only its loaded fields (a
  // field not loaded counts as absent); never throws.
  bool matches(const RunRow& row) const;
  // The fields the filter reads (to load only what it needs).
  const std::vector<std::string>& fields() const { return fields_; }
  bool empty() const { return root_ == nullptr; }

  struct Node;

 private:
  std::unique_ptr<Node> root_;
  std::vector<std::string> fields_;
};

// One key of a sort order: a field (as in filters) and its direction.
struct SortKey {
  std::string field;
  bool descending = false;
};

// "metrics.loss", "-metrics.loss", "metrics.loss desc", comma-separated.
// Throws Error(kUsage) naming the sort as `named` ("--sort", or the API's
// "parameter 'sort'") and the field or direction it does not know.
std::vector<SortKey> parse_sort(std::string_view text, const std::string& named = "--sort");

// What query_runs returns: which runs (a base filter and an expression),
// in which order, which columns, and which page.
struct RunQuery {
  RunFilter base;                    // experiment, status, ... (limit ignored)
  std::string filter;                // the expression language above; empty: all
  std::string sort;                  // empty: newest first
  std::vector<std::string> columns;  // fields; a '*' in one matches many keys
  int64_t offset = 0;
  int64_t limit = 0;  // 0: all
  // Group a study's runs under it, as MLflow nests child runs: the filter
  // and the sort apply to every run, children included; a group stands
  // where its first matching member sorts; offset, limit and total count
  // groups (RunQueryResult::groups).
  bool nest = false;
  // Only runs shown with this status (one of kShownStatuses: "stale" is a
  // running run whose writer is gone, "running" one whose writer lives),
  // as `runs list --status` and the API's `status=` ask; empty: any. It
  // replaces base.status. Another word is an Error(kUsage) naming it.
  std::string status;
  // Only runs whose name or UUID contains this text, in any case, as it
  // is: '%', '_' and '\\' are characters here, not patterns (the API's
  // `search=`); empty: any.
  std::string search;
  // How a message names `sort` and `columns`: the CLI's flags, or the
  // API's parameters ("parameter 'sort'").
  std::string sort_named = "--sort";
  std::string columns_named = "--columns";
};

// With RunQuery::nest, one group of the page: rows[top] is a run without a
// parent or a study, rows[children] the study's matching runs in sort order.
// A study the filter left out is still its group's top (top_matched false);
// runs whose parent is no longer stored are groups of their own.
struct RunGroup {
  size_t top = 0;
  bool top_matched = true;
  std::vector<size_t> children;
};

// One page of query_runs: the columns and rows, the total before paging,
// and with nest the groups.
struct RunQueryResult {
  std::vector<std::string> columns;  // after expanding '*'
  std::vector<RunRow> rows;          // the requested page
  int64_t total = 0;                 // matching runs (groups with nest) before paging
  std::vector<RunGroup> groups;      // with nest: the page's groups, in order
};

// Runs matching the query, sorted, paged, with every column's data loaded.
RunQueryResult query_runs(Store& store, const RunQuery& query);

// The columns `runs list` shows when none are asked for.
std::vector<std::string> default_run_columns();

}  // namespace trainscope::store
