// The YAML config reader and --set overrides: YAML before the first NUL,
// then one "key=value" override per line.
#include "fuzz_common.h"
#include "trainscope/config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainscope;
  const auto parts = fuzz::split(fuzz::as_text(data, size));
  const std::string yaml(parts.first);
  const std::string_view sets = parts.second;
  std::vector<std::string> overrides;
  for (size_t start = 0; start < sets.size();) {
    size_t end = sets.find('\n', start);
    if (end == std::string_view::npos) end = sets.size();
    overrides.emplace_back(sets.substr(start, end - start));
    start = end + 1;
  }
  fuzz::expect_clean([&] { (void)config::parse_config(yaml, overrides, "fuzz.yaml"); });
  return 0;
}
