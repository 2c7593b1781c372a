// Metric lines: the two forms, one rule for both (watch.h, docs/monitor.md).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "trainscope/core/error.h"
#include "trainscope/core/nesting.h"
#include "trainscope/core/util.h"
#include "trainscope/monitor/watch.h"
#include "trainscope/store/accept.h"

namespace trainscope::monitor {

// A member of a JSON object on one line.
struct JsonMember {
  std::string key;
  std::string_view token;  // empty: a string, list or object
  std::string text;        // a string's value, its escapes decoded
  bool is_string = false;
  std::string_view nested;  // a list's or object's text, brackets included
};

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The numbers both forms accept: JSON's grammar, and the spellings of NaN
// and the infinities that Python's json module and str() write. A number
// beyond a double's range is none.
std::optional<double> metric_number(std::string_view s) {
  if (s == "NaN" || s == "nan") return std::nan("");
  if (s == "Infinity" || s == "inf") return HUGE_VAL;
  if (s == "-Infinity" || s == "-inf") return -HUGE_VAL;
  size_t i = 0;
  auto digits = [&] {
    const size_t from = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    return i > from;
  };
  if (i < s.size() && s[i] == '-') ++i;
  if (i < s.size() && s[i] == '0')
    ++i;
  else if (!digits())
    return std::nullopt;
  if (i < s.size() && s[i] == '.' && (++i, !digits())) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digits()) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  const double d = std::strtod(std::string(s).c_str(), nullptr);
  if (std::isinf(d)) return std::nullopt;
  return d;
}

// A step as written, a number of metric_number's grammar: its value when
// that is an integer from 0 to 2^53, read exactly from its digits (a
// double rounds 9007199254740993 to 2^53, another step); 1e3 and 3.0 are
// steps 1000 and 3.
std::optional<int64_t> exact_step(std::string_view s) {
  size_t i = s.starts_with('-') ? 1 : 0;
  std::string digits;    // the mantissa's, its point dropped
  int64_t exponent = 0;  // of ten, that scales `digits`
  for (; i < s.size() && is_digit(s[i]); ++i) digits += s[i];
  if (i < s.size() && s[i] == '.')
    for (++i; i < s.size() && is_digit(s[i]); ++i, --exponent) digits += s[i];
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    const bool down = ++i < s.size() && s[i] == '-';
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    int64_t e = 0;  // held below 10^15: far beyond any line's length of digits
    for (; i < s.size() && is_digit(s[i]); ++i)
      e = std::min<int64_t>(e * 10 + (s[i] - '0'), 1'000'000'000'000'000);
    exponent += down ? -e : e;
  }
  if (i != s.size() || digits.empty()) return std::nullopt;  // NaN, inf
  const size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return 0;  // 0, -0, 0.0e5
  digits.erase(0, first);
  for (; digits.back() == '0'; ++exponent) digits.pop_back();
  // Below zero, a fraction, or more digits than 2^53's 16.
  if (s.starts_with('-') || exponent < 0 || static_cast<int64_t>(digits.size()) + exponent > 16)
    return std::nullopt;
  digits.append(static_cast<size_t>(exponent), '0');
  int64_t step = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (store::step_problem(step)) return std::nullopt;
  return step;
}

std::string shown(std::string_view s) { return core::escape_cut(s, 64); }

// A key by the rule of every entry point (store/accept.h), in this
// parser's words: "a key is empty", "key 'a\x00b' holds a control
// character" (`noun` names an empty one: "a key", "a param's key").
std::optional<std::string> key_refused(const std::string& key, std::string_view noun) {
  auto why = store::key_problem(key);
  if (!why) return std::nullopt;
  if (key.empty() || key.size() > store::kMaxKeyBytes) return fmt::format("{} {}", noun, *why);
  return fmt::format("key '{}' {}", shown(key), *why);
}

// One line holding one JSON object, read for its members: a key and either
// a bare token (a number, true, false, null) or a string or a list or
// object, skipped (nested no deeper than core::kMaxNesting).
class FlatObject {
 public:
  using Member = JsonMember;
  explicit FlatObject(std::string_view s) : s_(s) {}

  std::optional<std::string> read(std::vector<Member>& out) {
    if (!eat('{')) return "it is not a JSON object";
    if (eat('}')) return end();
    for (;;) {
      Member m;
      if (auto why = string(&m.key)) return why;
      if (!eat(':')) return "a ':' is missing after a key";
      if (auto why = value(m)) return why;
      out.push_back(std::move(m));
      if (eat(',')) continue;
      if (eat('}')) return end();
      return "a ',' or '}' is missing";
    }
  }

