// Finding runs: the filter language's lexer, parser and evaluator, sorting,
// columns and paging (include/trainscope/store/query.h).
#include "trainscope/store/query.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>

#include "trainscope/core/error.h"
#include "trainscope/core/nesting.h"
#include "trainscope/core/util.h"

namespace trainscope::store {
using core::ErrorKind;
using core::fail;

double run_seconds(const RunInfo& r, double now) {
  // A run still recorded as running whose writer is gone (stale) ended at
  // its last heartbeat, or now for a heartbeat from the future, as the
  // reaper will record it.
  const bool live = r.status == RunStatus::kRunning && !liveness(r, now).stale();
  const double end = r.end_time > 0 ? r.end_time : (live ? now : std::min(r.heartbeat, now));
  const double seconds = end - r.start_time;
  // Times that give no duration (an end before the start: a damaged store,
  // a clock set back; a time past any calendar) give none in every reader.
  if (!is_a_time(r.start_time) || !is_a_time(end) || !(seconds >= 0) || seconds > 3.2e11)
    return std::nan("");
  return seconds;
}

bool is_a_time(double unix_seconds) {
  return std::isfinite(unix_seconds) && unix_seconds >= -62135596800.0 &&
         unix_seconds < 253402300800.0;
}

bool is_point_time(double unix_seconds) { return unix_seconds >= 0 && is_a_time(unix_seconds); }

double since_start(const RunInfo& run, double unix_seconds) {
  if (!is_a_time(run.start_time) || !is_a_time(unix_seconds)) return std::nan("");
  return unix_seconds - run.start_time;
}

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::optional<double> parse_number(std::string_view s) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return std::nullopt;
  std::string text(s);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return v;
}

namespace {

// --- fields ------------------------------------------------------------------

enum class Section { kAttribute, kMetric, kParam, kTag };

struct FieldName {
  Section section = Section::kAttribute;
  std::string key;
};

FieldName split_field(std::string_view field) {
  const auto dot = field.find('.');
  if (dot != std::string_view::npos) {
    const std::string head = lower(field.substr(0, dot));
    const std::string_view rest = field.substr(dot + 1);
    if (head == "metrics" || head == "metric") return {Section::kMetric, std::string(rest)};
    if (head == "params" || head == "param") return {Section::kParam, std::string(rest)};
    if (head == "tags" || head == "tag") return {Section::kTag, std::string(rest)};
    if (head == "attributes" || head == "attribute" || head == "run")
      return {Section::kAttribute, lower(rest)};
  }
  return {Section::kAttribute, lower(field)};
}

const std::vector<std::string>& attribute_names() {
  static const std::vector<std::string> names = {"uuid",       "name",     "experiment", "status",
                                                 "start_time", "end_time", "duration",   "host",
                                                 "pid",        "parent"};
  return names;
}

// The status readers show: judged once by liveness(), the one function
// that tells a stale run, so that `status = 'stale'` finds what a listing
// shows as stale (and `status = 'running'` no run whose writer is gone).
std::string shown_status(const RunRow& row) {
  if (!row.status.empty()) return row.status;
  return liveness(row.info, core::unix_now()).status;
}

FieldValue attribute(const RunRow& row, const std::string& key) {
  const RunInfo& r = row.info;
  if (key == "uuid" || key == "id" || key == "run_id") return r.uuid;
  if (key == "name" || key == "run_name") return r.name;
  if (key == "experiment") return r.experiment;
  if (key == "status") return shown_status(row);
  if (key == "start_time") return is_a_time(r.start_time) ? FieldValue(r.start_time) : FieldValue();
  if (key == "end_time")
    return r.end_time > 0 && is_a_time(r.end_time) ? FieldValue(r.end_time) : FieldValue();
  if (key == "duration") {
    const double s = run_seconds(r, core::unix_now());
    return std::isnan(s) ? FieldValue() : FieldValue(s);
  }
  if (key == "host") return r.host;
  if (key == "pid") return static_cast<double>(r.pid);
  if (key == "parent") return r.parent_uuid.empty() ? FieldValue() : FieldValue(r.parent_uuid);
  return {};
}

bool known_field(std::string_view field) {
  const FieldName f = split_field(field);
  if (f.section != Section::kAttribute) return !f.key.empty();
  return is_run_attribute(f.key);
}

FieldValue text_or_absent(const std::map<std::string, std::string>& kv, const std::string& key) {
  auto it = kv.find(key);
  return it == kv.end() ? FieldValue() : FieldValue(it->second);
}

std::string as_text(const FieldValue& v) {
  if (const auto* d = std::get_if<double>(&v)) return core::format_double(*d);
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  return {};
}

std::optional<double> as_number(const FieldValue& v) {
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* s = std::get_if<std::string>(&v)) return parse_number(*s);
  return std::nullopt;
}

