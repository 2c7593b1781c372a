#include "output.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>

#include "trainscope/core/error.h"
#include "trainscope/core/util.h"

namespace trainscope::cli {
using core::ErrorKind;
using core::escape_for_display;
using core::fail;
using core::format_double;
using core::format_utc;
using store::ArtifactInfo;
using store::MetricSummary;
using store::RunInfo;

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
  for (auto& cell : row) cell = escape_for_display(cell);
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

nlohmann::json json_number(double v) {
  if (std::isfinite(v)) return v;
  return format_double(v);
}

nlohmann::json to_json(const RunInfo& r, bool full) {
  nlohmann::json j = {
      {"uuid", r.uuid},
      {"experiment", r.experiment},
      {"name", r.name},
      {"status", to_string(r.status)},
      {"start_time", format_utc(r.start_time)},
      {"end_time", r.end_time > 0 ? nlohmann::json(format_utc(r.end_time)) : nlohmann::json()},
      {"duration_s", (r.end_time > 0 ? r.end_time : r.heartbeat) - r.start_time},
      {"heartbeat", format_utc(r.heartbeat)},
      {"parent", r.parent_uuid.empty() ? nlohmann::json() : nlohmann::json(r.parent_uuid)},
      {"host", r.host},
      {"pid", r.pid},
      {"config_hash", r.config_hash},
  };
  if (full) {
    j["command_line"] = r.command_line;
    j["config"] = r.config_text;
  }
  return j;
}

nlohmann::json to_json(const MetricSummary& m) {
  return {{"key", m.key},
          {"count", m.count},
          {"last_step", m.last_step},
          {"last", json_number(m.last_value)},
          {"min", json_number(m.min)},
          {"max", json_number(m.max)}};
}

nlohmann::json to_json(const ArtifactInfo& a) {
  return {{"name", a.name},         {"kind", a.kind},
          {"sha256", a.sha256},     {"size", a.size},
          {"path", a.path.string()}, {"created_time", format_utc(a.created_time)}};
}

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "-";
  if (s < 60) return fmt::format("{:.1f}s", s);
  auto total = static_cast<int64_t>(s);
  if (total < 3600) return fmt::format("{}m{:02d}s", total / 60, total % 60);
  return fmt::format("{}h{:02d}m", total / 3600, (total % 3600) / 60);
}

std::string format_value(double v) {
  if (!std::isfinite(v)) return format_double(v);
  return fmt::format("{:.6g}", v);
}

void write_output(const std::string& out_path, const std::function<void(std::ostream&)>& body) {
  if (out_path.empty() || out_path == "-") {
    body(std::cout);
    std::cout.flush();
    return;
  }
  std::filesystem::path dest(out_path);
  std::filesystem::path tmp = dest;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      fail(ErrorKind::kUsage, "cannot write '{}': {}", out_path, std::strerror(errno));
    body(out);
    out.flush();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      fail(ErrorKind::kRuntime, "writing '{}' failed (disk full?)", out_path);
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, dest, ec);
  if (ec) fail(ErrorKind::kRuntime, "cannot create '{}': {}", out_path, ec.message());
}

}  // namespace trainscope::cli
