// The Gate: a poller that collects requests' headers without holding a
// worker, workers that serve complete requests, and the limits of what a
// client can hold (gate.h).
#include "gate.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "trainscope/core/util.h"
#include "trainscope/serve/api.h"

namespace trainscope::serve::detail {

// Not an anonymous namespace: the Gate holds these types, and its file may
// be a unity batch's included one (-Wsubobject-linkage).
namespace gate {

using Clock = std::chrono::steady_clock;
constexpr size_t npos = std::string::npos;

thread_local bool t_routed = false;
thread_local bool t_body_late = false;  // this request's body ran out of time
thread_local std::string t_range;       // its Range, taken out of its head
// Bytes of its body that no route reads (a GET's, a HEAD's): read and
// dropped after the answer; -1: a length not known (chunked), so the
// connection closes instead.
thread_local int64_t t_unread = 0;
// This request's Connection list holds "close" (normalize): httplib looked
// for the exact "close" before normalize ran, so serve_one closes it.
thread_local bool t_close = false;

struct Conn {
  socket_t fd = INVALID_SOCKET;
  std::string addr;  // the client's address, numeric
  int port = 0;
  std::string buf;                     // bytes read and not yet served
  std::string range;                   // the next request's Range (take_ranges)
  size_t scanned = 0, last_nl = npos;  // header_end's place in buf
  Clock::time_point deadline;
  bool idle = false;       // kept alive, waiting for its next request's first byte
  bool returning = false;  // back from a worker (counted already)
  bool body = false;       // its request announces a body (announces_body)
  int served = 0;
};

// Where a request's line and headers end in `buf` (after the first line
// that is "\r\n" alone, past the request line: where httplib stops reading
// headers; or "\n" alone, which head_problem refuses at once rather than
// wait for a CR LF that never comes), or npos while they have not all
// come. Resumes where it left off, so a request sent a byte at a time is
// scanned once.
size_t header_end(const std::string& buf, size_t& scanned, size_t& last_nl) {
  for (; scanned < buf.size(); ++scanned) {
    if (buf[scanned] != '\n') continue;
    if (last_nl != npos &&
        (scanned == last_nl + 1 || (scanned == last_nl + 2 && buf[last_nl + 1] == '\r')))
      return scanned + 1;
    last_nl = scanned;
  }
  return npos;
}

// Empty lines (CR LF) before a request line, which RFC 9112 §2.2 tells a
// server to ignore (a client's CR LF after a body it counted short): taken
// out of `c`'s buffer while no line of its request has begun.
void skip_empty_lines(Conn& c) {
  if (c.last_nl != npos) return;
  size_t n = 0;
  while (c.buf.compare(n, 2, "\r\n") == 0) n += 2;
  if (n == 0) return;
  c.buf.erase(0, n);
  c.scanned = 0;
}

// Why a request's line and headers (`head`, up to their blank line) are not
// HTTP/1.1's (RFC 9112 §5): a control byte other than CR, LF and HT (a NUL
// a parser may cut a value at), a CR or an LF that is not part of a line's
// CR LF (§2.2: a bare CR is invalid; httplib would skip a line that ends in
// LF alone, where a proxy may read it), or a line that starts with a blank
// (obs-fold, which §5.2 tells a server to refuse; before the first header,
// whitespace that §2.2 lets it refuse); empty when they are.
std::string head_problem(std::string_view head) {
  for (size_t i = 0; i < head.size(); ++i) {
    const auto ch = static_cast<unsigned char>(head[i]);
    if ((ch < 0x20 && ch != '\r' && ch != '\n' && ch != '\t') || ch == 0x7f)
      return fmt::format(
          "the request's line and headers hold the control byte 0x{:02x}: send them as text", ch);
    if (ch == '\r' && (i + 1 == head.size() || head[i + 1] != '\n'))
      return "the request's line and headers hold a CR that does not end a line (a bare CR): "
             "end each line with CR LF";
    if (ch == '\n' && (i == 0 || head[i - 1] != '\r'))
      return "the request's line and headers hold a line that ends in LF alone: end each line "
             "with CR LF";
    if (ch == '\n' && i + 1 < head.size() && (head[i + 1] == ' ' || head[i + 1] == '\t'))
      return "a header line that starts with a blank (obs-fold) is refused: send each header on "
             "one line";
  }
  return {};
}

// The words of a request's line (the first of `head`), as httplib splits
// it: at spaces, empty words skipped.
std::vector<std::string_view> line_words(std::string_view head) {
  const std::string_view line = head.substr(0, head.find("\r\n"));
  std::vector<std::string_view> words;
  for (size_t at = 0; at < line.size();) {
    const size_t end = std::min(line.find(' ', at), line.size());
    if (end > at) words.push_back(line.substr(at, end - at));
    at = end + 1;
  }
  return words;
}

// A word of a request line as an error message shows it.
std::string shown_word(std::string_view s) { return core::escape_cut(s, 200); }

// HTTP/1.0 to HTTP/1.9: a later HTTP/1 minor version is served as 1.1,
// the highest this server speaks (RFC 9110 §2.5; thirty-third hunt, A-D2).
bool is_http1(std::string_view version) {
  return version.size() == 8 && version.starts_with("HTTP/1.") && version[7] >= '0' &&
         version[7] <= '9';
}

// A request line of HTTP/1.2 to HTTP/1.9 rewritten as HTTP/1.1 in `buf`
// (the same length), which httplib takes.
void serve_minor_as_1_1(std::string& buf) {
  const size_t line_end = buf.find("\r\n");
  if (line_end == npos || line_end < 9 || buf[line_end - 9] != ' ') return;
  if (is_http1(std::string_view(buf).substr(line_end - 8, 8)) && buf[line_end - 1] > '1')
    buf[line_end - 1] = '1';
}

// Why a request line (RFC 9112 §3) asks for what this server does not
// speak, with `status` set: an HTTP version other than HTTP/1.x (505;
// a word that is not a version at all, 400), or a method it does not
// route (501: CONNECT, TRACE, a made-up one), each named. Empty when it
// asks for neither, or is not three words (httplib answers that: 400).
std::string line_problem(std::string_view head, int& status) {
  const auto words = line_words(head);
  if (words.size() != 3) return {};
  const std::string what = shown_word(words[0]) + " " + shown_word(words[1]);
  if (const std::string_view version = words[2]; !is_http1(version)) {
    status = version.starts_with("HTTP/") ? 505 : 400;
    if (status == 505)
      return fmt::format("{}: {} is not a version this server speaks: send HTTP/1.1", what,
                         shown_word(version));
    return fmt::format("{}: '{}' is not an HTTP version: send HTTP/1.1", what, shown_word(version));
  }
  static constexpr std::string_view kMethods[] = {"GET",    "HEAD",  "POST",   "PUT",
                                                  "DELETE", "PATCH", "OPTIONS"};
  if (std::find(std::begin(kMethods), std::end(kMethods), words[0]) != std::end(kMethods))
    return {};
  status = 501;
  return fmt::format(
      "{}: the method {} is not implemented here (GET, HEAD, POST, PUT, DELETE, PATCH and "
      "OPTIONS are)",
      what, shown_word(words[0]));
}

const char* reason(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Service Unavailable";
  }
}

// Waits until `fd` is ready for `events` (or hung up), at most until `until`.
bool wait_for(socket_t fd, short events, Clock::time_point until) {
  while (true) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 60000)));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

