#include "progress.h"

#include <unistd.h>

#include <algorithm>

#include "trainscope/core/log.h"
#include "trainscope/core/output.h"
#include "trainscope/core/util.h"

namespace trainscope::cli {
namespace {

// The display is never the run: a stderr that is closed or full drops it
// (core/output.h) and the training goes on.
void progress_text(const std::string& text) {
  core::write_standard(core::StdStream::kStderr, text);
  core::flush_standard(core::StdStream::kStderr);
}

}  // namespace

ProgressObserver::ProgressObserver(bool bar) : bar_(bar), tty_(isatty(2) != 0) {}

ProgressObserver::~ProgressObserver() {
  if (tty_ && drawn_) progress_text("\n");
}

void ProgressObserver::on_run_begin(const instrument::RunContext& ctx) {
  start_ = core::monotonic_now();
}

void ProgressObserver::on_epoch_begin(const instrument::RunContext& ctx) {
  epoch_start_ = core::monotonic_now();
  epoch_samples_ = 0;
}

void ProgressObserver::on_after_step(const instrument::RunContext& ctx,
                                     const instrument::Step& step) {
  epoch_samples_ += step.samples;
  if (!bar_ || core::verbosity() < core::Verbosity::kNormal) return;
  const double now = core::monotonic_now();
  // Redraw at most every 0.1 s on a terminal, every 10 s into a file.
  if (now - last_ < (tty_ ? 0.1 : 10.0) && step.number != ctx.total_steps) return;
  last_ = now;
  draw(ctx, step, now);
}

void ProgressObserver::draw(const instrument::RunContext& ctx, const instrument::Step& step,
                            double now) {
  const int64_t done = step.number - ctx.first_step, total = ctx.total_steps;
  const double elapsed = now - start_;
  const double eta = done > 0 ? elapsed / static_cast<double>(done) *
                                    static_cast<double>(std::max<int64_t>(0, total - step.number))
                              : 0;
  constexpr int kWidth = 24;
  const int filled =
      total > 0 ? static_cast<int>(kWidth * step.number / std::max<int64_t>(1, total)) : 0;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  const double samples_per_s = static_cast<double>(epoch_samples_) / (now - epoch_start_);
  std::string line =
      fmt::format("epoch {}/{} [{}] step {}/{} loss {:.4f} {:.0f} samples/s ETA {}", step.epoch + 1,
                  ctx.config.train.epochs, bar, step.number, total, step.loss_value, samples_per_s,
                  eta < 3600 ? fmt::format("{:.0f}s", eta) : fmt::format("{:.1f}h", eta / 3600));
  if (tty_) {
    progress_text("\r" + line + "\x1b[K");
    drawn_ = true;
  } else {
    progress_text(line + "\n");
  }
}

void ProgressObserver::on_epoch_end(const instrument::RunContext& ctx,
                                    const instrument::EpochInfo& e) {
  message(fmt::format(
      "epoch {}/{}: train loss {:.4f} acc {:.4f} | test loss {:.4f} acc {:.4f} macro-F1 {:.4f} | "
      "{:.1f}s",
      e.epoch + 1, ctx.config.train.epochs, e.train_loss, e.train_accuracy, e.test.loss,
      e.test.accuracy, e.test.macro_f1, e.seconds));
}

void ProgressObserver::message(const std::string& line) {
  if (core::verbosity() < core::Verbosity::kNormal) return;
  progress_text((tty_ && drawn_ ? "\r\x1b[K" : "") + line + "\n");
  drawn_ = false;
}

}  // namespace trainscope::cli
