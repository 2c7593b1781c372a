// Output helpers shared by every CLI command: aligned tables for people,
// JSON and CSV for programs. Keys and values are escaped so that odd
// characters never break a line or a format.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "trainscope/store/store.h"

namespace trainscope::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  // Cells are escaped for display; numbers should be preformatted.
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

// A number for JSON: finite values as numbers, NaN/Inf as the strings
// "nan", "inf", "-inf" (JSON has no literal for them).
nlohmann::json json_number(double v);
nlohmann::json to_json(const store::RunInfo& r, bool full);
nlohmann::json to_json(const store::MetricSummary& m);
nlohmann::json to_json(const store::ArtifactInfo& a);

// Human duration: "1h02m", "3m05s", "4.2s".
std::string format_duration(double seconds);
// Compact number for tables: 6 significant digits, nan/inf spelled out.
std::string format_value(double v);

// Writes to `out_path` atomically (temp file + rename), or to stdout when
// out_path is empty or "-".
void write_output(const std::string& out_path, const std::function<void(std::ostream&)>& body);

}  // namespace trainscope::cli
