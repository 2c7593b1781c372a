// The HTTP side of the dashboard: access control, the store pool, the
// embedded front end, and requests handed to the API (api.cc).
#include "trainscope/serve/server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "assets.h"
#include "gate.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/regular_file.h"
#include "trainscope/core/util.h"
#include "trainscope/serve/api.h"
#include "trainscope/store/store.h"

namespace trainscope::serve {

using core::ErrorKind;
using core::fail;

// localhost (in any case), ::1, or an IPv4 address of 127.0.0.0/8 in four
// decimal parts: a name that only starts with "127." ("127.evil.example")
// is any name, which DNS may point anywhere (a rebinding page's own).
bool is_loopback(const std::string& host) {
  std::string name = host;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  in_addr v4{};
  return name == "localhost" || name == "::1" || name == "[::1]" ||
         (inet_pton(AF_INET, name.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127);
}

std::string random_token() {
  std::random_device dev;  // /dev/urandom
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 32; ++i) out += hex[dev() & 15];
  return out;
}

namespace {

// Marks the connection to close after this answer, as httplib then writes
// it: "Connection: close" and no Keep-Alive. (Setting the answer's header
// instead left httplib's Keep-Alive beside it, and a 414 said Keep-Alive
// alone; twenty-third and twenty-fourth hunts, B-D1.) httplib's Request is
// no const object: its handlers are only given it as one.
void close_after(const httplib::Request& req) {
  auto& headers = const_cast<httplib::Request&>(req).headers;
  headers.erase("Connection");
  headers.emplace("Connection", "close");
}

}  // namespace

namespace {

// Read-only store connections, one per concurrent request: a request takes
// one (opening another when all are busy) and gives it back.
class StorePool {
 public:
  explicit StorePool(std::string uri) : uri_(std::move(uri)) {}

  struct Lease {
    StorePool* pool;
    std::unique_ptr<store::Store> store;
    ~Lease() {
      std::lock_guard lock(pool->mu_);
      pool->free_.push_back(std::move(store));
    }
  };

  Lease take() {
    std::unique_ptr<store::Store> s;
    {
      std::lock_guard lock(mu_);
      if (!free_.empty()) {
        s = std::move(free_.back());
        free_.pop_back();
      }
    }
    if (!s) s = store::Store::open({.uri = uri_, .read_only = true});
    return Lease{this, std::move(s)};
  }

 private:
  std::string uri_;
  std::mutex mu_;
  std::vector<std::unique_ptr<store::Store>> free_;
};

// Compares in time independent of where the strings differ.
bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// The token cookie's name: one per port, since browsers keep one cookie
// per host whatever its port (RFC 6265 §8.5): two servers on one machine
// must not overwrite each other's.
std::string cookie_name(int port) { return fmt::format("trainscope_token_{}", port); }

std::string cookie_token(const httplib::Request& req, int port) {
  const std::string cookies = req.get_header_value("Cookie");
  const std::string name = cookie_name(port) + "=";
  for (size_t at = cookies.find(name); at != std::string::npos; at = cookies.find(name, at + 1)) {
    if (at != 0 && cookies[at - 1] != ' ' && cookies[at - 1] != ';') continue;
    const size_t from = at + name.size();
    return cookies.substr(from, cookies.find(';', from) - from);
  }
  return {};
}

// The host name of a Host header ("localhost:8765" -> "localhost").
std::string host_of(const std::string& header) {
  if (header.starts_with("[")) return header.substr(0, header.find(']') + 1);
  return header.substr(0, header.find(':'));
}

// Every answer's security headers (detail::security_headers), once.
void add_security_headers(httplib::Response& res) {
  if (res.has_header("X-Content-Type-Options")) return;
  for (const auto& [k, v] : detail::security_headers()) res.set_header(k, v);
}

// The one line of an error httplib found before any handler ran.
std::string what_went_wrong(int status) {
  switch (status) {
    case 400:
      return "a malformed request";
    case 404:
      return "no such page or API endpoint";
    case 405:
      return "this method is not served";
    case 413:
      return "the request is too large";
    case 414:
      return "the URL is too long";
    default:
      return fmt::format("HTTP error {}", status);
  }
}

// An artifact's bytes [file_offset, file_offset + file_length), read from
// one descriptor as the client takes them. With its SHA-256 known, every
// byte of the file read is hashed (those before and after a range too),
// and the last chunk goes out only once the digest matches: a file changed
// since it was verified (in place, or replaced between the check and the
// open) ends the connection short, never reaching the client as a complete
// download of other bytes. A file come short ends it too.
class FileSender {
 public:
  explicit FileSender(const Response& r)
      : in_(r.file, std::ios::binary),
        from_(r.file_offset),
        length_(r.file_length),
        size_(r.file_size),
        sha256_(r.file_sha256),
        name_(r.file.filename().string()) {}