// The numeric address and port of a socket's peer (`local`: its own).
std::string address_of(socket_t fd, int& port, bool local = false) {
  sockaddr_storage sa{};
  socklen_t len = sizeof(sa);
  const int r = local ? ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len)
                      : ::getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  char host[NI_MAXHOST] = "", serv[NI_MAXSERV] = "";
  if (r != 0 || ::getnameinfo(reinterpret_cast<sockaddr*>(&sa), len, host, sizeof(host), serv,
                              sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "unknown";
  port = std::atoi(serv);
  return host;
}

// Answers with `status` and a JSON error, as far as the socket takes it
// without waiting, then closes. Status 0: closes without a word.
void close_conn(socket_t fd, int status, const std::string& why) {
  if (status != 0) {
    const std::string body = error_response(status, why).body;
    std::string head = fmt::format(
        "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: "
        "close\r\n",
        status, reason(status), body.size());
    for (const auto& [k, v] : security_headers()) head += k + ": " + v + "\r\n";
    head += "\r\n";
    const std::string all = head + body;
    [[maybe_unused]] auto sent = ::send(fd, all.data(), all.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  ::shutdown(fd, SHUT_WR);
  // What the client sent and nobody read would turn the close into a reset
  // that can discard the answer before the client reads it.
  char sink[4096];
  for (int i = 0; i < 16 && ::recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; ++i) {
  }
  ::close(fd);
}

// What a body over the limit is answered (413), whether its Content-Length
// gives its size or its chunk-size lines pass the limit: one message.
std::string too_large(std::string_view size, size_t limit) {
  return fmt::format("a request body of {} bytes is over the {} this server takes", size, limit);
}

// A chunked body's framing (RFC 9112 §7.1), followed as httplib reads it
// through a ConnStream. httplib 0.11 reads a chunked body of any size (a
// body over the limit was read until the stream's own cap, then "400
// malformed"; 1 MiB + 1 was read whole), takes "0x10", " 10" and "+10" as
// sizes, and takes a chunk's data not followed by CR LF as the body's
// end, leaving what follows for the next request. Here the decoded bytes
// stop at the limit a Content-Length has, as soon as a chunk-size line
// announces more (nothing of that chunk is read), the framing is bounded
// as a request's head is (a body of one-byte chunks is six bytes a byte),
// and a framing that is not HTTP's stops the read.
class Chunks {
 public:
  // Follows the stream's next byte on: the body's first.
  void start(const GateLimits& l) {
    *this = {};
    state_ = kSize;
    limit_ = l.body_bytes;
    framing_limit_ = l.header_bytes;
  }
  void stop() { *this = {}; }
  // Takes the next `n` bytes httplib reads; false when the read must stop
  // (refusal() says why).
  bool take(const char* p, size_t n) {
    while (n > 0 && state_ != kOff && state_ != kDone) {
      if (state_ == kFailed) return false;
      if (state_ == kData) {
        const size_t k = static_cast<size_t>(std::min<uint64_t>(n, left_));
        p += k;
        n -= k;
        left_ -= k;
        if (left_ == 0) state_ = kDataCr;
        continue;
      }
      if (!step(*p++)) return false;
      --n;
    }
    return state_ != kFailed;
  }
  const Refusal& refusal() const { return refusal_; }

 private:
  enum State {
    kOff,
    kSize,
    kBlank,
    kExt,
    kSizeLf,
    kData,
    kDataCr,
    kDataLf,
    kLastCr,
    kLastLf,
    kDone,
    kFailed
  };
  // Sizes are kept up to this: past the limit all the same, and "at least"
  // a size this large is still true.
  static constexpr uint64_t kCap = uint64_t{1} << 59;

  bool fail(int status, std::string why) {
    state_ = kFailed;
    refusal_ = {status, std::move(why)};
    return false;
  }
  bool malformed(std::string_view what) {
    return fail(400, fmt::format("a chunked request body is malformed (RFC 9112 §7.1): {}", what));
  }
  bool step(char ch);
  bool size_line_ends();

  State state_ = kOff;
  size_t limit_ = 0, framing_limit_ = 0, framing_ = 0;
  uint64_t decoded_ = 0;  // announced by the chunk-size lines so far
  uint64_t size_ = 0, left_ = 0;
  bool digits_ = false;
  Refusal refusal_;
};

// One byte of framing: a chunk-size line (1*HEXDIG, then blanks or a
// ";" extension), the CR LF after a chunk's data, the last chunk's empty
// line (httplib takes no trailer fields).
bool Chunks::step(char ch) {
  if (++framing_ > framing_limit_)
    return fail(413, fmt::format("a chunked request body's framing (its chunk-size lines) is over "
                                 "{} KiB: send it in fewer chunks, or with Content-Length",
                                 framing_limit_ / 1024));
  const auto u = static_cast<unsigned char>(ch);
  switch (state_) {
    case kSize:
      if (std::isxdigit(u)) {
        const uint64_t d = std::isdigit(u) ? u - '0' : std::tolower(u) - 'a' + 10;
        size_ = std::min(size_ * 16 + d, kCap);
        digits_ = true;
        return true;
      }
      if (!digits_) return malformed("a chunk size that is not hex digits");
      [[fallthrough]];
    case kBlank:
      state_ = ch == ';' ? kExt : ch == '\r' ? kSizeLf : kBlank;
      if (ch == ';' || ch == '\r' || ch == ' ' || ch == '\t') return true;
      return malformed("a chunk size followed by what is not an extension (';')");
    case kExt:
      if (ch == '\r') state_ = kSizeLf;
      if ((u >= 0x20 && u != 0x7f) || ch == '\t' || ch == '\r') return true;
      return malformed(fmt::format("a chunk extension holds the control byte 0x{:02x}", u));
    case kSizeLf:
      if (ch != '\n') return malformed("a chunk-size line that does not end in CR LF");
      return size_line_ends();
    case kDataCr:
    case kDataLf:
      if (ch != (state_ == kDataCr ? '\r' : '\n'))
        return malformed("a chunk's data is not followed by CR LF (its size is not its length)");
      state_ = state_ == kDataCr ? kDataLf : kSize;
      return true;
    case kLastCr:
    case kLastLf:
      if (ch != (state_ == kLastCr ? '\r' : '\n'))
        return malformed("trailer fields after the last chunk are not taken: end it with CR LF");
      state_ = state_ == kLastCr ? kLastLf : kDone;
      return true;
    default:
      return true;
  }
}

// A chunk-size line is whole: the last chunk's (0), or one whose data is
// read when the body stays within the limit.
bool Chunks::size_line_ends() {
  if (size_ == 0) {
    state_ = kLastCr;
    return true;
  }
  if (size_ > limit_ - decoded_)
    return fail(413, too_large(fmt::format("at least {}", decoded_ + size_), limit_));
  decoded_ += size_;
  left_ = size_;
  size_ = 0;
  digits_ = false;
  state_ = kData;
  return true;
}

// The chunked body of the request this thread serves (GatedServer's
// normalize starts it).
thread_local Chunks t_chunks;

// A worker's view of a connection: the bytes the poller read, then the
// socket, within the body's deadline and size.
class ConnStream : public httplib::Stream {
 public:
  // `others_waiting` says whether complete requests wait for a worker.
  ConnStream(Conn& c, const GateLimits& l, std::function<bool()> others_waiting)
      : c_(c),
        limits_(l),
        read_until_(Clock::now() + l.body),
        others_waiting_(std::move(others_waiting)) {}

  bool is_readable() const override {
    if (off_ < c_.buf.size() || wait_for(c_.fd, POLLIN, read_until_)) return true;
    t_body_late = Clock::now() >= read_until_;
    return false;
  }
  bool is_writable() const override { return writable(); }
  ssize_t read(char* ptr, size_t size) override {
    if (off_ == c_.buf.size()) {
      const ssize_t n = fill();
      if (n <= 0) return n;
    }
    const size_t k = std::min(size, c_.buf.size() - off_);
    // Where a chunked body must stop, httplib's read of it fails.
    if (!t_chunks.take(c_.buf.data() + off_, k)) return -1;
    std::memcpy(ptr, c_.buf.data() + off_, k);
    off_ += k;
    return static_cast<ssize_t>(k);
  }
  // Collected and sent together (flush()): httplib writes an answer's
  // head and body apart, and two small segments would wait on the
  // client's delayed acknowledgement.
  ssize_t write(const char* ptr, size_t size) override {
    out_.append(ptr, size);
    if (out_.size() >= kOutChunk && !flush()) return -1;
    return static_cast<ssize_t>(size);
  }
  // Sends what write() collected; false when the client takes nothing of
  // it for write_stall, or is gone.
  bool flush() {
    size_t done = 0;
    while (done < out_.size()) {
      const ssize_t n =
          ::send(c_.fd, out_.data() + done, out_.size() - done, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n > 0) {
        done += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
      if (!writable()) return false;
    }
    out_.clear();
    return true;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = c_.addr;
    port = c_.port;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = address_of(c_.fd, port, true);
  }
  // httplib asks only to refuse a descriptor select() could not watch;
  // this stream polls.
  socket_t socket() const override { return c_.fd < FD_SETSIZE ? c_.fd : INVALID_SOCKET; }

  // Keeps what came after the request (a pipelined next one) in the buffer.
  void keep_rest() {
    c_.buf.erase(0, off_);
    off_ = 0;
  }

 private:
  // Whether the client takes more of the answer: within write_stall, or
  // write_share once other requests wait for a worker (a client that does
  // not read holds a worker no longer than its share then).
  bool writable() const {
    const auto start = Clock::now();
    const auto until = start + limits_.write_stall;
    for (;;) {
      const auto slice = std::min(until, Clock::now() + std::chrono::milliseconds(100));
      if (wait_for(c_.fd, POLLOUT, slice)) return true;
      const auto now = Clock::now();
      if (now >= until) return false;
      if (now - start >= limits_.write_share && others_waiting_ && others_waiting_()) return false;
    }
  }

  // Reads more from the socket: bytes read, 0 at its end, -1 past the
  // deadline or more than any request this server takes.
  ssize_t fill() {
    // What was written first (100 Continue) is what the client waits for.
    if (!flush()) return -1;
    if (from_socket_ > limits_.header_bytes + limits_.body_bytes) return -1;
    c_.buf.clear();
    off_ = 0;
    char tmp[16384];
    while (true) {
      if (!wait_for(c_.fd, POLLIN, read_until_)) {
        t_body_late = Clock::now() >= read_until_;
        return -1;
      }
      const ssize_t n = ::recv(c_.fd, tmp, sizeof(tmp), MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
      if (n > 0) {
        c_.buf.assign(tmp, static_cast<size_t>(n));
        from_socket_ += static_cast<size_t>(n);
      }
      return n;
    }
  }

  static constexpr size_t kOutChunk = 64 * 1024;

  Conn& c_;
  const GateLimits& limits_;
  Clock::time_point read_until_;
  std::function<bool()> others_waiting_;
  size_t off_ = 0, from_socket_ = 0;
  std::string out_;  // written, not yet sent
};

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == npos) return {};
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Whether a Host value is one host (RFC 9112 §3.2: uri-host [":" port]):
// a name or an IPv4 address, or an IPv6 address in brackets, then at most
// a port. A name is letters, digits, '-', '.', '_' and '~' (RFC 3986's
// unreserved): the rest of its reg-name (',', ';', '%'...) is in no DNS
// name, and a comma is how a proxy joins two Hosts into one list. Empty is
// one (a target without an authority).
bool one_host(std::string_view v) {
  if (v.empty()) return true;
  const auto in = [](std::string_view s, auto ok) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [&](char ch) { return ok(ch); });
  };
  size_t end = 0;
  if (v[0] == '[') {
    end = v.find(']');
    if (end == npos || !in(v.substr(1, end - 1), [](char ch) {
          return std::isxdigit(static_cast<unsigned char>(ch)) || ch == ':' || ch == '.';
        }))
      return false;
    ++end;
  } else {
    end = std::min(v.find(':'), v.size());
    if (!in(v.substr(0, end), [](char ch) {
          return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.' ||
                 ch == '_' || ch == '~';
        }))
      return false;
  }
  // A port is empty (RFC 3986 §3.2.3 allows "host:") or a number to 65535.
  const std::string_view port = v.substr(end);
  int n = 0;
  return port.empty() || port == ":" ||
         (port[0] == ':' && port.size() <= 6 &&
          std::all_of(port.begin() + 1, port.end(),
                      [](char ch) { return ch >= '0' && ch <= '9'; }) &&
          std::from_chars(port.data() + 1, port.data() + port.size(), n).ec == std::errc() &&
          n <= 65535);
}

// Why the header lines of `head` (head_problem passed them: each ends in
// CR LF, none is folded) cannot be read as one field each, as whatever is
// in front of this server reads them, with Host once (RFC 9112 §3.2: a
// server MUST answer 400 to more than one Host, or to an invalid one; the
// access check reads the first, and a second one went through): a line
// that is not a field name (a token) and a colon (§5.1: a blank before
// the colon MUST be refused; httplib takes "Host :" as another name, and
// skips a line without a colon), a second Host, or a Host that is not one
// host ("a, b"). Empty when they are all fields.
std::string field_problem(std::string_view head) {
  static constexpr std::string_view kTchar = "!#$%&'*+-.^_`|~";
  const auto shown = [](std::string_view s) { return core::escape_cut(s, 100); };
  int hosts = 0;
  for (size_t at = head.find("\r\n") + 2; at < head.size();) {
    const size_t next = head.find("\r\n", at);
    const std::string_view line = head.substr(at, next - at);
    at = next + 2;
    if (line.empty()) break;  // the blank line that ends them
    const std::string_view name = line.substr(0, line.find(':'));
    if (name.size() == line.size() || name.empty() ||
        !std::all_of(name.begin(), name.end(), [&](char ch) {
          return std::isalnum(static_cast<unsigned char>(ch)) || kTchar.find(ch) != npos;
        }))
      return fmt::format(
          "the header line '{}' is not a field name and a colon (RFC 9112 §5.1): send "
          "'Name: value', with no blank before the colon",
          shown(line));
    const std::string field = lower(std::string(name));
    // The fields that frame the body: httplib drops a field without a
    // value, so an empty one made a body the next request's first bytes.
    if ((field == "content-length" || field == "transfer-encoding") &&
        trim(std::string(line.substr(name.size() + 1))).empty())
      return fmt::format("{} has no value: send the body's length in bytes, or chunked",
                         field == "content-length" ? "Content-Length" : "Transfer-Encoding");
    if (field != "host") continue;
    if (++hosts > 1)
      return "a request with more than one Host header is refused (RFC 9112 §3.2): send one";
    const std::string value = trim(std::string(line.substr(name.size() + 1)));
    if (!one_host(value))
      return fmt::format(
          "Host '{}' is not one host name or address, with a port or not (RFC 9112 "
          "§3.2): send the one host this request is for",
          shown(value));
  }
  return {};
}

// Why the authority of a request target in absolute-form (RFC 9112 §3.2.2:
// "http://host:port/path", which stands for Host) is not one host: held to
// Host's own rule (one_host), and not empty (RFC 9110 §4.2.1: an http URI
// with an empty host is invalid). Empty for any other target.
std::string target_problem(std::string_view head) {
  const std::string_view line = head.substr(0, head.find("\r\n"));
  const size_t space = line.find(' ');
  if (space == npos) return {};
  const std::string_view target = line.substr(space + 1, line.rfind(' ') - space - 1);
  const std::string scheme = lower(std::string(target.substr(0, 8)));
  const size_t from = scheme.starts_with("http://") ? 7 : scheme.starts_with("https://") ? 8 : 0;
  if (from == 0) return {};
  const std::string_view authority = target.substr(from, target.find_first_of("/?#", from) - from);
  if (!authority.empty() && one_host(authority)) return {};
  return fmt::format(
      "the request target '{}' does not name one host (RFC 9112 §3.2.2): send 'http://HOST:PORT/"
      "path', or the path alone with a Host header",
      core::escape_cut(target, 200));
}

// Why a request's query cannot be read as one value per parameter: a
// parameter given twice ("?limit=1&limit=2", "?a=w1&b=w1&a=lm") was read
// as its first value, silently, where the CLI refuses a repeated option.
// Names are compared decoded ("%6Cimit" is "limit"). Empty when each is
// given once.
std::string query_problem(std::string_view head) {
  const auto words = line_words(head);
  if (words.size() != 3) return {};
  const std::string_view target = words[1];
  const size_t mark = target.find('?');
  if (mark == npos) return {};
  const std::string_view query = target.substr(mark + 1);
  std::set<std::string> names;
  for (size_t at = 0; at < query.size();) {
    const size_t end = std::min(query.find('&', at), query.size());
    const std::string_view pair = query.substr(at, end - at);
    at = end + 1;
    std::string name =
        httplib::detail::decode_url(std::string(pair.substr(0, pair.find('='))), true);
    if (!name.empty() && !names.insert(name).second)
      return fmt::format("the query gives '{}' more than once: give each parameter once",
                         core::escape_cut(name, 80));
  }
  return {};
}

// Why a request target is none of the forms this server takes (RFC 9112
// §3.2): origin-form ("/path?query"), absolute-form ("http://host/path",
// whose authority target_problem judges), or "*" in an OPTIONS
// (asterisk-form, §3.2.4). "?a=1" was served as the path "a=1", and "GET *"
// looked up as a page after the token. Empty when it is one of them, or
// the line is not three words (httplib answers that).
std::string form_problem(std::string_view head) {
  const auto words = line_words(head);
  if (words.size() != 3) return {};
  const std::string_view target = words[1];
  const std::string scheme = lower(std::string(target.substr(0, 8)));
  if (target.starts_with('/') || scheme.starts_with("http://") || scheme.starts_with("https://") ||
      (target == "*" && words[0] == "OPTIONS"))
    return {};
  if (target == "*")
    return fmt::format(
        "{} *: the request target '*' is only an OPTIONS' (RFC 9112 §3.2.4): send a path, "
        "'/...'",
        shown_word(words[0]));
  return fmt::format(
      "{} {}: the request target is not a path (RFC 9112 §3.2.1): send '/path', a query "
      "after it ('/path?a=1')",
      shown_word(words[0]), shown_word(target));
}

// Writes each '?' of the request target after its first as %3F, in `buf`
// (the request's line and headers, up to `head_end`, which moves with
// them). A query may hold '?' (RFC 3986 §3.4: "q=a?b"), and httplib
// refused a target with two (400); the query's values are decoded from the
// target (server.cc), where %3F is '?' again.
void encode_query_marks(std::string& buf, size_t& head_end) {
  const size_t line_end = buf.find("\r\n");
  const size_t first = buf.find('?');
  if (first == npos || first >= line_end) return;
  // The target ends where the version, the line's last word, begins.
  const size_t version = buf.rfind(' ', line_end);
  if (version == npos || version < first) return;
  std::string target;
  for (size_t i = first + 1; i < version; ++i) {
    if (buf[i] == '?') {
      target += "%3F";
    } else {
      target += buf[i];
    }
  }
  if (target.size() == version - first - 1) return;
  buf.replace(first + 1, version - first - 1, target);
  head_end += target.size() - (version - first - 1);
}

// Whether a request's line and headers announce a body: a
// Transfer-Encoding, or a Content-Length other than 0 (a body a worker
// then reads, or drops).
bool announces_body(std::string_view head) {
  for (size_t at = head.find("\r\n") + 2; at < head.size();) {
    const size_t next = std::min(head.find("\r\n", at), head.size());
    const std::string_view line = head.substr(at, next - at);
    at = next + 2;
    const size_t colon = line.find(':');
    if (colon == npos) continue;
    const std::string name = lower(std::string(line.substr(0, colon)));
    if (name == "transfer-encoding") return true;
    if (name == "content-length" &&
        trim(std::string(line.substr(colon + 1))).find_first_not_of('0') != npos)
      return true;
  }
  return false;
}

// Every value of header `key`, split at commas, trimmed, lowercased.
std::vector<std::string> values(const httplib::Request& req, const char* key) {
  std::vector<std::string> out;
  for (auto [it, end] = req.headers.equal_range(key); it != end; ++it)
    for (const auto& v : core::split_list(it->second)) out.push_back(lower(trim(v)));
  return out;
}

// Takes the Range headers out of the request whose line and headers end at
// `head_end` in `buf` (head_problem passed them: each line ends in CR LF),
// moving `head_end` to the end of what is left, and gives their values,
// trimmed and joined with ", " (empty: none). A header is Range when its
// name up to the colon is, in any case: what httplib reads as one.
std::string take_ranges(std::string& buf, size_t& head_end) {
  std::string kept, ranges;
  size_t at = buf.find("\r\n") + 2;  // past the request line
  kept.append(buf, 0, at);
  while (at < head_end) {
    const size_t next = buf.find("\r\n", at) + 2;
    const std::string line = buf.substr(at, next - at);
    const size_t colon = line.find(':');
    if (colon != npos && lower(line.substr(0, colon)) == "range") {
      const std::string value = trim(line.substr(colon + 1, line.size() - colon - 3));
      ranges += ranges.empty() || value.empty() ? value : ", " + value;
    } else {
      kept += line;
    }
    at = next;
  }
  if (kept.size() != head_end) {
    buf.replace(0, head_end, kept);
    head_end = kept.size();
  }
  return ranges;
}

// Reads and drops `n` bytes of a body no route read (within the body's
// deadline and size, as ConnStream reads); false when they do not all
// come, or their number is not known (n < 0).
bool discard(httplib::Stream& strm, int64_t n) {
  char sink[16384];
  while (n > 0) {
    const ssize_t k = strm.read(sink, static_cast<size_t>(std::min<int64_t>(n, sizeof(sink))));
    if (k <= 0) return false;
    n -= k;
  }
  return n == 0;
}

}  // namespace gate

using gate::Clock;
using gate::Conn;

// The task queue httplib's listening loop hands each accepted socket to
// (enqueue runs it at once: GatedServer::process_and_close_socket admits
// it), a poller thread and the workers.
class Gate : public httplib::TaskQueue {
 public:
  Gate(GatedServer& server, int workers)
      : server_(server),
        limits_(server.limits()),
        body_share_(std::max(1, std::min(limits_.bodies_per_client, workers / 2))),
        body_total_(std::max(1, workers - std::max(1, workers / 4))) {
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0)
      throw std::system_error(errno, std::generic_category(), "pipe2");
    poller_ = std::thread([this] { poll_loop(); });
    for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { work_loop(); });
  }
  ~Gate() override {
    ::close(wake_[0]);
    ::close(wake_[1]);
  }

  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override;
  void admit(socket_t fd);

 private:
  void wake() { [[maybe_unused]] auto n = ::write(wake_[1], "x", 1); }
  void drop(Conn& c, int status, const std::string& why);
  void hand(Conn c);
  // Hands a request whose head ends at `head_end` on, or refuses it (400).
  void pass(Conn c, size_t head_end);
  bool take_inbox();
  bool make_room(Conn& c);
  int timeout_ms() const;
  void poll_loop();
  std::list<Conn>::iterator on_readable(std::list<Conn>::iterator it);
  void expire();
  std::deque<Conn>::iterator next_ready();
  void work_loop();
  void serve(Conn& c);

  GatedServer& server_;
  const GateLimits& limits_;
  // Requests of one address whose bodies workers read at once, at most
  // (GateLimits::bodies_per_client, and half the workers).
  const int body_share_;
  // Requests of all addresses whose bodies workers read at once, at most:
  // a quarter of the workers (at least one) stays for requests without a
  // body, however many addresses trickle bodies.
  const int body_total_;
  int bodies_in_all_ = 0;
  int wake_[2] = {-1, -1};  // a pipe whose byte interrupts the poller's wait
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Conn> inbox_;             // admitted, or back from a worker
  std::deque<Conn> ready_;              // complete requests for the workers
  std::set<socket_t> busy_;             // connections a worker serves
  std::map<std::string, int> clients_;  // open connections per address
  std::map<std::string, int> serving_;  // per address: workers serving a request of its
  std::map<std::string, int> bodies_;   // per address: workers reading a body of its
  int total_ = 0;
  bool stop_ = false;
  std::list<Conn> waiting_;  // the poller's own, oldest first
  std::thread poller_;
  std::vector<std::thread> workers_;
};

