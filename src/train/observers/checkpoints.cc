#include <fmt/format.h>
#include <unistd.h>

#include "trainscope/checkpoint/checkpoint.h"
#include "trainscope/core/util.h"
#include "trainscope/train/observers.h"

namespace fs = std::filesystem;

namespace trainscope::train {
using checkpoint::checkpoint_name;
using checkpoint::kCheckpointKind;
using checkpoint::write_checkpoint;

void CheckpointObserver::write(const instrument::RunContext& ctx) {
  const instrument::TrainPosition& pos = ctx.position;
  if (pos.step == last_step_) return;  // e.g. an epoch end that is also the run's end
  last_step_ = pos.step;
  // Metrics first: everything up to a checkpoint is durable when the
  // checkpoint is, so a resumed run has no gap in its series. (Points logged
  // after the last checkpoint of a killed run may appear twice after
  // resuming: once from the killed process, once replayed.)
  ctx.run.flush();
  // Written in place into the artifact folder, hashed as written and
  // synced before it is recorded: no copy through $TMPDIR, no re-read.
  store::ArtifactInfo a = ctx.run.write_artifact(
      checkpoint_name(pos.step), kCheckpointKind,
      [&](std::ostream& out) { write_checkpoint(out, model_, optimizer_, dropout_, pos); });
  ctx.publish_checkpoint({pos.step, a.name, a.path});
}

void CheckpointObserver::on_run_begin(const instrument::RunContext& ctx) {
  // The initial state, so that `diff` can replay from step 0 when two runs
  // differ from their first step.
  const config::Config& c = ctx.config;
  // A resumed session starts at a checkpoint the store already holds: a
  // run killed right after its last checkpoint must not write that step
  // again at its end (with this session's position, other bytes: a conflict).
  if (ctx.resumed) last_step_ = ctx.position.step;
  const bool checkpointing = c.checkpoint.every_epochs > 0 || c.checkpoint.every_steps > 0;
  if (!ctx.resumed && !ctx.from_checkpoint && ctx.position.step == 0 && checkpointing) write(ctx);
}

void CheckpointObserver::on_batch_end(const instrument::RunContext& ctx,
                                      const instrument::Step& step) {
  const int64_t every = ctx.config.checkpoint.every_steps;
  // A step that ends an epoch is left to on_epoch_end.
  const bool inside_epoch = ctx.position.batch < ctx.batches_per_epoch;
  if (every > 0 && step.number % every == 0 && inside_epoch) write(ctx);
}

void CheckpointObserver::on_epoch_end(const instrument::RunContext& ctx,
                                      const instrument::EpochInfo& epoch) {
  const int64_t every = ctx.config.checkpoint.every_epochs, e1 = epoch.epoch + 1;
  // The last epoch's checkpoint is the final one, written at the run's end.
  if (every > 0 && e1 % every == 0 && e1 < ctx.config.train.epochs) write(ctx);
}

void CheckpointObserver::on_train_end(const instrument::RunContext& ctx,
                                      const instrument::TrainResult& result) {
  write(ctx);
}

}  // namespace trainscope::train
