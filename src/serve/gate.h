// What one client can hold of the dashboard's server (server.cc).
//
// httplib gives each accepted connection a worker thread until it ends, so
// a client that opens connections and never finishes their headers holds
// the workers (40 of them delayed every other request by 24 s). Here no
// worker waits for a client: a poller thread collects each request's line
// and headers, within a deadline and a size, and hands only a complete one
// to a worker, which reads the body (within its own deadline) and answers.
// Each client address may have a few connections still sending headers
// (its oldest is closed for a new one), a few requests whose bodies
// workers read at once, and a bounded number of connections in all.
#pragma once

#include <httplib.h>

#include <chrono>
#include <memory>
#include <string>

namespace trainscope::serve::detail {

struct GateLimits {
  using ms = std::chrono::milliseconds;
  // A request's line and headers: from a new connection's start, or from
  // the first byte of a kept-alive connection's next request.
  ms header{10000};
  ms idle{5000};          // a kept-alive connection's next request's first byte
  ms body{10000};         // a request's body, once its headers are in
  ms write_stall{10000};  // a client that takes nothing of an answer
  // ... while other requests wait for a worker: it gives its worker up
  // sooner (a client that does not read holds no more than its share).
  ms write_share{1000};
  size_t header_bytes = 64 * 1024;
  // Above: 413 (the API takes tag values), as a Content-Length says or as
  // a chunked body's chunk-size lines announce its decoded bytes.
  size_t body_bytes = 1 << 20;
  int waiting_per_client = 16;  // connections of one address still sending headers
  // Requests of one address whose bodies workers read (or drop) at once: at
  // most this many and half the workers (at least one), so that a client
  // trickling bodies never holds every worker; its other requests with a
  // body wait for one of those to end.
  int bodies_per_client = 4;
  int per_client = 64;    // connections of one address, in all
  int connections = 768;  // connections, in all
  int requests_per_connection = 100;
};

class Gate;

// Why the Gate stopped reading a request's body (a status and one line);
// status 0 when it did not.
struct Refusal {
  int status = 0;
  std::string why;
};

// httplib's server with connections collected by a Gate: each complete
// request goes to one of `workers` threads.
class GatedServer : public httplib::Server {
 public:
  explicit GatedServer(int workers, GateLimits limits = {});
  ~GatedServer() override;

  // Inside a handler: the request reached a route (its body, if any, was
  // read), so its connection may serve the next one. A request answered
  // before that (a refusal, a malformed request) closes its connection.
  static void routed();

  // Inside the error handler: the request's body stopped arriving before
  // it was whole, and limits().body ran out (408, not httplib's 400).
  static bool body_timed_out();

  // Inside the error handler: why the Gate stopped a chunked body that
  // httplib was reading, which httplib answers "400 malformed" whatever
  // it was: its decoded bytes over limits().body_bytes, or its chunk-size
  // lines over limits().header_bytes (413), or a framing that is not
  // RFC 9112 §7.1's (400).
  static const Refusal& body_refused();

  // Inside a handler: the request's Range (repeated ones joined with ", "),
  // as sent; empty when it has none. The Gate takes it out of the request
  // before httplib reads it: httplib would answer it itself, after any
  // route (a JSON answer cut with 200, a part of the answer per range
  // built in memory). A route that serves parts (an artifact) reads it
  // here; to every other one a Range is not there, as RFC 9110 §14.2
  // lets a server ignore it.
  static const std::string& range();

  // Serves one request from `strm` (the worker's side of the Gate).
  bool serve_one(httplib::Stream& strm, bool last, bool& closed);

  const GateLimits& limits() const { return limits_; }

  // After a bind: room in the kernel's queue for a burst of connections
  // (httplib listens with a backlog of 5: a sixth connection at once waits
  // a second for its SYN to be sent again).
  void widen_backlog();

 private:
  friend class Gate;
  bool process_and_close_socket(socket_t sock) override;

  int workers_;
  GateLimits limits_;
  Gate* gate_ = nullptr;  // while listening: the task queue httplib owns
};

// Why a request's headers ask for what this server does not do, as HTTP
// says to answer it, with `status` set: an Expect other than 100-continue
// (417), a compressed body (415), a Transfer-Encoding other than chunked
// (501; 400 when chunked is not the last coding, or beside Content-Length),
// a Content-Range (400: no partial updates, RFC 9110 §14.5), a
// Content-Length that is not one number (400) or over `limits` (413).
// Empty when it asks for nothing of that.
std::string unsupported(const httplib::Request& req, const GateLimits& limits, int& status);

// The headers every answer carries, whoever writes it (a route, httplib's
// own error, the Gate's refusal of a connection): no sniffing, no referrer,
// no caching, no ranges but an artifact's, and the pages' content policy.
const std::vector<std::pair<std::string, std::string>>& security_headers();

}  // namespace trainscope::serve::detail
