#include "trainscope/store/registry.h"

#include <map>
#include <mutex>

#include "backends.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"

namespace trainscope::store {
using core::ErrorKind;
using core::fail;

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, StoreFactory> factories;
};

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;  // never destroyed: stores may close during exit
    reg->factories["sqlite"] = open_sqlite;
#ifdef TRAINSCOPE_POSTGRES
    for (const char* scheme : {"postgresql", "postgres"})
      reg->factories[scheme] = [scheme](std::string_view location, const StoreOptions& o) {
        return open_postgres(scheme, location, o);
      };
#endif
    return reg;
  }();
  return *r;
}

// "sqlite:..." has a scheme; "runs/t.db", "./x:y" and "C:\..." do not.
bool has_scheme(std::string_view uri, size_t colon) {
  if (colon == std::string_view::npos || colon < 2) return false;
  for (size_t i = 0; i < colon; ++i) {
    char c = uri[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (i > 0 && ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'));
    if (!ok) return false;
  }
  return true;
}

}  // namespace

void register_backend(const std::string& scheme, StoreFactory factory) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.factories[scheme] = std::move(factory);
}

std::vector<std::string> backend_schemes() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> out;
  for (const auto& [scheme, f] : r.factories) out.push_back(scheme);
  return out;
}

StoreUri parse_store_uri(std::string_view uri) {
  StoreUri out;
  const size_t colon = uri.find(':');
  if (has_scheme(uri, colon)) {
    out.scheme = std::string(uri.substr(0, colon));
    uri.remove_prefix(colon + 1);
    // "scheme://rest": the authority form keeps what follows the slashes.
    // For SQLite it reads as SQLAlchemy and MLflow read it: an empty host,
    // then the path, so "sqlite:///x.db" is the relative "x.db" and
    // "sqlite:////abs/x.db" the absolute "/abs/x.db" ("sqlite:PATH" is PATH).
    if (uri.starts_with("//")) {
      uri.remove_prefix(2);
      if (out.scheme == "sqlite" && uri.starts_with("/")) uri.remove_prefix(1);
    }
  } else {
    out.scheme = "sqlite";
  }
  out.location = std::string(uri);
  return out;
}

std::unique_ptr<Store> open_backend(const StoreOptions& options) {
  StoreUri u = parse_store_uri(options.uri);
  StoreFactory factory;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    auto it = r.factories.find(u.scheme);
    if (it != r.factories.end()) factory = it->second;
  }
  if (!factory) {
    std::string known;
    for (const auto& s : backend_schemes()) known += (known.empty() ? "" : ", ") + s + ":";
    fail(ErrorKind::kUsage, "store '{}': no backend for scheme '{}' in this build (known: {})",
         core::escape_for_display(options.uri), core::escape_for_display(u.scheme), known);
  }
  if (u.location.empty())
    fail(ErrorKind::kUsage,
         "store '{}' names no location; use sqlite:PATH or postgresql://USER@HOST:PORT/DB",
         core::escape_for_display(options.uri));
  return factory(u.location, options);
}

}  // namespace trainscope::store
