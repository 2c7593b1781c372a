// libtorch tensor ops round after every operation like the hardware loop.
#include <gtest/gtest.h>

#include <bit>

#include "trainscope/numerics/logmap_torch.h"

namespace trainscope::numerics {
namespace {

TEST(LogmapTorchTest, CpuTensorOpsMatchTheScalarLoopBitForBit) {
  for (const auto& v : torch_variants()) {
    if (v.device != "cpu") continue;
    Variant scalar;
    scalar.format = v.format;
    scalar.order = Order::kRxTimesOneMinusX;
    for (const char* r : {"3.7", "4", "3.91"}) {
      auto t = iterate_torch(v, "0.4", r, 300);
      auto s = iterate(scalar, "0.4", r, 300);
      ASSERT_EQ(t.size(), s.size());
      for (size_t i = 0; i < t.size(); ++i)
        ASSERT_EQ(std::bit_cast<uint64_t>(t[i]), std::bit_cast<uint64_t>(s[i]))
            << v.id << " r=" << r << " step " << i;
    }
  }
}

}  // namespace
}  // namespace trainscope::numerics