void Gate::admit(socket_t fd) {
  // Answers go out whole (ConnStream::flush): nothing to gain from Nagle.
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  Conn c;
  c.fd = fd;
  c.addr = gate::address_of(fd, c.port);
  c.deadline = Clock::now() + limits_.header;
  {
    std::lock_guard lock(mu_);
    if (stop_) return gate::close_conn(fd, 0, {});
    ++clients_[c.addr];
    ++total_;
    inbox_.push_back(std::move(c));
  }
  wake();
}

void Gate::drop(Conn& c, int status, const std::string& why) {
  gate::close_conn(c.fd, status, why);
  std::lock_guard lock(mu_);
  if (--clients_[c.addr] <= 0) clients_.erase(c.addr);
  --total_;
}

void Gate::pass(Conn c, size_t head_end) {
  const std::string_view head = std::string_view(c.buf).substr(0, head_end);
  int status = 400;
  std::string why = gate::head_problem(head);
  if (why.empty()) why = gate::line_problem(head, status);
  if (why.empty()) why = gate::field_problem(head);
  if (why.empty()) why = gate::target_problem(head);
  if (why.empty()) why = gate::form_problem(head);
  if (why.empty()) why = gate::query_problem(head);
  // httplib, the library linked, reads a header line of at most 8 KiB
  // (CPPHTTPLIB_HEADER_MAX_LENGTH, built into it) and answered a longer one
  // 400 "a malformed request": it is named here, 431.
  for (size_t at = head.find("\r\n") + 2; why.empty() && at < head.size();) {
    const size_t end = head.find("\r\n", at);
    if (end == std::string_view::npos) break;
    if (end - at > 8192) {
      status = 431;
      why = "a header line is over 8 KiB: send shorter headers (a smaller Cookie)";
    }
    at = end + 2;
  }
  if (!why.empty()) return drop(c, status, why);
  c.body = gate::announces_body(head);
  c.range = gate::take_ranges(c.buf, head_end);
  gate::encode_query_marks(c.buf, head_end);
  gate::serve_minor_as_1_1(c.buf);
  hand(std::move(c));
}

