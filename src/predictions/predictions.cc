// The predictions artifact: write and read.
#include "trainscope/predictions/predictions.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "trainscope/core/error.h"
#include "trainscope/core/regular_file.h"

namespace trainscope::predictions {

using core::ErrorKind;
using core::fail;

namespace {
constexpr char kMagic[8] = {'T', 'S', 'P', 'R', 'E', 'D', '0', '1'};

template <typename T>
void put(std::ostream& out, const std::vector<T>& v) {
  out.write(reinterpret_cast<const char*>(v.data()),
            static_cast<std::streamsize>(v.size() * sizeof(T)));
}

template <typename T>
void get(std::istream& in, std::vector<T>& v, uint64_t n) {
  v.resize(n);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(T)));
}
}  // namespace

double Predictions::accuracy() const {
  if (labels.empty()) return 0;
  size_t right = 0;
  for (size_t i = 0; i < labels.size(); ++i) right += labels[i] == predicted[i];
  return static_cast<double>(right) / labels.size();
}

void write_predictions(std::ostream& out, const Predictions& p) {
  uint64_t n = p.labels.size();
  out.write(kMagic, 8);
  out.write(reinterpret_cast<const char*>(&n), 8);
  put(out, p.labels);
  put(out, p.predicted);
  put(out, p.top_logit);
  if (!out) fail(ErrorKind::kRuntime, "cannot write predictions");
}

Predictions read_predictions(const std::filesystem::path& file) {
  // A FIFO or a device where the artifact belongs is refused, not waited on.
  const std::optional<std::string> bytes = core::read_regular_file(file, "predictions file");
  if (!bytes)
    fail(ErrorKind::kStore, "predictions file {} cannot be read: {}", file.string(),
         std::strerror(errno));
  std::istringstream in(*bytes);
  char magic[8] = {};
  uint64_t n = 0;
  in.read(magic, 8);
  in.read(reinterpret_cast<char*>(&n), 8);
  if (!in || std::memcmp(magic, kMagic, 8) != 0 || n > (1ULL << 32))
    fail(ErrorKind::kStore, "{} is not a predictions file (TSPRED01)", file.string());
  Predictions p;
  // The size its count says, checked before anything is allocated (a
  // header claiming 2^32 predictions in 40 bytes asked for 48 GiB).
  const uint64_t each = sizeof(decltype(p.labels)::value_type) +
                        sizeof(decltype(p.predicted)::value_type) +
                        sizeof(decltype(p.top_logit)::value_type);
  if (bytes->size() != 16 + n * each)
    fail(ErrorKind::kStore, "{} is {} bytes, not the {} its {} predictions take: it is damaged",
         file.string(), bytes->size(), 16 + n * each, n);
  get(in, p.labels, n);
  get(in, p.predicted, n);
  get(in, p.top_logit, n);
  if (!in) fail(ErrorKind::kStore, "{} is truncated: expected {} predictions", file.string(), n);
  return p;
}

}  // namespace trainscope::predictions