 private:
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }
  bool eat(char c) {
    space();
    if (i_ >= s_.size() || s_[i_] != c) return false;
    ++i_;
    return true;
  }
  std::optional<std::string> end() {
    space();
    return i_ == s_.size() ? std::nullopt : std::optional<std::string>("text follows the object");
  }
  std::optional<std::string> value(Member& m) {
    space();
    if (i_ < s_.size() && s_[i_] == '"') {
      m.is_string = true;
      return string(&m.text);
    }
    if (i_ < s_.size() && (s_[i_] == '{' || s_[i_] == '[')) {
      const size_t from = i_;
      auto why = skip_nested();
      m.nested = s_.substr(from, i_ - from);
      return why;
    }
    const size_t from = i_;
    while (i_ < s_.size() && std::string_view(",}] \t").find(s_[i_]) == std::string_view::npos)
      ++i_;
    m.token = s_.substr(from, i_ - from);
    if (m.token.empty()) return "a value is missing";
    return std::nullopt;
  }
  std::optional<std::string> skip_nested() {
    int depth = 0;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '"') {
        if (auto why = string(nullptr)) return why;
        continue;
      }
      ++i_;
      if ((c == '{' || c == '[') && ++depth > core::kMaxNesting)
        return fmt::format("a value nests deeper than {} levels", core::kMaxNesting);
      if ((c == '}' || c == ']') && --depth == 0) return std::nullopt;
    }
    return "a list or object does not end";
  }
  std::optional<std::string> string(std::string* out);
  std::optional<std::string> escape(std::string* out);

  std::string_view s_;
  size_t i_ = 0;
};

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

// A quoted string, its escapes decoded into `out` (when given).
std::optional<std::string> FlatObject::string(std::string* out) {
  if (!eat('"')) return "a key is not a quoted string";
  while (i_ < s_.size()) {
    const char c = s_[i_++];
    if (c == '"') return std::nullopt;
    if (static_cast<unsigned char>(c) < 0x20) return "a string holds a control character";
    if (c != '\\') {
      if (out) out->push_back(c);
    } else if (auto why = escape(out)) {
      return why;
    }
  }
  return "a string does not end";
}

std::optional<std::string> FlatObject::escape(std::string* out) {
  auto hex4 = [&]() -> std::optional<uint32_t> {
    if (s_.size() - i_ < 4) return std::nullopt;
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = s_[i_++];
      const int d = is_digit(h)              ? h - '0'
                    : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                    : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                             : -1;
      if (d < 0) return std::nullopt;
      v = v * 16 + static_cast<uint32_t>(d);
    }
    return v;
  };
  if (i_ >= s_.size()) return "a string does not end";
  const char e = s_[i_++];
  static constexpr std::string_view kFrom = "\"\\/bfnrt", kTo = "\"\\/\b\f\n\r\t";
  if (const size_t k = kFrom.find(e); k != std::string_view::npos) {
    if (out) out->push_back(kTo[k]);
    return std::nullopt;
  }
  if (e != 'u') return "a string holds an unknown escape";
  auto cp = hex4();
  if (!cp) return "a \\u escape is not four hex digits";
  if (*cp >= 0xd800 && *cp < 0xdc00) {  // a surrogate pair
    const auto low = (s_.substr(i_, 2) == "\\u") ? (i_ += 2, hex4()) : std::nullopt;
    if (!low || *low < 0xdc00 || *low >= 0xe000) return "a \\u escape is half a surrogate pair";
    *cp = 0x10000 + ((*cp - 0xd800) << 10) + (*low - 0xdc00);
  } else if (*cp >= 0xdc00 && *cp < 0xe000) {
    return "a \\u escape is half a surrogate pair";
  }
  if (out) append_utf8(*out, *cp);
  return std::nullopt;
}

}  // namespace

