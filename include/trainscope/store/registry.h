// Store backends by URI scheme. Store::open("SCHEME:REST") hands REST and
// the options to the factory registered for SCHEME. SQLite ("sqlite") is
// built in; another backend joins by registering its scheme before the
// first open (for instance from its library's initialisation).
//
// Before a factory runs, what a URI names is checked (Error kUsage, one
// line): a SQLite path (or its -wal, -shm, -journal file) that exists and
// is not a regular file (a folder, FIFO, device such as /dev/null, socket)
// is refused, as is a PostgreSQL port that is not a number in 1..65535.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/store/store.h"

namespace trainscope::store {

// Opens the store at `location` (the URI without "SCHEME:"). Throws Error
// with a one-line message naming the location when it cannot.
using StoreFactory =
    std::function<std::unique_ptr<Store>(std::string_view location, const StoreOptions& options)>;

// Registers (or replaces) the backend of `scheme`. Thread-safe.
void register_backend(const std::string& scheme, StoreFactory factory);
// Schemes that have a backend, sorted.
std::vector<std::string> backend_schemes();

// A store URI split into scheme and location. A string without a scheme
// (a plain path such as "runs/t.db", or "C:..." style single letters) is
// SQLite. Throws Error(kUsage) for an empty location.
struct StoreUri {
  std::string scheme;
  std::string location;
};
// Splits `uri` as StoreUri says; throws Error(kUsage) for an empty
// location. Pure: any thread.
StoreUri parse_store_uri(std::string_view uri);

// The URI of the same store from any working directory: a SQLite store at a
// relative path becomes "sqlite:" and its absolute path; any other URI
// (PostgreSQL, ":memory:", "file:" URIs) comes back unchanged. For a
// process that starts in another folder (a study's command).
std::string absolute_uri(std::string_view uri);

// A store URI without the password it may hold, for what is written to
// disk, shown or handed to other processes on their command line:
// "postgresql://u:pw@h/db" -> {"postgresql://u@h/db", "pw"} (also
// ?password=pw; percent-decoded). libpq reads the password from
// $PGPASSWORD or ~/.pgpass instead. Other URIs come back unchanged.
struct UriPassword {
  std::string uri;
  std::string password;  // empty when the URI holds none
};
// Takes the password out of `uri` as UriPassword says. Pure: any thread.
UriPassword split_password(std::string_view uri);

}  // namespace trainscope::store
