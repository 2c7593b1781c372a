// Routing of the API: path segments to the handlers of api_internal.h, and
// the one place where errors become HTTP statuses.
#include "trainscope/serve/api.h"

#include <cctype>
#include <charconv>
#include <set>
#include <string>
#include <vector>

#include "api_internal.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/core/version.h"

namespace trainscope::serve {

using core::ErrorKind;
using core::fail;

namespace detail {

std::string param(const Request& r, const std::string& name, const std::string& fallback) {
  auto it = r.query.find(name);
  return it == r.query.end() ? fallback : it->second;
}

std::string required(const Request& r, const std::string& name) {
  std::string v = param(r, name);
  if (v.empty()) fail(ErrorKind::kUsage, "parameter '{}' is required", name);
  return v;
}

int64_t int_param(const Request& r, const std::string& name, int64_t fallback, int64_t lo,
                  int64_t hi) {
  const std::string v = param(r, name);
  if (v.empty()) return fallback;
  int64_t out = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size() || out < lo || out > hi)
    fail(ErrorKind::kUsage, "parameter '{}' must be a whole number from {} to {}, got '{}'", name,
         lo, hi, core::escape_for_display(v));
  return out;
}

Response json(const Json& j, int status) {
  Response out;
  out.status = status;
  out.body = j.dump(-1, ' ', false, format::kInvalidUtf8);
  return out;
}

Response text(std::string body, std::string content_type) {
  Response out;
  out.body = std::move(body);
  out.content_type = std::move(content_type);
  return out;
}

std::string artifact_url(const std::string& uuid, const std::string& name) {
  std::string out = "/api/runs/" + uuid + "/artifacts/";
  static const char* hex = "0123456789ABCDEF";
  for (unsigned char c : name) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '/' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace detail

namespace {

using namespace detail;

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX escapes decoded; anything else, a stray '%' included, kept as it is.
std::string percent_decoded(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const int hi = i + 2 < s.size() && s[i] == '%' ? hex_digit(s[i + 1]) : -1;
    const int lo = hi >= 0 ? hex_digit(s[i + 2]) : -1;
    if (lo >= 0) {
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// The path's segments, each decoded after the split: a run named
// "init/r1" is one segment when sent as init%2Fr1.
std::vector<std::string> segments(const std::string& path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) out.push_back(percent_decoded(std::string_view(path).substr(i, j - i)));
    i = j + 1;
  }
  return out;
}

int status_of(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUsage:
      return 400;
    case ErrorKind::kNotFound:
      return 404;
    case ErrorKind::kConflict:
      return 409;
    default:
      return 500;
  }
}

// A method an endpoint does not take: the API reads everything and writes
// only tags.
Response not_allowed(const Request& r) {
  Response res =
      error_response(405, fmt::format("{} {}: this endpoint only reads (GET); the API changes "
                                      "nothing but tags: PUT or DELETE "
                                      "/api/runs/{{ref}}/tags/{{key}} on a server started with "
                                      "--allow-writes",
                                      r.method, core::escape_for_display(r.path)));
  res.headers.emplace_back("Allow", "GET, HEAD");  // RFC 9110 §15.5.6
  return res;
}

[[noreturn]] void no_such_path(const Request& r) {
  fail(ErrorKind::kNotFound, "no API endpoint {} {} (docs/api.md lists them)", r.method,
       core::escape_for_display(r.path));
}

// Whether GET routes /api/runs/{ref}/... (`seg`) somewhere: another method
// there is 405, and 404 where nothing is (as GET would answer).
bool run_endpoint(const std::vector<std::string>& seg) {
  static const std::set<std::string> kOfARun = {
      "",        "live",        "metric", "environment", "resources",    "ranks",
      "profile", "profile.svg", "probes", "histograms",  "histogram.svg"};
  const std::string what = seg.size() > 3 ? seg[3] : "";
  return (seg.size() <= 4 && kOfARun.count(what)) || (what == "views" && seg.size() == 5) ||
         (what == "artifacts" && seg.size() > 4);
}

// /api/runs/{ref}/...: everything about one run.
Response run_route(store::Store& s, const Request& r, const std::vector<std::string>& seg,
                   const ApiOptions& o) {
  const store::RunInfo run = s.resolve_run(seg[2]);
  const std::string what = seg.size() > 3 ? seg[3] : "";
  const bool writes = r.method == "PUT" || r.method == "DELETE";
  if (what == "tags" && (seg.size() == 5 || (seg.size() == 4 && writes))) {
    if (!o.allow_writes && writes)
      return error_response(403,
                            "this server is read-only; start it with --allow-writes "
                            "to change tags");
    if (seg.size() == 4)
      fail(ErrorKind::kUsage,
           "{} {}: no tag key; a tag is set or deleted by its key: {} "
           "/api/runs/{{ref}}/tags/{{key}}",
           r.method, core::escape_for_display(r.path), r.method);
    return tags(s, run, r, seg[4], o.before_body);
  }
  if (r.method != "GET") {
    if (run_endpoint(seg)) return not_allowed(r);
    no_such_path(r);
  }
  if (what == "views" && seg.size() == 5) return json(view(s, run, r, seg[4]));
  if (what == "artifacts" && seg.size() > 4) {
    std::string name = seg[4];
    for (size_t i = 5; i < seg.size(); ++i) name += "/" + seg[i];
    return artifact_file(s, run, name);
  }
  if (seg.size() > 4) no_such_path(r);
  if (what.empty()) return json(run_page(s, run));
  if (what == "live") return json(live(s, run));
  if (what == "metric") return json(metric_chart(s, run, r));
  if (what == "environment") return json({{"entries", s.environment(run.uuid)}});
  if (what == "resources") return json(resources(s, run));
  if (what == "ranks") return json(ranks(s, run));
  if (what == "profile") return json(profile(s, run));
  if (what == "profile.svg") return text(profile_svg(s, run), "image/svg+xml");
  if (what == "probes") return json(probes(s, run));
  if (what == "histograms") return json(histograms(s, run, r));
  if (what == "histogram.svg") return text(histogram_svg(s, run, r), "image/svg+xml");
  no_such_path(r);
}

Response route(store::Store& s, const Request& r, const ApiOptions& o) {
  const auto seg = segments(r.path);
  if (seg.size() < 2 || seg[0] != "api") no_such_path(r);
  const std::string& what = seg[1];
  if (what == "runs" && seg.size() >= 3) return run_route(s, r, seg, o);
  const bool known = (seg.size() == 2 &&
                      (what == "info" || what == "runs" || what == "diff" || what == "studies")) ||
                     (what == "studies" && (seg.size() == 3 || seg.size() == 4));
  if (r.method != "GET") {
    if (known) return not_allowed(r);
    no_such_path(r);
  }
  if (what == "info" && seg.size() == 2)
    return json({{"version", core::version()},
                 {"store", s.describe()},
                 {"schema_version", s.schema_version()},
                 {"writes_allowed", o.allow_writes},
                 {"now", core::unix_now()}});
  if (what == "runs" && seg.size() == 2) return json(runs_page(s, r));
  if (what == "diff" && seg.size() == 2) return json(diff(s, r));
  if (what == "studies" && seg.size() == 2) return json(studies(s));
  if (what == "studies" && seg.size() == 3) return json(study(s, seg[2]));
  if (what == "studies" && seg.size() == 4 && seg[3] == "report.html") {
    Response out = text(study_html(s, seg[2]), "text/html; charset=utf-8");
    // The report is a document of its own: no scripts, no same-origin access.
    out.headers.emplace_back("Content-Security-Policy", "sandbox");
    return out;
  }
  no_such_path(r);
}

}  // namespace

Response error_response(int status, const std::string& message) {
  // One line whatever it embeds, as core::Error's: the "no page" 404 held
  // its decoded path's raw line feed and ESC (twenty-eighth hunt, B-D5).
  return json({{"error", core::terminal_text(message, true)}, {"status", status}}, status);
}

Response handle_api(store::Store& store, const Request& request, const ApiOptions& options) {
  try {
    store.check_schema();  // a store migrated by a newer trainscope since the server started
    return route(store, request, options);
  } catch (const core::Error& e) {
    return error_response(status_of(e.kind()), e.what());
  } catch (const std::exception& e) {
    return error_response(500, e.what());
  }
}

std::string content_disposition(std::string_view file) {
  std::string plain, encoded;
  for (const char ch : file) {
    const auto b = static_cast<unsigned char>(ch);
    plain += b > 0x20 && b < 0x7f && ch != '"' && ch != '\\' ? ch : '_';
    if (std::isalnum(b) || std::string_view("!#$&+-.^_`|~").find(ch) != std::string_view::npos)
      encoded += ch;
    else
      encoded += fmt::format("%{:02X}", b);
  }
  std::string out = "attachment; filename=\"" + plain + "\"";
  if (plain != file) out += "; filename*=UTF-8''" + encoded;
  return out;
}

}  // namespace trainscope::serve