void MetricLineParser::line(const std::string& l) {
  values_.clear();
  step_.reset();
  line_params_.clear();
  std::optional<std::string> why;
  bool params = false;
  if (l.rfind("trainscope:", 0) == 0) {
    std::istringstream first(l.substr(11));
    std::string word;
    params = first >> word && word == "param";
    why = params ? parse_param_kv(l.substr(l.find("param", 11) + 5)) : parse_kv(l.substr(11));
  } else if (!l.empty() && l.front() == '{' &&
             (l.find("\"step\"") != std::string::npos ||
              l.find("\"params\"") != std::string::npos)) {
    std::vector<FlatObject::Member> members;
    if (auto broken = FlatObject(l).read(members)) {
      why = broken;
    } else if (members.size() == 1 && members[0].key == "params") {
      params = true;
      why = members[0].nested.starts_with('{')
                ? param_object(members[0].nested, "", 1)
                : "the value of params is not an object of key: value";
    } else if (l.find("\"step\"") == std::string::npos) {
      return;  // ordinary output that mentions "params"
    } else {
      why = parse_json(members);
    }
  } else {
    return;  // ordinary output
  }
  if (!why && !params && values_.empty()) why = "it holds no metric besides its step";
  if (!why && params && line_params_.empty()) why = "it holds no param";
  if (!why && !params) why = order_problem();
  if (!why && params) why = set_line_params();
  if (why) return bad(l, *why);
  if (!params) emit();
}

void MetricLineParser::bad(const std::string& l, const std::string& why) {
  if (malformed_++ > 0) return;
  first_malformed_ = l;
  first_reason_ = why;
}

// A key and its value's token, by the one rule of both forms.
std::optional<std::string> MetricLineParser::add(std::string key, std::string_view token,
                                                 bool json) {
  if (auto why = key_refused(key, "a key")) return why;
  if (auto why = store::own_metric_problem(key)) return why;
  const bool twice = key == "step" ? step_.has_value()
                                   : std::any_of(values_.begin(), values_.end(),
                                                 [&](const auto& kv) { return kv.first == key; });
  if (twice) return fmt::format("key '{}' appears twice", shown(key));
  const std::optional<double> number = token.empty() ? std::nullopt : metric_number(token);
  if (key == "step") {
    const std::optional<int64_t> step = number ? exact_step(token) : std::nullopt;
    if (!step) return store::step_refusal(token.empty() ? "(not a number)" : shown(token));
    step_ = *step;
    return std::nullopt;
  }
  if (number) {
    values_.emplace_back(std::move(key), *number);
    return std::nullopt;
  }
  // JSON values that are not numbers are not metrics; in the text form
  // every value must be one.
  if (json && (token.empty() || token == "true" || token == "false" || token == "null"))
    return std::nullopt;
  return fmt::format("'{}' of key '{}' is not a number", shown(token), shown(key));
}

std::optional<std::string> MetricLineParser::parse_kv(const std::string& rest) {
  std::istringstream in(rest);
  std::string tok;
  while (in >> tok) {
    const auto eq = tok.find('=');
    if (eq == std::string::npos) return fmt::format("'{}' is not key=value", shown(tok));
    if (auto why = add(tok.substr(0, eq), std::string_view(tok).substr(eq + 1), false)) return why;
  }
  return std::nullopt;
}

std::optional<std::string> MetricLineParser::parse_json(std::vector<JsonMember>& members) {
  for (auto& m : members)
    if (auto why = add(std::move(m.key), m.token, true)) return why;
  if (!step_) return "it has no number as its step";
  return std::nullopt;
}

// --- params -----------------------------------------------------------------------

std::optional<std::string> MetricLineParser::add_param(std::string key, std::string value) {
  if (auto why = key_refused(key, key.empty() ? "a param's key" : "a key")) return why;
  if (auto why = store::param_value_problem(key, value)) return why;
  if (!line_params_.emplace(key, std::move(value)).second)
    return fmt::format("key '{}' appears twice", shown(key));
  return std::nullopt;
}

std::optional<std::string> MetricLineParser::parse_param_kv(const std::string& rest) {
  std::istringstream in(rest);
  std::string tok;
  while (in >> tok) {
    const auto eq = tok.find('=');
    if (eq == std::string::npos) return fmt::format("'{}' is not key=value", shown(tok));
    if (auto why = add_param(tok.substr(0, eq), tok.substr(eq + 1))) return why;
  }
  return std::nullopt;
}

// {"lr": 0.1, "optimizer": {"name": "adam"}} -> lr=0.1, optimizer.name=adam:
// strings decoded, numbers, true, false and null as written, objects
// flattened with '.' as a config's params are; a list is refused.
namespace {

// RFC 8259's number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
bool json_number(std::string_view t) {
  size_t i = 0;
  auto digits = [&] {
    const size_t from = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    return i > from;
  };
  if (i < t.size() && t[i] == '-') ++i;
  if (i < t.size() && t[i] == '0')
    ++i;
  else if (!digits())
    return false;
  if (i < t.size() && t[i] == '.' && (++i, !digits())) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == t.size();
}

}  // namespace

