// `trainscope serve`: the web dashboard and its JSON API over the store.
#include <fmt/format.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <thread>

#include "commands.h"
#include "output.h"
#include "trainscope/core/output.h"
#include "trainscope/serve/server.h"

namespace trainscope::cli {

namespace {

// Serves until SIGINT or SIGTERM. The signals are blocked before the
// server's threads start (they inherit the mask) and taken by sigtimedwait
// here, so no handler runs inside a worker.
void serve_until_signal(serve::Server& server) {
  std::atomic<bool> ended = false;
  std::thread worker([&] {
    server.run();
    ended = true;
  });
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  const timespec tick{0, 200'000'000};
  while (!ended && sigtimedwait(&set, nullptr, &tick) < 0) {
  }
  // A stop does not wait for a worker busy with a long answer: after the
  // grace the process ends (readers hold no lock a process exit leaves
  // behind, and a write that has not committed is rolled back).
  if (!server.stop_within(std::chrono::seconds(2))) {
    std::cerr << "trainscope: serve stopped; an answer still being computed was not sent\n";
    std::cout.flush();
    std::_Exit(0);
  }
  worker.join();
}

void run_serve(Context& ctx, serve::ServerOptions o) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  o.store_uri = ctx.store_uri;
  serve::Server server(o);
  server.bind();
  std::cout << fmt::format("serving {} at {} ({}; Ctrl-C stops)", server.store_name(), server.url(),
                           o.allow_writes ? "tags writable" : "read-only")
            << std::endl;
  if (!server.token().empty() && o.token.empty())
    std::cerr << "trainscope: a token was generated for this non-loopback address; the URL "
                 "above carries it\n";
  // The dashboard serves whatever became of that line; one that did not
  // arrive (a closed pipe, a full disk) is said now, not at Ctrl-C.
  core::report_output_cut();
  serve_until_signal(server);
}

}  // namespace

void register_serve_commands(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand(
      "serve", "The web dashboard: runs, live curves, comparisons, profiles, probes, studies");
  auto o = std::make_shared<serve::ServerOptions>();
  cmd->add_option("--port,-p", o->port, "TCP port (0: any free port)")->capture_default_str();
  cmd->add_option("--bind", o->bind, "Address to listen on; anything but loopback requires a token")
      ->capture_default_str();
  cmd->add_option("--token", o->token,
                  "Token clients must send (default: none on loopback, a random one otherwise)");
  cmd->add_flag("--allow-writes", o->allow_writes, "Let the API change tags (read-only otherwise)");
  cmd->add_option("--threads", o->threads, "Worker threads")
      ->capture_default_str()
      ->check(integer_in(1, 256));
  set_example(cmd,
              "trainscope serve                  # then open http://127.0.0.1:8765/\n"
              "  trainscope serve --bind 0.0.0.0 --port 8080   # prints a URL with a token");
  cmd->callback([&ctx, o] { run_serve(ctx, *o); });
}

}  // namespace trainscope::cli
