// Study files.
#include "fuzz_common.h"
#include "trainscope/study/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainscope;
  fuzz::expect_clean([&] {
    auto spec = study::parse_study(std::string(fuzz::as_text(data, size)), "fuzz-study.yaml",
                                   size % 2 == 0);
    for (const auto& run : study::plan(spec)) (void)study::set_lines(run);
  });
  return 0;
}