std::optional<std::string> MetricLineParser::param_object(std::string_view text,
                                                          const std::string& prefix, int depth) {
  std::vector<FlatObject::Member> members;
  if (auto why = FlatObject(text).read(members)) return why;
  for (auto& m : members) {
    std::string key = prefix + m.key;
    if (m.nested.starts_with('{')) {
      if (depth >= core::kMaxNesting)
        return fmt::format("params nest deeper than {} levels", core::kMaxNesting);
      if (auto why = param_object(m.nested, key + ".", depth + 1)) return why;
    } else if (!m.nested.empty()) {
      return fmt::format("param '{}' is a list; give it as a string", shown(key));
    } else if (m.is_string) {
      if (auto why = add_param(std::move(key), std::move(m.text))) return why;
    } else if (metric_number(m.token) || json_number(m.token) || m.token == "true" ||
               m.token == "false" || m.token == "null") {
      // A number no double holds (10**400 as json.dumps writes it) is
      // still a JSON number, and a param is text: kept as written, as the
      // text form keeps it (thirty-seventh hunt, B-D4).
      if (auto why = add_param(std::move(key), std::string(m.token))) return why;
    } else {
      return fmt::format("'{}' of param '{}' is not a JSON value", shown(m.token), shown(key));
    }
  }
  return std::nullopt;
}

// A param is set once (as the store wants): the same value again (the
// same number written otherwise included) is nothing new, another value is
// refused and the line counted malformed.
std::optional<std::string> MetricLineParser::set_line_params() {
  std::map<std::string, std::string> fresh;
  for (auto& [k, v] : line_params_) {
    auto it = params_.find(k);
    if (it != params_.end() && !store::same_param_value(it->second, v))
      return fmt::format("param '{}' is already '{}'; a param is set once", shown(k),
                         shown(it->second));
    if (it == params_.end()) fresh.emplace(k, v);
  }
  try {
    if (!fresh.empty()) run_.set_params(fresh);
  } catch (const core::Error& e) {
    return fmt::format("its params could not be recorded: {}", e.what());
  }
  params_.insert(fresh.begin(), fresh.end());
  ++param_lines_;
  return std::nullopt;
}

// The step a key of the line being read is recorded at: the line's, or in
// a line without one the step after the key's last (0, 1, 2, ... while no
// line gives a step), as Python's run.log without a step takes the next.
int64_t MetricLineParser::step_of(const std::string& key) const {
  if (step_) return *step_;
  const auto last = order_.last(key);
  return last ? *last + 1 : 0;
}

// A key whose step goes back makes the whole line malformed, as Python
// refuses the whole call and an import the whole folder: a line is
// recorded entirely or not at all.
std::optional<std::string> MetricLineParser::order_problem() const {
  for (const auto& [k, v] : values_) {
    const int64_t step = step_of(k);
    if (auto why = store::step_problem(step)) return why;  // the step after 2^53
    if (auto why = order_.problem(k, step)) return why;
  }
  return std::nullopt;
}

void MetricLineParser::emit() {
  for (const auto& [k, v] : values_) {
    const int64_t step = step_of(k);
    run_.log_metric(k, v, step);
    order_.take(k, step);
  }
  ++parsed_;
}

// --- the splitter ---------------------------------------------------------------

void MetricLineSplitter::feed(std::string_view bytes) {
  size_t at = 0;
  while (at < bytes.size()) {
    if (after_cr_ && bytes[at] == '\n') ++at;  // "\r\n" is one end of line
    after_cr_ = false;
    const size_t end = bytes.find_first_of("\r\n", at);
    const std::string_view part =
        bytes.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    if (!overlong_ && line_.size() + part.size() > kMaxMetricLine) {
      overlong_ = true;
      line_.clear();
      line_.shrink_to_fit();
    }
    if (!overlong_) line_.append(part);
    if (end == std::string_view::npos) return;
    after_cr_ = bytes[end] == '\r';
    end_line();
    at = end + 1;
  }
}

void MetricLineSplitter::finish() {
  if (overlong_ || !line_.empty()) end_line();
}

void MetricLineSplitter::end_line() {
  std::unique_lock<std::mutex> lock;
  if (mu_) lock = std::unique_lock(*mu_);
  if (overlong_)
    parser_.overlong_line();
  else
    parser_.line(line_);
  line_.clear();
  overlong_ = false;
}

}  // namespace trainscope::monitor
