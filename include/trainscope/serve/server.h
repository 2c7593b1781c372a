// `trainscope serve`: the dashboard and its JSON API over HTTP (cpp-httplib).
//
// Torch-free, so it starts at once. Each worker thread reads through a
// read-only store connection of its own from a pool: readers never wait for
// one another, and SQLite's WAL lets them read while a training writes.
// Binds to 127.0.0.1 by default; any other address needs a token.
#pragma once

#include <chrono>
#include <memory>
#include <string>

namespace trainscope::serve {

// How `trainscope serve` opens its store and listens.
struct ServerOptions {
  std::string store_uri;  // empty: $TRAINSCOPE_STORE or the default
  std::string bind = "127.0.0.1";
  int port = 8765;            // 0: any free port
  std::string token;          // empty: none on loopback, generated otherwise
  bool allow_writes = false;  // tag changes through the API
  int threads = 8;            // worker threads
};

// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback(const std::string& host);

// 32 hex digits from the system's random source.
std::string random_token();

// The dashboard's HTTP server: one thread calls bind() and run(); stop()
// may come from any other.
class Server {
 public:
  // Opens the store read-only (a store that does not exist is an Error of
  // kind kNotFound naming it) and, for a non-loopback bind without a token,
  // generates one.
  explicit Server(ServerOptions options);
  // Closes the store connections; call it after run() returned (stop()).
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the listening socket; returns the port. Throws Error(kUsage)
  // naming the address when the port is taken or the address is not this
  // machine's.
  int bind();
  // Serves until stop() (from another thread). Call bind() first.
  void run();
  // Makes run() return and, when run() was called, waits until it has; any
  // thread, more than once.
  void stop();
  // The same, waiting at most `grace` for run() to return: false when a
  // worker is still computing an answer then (run() returns once it ends).
  bool stop_within(std::chrono::milliseconds grace);

  // http://HOST:PORT/ and, with a token, ?token=... to open in a browser.
  std::string url() const;
  // The token a client must give (empty: none), valid while the Server is.
  const std::string& token() const;
  // The store's description (Store::describe), for the banner.
  std::string store_name() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainscope::serve