void Gate::hand(Conn c) {
  {
    std::lock_guard lock(mu_);
    ready_.push_back(std::move(c));
  }
  cv_.notify_one();
}

// Moves what was admitted or came back into waiting_; false once stopping.
bool Gate::take_inbox() {
  std::vector<Conn> in;
  {
    std::lock_guard lock(mu_);
    if (stop_) return false;
    in.swap(inbox_);
  }
  for (auto& c : in)
    if (c.returning || make_room(c)) waiting_.push_back(std::move(c));
  return true;
}

// A new connection over its client's limits or the server's: a connection
// of that client (of any, over the server's) still sending its headers is
// closed for it, an idle one first, else the oldest; with none, the new
// one is refused. False when it was.
bool Gate::make_room(Conn& c) {
  const auto waiting = [&] {
    return std::count_if(waiting_.begin(), waiting_.end(),
                         [&](const Conn& w) { return w.addr == c.addr; });
  };
  int open = 0, total = 0;
  {
    std::lock_guard lock(mu_);
    open = clients_[c.addr];
    total = total_;
  }
  const bool server_full = total > limits_.connections;
  bool client_full = open > limits_.per_client;
  if (!client_full && !server_full && waiting() >= limits_.waiting_per_client) {
    // Before one is judged still sending: read what they sent meanwhile (a
    // burst of complete requests from one address goes to the workers).
    for (auto it = waiting_.begin(); it != waiting_.end();)
      it = it->addr == c.addr ? on_readable(it) : std::next(it);
    client_full = waiting() >= limits_.waiting_per_client;
  }
  if (!client_full && !server_full) return true;
  auto victim = waiting_.end();
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    if (!server_full && it->addr != c.addr) continue;
    if (victim == waiting_.end() || (it->idle && !victim->idle)) victim = it;
  }
  if (victim == waiting_.end()) {
    drop(c, 503,
         server_full ? fmt::format("the server holds {} connections, its most: retry later", total)
                     : fmt::format("{} has {} connections open, at most {}: close some and retry",
                                   c.addr, open - 1, limits_.per_client));
    return false;
  }
  drop(*victim, victim->idle ? 0 : 429,
       fmt::format("{} opened more connections than the {} still sending their request a client "
                   "may have: its oldest is closed",
                   victim->addr, limits_.waiting_per_client));
  waiting_.erase(victim);
  return true;
}