  bool operator()(size_t offset, size_t length, httplib::DataSink& sink) {
    char chunk[64 * 1024];
    if (!read_to(from_ + offset)) return false;
    in_.read(chunk, static_cast<std::streamsize>(std::min(length, sizeof chunk)));
    const auto got = static_cast<size_t>(std::max<std::streamsize>(0, in_.gcount()));
    if (got == 0) return false;
    hash(chunk, got);
    if (offset + got >= length_ && !matches()) return false;
    return sink.write(chunk, got);
  }

 private:
  void hash(const char* p, size_t n) {
    if (!sha256_.empty()) hasher_.update(p, n);
    read_ += n;
  }
  // Places the file at `pos`: bytes skipped are hashed when they count.
  bool read_to(uint64_t pos) {
    if (sha256_.empty() || read_ > pos) {
      in_.seekg(static_cast<std::streamoff>(pos));
      read_ = pos;
      return sha256_.empty();  // hashing never goes back
    }
    char skip[64 * 1024];
    while (read_ < pos) {
      in_.read(skip, static_cast<std::streamsize>(std::min<uint64_t>(pos - read_, sizeof skip)));
      if (in_.gcount() <= 0) return false;
      hash(skip, static_cast<size_t>(in_.gcount()));
    }
    return true;
  }
  // Whether the whole file, read to its end, is the one verified.
  bool matches() {
    if (sha256_.empty()) return true;
    char rest[64 * 1024];
    while (in_.read(rest, sizeof rest) || in_.gcount() > 0)
      hash(rest, static_cast<size_t>(in_.gcount()));
    if (read_ == size_ && hasher_.hex() == sha256_) return true;
    core::log_warn("artifact '{}' changed while it was sent: the answer was cut short",
                   core::escape_for_display(name_));
    return false;
  }

  std::ifstream in_;
  const uint64_t from_, length_, size_;
  const std::string sha256_, name_;
  core::Sha256Hasher hasher_;
  uint64_t read_ = 0;  // the file's bytes read (and hashed) so far
};

void send(httplib::Response& res, const Response& r) {
  res.status = r.status;
  for (const auto& [k, v] : r.headers) {
    if (k == "Accept-Ranges") res.headers.erase(k);  // over gatekeep's "none"
    res.set_header(k, v);
  }
  if (r.file.empty()) return res.set_content(r.body, r.content_type);
  // An artifact: read a chunk at a time as the client takes it.
  res.set_content_provider(r.file_length, r.content_type,
                           [sender = std::make_shared<FileSender>(r)](size_t offset, size_t length,
                                                                      httplib::DataSink& sink) {
                             return (*sender)(offset, length, sink);
                           });
}

// The token of an Authorization header's Bearer credentials (RFC 9110
// §11.4: the scheme, in any case, then 1*SP), or empty.
std::string bearer_token(const std::string& auth) {
  const bool bearer = auth.size() > 7 && auth[6] == ' ' &&
                      std::equal(auth.begin(), auth.begin() + 6, "bearer", [](char a, char b) {
                        return std::tolower(static_cast<unsigned char>(a)) == b;
                      });
  const size_t from = bearer ? auth.find_first_not_of(' ', 6) : std::string::npos;
  return from == std::string::npos ? std::string() : auth.substr(from);
}

// What a Range asks of an answer `size` bytes long: one range of bytes
// (RFC 9110 §14.1.2: "bytes=A-B", "bytes=A-", "bytes=-N"), which holds some
// of them (kPart) or none (kNone); or anything else (kWhole, the Range
// ignored): another unit, several ranges, a syntax it does not have.
struct ByteRange {
  enum Kind { kWhole, kPart, kNone } kind = kWhole;
  uint64_t first = 0, count = 0;
};

// A number of digits (one past 2^64 - 1 is taken as that).
bool digits(std::string_view s, uint64_t& v) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string_view::npos) return false;
  if (std::from_chars(s.data(), s.data() + s.size(), v).ec != std::errc()) v = UINT64_MAX;
  return true;
}

