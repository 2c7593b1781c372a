#include "output.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "trainscope/core/log.h"
#include "trainscope/core/util.h"

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

void Table::add_row(std::vector<std::string> row) {
  for (auto& cell : row) cell = core::escape_for_display(cell);
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
    body(std::cout);
    std::cout.flush();
    return;
  }
  core::write_file_atomically(out_path, body);
}

void print_differences(std::ostream& out, const std::vector<env::Difference>& diffs,
                       const std::string& a_label, const std::string& b_label) {
  std::string group;
  for (const auto& d : diffs) {
    if (d.group != group) {
      group = d.group;
      out << "\n[" << group << "]\n";
    }
    out << "  " << core::escape_for_display(d.key) << "\n    " << a_label << ": "
        << core::escape_for_display(d.a) << "\n    " << b_label << ": "
        << core::escape_for_display(d.b) << "\n";
  }
}

std::function<void(size_t, size_t)> counter(const std::string& what) {
  if (!isatty(STDERR_FILENO) || core::verbosity() < core::Verbosity::kNormal) return {};
  return [what](size_t done, size_t total) {
    std::cerr << "\r\033[K[" << done << "/" << total << "] " << what << (done == total ? "\n" : "")
              << std::flush;
  };
}

}  // namespace trainscope::cli
