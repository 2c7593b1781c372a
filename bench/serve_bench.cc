// The dashboard's API at scale, server side: the first page of the runs
// table over 10,000 runs, and a 1,000,000-point series sent to a chart
// (downsampled to at most 4,000 points), each timed in process
// (handle_api: store reads, downsampling, JSON) and over HTTP on loopback
// (plus the socket and httplib).
//
//   build/bench/serve_bench [--rounds N]
//
// The cases run interleaved, rotating which goes first each round; prints
// the median, minimum and maximum of each. The stores are built once and
// kept in $TMPDIR (bench_stores.h); bench/dashboard_bench.sh times the same
// pages in Chromium.
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench_stores.h"
#include "trainscope/serve/api.h"
#include "trainscope/serve/server.h"

namespace serve = trainscope::serve;
namespace store = trainscope::store;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct Case {
  std::string label;
  std::function<size_t()> run;  // returns the points or rows it received
  std::vector<double> ms;
  size_t items = 0;
};

// A server on a free loopback port for the length of the benchmark.
struct Serving {
  serve::Server server;
  std::thread thread;
  int port;
  explicit Serving(const std::string& uri) : server({.store_uri = uri, .port = 0}) {
    port = server.bind();
    thread = std::thread([this] { server.run(); });
  }
  ~Serving() {
    server.stop();
    thread.join();
  }
};

size_t items_of(const std::string& body) {
  auto j = nlohmann::json::parse(body);
  return j.contains("runs") ? j["runs"].size() : j["steps"].size();
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 15;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--rounds") rounds = std::max(1, std::atoi(argv[++i]));
  const std::string runs_uri = "sqlite:" + trainscope::bench::ten_thousand_runs().string();
  const std::string long_uri = "sqlite:" + trainscope::bench::million_point_series().string();
  auto runs_store = store::Store::open({.uri = runs_uri, .read_only = true});
  auto long_store = store::Store::open({.uri = long_uri, .read_only = true});
  Serving runs_http(runs_uri), long_http(long_uri);
  httplib::Client runs_client("127.0.0.1", runs_http.port),
      long_client("127.0.0.1", long_http.port);
  const serve::Request first_page{.path = "/api/runs", .query = {{"limit", "50"}}};
  // What the runs table asks for: a study's runs nested under it.
  const serve::Request nested_page{.path = "/api/runs",
                                   .query = {{"limit", "50"}, {"nest", "parent"}}};
  const serve::Request chart{.path = "/api/runs/million/metric",
                             .query = {{"key", "train/loss"}, {"width", "2000"}}};
  auto in_process = [](store::Store& s, const serve::Request& r) {
    return [&s, r] { return items_of(serve::handle_api(s, r, {}).body); };
  };
  auto over_http = [](httplib::Client& c, const std::string& path) {
    return [&c, path] {
      auto res = c.Get(path);
      if (!res || res->status != 200) {
        std::fprintf(stderr, "serve_bench: GET %s failed\n", path.c_str());
        std::exit(1);
      }
      return items_of(res->body);
    };
  };
  std::vector<Case> cases = {
      {"10,000 runs: first page (50 rows), in process", in_process(*runs_store, first_page)},
      {"10,000 runs: first page (50 rows), HTTP", over_http(runs_client, "/api/runs?limit=50")},
      {"10,000 runs: first page nested by parent, in process",
       in_process(*runs_store, nested_page)},
      {"1M-point series -> chart of width 2000, in process", in_process(*long_store, chart)},
      {"1M-point series -> chart of width 2000, HTTP",
       over_http(long_client, "/api/runs/million/metric?key=train/loss&width=2000")},
  };
  for (auto& c : cases) c.items = c.run();  // warm the page cache
  for (int r = 0; r < rounds; ++r)
    for (size_t k = 0; k < cases.size(); ++k) {
      Case& c = cases[(k + static_cast<size_t>(r)) % cases.size()];
      const auto t0 = std::chrono::steady_clock::now();
      c.items = c.run();
      c.ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  std::printf("%d rounds, interleaved\n%-52s %8s %17s %8s\n", rounds, "request", "ms", "[min..max]",
              "items");
  for (const auto& c : cases)
    std::printf("%-52s %8.1f [%6.1f..%6.1f] %8zu\n", c.label.c_str(), median(c.ms),
                *std::min_element(c.ms.begin(), c.ms.end()),
                *std::max_element(c.ms.begin(), c.ms.end()), c.items);
  return 0;
}