ByteRange byte_range(const std::string& range, uint64_t size) {
  const size_t eq = range.find('=');
  std::string unit = range.substr(0, std::min(eq, range.size()));
  std::transform(unit.begin(), unit.end(), unit.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (eq == std::string::npos || unit != "bytes") return {};
  const auto specs = core::split_list(std::string_view(range).substr(eq + 1));
  const size_t dash = specs.size() == 1 ? specs[0].find('-') : std::string::npos;
  if (dash == std::string::npos) return {};
  const std::string_view a = std::string_view(specs[0]).substr(0, dash),
                         b = std::string_view(specs[0]).substr(dash + 1);
  uint64_t first = 0, last = UINT64_MAX;
  if (a.empty()) {  // the last `last` bytes
    if (!digits(b, last)) return {};
    if (last == 0 || size == 0) return {ByteRange::kNone};
    return {ByteRange::kPart, size - std::min(last, size), std::min(last, size)};
  }
  if (!digits(a, first) || (!b.empty() && (!digits(b, last) || last < first))) return {};
  if (first >= size) return {ByteRange::kNone};
  return {ByteRange::kPart, first, std::min(last, size - 1) - first + 1};
}

// An answer that says it takes ranges (Accept-Ranges: bytes: an artifact),
// asked by a GET for one range of its bytes (GatedServer::range()), is
// that part: 206 with Content-Range; 416 (JSON) when the range holds none
// of them. Any other Range is ignored, as RFC 9110 §14.2 lets a server:
// several ranges (one request could ask for the file a thousand times
// over), another unit, bad syntax, one beside an If-Range (this server
// gives no validator to match), or one of an answer httplib would
// compress (its range would count the compressed bytes).
void serve_range(const httplib::Request& req, Response& r) {
  const std::string& range = detail::GatedServer::range();
  const auto takes = std::find(r.headers.begin(), r.headers.end(),
                               std::pair<std::string, std::string>("Accept-Ranges", "bytes"));
  const std::string coding = req.get_header_value("Accept-Encoding");
  const bool compressed =
      r.content_type != "application/octet-stream" &&
      (coding.find("gzip") != std::string::npos || coding.find("br") != std::string::npos);
  if (range.empty() || req.method != "GET" || r.status != 200 || takes == r.headers.end() ||
      req.has_header("If-Range") || compressed)
    return;
  const uint64_t whole = r.file.empty() ? r.body.size() : r.file_length;
  const ByteRange part = byte_range(range, whole);
  if (part.kind == ByteRange::kWhole) return;
  const std::string size = std::to_string(whole);
  if (part.kind == ByteRange::kNone) {
    r = error_response(416, fmt::format("Range '{}' asks for none of the {} bytes there are",
                                        core::escape_cut(range, 80), size));
    r.headers = {{"Accept-Ranges", "bytes"}, {"Content-Range", "bytes */" + size}};
    return;
  }
  r.status = 206;
  if (r.file.empty()) {
    r.body = r.body.substr(part.first, part.count);
  } else {
    r.file_offset += part.first;
    r.file_length = part.count;
  }
  r.headers.emplace_back("Content-Range", fmt::format("bytes {}-{}/{}", part.first,
                                                      part.first + part.count - 1, size));
}

// The query of a request target (after its first '?'), each parameter
// split at its first '=': the value is all that follows it ("search=a=b"
// searches "a=b"; httplib's own parse kept what followed the last '=').
// Names and values are decoded as httplib decodes them ('+' a space, %XX;
// the Gate wrote a '?' inside the query as %3F). A name given twice keeps
// its first value; a parameter without a name is dropped.
std::map<std::string, std::string> query_of(const std::string& target) {
  std::map<std::string, std::string> out;
  const size_t mark = target.find('?');
  if (mark == std::string::npos) return out;
  const std::string_view query = std::string_view(target).substr(mark + 1);
  for (size_t at = 0; at < query.size();) {
    const size_t end = std::min(query.find('&', at), query.size());
    const std::string_view pair = query.substr(at, end - at);
    at = end + 1;
    const size_t eq = std::min(pair.find('='), pair.size());
    std::string name = httplib::detail::decode_url(std::string(pair.substr(0, eq)), true);
    if (name.empty()) continue;
    const std::string_view value = eq < pair.size() ? pair.substr(eq + 1) : std::string_view();
    out.emplace(std::move(name), httplib::detail::decode_url(std::string(value), true));
  }
  return out;
}

// A request of the API as sent: the path undecoded (the API decodes each
// segment itself: a name may hold '/'), HEAD read as GET.
Request api_request(const httplib::Request& req) {
  return Request{req.method == "HEAD" ? "GET" : req.method,
                 req.target.substr(0, req.target.find('?')), query_of(req.target), req.body};
}

// A page only reads: any other method is 405 (RFC 9110 §15.5.6), whether
// the page exists or not.
Response page_not_allowed(const httplib::Request& req) {
  Response r = error_response(
      405, fmt::format("{} {}: the dashboard's pages only read (GET, HEAD); the API is under /api/",
                       req.method, core::escape_for_display(req.path)));
  r.headers.emplace_back("Allow", "GET, HEAD");
  return r;
}

}  // namespace

