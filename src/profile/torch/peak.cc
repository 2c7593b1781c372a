#include <fmt/format.h>
#include <sys/stat.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "trainscope/core/error.h"
#include "trainscope/core/regular_file.h"
#include "trainscope/core/util.h"
#include "trainscope/profile/profiler.h"

namespace trainscope::profile {
using core::host_name;

double peak_gflops() {
  const int threads = torch::get_num_threads();
  std::filesystem::path dir = core::user_cache_dir();
  if (dir.empty()) dir = "/tmp/.cache/trainscope";
  // Per libtorch version too: its BLAS (MKL in the wheels) sets the peak.
  std::filesystem::path file =
      dir / fmt::format("peak_gflops_t{}_{}_torch{}.txt", threads, host_name(), TORCH_VERSION);
  // Another user's FIFO there (the cache may be in /tmp) would block a plain
  // open; a value is trusted only when its checksum holds ("<peak>\t<the
  // SHA-256 of <peak>>") and it is a plausible peak (0.1 GFLOP/s to 10
  // PFLOP/s): it becomes every layer's % of peak.
  std::optional<std::string> cached;
  try {
    cached = core::read_regular_file(file, "GEMM peak cache");
  } catch (const core::Error&) {
  }
  if (const size_t tab = cached ? cached->find('\t') : std::string::npos;
      tab != std::string::npos &&
      cached->substr(tab + 1, 64) == core::sha256_hex(cached->substr(0, tab))) {
    char* end = nullptr;
    const double v = std::strtod(cached->c_str(), &end);
    if (end == cached->c_str() + tab && std::isfinite(v) && v >= 0.1 && v < 1e7) return v;
  }
  torch::NoGradGuard ng;
  auto a = torch::randn({1024, 1024}), b = torch::randn({1024, 1024});
  double best = 0;
  for (int i = 0; i < 6; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto c = a.mm(b);
    (void)c.data_ptr();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (i > 0) best = std::max(best, 2.0 * 1024 * 1024 * 1024 / s / 1e9);
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  struct stat st {};
  if (::stat(file.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return best;  // not ours to write
  try {  // whole or not at all: a reader never sees half a number
    const std::string peak = fmt::format("{}", best);
    core::write_file_atomically(
        file, [&](std::ostream& o) { o << peak << "\t" << core::sha256_hex(peak) << "\n"; });
  } catch (const core::Error&) {  // a cache that cannot be written is skipped
  }
  return best;
}

}  // namespace trainscope::profile
