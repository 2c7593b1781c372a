// libtorch's variants of the logistic map, for `numerics logmap`.
#include "torch_cli.h"
#include "trainscope/numerics/logmap_torch.h"

namespace trainscope::cli::torch_cli {

void add_logmap_variants(numerics::LogmapOptions& o) {
  o.extra_variants = numerics::torch_variants();
  o.extra_iterate = numerics::iterate_torch;
}

}  // namespace trainscope::cli::torch_cli