struct Server::Impl {
  ServerOptions options;
  std::string store_name;
  StorePool pool;
  std::unique_ptr<store::Store> writer;  // opened on the first write
  std::mutex writer_mu;
  detail::GatedServer http;
  int port = 0;
  std::atomic<bool> run_called = false, stop_requested = false, returned = false;

  explicit Impl(ServerOptions o)
      : options(std::move(o)), pool(options.store_uri), http(std::max(1, options.threads)) {}

  // Before any route and before any body is read (httplib's pre-routing
  // handler, and its answer to Expect: 100-continue): what HTTP says to
  // refuse, then the token. False when `res` holds the refusal; its
  // connection then closes (no route read the request's body).
  bool gatekeep(const httplib::Request& req, httplib::Response& res) {
    add_security_headers(res);
    int status = 0;
    std::string why = detail::unsupported(req, http.limits(), status);
    // OPTIONS * (the Gate lets no other method have it) asks what the
    // server does: the methods it routes, to anyone (it names nothing of
    // the store). The connection then closes, as after any request
    // answered here.
    if (why.empty() && req.target == "*") {
      res.status = 200;
      res.set_header(
          "Allow", options.allow_writes ? "GET, HEAD, PUT, DELETE, OPTIONS" : "GET, HEAD, OPTIONS");
      close_after(req);
      return false;
    }
    if (why.empty()) {
      why = refuse(req, res);
      status = res.status;
    }
    if (why.empty()) return !refused_before_body(req, res);
    close_after(req);
    send(res, error_response(status, why));
    return false;
  }

