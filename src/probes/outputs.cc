#include "trainscope/probes/outputs.h"

#include <unistd.h>

#include <array>
#include <cmath>
#include <cstring>
#include <mutex>

#include "tensorboard_event.pb.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/probes/records.h"

namespace trainscope::probes {

namespace {

class StoreOutput : public Output {
 public:
  explicit StoreOutput(store::RunRecorder& run) : run_(run) {}
  void scalar(const SeriesPoint& p) override {
    run_.log_metric(series_key(p.layer, p.name), p.value, p.at.step);
  }
  void histogram(const std::string& layer, Kind kind, const Position& at,
                 const Histogram& h) override {
    run_.log_record(kHistogramsKind,
                    histogram_record({histogram_key(layer, kind), at.step, core::unix_now(), h}));
  }
  void alert(const Alert& a) override {
    run_.log_record(kEventsKind, event_record({a.at.step, core::unix_now(), "alert", a.name,
                                               a.source, a.message}));
  }

 private:
  store::RunRecorder& run_;
};

class ConsoleOutput : public Output {
 public:
  void alert(const Alert& a) override {
    if (printed_.insert(a.name).second)
      core::log_warn("probe alert at step {} [{}]: {}", a.at.step, a.name, a.message);
  }

 private:
  std::set<std::string> printed_;
};

const std::array<uint32_t, 256>& crc_table() {
  static const std::array<uint32_t, 256> kTable = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0x82F63B78u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return kTable;
}

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

}  // namespace

std::shared_ptr<Output> store_output(store::RunRecorder& run) {
  return std::make_shared<StoreOutput>(run);
}

std::shared_ptr<Output> console_output() { return std::make_shared<ConsoleOutput>(); }

uint32_t crc32c(const void* data, size_t n) {
  const auto& t = crc_table();
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = t[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const void* data, size_t n) {
  uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

TfEventsWriter::TfEventsWriter(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  double now = core::unix_now();
  path_ = dir / fmt::format("events.out.tfevents.{}.{}", static_cast<int64_t>(now), host_name());
  out_.open(path_, std::ios::binary | std::ios::trunc);
  if (!out_)
    core::fail(core::ErrorKind::kRuntime, "cannot write TensorBoard events to '{}'",
               path_.string());
  tensorboard::Event e;
  e.set_wall_time(now);
  e.set_file_version("brain.Event:2");
  write_record(e.SerializeAsString());
}

TfEventsWriter::~TfEventsWriter() { close(); }

void TfEventsWriter::write_record(const std::string& bytes) {
  uint64_t len = bytes.size();
  char header[12];
  std::memcpy(header, &len, 8);  // little-endian on every platform libtorch runs on
  uint32_t len_crc = masked_crc32c(header, 8);
  std::memcpy(header + 8, &len_crc, 4);
  uint32_t data_crc = masked_crc32c(bytes.data(), bytes.size());
  out_.write(header, 12);
  out_.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out_.write(reinterpret_cast<const char*>(&data_crc), 4);
}

void TfEventsWriter::write_scalar(const std::string& tag, int64_t step, double wall_time,
                                  float value) {
  tensorboard::Event e;
  e.set_wall_time(wall_time);
  e.set_step(step);
  auto* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(value);
  write_record(e.SerializeAsString());
}

void TfEventsWriter::scalar(const SeriesPoint& p) {
  if (!out_.is_open()) return;
  write_scalar(p.layer.empty() ? p.name : p.layer + "/" + p.name, p.at.step, core::unix_now(),
               static_cast<float>(p.value));
}

// TensorBoard's buckets: counts with their right edges; NaN and infinities
// cannot be shown there and stay in the store only.
void TfEventsWriter::histogram(const std::string& layer, Kind kind, const Position& at,
                               const Histogram& h) {
  if (!out_.is_open() || h.finite() == 0) return;
  tensorboard::Event e;
  e.set_wall_time(core::unix_now());
  e.set_step(at.step);
  auto* v = e.mutable_summary()->add_value();
  v->set_tag(histogram_key(layer, kind));
  auto* hp = v->mutable_histo();
  hp->set_min(h.low);
  hp->set_max(h.high);
  hp->set_num(static_cast<double>(h.finite()));
  hp->set_sum(h.sum);
  hp->set_sum_squares(h.sum_squares);
  size_t n = h.counts.size();
  for (size_t i = 0; i < n; ++i) {
    hp->add_bucket_limit(i + 1 == n ? h.high : h.low + (h.high - h.low) * (i + 1) / n);
    hp->add_bucket(static_cast<double>(h.counts[i]));
  }
  write_record(e.SerializeAsString());
}

void TfEventsWriter::close() {
  if (out_.is_open()) out_.close();
}

}  // namespace trainscope::probes
