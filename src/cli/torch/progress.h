// The progress display of `trainscope train`: a bar with loss, throughput and
// ETA redrawn on a terminal (or a line every 10 s when stderr is not one),
// and one line per finished epoch. An observer of the trainer's events.
#pragma once

#include <cstdint>
#include <string>

#include "trainscope/instrument/events.h"

namespace trainscope::cli {

class ProgressObserver : public instrument::TrainObserver {
 public:
  // `bar`: draw the bar; epoch lines print either way (unless --quiet).
  explicit ProgressObserver(bool bar = true);
  ~ProgressObserver() override;
  void on_run_begin(const instrument::RunContext& ctx) override;
  void on_epoch_begin(const instrument::RunContext& ctx) override;
  void on_after_step(const instrument::RunContext& ctx, const instrument::Step& step) override;
  void on_epoch_end(const instrument::RunContext& ctx, const instrument::EpochInfo& epoch) override;

 private:
  void draw(const instrument::RunContext& ctx, const instrument::Step& step, double now);
  // Prints a whole line, clearing the bar first.
  void message(const std::string& line);

  bool bar_;
  bool tty_;
  bool drawn_ = false;
  double start_ = 0, last_ = 0, epoch_start_ = 0;
  int64_t epoch_samples_ = 0;
};

}  // namespace trainscope::cli