  // What no body can change, answered before the body is read (and instead
  // of 100 Continue): a method other than GET and HEAD on a page (405), and
  // any such request of the API but a write it would take (a tag's PUT or
  // DELETE on a server started with --allow-writes): the API's own answer,
  // judged without the body (ApiOptions::before_body): 403 for a tag of a
  // read-only server, 405 for what the API never changes, 404 for an
  // unknown endpoint or run, 400 for a key that is not a user's tag. (A
  // GET's or a HEAD's answer never depends on a body: GatedServer answers
  // it without 100 Continue.) True when `res` holds it.
  bool refused_before_body(const httplib::Request& req, httplib::Response& res) {
    if (req.method == "GET" || req.method == "HEAD") return false;
    // httplib would take a multipart body apart and leave the body empty:
    // the tag would be written as "". Refused before the body is read.
    std::string type = req.get_header_value("Content-Type");
    std::transform(type.begin(), type.end(), type.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (type.find_first_not_of(" \t") != std::string::npos &&
        type.substr(type.find_first_not_of(" \t")).starts_with("multipart/")) {
      send(res, error_response(415, fmt::format("{} {}: a multipart body is not read; a tag's "
                                                "value is the request's body as it is",
                                                req.method, core::escape_for_display(req.path))));
      close_after(req);
      return true;
    }
    if (req.path.starts_with("/api/")) {
      auto lease = pool.take();
      const Response r = handle_api(*lease.store, api_request(req),
                                    {.allow_writes = options.allow_writes, .before_body = true});
      if (r.status == 100) return false;
      send(res, r);
    } else {
      send(res, page_not_allowed(req));
    }
    close_after(req);
    return true;
  }

  // Empty when the request may go on; else why not (and `status`).
  std::string refuse(const httplib::Request& req, httplib::Response& res) {
    const std::string& token = options.token;
    if (req.version == "HTTP/1.1" && !req.has_header("Host")) {  // RFC 9112 §3.2
      res.status = 400;
      return "an HTTP/1.1 request must have a Host header";
    }
    if (token.empty()) {
      // No token on loopback: still only answer requests addressed to this
      // machine, so that a web page cannot reach the API by DNS rebinding.
      const std::string host = host_of(req.get_header_value("Host"));
      if (!host.empty() && !is_loopback(host) && host != options.bind) {
        res.status = 403;
        return "requests must be addressed to " + options.bind + " or localhost";
      }
      return {};
    }
    // Authorization is one header (RFC 9110 §11.6.2): given twice, the
    // answer depended on their order (thirty-second hunt, A-D3); given
    // wrong, it is wrong whatever else the request carries. The scheme is
    // case-insensitive (RFC 9110 §11.1): "bearer" is "Bearer".
    if (req.get_header_value_count("Authorization") > 1) {
      res.status = 400;
      return "the Authorization header is given more than once; send one";
    }
    if (req.has_header("Authorization")) {
      if (same_secret(bearer_token(req.get_header_value("Authorization")), token)) return {};
      res.status = 401;
      res.set_header("WWW-Authenticate", "Bearer realm=\"trainscope\", error=\"invalid_token\"");
      return "the Authorization header's token is not this server's; send 'Authorization: "
             "Bearer TOKEN' with the token `trainscope serve` printed";
    }
    if (same_secret(cookie_token(req, port), token)) return {};
    const auto query = query_of(req.target);
    if (const auto given = query.find("token");
        given != query.end() && same_secret(given->second, token)) {
      if (!res.has_header("Set-Cookie"))  // once, when asked twice (100-continue)
        res.set_header("Set-Cookie",
                       cookie_name(port) + "=" + token + "; Path=/; HttpOnly; SameSite=Strict");
      return {};
    }
    res.status = 401;
    // RFC 9110 §11.6.1: a 401 says how to authenticate.
    res.set_header("WWW-Authenticate", "Bearer realm=\"trainscope\"");
    return "this server needs its token: open the URL `trainscope serve` printed (with "
           "?token=...), or send 'Authorization: Bearer TOKEN'";
  }

  void api(const httplib::Request& req, httplib::Response& res) {
    const Request r = api_request(req);
    const ApiOptions o{.allow_writes = options.allow_writes};
    // A read-only server routes writes too: the API answers each with its
    // own reason (403 for tags, 405 for what it never changes).
    if (r.method == "GET" || !options.allow_writes) {
      auto lease = pool.take();
      Response out = handle_api(*lease.store, r, o);
      serve_range(req, out);
      return send(res, out);
    }
    std::lock_guard lock(writer_mu);
    // It writes tags only: it judges no run (readers show stale ones).
    // A write waiting for another writer's lock gives up when the server
    // stops: its client is gone, so it is applied only if it is answered.
    if (!writer)
      writer =
          store::Store::open({.uri = options.store_uri, .give_up = &stop_requested, .reap = false});
    send(res, handle_api(*writer, r, o));
  }

  void page(const httplib::Request& req, httplib::Response& res) {
    // TRAINSCOPE_WEB_DIR serves a front end from a folder instead (while
    // developing it); otherwise the bundle compiled in.
    if (const char* dir = std::getenv("TRAINSCOPE_WEB_DIR"); dir && *dir) {
      const std::string path = req.path == "/" ? "/index.html" : req.path;
      const Asset* known = find_asset(path);
      // A regular file only (core/regular_file.h): a FIFO there would hold
      // a worker for good, a link to /dev/zero fill the memory.
      std::optional<std::string> body;
      if (path.find("..") == std::string::npos) {
        try {
          body = core::read_regular_file(std::string(dir) + path, "file");
        } catch (const core::Error&) {
          body.reset();
        }
      }
      if (body) {
        const std::string type = known                    ? std::string(known->content_type)
                                 : path.ends_with(".js")  ? "text/javascript"
                                 : path.ends_with(".css") ? "text/css"
                                                          : "text/html; charset=utf-8";
        return res.set_content(*body, type);
      }
    }
    if (const Asset* a = find_asset(req.path)) {
      res.set_content(std::string(a->body), std::string(a->content_type));
      return;
    }
    if (req.path == "/" || req.path == "/index.html") {
      res.set_content(
          "<!doctype html><title>trainscope</title><p>This build has no dashboard bundle "
          "(TRAINSCOPE_WEB=OFF); the JSON API is at /api/ (docs/api.md).",
          "text/html; charset=utf-8");
      return;
    }
    send(res, error_response(
                  404, "no page " + core::escape_cut(req.path, 200) + "; the dashboard is at /"));
  }

  // A request gatekeep() let through, its body read.
  void handle(const httplib::Request& req, httplib::Response& res) {
    detail::GatedServer::routed();
    if (req.path.starts_with("/api/")) return api(req, res);
    if (req.method != "GET" && req.method != "HEAD") return send(res, page_not_allowed(req));
    page(req, res);
  }
};

namespace {

// The JSON error for what httplib answered itself: a body that stopped
// arriving (408), a chunked body the Gate stopped (its own status), or
// anything else httplib could not read.
httplib::Server::HandlerResponse answer_error(const httplib::Request& req, httplib::Response& res,
                                              int64_t body_s) {
  if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
  // httplib answers some requests before the gatekeeper sees them (a URL
  // too long: 414; a request line it cannot read: 400).
  add_security_headers(res);
  // A body that stopped arriving is the client's lateness, not a
  // malformed request.
  if (res.status == 400 && detail::GatedServer::body_timed_out()) {
    close_after(req);  // the rest of the body never came
    send(res,
         error_response(408, fmt::format("{} {}: the request's body did not all "
                                         "arrive within {} s",
                                         req.method, core::escape_for_display(req.path), body_s)));
    return httplib::Server::HandlerResponse::Handled;
  }
  // A chunked body the Gate stopped (over the limit, or not HTTP's
  // framing): its reason, as a Content-Length over the limit gets. The
  // rest of the body is not read, so the connection closes.
  if (const detail::Refusal& r = detail::GatedServer::body_refused();
      res.status == 400 && r.status != 0) {
    close_after(req);
    send(res, error_response(r.status, r.why));
    return httplib::Server::HandlerResponse::Handled;
  }
  // A request httplib could not read (a URL too long) has no method
  // or path: the message is then the reason alone. The connection closes.
  close_after(req);
  const std::string what = what_went_wrong(res.status);
  send(res,
       error_response(res.status, req.method.empty()
                                      ? what
                                      : fmt::format("{} {}: {}", req.method,
                                                    core::escape_for_display(req.path), what)));
  return httplib::Server::HandlerResponse::Handled;
}

}  // namespace

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  auto& o = impl_->options;
  // The token goes unencoded into the printed URL, a cookie and a Bearer
  // header: only characters all three carry as they are (RFC 3986's
  // unreserved, RFC 6265's cookie-octet, RFC 6750's b64token).
  if (const size_t bad = o.token.find_first_not_of(
          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~");
      bad != std::string::npos)
    core::fail(ErrorKind::kUsage,
               "--token holds '{}': a token is letters, digits and - . _ ~ only (it travels in a "
               "URL, a cookie and a header as it is)",
               core::escape_for_display(o.token.substr(bad, 1)));
  // An empty address is no address: getaddrinfo took it as loopback, and
  // the printed URL had no host (twenty-fourth hunt, B-D2).
  if (o.bind.find_first_not_of(" \t") == std::string::npos)
    core::fail(ErrorKind::kUsage,
               "--bind '{}': give the address to listen on (127.0.0.1, the default; 0.0.0.0 for "
               "every interface)",
               core::escape_for_display(o.bind));
  if (o.token.empty() && !is_loopback(o.bind)) o.token = random_token();
  // Opening once checks the store before anything listens: a store that
  // does not exist is an error here, not on every request.
  try {
    impl_->store_name = impl_->pool.take().store->describe();
  } catch (const core::Error& e) {
    // An older schema is migrated once, as any writer would (but no run is
    // judged: the server reads); a store that does not exist is not created.
    if (e.kind() == ErrorKind::kNotFound) throw;
    store::Store::open({.uri = o.store_uri, .reap = false});
    impl_->store_name = impl_->pool.take().store->describe();
  }
  auto handler = [this](const httplib::Request& req, httplib::Response& res) {
    impl_->handle(req, res);
  };
  auto& http = impl_->http;
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    return impl_->gatekeep(req, res) ? httplib::Server::HandlerResponse::Unhandled
                                     : httplib::Server::HandlerResponse::Handled;
  });
  http.set_expect_100_continue_handler([this](const httplib::Request& req, httplib::Response& res) {
    return impl_->gatekeep(req, res) ? 100 : res.status;
  });
  // SO_REUSEADDR only: httplib's default also sets SO_REUSEPORT, with which
  // a second server on a port in use would share it instead of failing.
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  // Any path, a decoded newline in it too (`.` stops at one).
  http.Get("[\\s\\S]*", handler);
  http.Put("[\\s\\S]*", handler);
  http.Delete("[\\s\\S]*", handler);
  http.Post("[\\s\\S]*", handler);
  http.Patch("[\\s\\S]*", handler);
  http.Options("[\\s\\S]*", handler);
  // What httplib answers itself (a malformed request, ...) is a JSON error
  // too, and so is anything a handler let escape.
  const auto body_s = std::chrono::duration_cast<std::chrono::seconds>(http.limits().body).count();
  http.set_error_handler(httplib::Server::HandlerWithResponse(
      [body_s](const httplib::Request& req, httplib::Response& res) {
        return answer_error(req, res, body_s);
      }));
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "internal error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        send(res, error_response(500, what));
      });
}

