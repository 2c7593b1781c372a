#include "trainscope/core/error.h"

#include <utility>

namespace trainscope::core {

Error::~Error() = default;

std::string Error::without_nul(std::string s) {
  for (size_t at = s.find('\0'); at != std::string::npos; at = s.find('\0', at + 4))
    s.replace(at, 1, "\\x00");
  return s;
}

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