int Gate::timeout_ms() const {
  if (waiting_.empty()) return -1;
  auto first = waiting_.front().deadline;
  for (const auto& c : waiting_) first = std::min(first, c.deadline);
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(first - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 60000));
}

void Gate::poll_loop() {
  std::vector<pollfd> fds;
  while (take_inbox()) {
    fds.assign(1, pollfd{wake_[0], POLLIN, 0});
    for (const auto& c : waiting_) fds.push_back(pollfd{c.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), timeout_ms()) < 0 && errno != EINTR)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    char drain[64];
    while (::read(wake_[0], drain, sizeof(drain)) > 0) {
    }
    size_t i = 1;
    for (auto it = waiting_.begin(); it != waiting_.end(); ++i)
      it = fds[i].revents != 0 ? on_readable(it) : std::next(it);
    expire();
  }
  for (auto& c : waiting_) drop(c, 0, {});
  waiting_.clear();
}

// Reads what a waiting connection sent: a complete request goes to the
// workers; a closed connection, or headers over their size, end it.
std::list<Conn>::iterator Gate::on_readable(std::list<Conn>::iterator it) {
  Conn& c = *it;
  char tmp[16384];
  const size_t room = limits_.header_bytes + 1 - std::min(c.buf.size(), limits_.header_bytes);
  const ssize_t n = ::recv(c.fd, tmp, std::min(sizeof(tmp), room), MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return std::next(it);
  if (n <= 0) {
    drop(c, 0, {});
    return waiting_.erase(it);
  }
  c.buf.append(tmp, static_cast<size_t>(n));
  if (c.idle) {
    c.idle = false;
    c.deadline = Clock::now() + limits_.header;
  }
  gate::skip_empty_lines(c);
  if (const size_t end = gate::header_end(c.buf, c.scanned, c.last_nl); end != gate::npos) {
    pass(std::move(c), end);
    return waiting_.erase(it);
  }
  if (c.buf.size() > limits_.header_bytes) {
    drop(c, 431,
         fmt::format("the request's line and headers are over {} KiB: send a shorter request",
                     limits_.header_bytes / 1024));
    return waiting_.erase(it);
  }
  return std::next(it);
}

void Gate::expire() {
  const auto now = Clock::now();
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->deadline > now) {
      ++it;
      continue;
    }
    // A kept-alive connection with no next request ends without a word.
    drop(*it, it->idle ? 0 : 408,
         fmt::format("the request's line and headers did not all arrive within {} s",
                     std::chrono::duration_cast<std::chrono::seconds>(limits_.header).count()));
    it = waiting_.erase(it);
  }
}