Server::~Server() = default;

int Server::bind() {
  auto& o = impl_->options;
  if (o.port < 0 || o.port > 65535)
    fail(ErrorKind::kUsage, "--port {}: a port is a number from 0 to 65535", o.port);
  if (o.port == 0) {
    impl_->port = impl_->http.bind_to_any_port(o.bind);
  } else if (impl_->http.bind_to_port(o.bind, o.port)) {
    impl_->port = o.port;
  } else {
    impl_->port = -1;
  }
  if (impl_->port > 0) impl_->http.widen_backlog();
  if (impl_->port <= 0)
    fail(ErrorKind::kUsage,
         "cannot listen on {}:{}: the port is in use or the address is not this machine's; "
         "choose another with --port (0 picks a free one) or --bind",
         o.bind, o.port);
  return impl_->port;
}

void Server::run() {
  impl_->run_called = true;
  if (!impl_->stop_requested) impl_->http.listen_after_bind();
  impl_->returned = true;
}

// httplib's stop() does nothing until the server is listening, so a stop
// right after run() began on another thread would be lost: wait for one or
// the other (or, when run() was never called, not for long).
void Server::stop() { stop_within(std::chrono::milliseconds::max()); }

bool Server::stop_within(std::chrono::milliseconds grace) {
  impl_->stop_requested = true;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; !impl_->returned && (impl_->run_called || i < 100); ++i) {
    if (impl_->http.is_running()) impl_->http.stop();
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    if (waited >= grace) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

std::string Server::url() const {
  const auto& o = impl_->options;
  const std::string host = o.bind.find(':') != std::string::npos ? "[" + o.bind + "]" : o.bind;
  std::string out = "http://" + host + ":" + std::to_string(impl_->port) + "/";
  if (!o.token.empty()) out += "?token=" + o.token;
  return out;
}

const std::string& Server::token() const { return impl_->options.token; }

std::string Server::store_name() const { return impl_->store_name; }

}  // namespace trainscope::serve
