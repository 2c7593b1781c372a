// State shared by every CLI command: global flags and the store they name.
#pragma once

#include <memory>
#include <string>

#include "trainscope/core/error.h"
#include "trainscope/store/store.h"

namespace trainscope::cli {

struct Context {
  std::string store_uri;  // --store; empty means $TRAINSCOPE_STORE or the default
  bool json = false;      // --json
  std::string argv_line;  // the command line, recorded with new runs

  // Opens the store once per process; later calls return the same handle.
  std::shared_ptr<store::Store> store() {
    if (!store_) store_ = store::Store::open({.uri = store_uri});
    return store_;
  }
  // For commands that only read: opens read-only, so that reading never
  // migrates a schema, switches a journal mode or marks another user's run
  // killed, and a store on read-only media (or of files made read-only) can
  // be inspected. A store that needs migrating is opened as by store() when
  // that is possible; one that does not exist is an error (reading never
  // creates a store).
  std::shared_ptr<store::Store> reader() {
    if (store_) return store_;
    try {
      store_ = store::Store::open({.uri = store_uri, .read_only = true});
    } catch (const core::Error& e) {
      if (e.kind() == core::ErrorKind::kNotFound) throw;
      try {
        // Opened for writing only to migrate: it judges no run.
        store_ = store::Store::open({.uri = store_uri, .reap = false});
      } catch (const std::exception&) {
        store_ = store::Store::open({.uri = store_uri, .read_only = true});  // its own message
      }
    }
    return store_;
  }

 private:
  std::shared_ptr<store::Store> store_;
};

}  // namespace trainscope::cli
