#include "output.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>

#include "trainscope/core/log.h"
#include "trainscope/core/markup.h"
#include "trainscope/core/output.h"
#include "trainscope/core/util.h"
#include "trainscope/store/accept.h"

namespace trainscope::cli {
namespace {
// Display width of a UTF-8 string, counting code points (good enough for
// aligned tables of keys and names).
size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xc0) != 0x80) ++n;
  return n;
}
}  // namespace

Table::Table(std::vector<std::string> header) : header_(std::move(header)) {
  for (auto& cell : header_) cell = core::escape_for_display(cell);
}

void Table::add_row(std::vector<std::string> row) {
  for (auto& cell : row) cell = core::escape_shown(cell);  // a planted 50 MB tag: cut, sized
  row.resize(header_.size());
  rows_.push_back(std::move(row));
}

void Table::print(std::ostream& out) const {
  std::vector<size_t> width(header_.size());
  for (size_t c = 0; c < header_.size(); ++c) width[c] = display_width(header_[c]);
  for (const auto& row : rows_)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], display_width(row[c]));
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      bool right = std::find(right_.begin(), right_.end(), c) != right_.end();
      std::string pad(width[c] - display_width(row[c]), ' ');
      if (c + 1 == row.size() && !right) {
        line += row[c];
      } else {
        line += right ? pad + row[c] : row[c] + pad;
      }
      if (c + 1 < row.size()) line += "  ";
    }
    out << line << '\n';
  };
  emit(header_);
  for (const auto& row : rows_) emit(row);
}

void write_output(const std::string& out_path, const std::function<void(std::ostream&)>& body) {
  if (out_path.empty() || out_path == "-") {
    // A stdout that fails (a closed pipe, a full disk) drops the rest;
    // main says so once at the end and exits 2 (core/output.h).
    body(std::cout);
    std::cout.flush();
    return;
  }
  core::write_file_atomically(out_path, body);
}

bool written_whole(const std::string& out_path) {
  if (!out_path.empty() && out_path != "-") return true;
  std::cout.flush();
  return core::standard_error(core::StdStream::kStdout) == 0;
}

void note_recorded_run(store::Store& store, const std::string& uuid) {
  std::string name;
  try {
    if (const auto run = store.find_run(uuid)) name = run->name;
  } catch (const std::exception&) {
    // The UUID alone says which run.
  }
  if (name.empty())
    return core::note_recorded("the run " + core::short_uuid(uuid) + " was recorded in full");
  core::note_recorded_run(name, uuid);
}

void print_differences(std::ostream& out, const std::vector<env::Difference>& diffs,
                       const std::string& a_label, const std::string& b_label) {
  std::string group;
  for (const auto& d : diffs) {
    if (d.group != group) {
      group = d.group;
      out << "\n[" << core::escape_for_display(group) << "]\n";
    }
    out << "  " << core::escape_for_display(d.key) << "\n    " << a_label << ": "
        << core::escape_for_display(env::side_text(d.a)) << "\n    " << b_label << ": "
        << core::escape_for_display(env::side_text(d.b)) << "\n";
  }
}

std::function<void(size_t, size_t)> counter(const std::string& what) {
  if (!isatty(STDERR_FILENO) || core::verbosity() < core::Verbosity::kNormal) return {};
  return [what](size_t done, size_t total) {
    std::cerr << "\r\033[K[" << done << "/" << total << "] " << what << (done == total ? "\n" : "")
              << std::flush;
  };
}

namespace {

// "1e+06" reads better as "1000000" in a range.
std::string bound(double v) {
  return v == std::floor(v) && std::fabs(v) < 1e15 ? fmt::format("{:.0f}", v)
                                                   : fmt::format("{}", v);
}

}  // namespace

CLI::Validator number_in(double lo, double hi) {
  const std::string range = fmt::format("a number from {} to {}", bound(lo), bound(hi));
  return CLI::Validator(
      [lo, hi, range](std::string& in) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(in.c_str(), &end);
        const bool whole = !in.empty() && end == in.c_str() + in.size() && errno != ERANGE;
        if (whole && std::isfinite(v) && v >= lo && v <= hi) return {};
        return fmt::format("{} is not {}", core::escape_for_display(in), range);
      },
      fmt::format("in [{}, {}]", bound(lo), bound(hi)));
}

CLI::Validator integer_in(int64_t lo, int64_t hi) {
  const std::string range = fmt::format("a whole number from {} to {}", lo, hi);
  return CLI::Validator(
      [lo, hi, range](std::string& in) -> std::string {
        char* end = nullptr;
        errno = 0;
        const long long v = std::strtoll(in.c_str(), &end, 10);
        const bool whole = !in.empty() && end == in.c_str() + in.size() && errno != ERANGE;
        if (whole && v >= lo && v <= hi) return {};
        return fmt::format("{} is not {}", core::escape_for_display(in), range);
      },
      fmt::format("in [{}, {}]", lo, hi));
}

CLI::Validator run_name_rule() {
  return CLI::Validator(
      [](std::string& in) -> std::string {
        return store::run_name_problem("name", in).value_or(std::string());
      },
      "");
}

CLI::Validator experiment_rule() {
  return CLI::Validator(
      [](std::string& in) -> std::string {
        return store::experiment_problem("experiment", in).value_or(std::string());
      },
      "");
}

}  // namespace trainscope::cli
