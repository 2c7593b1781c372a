#include "trainscope/store/store.h"

#include <cstdlib>

#include "migrations.h"
#include "sqlite_store.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"

namespace trainscope {
namespace {
constexpr const char* kStatusNames[] = {"created", "running", "finished",
                                        "failed",  "killed",  "stopped"};
constexpr const char* kDefaultStore = "sqlite:./trainscope.db";
}  // namespace

const char* to_string(RunStatus s) { return kStatusNames[static_cast<int>(s)]; }

RunStatus parse_run_status(std::string_view s) {
  for (int i = 0; i < 6; ++i)
    if (s == kStatusNames[i]) return static_cast<RunStatus>(i);
  fail(ErrorKind::kUsage,
       "unknown run status '{}'; valid: created, running, finished, failed, killed, stopped",
       escape_for_display(s));
}

bool is_terminal(RunStatus s) {
  return s != RunStatus::kCreated && s != RunStatus::kRunning;
}

std::string default_store_uri() {
  const char* env = std::getenv("TRAINSCOPE_STORE");
  if (env && *env) return env;
  return kDefaultStore;
}

int Store::latest_schema_version() { return migrations().back().version; }

std::unique_ptr<Store> Store::open(const StoreOptions& options) {
  std::string uri = options.uri.empty() ? default_store_uri() : options.uri;
  std::string_view rest(uri);
  if (rest.starts_with("sqlite:")) {
    rest.remove_prefix(7);
    if (rest.starts_with("//")) rest.remove_prefix(2);  // sqlite:///abs/path
  } else if (rest.starts_with("postgres:") || rest.starts_with("postgresql:")) {
    fail(ErrorKind::kUsage,
         "store '{}': the PostgreSQL backend is not part of this build yet; use sqlite:PATH", uri);
  } else if (auto colon = rest.find(':');
             colon != std::string_view::npos && colon > 1 && rest.find('/') > colon) {
    fail(ErrorKind::kUsage, "store '{}': unknown scheme '{}'; use sqlite:PATH", uri,
         rest.substr(0, colon));
  }
  if (rest.empty()) fail(ErrorKind::kUsage, "store '{}' names no file; use sqlite:PATH", uri);
  auto store = std::make_unique<SqliteStore>(std::filesystem::path(rest), options);
  store->reap_stale_runs();
  return store;
}

}  // namespace trainscope
