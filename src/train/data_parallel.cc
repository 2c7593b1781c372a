// A data-parallel rank's options (data_parallel.h): dist's rank policy put
// into TrainOptions.
#include "trainscope/train/data_parallel.h"

#include "trainscope/checkpoint/checkpoint.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"

namespace trainscope::train {

std::string resume_checkpoint(store::Store& store, const std::string& run) {
  const store::RunInfo prev = store.resolve_run(run);
  const auto ck = checkpoint::find_checkpoint(store, prev.uuid);
  if (!ck)
    core::fail(core::ErrorKind::kNotFound, "run {} has no checkpoint to resume from",
               core::short_uuid(prev.uuid));
  return ck->path;
}

std::optional<dist::Rank> join_data_parallel(
    config::Config& config, TrainOptions& options,
    const std::function<std::shared_ptr<store::Store>()>& store,
    std::function<bool()> stop_requested) {
  dist::RankOptions ro;
  ro.store = store;
  ro.resume_checkpoint = [&] {
    return options.resume.empty() ? std::string() : resume_checkpoint(*store(), options.resume);
  };
  ro.stop_requested = std::move(stop_requested);
  std::optional<dist::Rank> rank = dist::join_rank(config, ro);
  if (!rank) return rank;
  options.shard = rank->world->rank();
  options.shards = rank->world->size();
  options.gradient_sync = rank->sync;
  if (rank->process_root) options.process_root = rank->process_root;
  if (!rank->records) {
    options.record = false;  // rank 0 records the run
    options.write_checkpoints = false;
    options.record_environment = false;
    options.evaluate = false;
    options.parent.clear();
    options.resume.clear();
    options.init_checkpoint = rank->init_checkpoint;
  }
  return rank;
}

}  // namespace trainscope::train
