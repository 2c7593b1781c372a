#include "trainscope/core/error.h"

#include <utility>

#include "trainscope/core/log.h"

namespace trainscope::core {

Error::~Error() = default;

std::string Error::one_line(std::string_view s) { return terminal_text(s, true); }

namespace {
thread_local LoadErrors* t_collecting = nullptr;
}  // namespace

LoadErrors::LoadErrors() : outer_(t_collecting) { t_collecting = this; }

LoadErrors::~LoadErrors() { t_collecting = outer_; }

std::vector<std::string> LoadErrors::take() { return std::exchange(kept_, {}); }

bool keep_load_error(const std::string& message) {
  if (!t_collecting) return false;
  t_collecting->kept_.push_back(message);
  return true;
}

}  // namespace trainscope::core