// The first complete request a worker may take (mu_ held): one without a
// body, or one of an address whose bodies fewer than body_share_ workers
// read. A client that trickles its bodies holds no more workers than that:
// its other requests with a body wait, and everyone else's are served.
// The ready request to serve next: of those that may go (a body only
// within its address's share and the bodies' total), the first of the
// address that workers serve least now. One address's many requests (slow
// readers of large answers) never queue every other address behind them.
std::deque<Conn>::iterator Gate::next_ready() {
  auto best = ready_.end();
  int best_serving = 0;
  for (auto it = ready_.begin(); it != ready_.end(); ++it) {
    if (it->body) {
      const auto held = bodies_.find(it->addr);
      if (bodies_in_all_ >= body_total_ || (held != bodies_.end() && held->second >= body_share_))
        continue;
    }
    const auto at = serving_.find(it->addr);
    const int n = at == serving_.end() ? 0 : at->second;
    if (best == ready_.end() || n < best_serving) best = it, best_serving = n;
    if (n == 0) break;  // none fewer
  }
  return best;
}

void Gate::work_loop() {
  while (true) {
    Conn c;
    {
      std::unique_lock lock(mu_);
      auto next = ready_.end();
      cv_.wait(lock, [&] { return stop_ || (next = next_ready()) != ready_.end(); });
      if (stop_) return;  // shutdown() closes what is left
      c = std::move(*next);
      ready_.erase(next);
      busy_.insert(c.fd);
      ++serving_[c.addr];
      if (c.body) {
        ++bodies_[c.addr];
        ++bodies_in_all_;
      }
    }
    serve(c);
  }
}

