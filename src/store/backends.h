// Private to the store component: the registry's lookup and the built-in
// backends it starts with.
#pragma once

#include <memory>
#include <string_view>

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

// A status read back from run `uuid`'s row: parse_run_status's, but a
// name it does not know throws Error(kStore): the store is damaged (exit
// 5), not the user's input.
RunStatus stored_run_status(std::string_view name, std::string_view uuid);
// A run's UUID (or its parent's, `what`) read back from its row: every
// writer makes one as core::new_uuid does, 8-4-4-4-12 lower-case hex
// digits; any other text (upper case, a control character, a path) throws
// Error(kStore), as above.
std::string stored_uuid(std::string uuid, const char* what = "a run's stored UUID");
// An artifact row of run `uuid` read back: its SHA-256 as the writer makes
// it (64 lower-case hex digits), else Error(kStore) naming the artifact (a
// damaged hash was shown as it was, and the intact file then blamed).
ArtifactInfo stored_artifact(ArtifactInfo a, std::string_view uuid);
// A pid read back from run `uuid`'s row: 0 (none) or a process id; one
// below 0 or past a pid_t throws Error(kStore), as above.
int64_t stored_pid(int64_t pid, std::string_view uuid);
// The experiment read back from run `uuid`'s row: none (`found` false: its
// experiment_id names no experiment) throws Error(kStore), as above.
std::string stored_experiment(bool found, std::string name, std::string_view uuid);

}  // namespace trainscope::store
