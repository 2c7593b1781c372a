// State shared by every CLI command: global flags and the store they name.
#pragma once

#include <memory>
#include <string>

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

 private:
  std::shared_ptr<store::Store> store_;
};

}  // namespace trainscope::cli
