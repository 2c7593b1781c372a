// Private to the store component: the registry's lookup and the built-in
// backends it starts with.
#pragma once

#include <memory>

#include "trainscope/store/registry.h"

namespace trainscope::store {

// Opens options.uri (already defaulted) with the backend of its scheme,
// without reaping stale runs. Throws Error(kUsage) for an unknown scheme.
std::unique_ptr<Store> open_backend(const StoreOptions& options);

// SQLite: "sqlite:PATH" and "sqlite::memory:" (sqlite_store.cc).
std::unique_ptr<Store> open_sqlite(std::string_view location, const StoreOptions& options);

// PostgreSQL: "postgresql://USER@HOST:PORT/DB" (and "postgres://..."), when
// built with libpqxx (postgres_store.cc). `scheme` is the one the URI used.
std::unique_ptr<Store> open_postgres(std::string_view scheme, std::string_view location,
                                     const StoreOptions& options);

}  // namespace trainscope::store
