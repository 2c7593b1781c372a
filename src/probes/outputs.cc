#include "trainscope/probes/outputs.h"

#include <cmath>
#include <mutex>

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
    // A point stamped by the hub carries its time; one given directly, now.
    const double wall_time = p.wall_time != 0 ? p.wall_time : core::unix_now();
    run_.log_metric(series_key(p.layer, p.name), p.value, p.at.step, wall_time);
  }
  void histogram(const std::string& layer, Kind kind, const Position& at, const Histogram& h,
                 double wall_time) override {
    run_.log_record(kHistogramsKind,
                    histogram_record({histogram_key(layer, kind), at.step, wall_time, h}));
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

}  // namespace

std::shared_ptr<Output> store_output(store::RunRecorder& run) {
  return std::make_shared<StoreOutput>(run);
}

std::shared_ptr<Output> console_output() { return std::make_shared<ConsoleOutput>(); }

std::optional<tfevents::Histogram> tensorboard_histogram(const Histogram& h) {
  if (h.finite() == 0) return std::nullopt;
  tfevents::Histogram t;
  t.min = h.low;
  t.max = h.high;
  t.num = static_cast<double>(h.finite());
  t.sum = h.sum;
  t.sum_squares = h.sum_squares;
  const size_t n = h.counts.size();
  for (size_t i = 0; i < n; ++i) {
    t.bucket_limit.push_back(i + 1 == n ? h.high : h.low + (h.high - h.low) * (i + 1) / n);
    t.bucket.push_back(static_cast<double>(h.counts[i]));
  }
  return t;
}

TfEventsWriter::TfEventsWriter(const std::filesystem::path& dir)
    : writer_(std::make_unique<tfevents::Writer>(dir)) {}

TfEventsWriter::~TfEventsWriter() { close(); }

void TfEventsWriter::write_scalar(const std::string& tag, int64_t step, double wall_time,
                                  float value) {
  if (open_) writer_->scalar(tag, step, wall_time, value);
}

void TfEventsWriter::scalar(const SeriesPoint& p) {
  write_scalar(p.layer.empty() ? p.name : p.layer + "/" + p.name, p.at.step,
               p.wall_time != 0 ? p.wall_time : core::unix_now(), static_cast<float>(p.value));
}

void TfEventsWriter::histogram(const std::string& layer, Kind kind, const Position& at,
                               const Histogram& h, double wall_time) {
  auto t = tensorboard_histogram(h);
  if (open_ && t) writer_->histogram(histogram_key(layer, kind), at.step, wall_time, *t);
}

void TfEventsWriter::close() {
  if (!open_) return;
  open_ = false;
  // The training goes on when its TensorBoard copy cannot be written: the
  // store holds every value.
  try {
    writer_->close();
  } catch (const std::exception& e) {
    core::log_warn("{}", e.what());
  }
}

}  // namespace trainscope::probes