// Serves the request at the head of c.buf, then hands the connection on:
// to a worker again (a pipelined request), to the poller (kept alive), or
// closes it (asked to, refused before its route, or its last request).
void Gate::serve(Conn& c) {
  bool keep = false, closed = false;
  const bool body = c.body;
  {
    gate::ConnStream strm(c, limits_, [this] {
      std::lock_guard lock(mu_);
      return next_ready() != ready_.end();
    });
    gate::t_routed = false;
    gate::t_body_late = false;
    gate::t_range = std::move(c.range);
    c.range.clear();
    const bool last = ++c.served >= limits_.requests_per_connection;
    try {
      keep = server_.serve_one(strm, last, closed) && gate::t_routed && !closed && !last;
      keep = strm.flush() && keep;
    } catch (...) {
      keep = false;  // the connection's state is unknown: end it
    }
    strm.keep_rest();
  }
  {
    std::lock_guard lock(mu_);
    busy_.erase(c.fd);
    if (--serving_[c.addr] <= 0) serving_.erase(c.addr);
    if (body) --bodies_in_all_;
    if (body && --bodies_[c.addr] <= 0) bodies_.erase(c.addr);
    keep = keep && !stop_;
  }
  // A request of its address that waited for this one's body may go now.
  if (body) cv_.notify_all();
  if (!keep) return drop(c, 0, {});
  c.scanned = 0;
  c.last_nl = gate::npos;
  gate::skip_empty_lines(c);
  if (const size_t end = gate::header_end(c.buf, c.scanned, c.last_nl); end != gate::npos)
    return pass(std::move(c), end);
  c.idle = c.buf.empty();
  c.deadline = Clock::now() + (c.idle ? limits_.idle : limits_.header);
  c.returning = true;
  {
    std::lock_guard lock(mu_);
    inbox_.push_back(std::move(c));
  }
  wake();
}

void Gate::shutdown() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    // A worker waiting on its client returns at once.
    for (socket_t fd : busy_) ::shutdown(fd, SHUT_RDWR);
  }
  cv_.notify_all();
  wake();
  poller_.join();
  for (auto& t : workers_) t.join();
  std::vector<Conn> left;
  {
    std::lock_guard lock(mu_);
    for (auto& c : ready_) left.push_back(std::move(c));
    for (auto& c : inbox_) left.push_back(std::move(c));
    ready_.clear();
    inbox_.clear();
  }
  for (auto& c : left) drop(c, 0, {});
  server_.gate_ = nullptr;
}

GatedServer::GatedServer(int workers, GateLimits limits)
    : workers_(std::max(1, workers)), limits_(limits) {
  set_payload_max_length(limits_.body_bytes);
  // What httplib's Keep-Alive header says: the Gate's own limits.
  set_keep_alive_timeout(std::chrono::duration_cast<std::chrono::seconds>(limits_.idle).count());
  set_keep_alive_max_count(static_cast<size_t>(limits_.requests_per_connection));
  new_task_queue = [this] {
    auto* g = new Gate(*this, workers_);
    gate_ = g;
    return g;
  };
}

GatedServer::~GatedServer() = default;

void GatedServer::routed() { gate::t_routed = true; }

bool GatedServer::body_timed_out() { return gate::t_body_late; }

const Refusal& GatedServer::body_refused() { return gate::t_chunks.refusal(); }

const std::string& GatedServer::range() { return gate::t_range; }

void GatedServer::widen_backlog() {
  if (const socket_t sock = svr_sock_; sock != INVALID_SOCKET) ::listen(sock, SOMAXCONN);
}

bool GatedServer::process_and_close_socket(socket_t sock) {
  if (gate_) {
    gate_->admit(sock);
  } else {
    gate::close_conn(sock, 0, {});
  }
  return true;
}

namespace {

// RFC 9112 §3.2.2: a server takes a request target in absolute-form
// ("http://host:port/path?query", as sent through a proxy) as the origin
// form, the authority standing for Host.
void take_absolute_form(httplib::Request& req) {
  auto scheme_end = [](const std::string& t) -> size_t {
    const std::string head = gate::lower(t.substr(0, 8));
    if (head.starts_with("http://")) return 7;
    if (head.starts_with("https://")) return 8;
    return 0;
  };
  const size_t from = scheme_end(req.target);
  if (from == 0) return;
  const size_t path = std::min(req.target.find_first_of("/?", from), req.target.size());
  const std::string authority = req.target.substr(from, path - from);
  const std::string rest = req.target.substr(path);
  req.target = rest.empty() || rest[0] == '?' ? "/" + rest : rest;
  if (const size_t p = scheme_end(req.path); p > 0) {
    const size_t at = std::min(req.path.find('/', p), req.path.size());
    req.path = at == req.path.size() ? "/" : req.path.substr(at);
  }
  req.headers.erase("Host");
  req.headers.emplace("Host", authority);
}

// Takes out the Expect: 100-continue lines of a request; true when it had one.
bool drop_continue(httplib::Request& req) {
  bool had = false;
  for (auto [it, end] = req.headers.equal_range("Expect"); it != end;) {
    if (it->second == "100-continue") {
      it = req.headers.erase(it);
      had = true;
    } else {
      ++it;
    }
  }
  return had;
}

// Accept-Encoding as httplib reads it, by substring ("gzip" anywhere): only
// the codings the client accepts, q > 0 (RFC 9110 §12.5.3: "gzip;q=0"
// refuses gzip; a q that is not a number is taken as 0). None left: the
// header goes, and the answer is not compressed.
void accepted_codings(httplib::Request& req) {
  if (!req.has_header("Accept-Encoding")) return;
  std::string kept;
  for (const auto& item : gate::values(req, "Accept-Encoding")) {
    const size_t semi = item.find(';');
    const std::string coding = gate::trim(item.substr(0, semi));
    double q = 1;
    for (size_t at = semi; at != std::string::npos;) {
      const size_t next = item.find(';', at + 1);
      const std::string param = gate::trim(item.substr(at + 1, next - at - 1));
      if (param.starts_with("q=")) {
        char* end = nullptr;
        q = std::strtod(param.c_str() + 2, &end);
        if (end == param.c_str() + 2 || *end != '\0' || !(q >= 0 && q <= 1)) q = 0;
      }
      at = next;
    }
    if (q > 0 && !coding.empty()) kept += (kept.empty() ? "" : ", ") + coding;
  }
  req.headers.erase("Accept-Encoding");
  if (!kept.empty()) req.headers.emplace("Accept-Encoding", kept);
}

// Before httplib looks at a request: an Expect of 100-continue in any case
// is the one it answers, and a request without Content-Length or
// Transfer-Encoding has no body (RFC 9112 §6.3), where httplib would read
// until the connection closes. httplib reads the body of a POST, PUT,
// PATCH or DELETE only: another's (a GET's, a HEAD's, an OPTIONS') would
// be read as the next request on the connection. Its length is noted
// (t_unread) for serve_one to read it after the answer; a chunked one's is
// not known, and the answer says the connection closes. Its
// Transfer-Encoding lines become one, the list unsupported() judges:
// httplib reads a body as chunked only when the first line's value is
// "chunked" alone, so that "chunked," (an empty list element, which RFC
// 9110 §5.6.1 says to take) was judged chunked and read until the client
// closed. A chunked body is followed as it is read (Chunks), within
// `limits`. A GET or a HEAD is answered without 100 Continue. A
// Connection list that holds "close" in any case (`Close`, `keep-alive,
// close`: RFC 9110 §7.6.1, tokens are case-insensitive), and an HTTP/1.0
// request's, becomes the one "close" httplib compares with.
void normalize(httplib::Request& req, const GateLimits& limits) {
  take_absolute_form(req);
  accepted_codings(req);
  // An HTTP/1.0 connection closes after its answer, which says so
  // (thirty-second hunt, A-D2: it said Keep-Alive, then closed).
  if (const auto tokens = gate::values(req, "Connection");
      req.version == "HTTP/1.0" ||
      std::find(tokens.begin(), tokens.end(), "close") != tokens.end()) {
    req.headers.erase("Connection");
    req.headers.emplace("Connection", "close");
    gate::t_close = true;
  }
  if (req.has_header("Transfer-Encoding")) {
    const auto te = gate::values(req, "Transfer-Encoding");
    std::string joined;
    for (const auto& v : te) joined += (joined.empty() ? "" : ", ") + v;
    req.headers.erase("Transfer-Encoding");
    req.headers.emplace("Transfer-Encoding", joined);
    if (joined == "chunked") gate::t_chunks.start(limits);
  }
  for (auto [it, end] = req.headers.equal_range("Expect"); it != end; ++it)
    if (gate::lower(gate::trim(it->second)) == "100-continue") it->second = "100-continue";
  // An HTTP/1.0 client takes a 1xx for the answer: its 100-continue is
  // ignored (RFC 9110 §10.1.1, §15.2; thirty-fourth hunt, A-E).
  if (req.version == "HTTP/1.0") drop_continue(req);
  if (!req.has_header("Content-Length") && !req.has_header("Transfer-Encoding"))
    req.headers.emplace("Content-Length", "0");
  const std::string& m = req.method;
  if (m == "POST" || m == "PUT" || m == "PATCH" || m == "DELETE") return;
  const std::string length = gate::trim(req.get_header_value("Content-Length"));
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(length.data(), length.data() + length.size(), n);
  const bool known = !req.has_header("Transfer-Encoding") && ec == std::errc() &&
                     end == length.data() + length.size() && n <= (uint64_t{1} << 62);
  gate::t_unread = known ? static_cast<int64_t>(n) : -1;
  // A GET's or a HEAD's answer never depends on its body: it is sent
  // instead of 100 Continue (RFC 9110 §10.1.1), and the connection then
  // closes, the body unread (its client may well not send it).
  if ((m == "GET" || m == "HEAD") && drop_continue(req) && gate::t_unread != 0) gate::t_unread = -1;
  if (gate::t_unread >= 0) return;
  req.headers.erase("Connection");
  req.headers.emplace("Connection", "close");
}

}  // namespace

