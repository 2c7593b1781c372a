// Requests from a browser or a script: arbitrary paths and query parameters
// sent to the dashboard's API over a small real store. Every answer must be
// a status with a body that is valid JSON (when it says it is JSON), and an
// error must carry its one-line message.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "fuzz_common.h"
#include "trainscope/probes/records.h"
#include "trainscope/serve/api.h"
#include "trainscope/store/store.h"

namespace {

using namespace trainscope;

// Two runs with metrics (a NaN among them), params, tags and events.
store::Store& fixture() {
  static std::unique_ptr<store::Store> s = [] {
    const auto path = std::filesystem::temp_directory_path() /
                      ("trainscope-api-fuzz-" + std::to_string(getpid()) + ".db");
    std::filesystem::remove(path);
    auto st = store::Store::open({.uri = "sqlite:" + path.string()});
    for (const char* name : {"alpha", "beta"}) {
      auto r = st->create_run({.name = name, .status = store::RunStatus::kFinished});
      std::vector<store::MetricPoint> pts;
      for (int i = 0; i < 300; ++i) pts.push_back({i, 1.0 * i, i == 7 ? NAN : 1.0 / (i + 1)});
      st->append_metrics(r.uuid, {{"train/loss", pts}, {"proc/rss_mib", {{0, 0, 10}}}});
      st->set_params(r.uuid, {{"optimizer.lr", "0.1"}, {"seeds.master", name}});
      st->set_tag(r.uuid, "note", "x");
      st->append_records(
          r.uuid, probes::kEventsKind,
          {probes::event_record({3, 3.0, "alert", "lr_too_high", "fc1", "too high"})});
    }
    return st;
  }();
  return *s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Line 1: METHOD PATH (or just PATH); then one KEY=VALUE per line.
  std::string_view text = fuzz::as_text(data, size);
  serve::Request req;
  size_t at = text.find('\n');
  std::string first(text.substr(0, at));
  if (auto sp = first.find(' '); sp != std::string::npos && sp < 8) {
    req.method = first.substr(0, sp);
    first = first.substr(sp + 1);
  }
  req.path = first;
  while (at != std::string_view::npos) {
    text = text.substr(at + 1);
    at = text.find('\n');
    std::string line(text.substr(0, at));
    const size_t eq = line.find('=');
    if (eq == std::string::npos)
      req.body = line;
    else
      req.query[line.substr(0, eq)] = line.substr(eq + 1);
  }
  const serve::Response r = serve::handle_api(fixture(), req, {.allow_writes = false});
  if (r.content_type == "application/json") {
    auto j = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) std::abort();
    if (r.status >= 400 &&
        (!j.contains("error") || j["error"].get<std::string>().find('\n') != std::string::npos))
      std::abort();
  }
  if (r.status < 200 || r.status > 599) std::abort();
  return 0;
}
