#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "trainscope/core/nesting.h"
#include "trainscope/monitor/watch.h"

namespace trainscope::monitor {

namespace {
// A step is truncated to an integer; NaN, infinities and values int64
// cannot hold are rejected rather than cast (such a cast is undefined).
std::optional<int64_t> as_step(double d) {
  if (!std::isfinite(d) || d < -9.2e18 || d > 9.2e18) return std::nullopt;
  return static_cast<int64_t>(d);
}
}  // namespace

void MetricLineParser::line(const std::string& raw) {
  std::string l = raw;
  while (!l.empty() && (l.back() == '\r' || l.back() == '\n')) l.pop_back();
  if (l.rfind("trainscope:", 0) == 0) {
    parse_kv(l, l.substr(11));
  } else if (!l.empty() && l.front() == '{' && l.find("\"step\"") != std::string::npos) {
    parse_json(l);
  }
}

void MetricLineParser::bad(const std::string& l) {
  if (malformed_++ == 0) first_malformed_ = l;
}

void MetricLineParser::parse_kv(const std::string& l, const std::string& rest) {
  std::istringstream in(rest);
  std::string tok;
  Values values;
  std::optional<int64_t> step;
  while (in >> tok) {
    auto eq = tok.find('=');
    if (eq == std::string::npos || eq == 0) return bad(l);
    std::string k = tok.substr(0, eq), v = tok.substr(eq + 1);
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0') return bad(l);
    if (k == "step") {
      step = as_step(d);
      if (!step) return bad(l);
    } else {
      values.emplace_back(k, d);
    }
  }
  if (values.empty()) return bad(l);
  emit(step, values);
}

void MetricLineParser::parse_json(const std::string& l) {
  // A metric line is flat; nesting beyond the bound is not one (and is not
  // handed to a reader that may recurse).
  if (core::json_nesting(l) > core::kMaxNesting) return bad(l);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(l);
  } catch (const nlohmann::json::exception&) {
    return bad(l);
  }
  if (!j.is_object() || !j["step"].is_number()) return bad(l);
  std::optional<int64_t> step = as_step(j["step"].get<double>());
  if (!step) return bad(l);
  Values values;
  for (auto& [k, v] : j.items())
    if (k != "step" && v.is_number()) values.emplace_back(k, v.get<double>());
  if (values.empty()) return bad(l);
  emit(step, values);
}

void MetricLineParser::emit(std::optional<int64_t> step, const Values& values) {
  for (const auto& [k, v] : values) {
    int64_t s = step ? *step : next_step_[k]++;
    run_.log_metric(k, v, s);
  }
  ++parsed_;
}

}  // namespace trainscope::monitor