bool GatedServer::serve_one(httplib::Stream& strm, bool last, bool& closed) {
  gate::t_unread = 0;
  gate::t_close = false;
  gate::t_chunks.stop();
  const bool ok = process_request(strm, last, closed,
                                  [this](httplib::Request& req) { normalize(req, limits_); });
  if (gate::t_close) closed = true;
  // A body no route read, read before the next request is looked for
  // (a refused request's connection closes: Gate::serve).
  if (!ok || !gate::t_routed || closed || last) return ok;
  return gate::discard(strm, gate::t_unread);
}

namespace {

// Content-Length: one value (repeated values must agree) of digits.
std::string length_problem(const httplib::Request& req, const GateLimits& limits, int& status) {
  std::string first;
  for (auto [it, end] = req.headers.equal_range("Content-Length"); it != end; ++it) {
    const std::string v = gate::trim(it->second);
    const bool digits =
        !v.empty() && v.size() <= 18 &&
        std::all_of(v.begin(), v.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    if (!digits || (!first.empty() && v != first)) {
      status = 400;
      return fmt::format("Content-Length '{}' is not one length in bytes",
                         core::escape_cut(it->second, 40));
    }
    first = v;
  }
  if (!first.empty() && std::stoull(first) > limits.body_bytes) {
    status = 413;
    return gate::too_large(first, limits.body_bytes);
  }
  return {};
}

std::string coding_problem(const httplib::Request& req, int& status) {
  if (!req.has_header("Transfer-Encoding")) return {};
  const auto te = gate::values(req, "Transfer-Encoding");
  const std::string shown = core::escape_for_display(req.get_header_value("Transfer-Encoding"));
  status = 400;
  if (te.empty() || te.back() != "chunked")
    return fmt::format(
        "Transfer-Encoding '{}' does not end in chunked: the body's length cannot "
        "be known",
        shown);
  if (req.has_header("Content-Length"))
    return "a request with both Transfer-Encoding and Content-Length is refused: send one";
  status = 501;
  if (te.size() > 1)
    return fmt::format(
        "Transfer-Encoding '{}' is not implemented: send the body with "
        "Content-Length, or chunked alone",
        shown);
  return {};
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& security_headers() {
  static const std::vector<std::pair<std::string, std::string>> headers = {
      {"X-Content-Type-Options", "nosniff"},
      {"Referrer-Policy", "no-referrer"},
      {"Cache-Control", "no-store"},
      {"Accept-Ranges", "none"},  // only an artifact serves a part of itself (serve_range)
      {"Content-Security-Policy",
       "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-src "
       "'self'; frame-ancestors 'self'"}};
  return headers;
}

std::string unsupported(const httplib::Request& req, const GateLimits& limits, int& status) {
  for (auto [it, end] = req.headers.equal_range("Expect"); it != end; ++it)
    if (it->second != "100-continue") {
      status = 417;
      return fmt::format("Expect: '{}' is not an expectation this server meets (only 100-continue)",
                         core::escape_cut(it->second, 80));
    }
  for (const auto& coding : gate::values(req, "Content-Encoding"))
    if (coding != "identity") {
      status = 415;
      return fmt::format(
          "a request body with Content-Encoding '{}' is not taken: send it "
          "uncompressed",
          core::escape_cut(coding, 80));
    }
  // A partial update this server would apply whole (RFC 9110 §14.5: an
  // origin server that does not support Content-Range in a PUT answers 400).
  if (req.has_header("Content-Range")) {
    status = 400;
    return "Content-Range: a partial update is not supported here: send the whole value";
  }
  if (std::string why = coding_problem(req, status); !why.empty()) return why;
  return length_problem(req, limits, status);
}

}  // namespace trainscope::serve::detail
