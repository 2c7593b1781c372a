#include "trainscope/core/error.h"

namespace trainscope::core {

Error::~Error() = default;

}  // namespace trainscope::core