// --- lexer --------------------------------------------------------------------

enum class Tok { kWord, kNumber, kString, kOp, kOpen, kClose, kComma, kEnd };

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;
  size_t pos = 0;  // 0-based offset in the filter text
};

[[noreturn]] void syntax_error(size_t pos, const std::string& what) {
  fail(ErrorKind::kUsage, "filter column {}: {} (see `trainscope runs list --help`)", pos + 1,
       what);
}

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' ||
         c == '-' || c == ':' || static_cast<unsigned char>(c) >= 0x80;
}

class Lexer {
 public:
  explicit Lexer(std::string_view text) : s_(text) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    for (;;) {
      while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
      if (i_ >= s_.size()) break;
      out.push_back(next());
    }
    out.push_back({Tok::kEnd, "", s_.size()});
    return out;
  }

 private:
  Token next() {
    const size_t start = i_;
    const char c = s_[i_];
    if (c == '(') return ++i_, Token{Tok::kOpen, "(", start};
    if (c == ')') return ++i_, Token{Tok::kClose, ")", start};
    if (c == ',') return ++i_, Token{Tok::kComma, ",", start};
    if (c == '\'' || c == '"') return quoted(c);
    if (std::string_view("=!<>").find(c) != std::string_view::npos) return op();
    const bool sign = (c == '-' || c == '+') && i_ + 1 < s_.size() &&
                      (std::isdigit(static_cast<unsigned char>(s_[i_ + 1])) || s_[i_ + 1] == '.' ||
                       s_[i_ + 1] == 'i' || s_[i_ + 1] == 'n');
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.' || sign) return number();
    if (word_char(c) || c == '`') return word();
    syntax_error(start,
                 fmt::format("unexpected character '{}'", core::escape_for_display({&c, 1})));
  }

  Token quoted(char q) {
    const size_t start = i_++;
    std::string text;
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\\' && i_ + 1 < s_.size()) ++i_;
      text += s_[i_++];
    }
    if (i_ >= s_.size()) syntax_error(start, fmt::format("string opened with {} is not closed", q));
    ++i_;
    return {Tok::kString, text, start};
  }

  Token op() {
    const size_t start = i_;
    std::string text(1, s_[i_++]);
    if (i_ < s_.size() && (s_[i_] == '=' || (text == "<" && s_[i_] == '>'))) text += s_[i_++];
    if (text == "!") syntax_error(start, "'!' must be followed by '=' (use 'not' to negate)");
    return {Tok::kOp, text, start};
  }

  Token number() {
    const size_t start = i_;
    ++i_;
    while (i_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' ||
            ((s_[i_] == '-' || s_[i_] == '+') && (s_[i_ - 1] == 'e' || s_[i_ - 1] == 'E'))))
      ++i_;
    std::string text(s_.substr(start, i_ - start));
    if (!parse_number(text)) syntax_error(start, fmt::format("'{}' is not a number", text));
    return {Tok::kNumber, text, start};
  }

  // A field or keyword; backquoted parts may hold any character but '`'.
  Token word() {
    const size_t start = i_;
    std::string text;
    while (i_ < s_.size() && (word_char(s_[i_]) || s_[i_] == '`')) {
      if (s_[i_] != '`') {
        text += s_[i_++];
        continue;
      }
      const size_t open = i_++;
      while (i_ < s_.size() && s_[i_] != '`') text += s_[i_++];
      if (i_ >= s_.size()) syntax_error(open, "backquote is not closed");
      ++i_;
    }
    return {Tok::kWord, text, start};
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

bool is_run_attribute(std::string_view name) {
  static const std::set<std::string> aliases = {"id", "run_id", "run_name"};
  const std::string key = lower(name);
  const auto& names = attribute_names();
  return std::find(names.begin(), names.end(), key) != names.end() || aliases.count(key);
}

// --- parser and evaluator ------------------------------------------------------

struct RunFilterExpr::Node {
  enum class Kind { kAnd, kOr, kNot, kCompare, kLike, kIn, kExists } kind = Kind::kCompare;
  // kAnd, kOr: every operand (a chain of a thousand `or`s is one node, not
  // a thousand levels); kNot: one.
  std::vector<std::unique_ptr<Node>> operands;
  std::string field;
  std::string op;                  // kCompare: = != < <= > >=; kLike: like or ilike
  std::vector<FieldValue> values;  // kCompare, kLike: one; kIn: many

  bool eval(const RunRow& row) const;
};

namespace {

using Node = RunFilterExpr::Node;

// -1, 0, 1, or nullopt when the two cannot be ordered (NaN).
std::optional<int> compare_values(const FieldValue& a, const FieldValue& b) {
  const auto x = as_number(a), y = as_number(b);
  if (x && y) {
    if (std::isnan(*x) || std::isnan(*y))
      return std::isnan(*x) && std::isnan(*y) ? std::optional<int>(0) : std::nullopt;
    return *x < *y ? -1 : (*x > *y ? 1 : 0);
  }
  const int c = as_text(a).compare(as_text(b));
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

bool compare(const FieldValue& lhs, const std::string& op, const FieldValue& rhs) {
  const auto c = compare_values(lhs, rhs);
  if (op == "=" || op == "==") return c && *c == 0;
  if (op == "!=" || op == "<>") return !c || *c != 0;
  if (!c) return false;
  if (op == "<") return *c < 0;
  if (op == "<=") return *c <= 0;
  if (op == ">") return *c > 0;
  return *c >= 0;  // ">="
}

// SQL LIKE: % any run of characters, _ one character.
bool like(std::string_view s, std::string_view p) {
  size_t si = 0, pi = 0, star = std::string_view::npos, mark = 0;
  while (si < s.size()) {
    if (pi < p.size() && (p[pi] == '_' || p[pi] == s[si])) {
      ++si, ++pi;
    } else if (pi < p.size() && p[pi] == '%') {
      star = pi++, mark = si;
    } else if (star != std::string_view::npos) {
      pi = star + 1, si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '%') ++pi;
  return pi == p.size();
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, std::vector<std::string>& fields)
      : t_(std::move(tokens)), fields_(fields) {}

  std::unique_ptr<Node> parse() {
    auto root = expr();
    if (peek().kind != Tok::kEnd)
      syntax_error(peek().pos, fmt::format("expected 'and', 'or' or the end, got '{}'",
                                           core::escape_for_display(peek().text)));
    return root;
  }

 private:
  const Token& peek() const { return t_[i_]; }
  const Token& take() { return t_[i_++]; }
  bool keyword(const char* k) const { return peek().kind == Tok::kWord && lower(peek().text) == k; }

  // One node for a chain of `kind` operations (and/or) or for `not`.
  static std::unique_ptr<Node> node(Node::Kind kind, std::unique_ptr<Node> first) {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->operands.push_back(std::move(first));
    return n;
  }

  std::unique_ptr<Node> expr() {
    auto n = term();
    if (!keyword("or")) return n;
    n = node(Node::Kind::kOr, std::move(n));
    while (keyword("or")) take(), n->operands.push_back(term());
    return n;
  }

  std::unique_ptr<Node> term() {
    auto n = factor();
    if (!keyword("and")) return n;
    n = node(Node::Kind::kAnd, std::move(n));
    while (keyword("and")) take(), n->operands.push_back(factor());
    return n;
  }

  // Parentheses and `not` nest; each level is a level of recursion here,
  // in eval() and in the tree's destruction, so the depth is bounded.
  std::unique_ptr<Node> factor() {
    const bool nests = keyword("not") || peek().kind == Tok::kOpen;
    if (nests && ++depth_ > core::kMaxNesting)
      syntax_error(peek().pos, fmt::format("parentheses and 'not' nest deeper than {} levels",
                                           core::kMaxNesting));
    std::unique_ptr<Node> n;
    if (keyword("not")) {
      take();
      n = node(Node::Kind::kNot, factor());
    } else if (peek().kind == Tok::kOpen) {
      take();
      n = expr();
      if (peek().kind != Tok::kClose) syntax_error(peek().pos, "expected ')'");
      take();
    } else {
      return condition();
    }
    --depth_;
    return n;
  }

  std::unique_ptr<Node> condition() {
    const Token& f = peek();
    if (f.kind != Tok::kWord)
      syntax_error(f.pos, f.kind == Tok::kEnd ? "expected a field such as metrics.loss"
                                              : fmt::format("expected a field, got '{}'",
                                                            core::escape_for_display(f.text)));
    if (!known_field(f.text))
      syntax_error(f.pos, fmt::format("unknown field '{}': use metrics.KEY, params.KEY, tags.KEY "
                                      "or one of uuid, name, experiment, status, start_time, "
                                      "end_time, duration, host, pid, parent",
                                      core::escape_for_display(f.text)));
    auto n = std::make_unique<Node>();
    n->field = take().text;
    fields_.push_back(n->field);
    if (keyword("exists")) {
      take();
      n->kind = Node::Kind::kExists;
      return n;
    }
    if (keyword("like") || keyword("ilike")) {
      n->kind = Node::Kind::kLike;
      n->op = lower(take().text);
      if (peek().kind != Tok::kString)
        syntax_error(peek().pos, fmt::format("expected a quoted pattern after '{}'", n->op));
      n->values.push_back(take().text);
      return n;
    }
    if (keyword("in")) {
      take();
      n->kind = Node::Kind::kIn;
      return in_list(std::move(n));
    }
    if (peek().kind != Tok::kOp)
      syntax_error(peek().pos, fmt::format("expected an operator (= != < <= > >= like in "
                                           "exists) after '{}'",
                                           core::escape_for_display(n->field)));
    n->op = take().text;
    n->values.push_back(value(n->op));
    return n;
  }

  std::unique_ptr<Node> in_list(std::unique_ptr<Node> n) {
    if (peek().kind != Tok::kOpen) syntax_error(peek().pos, "expected '(' after 'in'");
    take();
    for (;;) {
      n->values.push_back(value("in"));
      if (peek().kind == Tok::kClose) break;
      if (peek().kind != Tok::kComma) syntax_error(peek().pos, "expected ',' or ')' in the list");
      take();
    }
    take();
    return n;
  }

  FieldValue value(const std::string& after) {
    const Token& v = peek();
    if (v.kind == Tok::kNumber) return *parse_number(take().text);
    if (v.kind == Tok::kString) return take().text;
    if (v.kind == Tok::kWord && parse_number(v.text)) return *parse_number(take().text);
    if (v.kind == Tok::kWord)
      syntax_error(v.pos,
                   fmt::format("'{}' is not a value: quote text, as in '{}'",
                               core::escape_for_display(v.text), core::escape_for_display(v.text)));
    syntax_error(v.pos, fmt::format("expected a number or a quoted string after '{}'", after));
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;  // parentheses and `not`s open
  std::vector<std::string>& fields_;
};

}  // namespace

bool RunFilterExpr::Node::eval(const RunRow& row) const {
  switch (kind) {
    case Kind::kAnd:
      return std::all_of(operands.begin(), operands.end(),
                         [&](const auto& o) { return o->eval(row); });
    case Kind::kOr:
      return std::any_of(operands.begin(), operands.end(),
                         [&](const auto& o) { return o->eval(row); });
    case Kind::kNot:
      return !operands.front()->eval(row);
    default:
      break;
  }
  const FieldValue v = field_value(row, field);
  if (std::holds_alternative<std::monostate>(v)) return false;
  if (kind == Kind::kExists) return true;
  if (kind == Kind::kLike) {
    const std::string& p = std::get<std::string>(values[0]);
    return op == "ilike" ? like(lower(as_text(v)), lower(p)) : like(as_text(v), p);
  }
  if (kind == Kind::kIn)
    return std::any_of(values.begin(), values.end(),
                       [&](const FieldValue& x) { return compare(v, "=", x); });
  return compare(v, op, values[0]);
}

RunFilterExpr::RunFilterExpr() = default;
RunFilterExpr::RunFilterExpr(RunFilterExpr&&) noexcept = default;
RunFilterExpr& RunFilterExpr::operator=(RunFilterExpr&&) noexcept = default;
RunFilterExpr::~RunFilterExpr() = default;

RunFilterExpr RunFilterExpr::parse(std::string_view text) {
  RunFilterExpr e;
  auto tokens = Lexer(text).run();
  if (tokens.size() == 1) return e;  // only whitespace: no filter
  e.root_ = Parser(std::move(tokens), e.fields_).parse();
  return e;
}

bool RunFilterExpr::matches(const RunRow& row) const { return !root_ || root_->eval(row); }

FieldValue field_value(const RunRow& row, std::string_view field) {
  const FieldName f = split_field(field);
  switch (f.section) {
    case Section::kMetric: {
      auto it = row.metrics.find(f.key);
      return it == row.metrics.end() ? FieldValue() : FieldValue(it->second.last_value);
    }
    case Section::kParam:
      return text_or_absent(row.params, f.key);
    case Section::kTag:
      return text_or_absent(row.tags, f.key);
    case Section::kAttribute:
      return attribute(row, f.key);
  }
  return {};
}

std::vector<SortKey> parse_sort(std::string_view text, const std::string& named) {
  std::vector<SortKey> keys;
  for (std::string part : core::split_given_list(text, named)) {
    SortKey k;
    if (part[0] == '-' || part[0] == '+') k.descending = part[0] == '-', part.erase(0, 1);
    const auto space = part.rfind(' ');
    if (space != std::string::npos) {
      const std::string dir = lower(part.substr(space + 1));
      if (dir != "asc" && dir != "desc")
        fail(ErrorKind::kUsage, "{} '{}': direction must be asc or desc, not '{}'", named,
             core::escape_for_display(text), core::escape_for_display(dir));
      k.descending = dir == "desc";
      part.erase(part.find_last_not_of(' ', space) + 1);
    }
    if (!known_field(part))
      fail(ErrorKind::kUsage,
           "{}: unknown field '{}' (use metrics.KEY, params.KEY, tags.KEY "
           "or a run attribute such as start_time)",
           named, core::escape_for_display(part));
    k.field = part;
    keys.push_back(k);
  }
  return keys;
}

std::vector<std::string> default_run_columns() {
  return {"uuid", "name", "experiment", "status", "start_time", "duration"};
}

namespace {

struct Needs {
  bool params = false, tags = false, metrics = false;
  void add(std::string_view field) {
    switch (split_field(field).section) {
      case Section::kParam:
        params = true;
        break;
      case Section::kTag:
        tags = true;
        break;
      case Section::kMetric:
        metrics = true;
        break;
      case Section::kAttribute:
        break;
    }
  }
};

void load(Store& store, RunRow& row, const Needs& need, Needs& have) {
  if (need.params && !have.params) row.params = store.params(row.info.uuid);
  if (need.tags && !have.tags) row.tags = store.tags(row.info.uuid);
  if (need.metrics && !have.metrics)
    for (auto& m : store.metric_summaries(row.info.uuid)) row.metrics[m.key] = std::move(m);
}

// Missing values sort last whichever the direction.
bool less(const RunRow& a, const RunRow& b, const std::vector<SortKey>& keys) {
  for (const auto& k : keys) {
    const FieldValue x = field_value(a, k.field), y = field_value(b, k.field);
    const bool mx = std::holds_alternative<std::monostate>(x);
    const bool my = std::holds_alternative<std::monostate>(y);
    if (mx || my) {
      if (mx != my) return my;
      continue;
    }
    const auto c = compare_values(x, y);
    if (!c) {  // NaN sorts after numbers
      const bool nx = std::isnan(as_number(x).value_or(0)),
                 ny = std::isnan(as_number(y).value_or(0));
      if (nx != ny) return ny;
      continue;
    }
    if (*c != 0) return k.descending ? *c > 0 : *c < 0;
  }
  return false;
}

// "params.*" -> every params key of the rows, sorted; other columns as given.
std::vector<std::string> expand_columns(const std::vector<std::string>& cols,
                                        const std::vector<RunRow>& rows) {
  // Each column once, in the order first named: params.*,params.* or
  // name,name (twenty-second hunt, B-D1: 900 globs in an 8 KB request made
  // a 50 MB answer) adds nothing a second time.
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto put = [&](std::string column) {
    if (seen.insert(column).second) out.push_back(std::move(column));
  };
  for (const auto& c : cols) {
    if (c.find('*') == std::string::npos) {
      put(c);
      continue;
    }
    const FieldName f = split_field(c);
    std::string pattern = f.key;
    std::replace(pattern.begin(), pattern.end(), '*', '%');
    std::set<std::string> keys;
    for (const auto& r : rows) {
      auto add = [&](const auto& m) {
        for (const auto& kv : m)
          if (like(kv.first, pattern)) keys.insert(kv.first);
      };
      if (f.section == Section::kParam) add(r.params);
      if (f.section == Section::kTag) add(r.tags);
      if (f.section == Section::kMetric) add(r.metrics);
    }
    const std::string prefix = c.substr(0, c.find('.') + 1);
    for (const auto& k : keys) put(prefix + k);
  }
  return out;
}

// Paging range [first, last) of n items.
std::pair<size_t, size_t> page_of(size_t n, const RunQuery& q) {
  const auto first = std::min<size_t>(n, static_cast<size_t>(std::max<int64_t>(0, q.offset)));
  size_t last = n;
  if (q.limit > 0) last = std::min(last, first + static_cast<size_t>(q.limit));
  return {first, last};
}

// RunQuery::status as the status to select in the store: a stale run is
// recorded running. Refuses a status no run is shown with.
RunStatus recorded_status(std::string_view shown) {
  if (shown == "stale") return RunStatus::kRunning;
  for (int i = 0; i <= static_cast<int>(RunStatus::kStopped); ++i)
    if (shown == to_string(static_cast<RunStatus>(i))) return static_cast<RunStatus>(i);
  fail(ErrorKind::kUsage, "unknown run status '{}'; valid: {}", core::escape_for_display(shown),
       kShownStatuses);
}

// A run as a row, with the status readers show it with (Store::liveness).
RunRow row_of(const Store& store, RunInfo info, double now) {
  RunRow row{std::move(info), {}, {}, {}, {}};
  row.status = store.liveness(row.info, now).status;
  return row;
}

// Which run a row is nested under: its furthest ancestor still stored
// (itself when it has none). A run in a parent cycle, which no writer
// makes but a damaged store may hold, stands alone, so that each run is
// shown once.
class Ancestry {
 public:
  Ancestry(Store& store, const std::vector<RunRow>& rows) : store_(store) {
    for (const auto& r : rows) parent_[r.info.uuid] = r.info.parent_uuid;
  }

  // Each run's top is remembered for the runs below it: a chain of N runs
  // is walked once, not N times.
  std::string top(const RunInfo& run) {
    std::vector<std::string> path{run.uuid};
    std::set<std::string> seen{run.uuid};
    std::string found;
    bool cycle = false;
    for (;;) {
      const std::string at = path.back();
      if (auto known = top_.find(at); known != top_.end()) {
        found = known->second;
        cycle = found.empty();  // it leads into a cycle
        break;
      }
      const std::optional<std::string> p = parent_of(parent_[at]);
      if (!p || *p == at) {  // no parent, one no longer stored, or itself
        found = at;
        break;
      }
      if (!seen.insert(*p).second) {
        cycle = true;
        break;
      }
      path.push_back(*p);
    }
    for (const auto& u : path) top_[u] = cycle ? std::string() : found;
    return cycle ? run.uuid : found;
  }

 private:
  // UUID itself when it is a stored run, nullopt when it is none.
  std::optional<std::string> parent_of(const std::string& uuid) {
    if (uuid.empty()) return std::nullopt;
    if (!parent_.count(uuid)) {
      const auto r = store_.find_run(uuid);
      if (!r) return std::nullopt;
      parent_[uuid] = r->parent_uuid;
    }
    return uuid;
  }

  Store& store_;
  std::map<std::string, std::string> parent_;  // run UUID: its parent's UUID
  // Run UUID: the run it is nested under; empty: its ancestry leads into a
  // cycle, so it stands alone.
  std::map<std::string, std::string> top_;
};

// RunQuery::nest over the matching rows, sorted: the groups in the order of
// their first member, then the page's rows with their columns.
RunQueryResult nested_page(Store& store, std::vector<RunRow> rows, const RunQuery& query,
                           const Needs& late, Needs& early, double now) {
  std::vector<std::pair<std::string, std::vector<size_t>>> order;  // top uuid, members
  std::map<std::string, size_t, std::less<>> at;
  Ancestry ancestry(store, rows);
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string top = ancestry.top(rows[i].info);
    auto [it, fresh] = at.emplace(top, order.size());
    if (fresh) order.push_back({top, {}});
    order[it->second].second.push_back(i);
  }
  RunQueryResult result;
  result.total = static_cast<int64_t>(order.size());
  const auto [first, last] = page_of(order.size(), query);
  Needs none;
  auto add = [&](RunRow row, Needs& have) {
    load(store, row, late, have);
    result.rows.push_back(std::move(row));
    return result.rows.size() - 1;
  };
  for (size_t g = first; g < last; ++g) {
    const std::string& top = order[g].first;  // not a binding: lambdas capture it
    const std::vector<size_t>& members = order[g].second;
    // The top matched if it is a member (it may sort after its runs).
    const auto self = std::find_if(members.begin(), members.end(),
                                   [&](size_t m) { return rows[m].info.uuid == top; });
    const bool matched = self != members.end();
    auto parent = matched ? std::nullopt : store.find_run(top);
    if (!matched && !parent) {  // a parent no longer stored: its runs stand alone
      for (size_t m : members) result.groups.push_back({add(std::move(rows[m]), early), true, {}});
      continue;
    }
    RunGroup group;
    group.top_matched = matched;
    group.top = matched ? add(std::move(rows[*self]), early)
                        : add(row_of(store, std::move(*parent), now), none);
    for (size_t m : members)
      if (!matched || m != *self) group.children.push_back(add(std::move(rows[m]), early));
    result.groups.push_back(std::move(group));
  }
  result.columns =
      expand_columns(query.columns.empty() ? default_run_columns() : query.columns, result.rows);
  return result;
}

// Whether the run's name or UUID contains TEXT, in any case.
bool holds(const RunInfo& run, const std::string& text) {
  if (text.empty()) return true;
  const std::string t = lower(text);
  return lower(run.name).find(t) != std::string::npos ||
         lower(run.uuid).find(t) != std::string::npos;
}

}  // namespace

RunQueryResult query_runs(Store& store, const RunQuery& query) {
  const RunFilterExpr filter = RunFilterExpr::parse(query.filter);
  const std::vector<SortKey> sort = parse_sort(query.sort, query.sort_named);
  for (const auto& c : query.columns)
    if (!known_field(c))
      fail(ErrorKind::kUsage,
           "{}: unknown field '{}' (use metrics.KEY, params.KEY, "
           "tags.KEY, params.* or a run attribute such as status)",
           query.columns_named, core::escape_for_display(c));
  Needs early, late;
  for (const auto& f : filter.fields()) early.add(f);
  for (const auto& k : sort) early.add(k.field);
  for (const auto& c : query.columns) late.add(c);

  RunFilter base = query.base;
  base.limit = 0;
  if (!query.status.empty()) base.status = recorded_status(query.status);
  std::vector<RunInfo> infos = store.list_runs(base);
  const double now = store.now();
  std::map<std::string, RunFields> fields;
  if (early.params || early.tags || early.metrics) {
    std::vector<std::string> uuids;
    for (const auto& i : infos) uuids.push_back(i.uuid);
    fields = store.run_fields(uuids, early.params, early.tags, early.metrics);
  }
  std::vector<RunRow> rows;
  for (auto& info : infos) {
    RunRow row = row_of(store, std::move(info), now);
    if (!query.status.empty() && row.status != query.status) continue;
    if (auto it = fields.find(row.info.uuid); it != fields.end()) {
      row.params = std::move(it->second.params);
      row.tags = std::move(it->second.tags);
      for (auto& m : it->second.metrics) row.metrics[m.key] = std::move(m);
    }
    if (filter.matches(row) && holds(row.info, query.search)) rows.push_back(std::move(row));
  }
  if (!sort.empty())
    std::stable_sort(rows.begin(), rows.end(),
                     [&](const RunRow& a, const RunRow& b) { return less(a, b, sort); });
  if (query.nest) return nested_page(store, std::move(rows), query, late, early, now);
  RunQueryResult result;
  result.total = static_cast<int64_t>(rows.size());
  const auto first =
      std::min<size_t>(rows.size(), static_cast<size_t>(std::max<int64_t>(0, query.offset)));
  auto last = rows.size();
  if (query.limit > 0) last = std::min(last, first + static_cast<size_t>(query.limit));
  result.rows.assign(std::make_move_iterator(rows.begin() + first),
                     std::make_move_iterator(rows.begin() + last));
  for (auto& row : result.rows) load(store, row, late, early);
  result.columns =
      expand_columns(query.columns.empty() ? default_run_columns() : query.columns, result.rows);
  return result;
}

}  // namespace trainscope::store
