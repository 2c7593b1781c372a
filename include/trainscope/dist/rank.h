// The rank policy of a data-parallel training (dist/README.md): what a
// process that finds itself a rank does besides training its shard. Rank 0
// records the run, captures the environment manifest, evaluates and writes
// checkpoints; every other rank records into a store it drops, evaluates
// nothing (the same weights would give the same result), runs quiet and,
// when rank 0 resumes a run, starts from the checkpoint rank 0 resumes
// from; compute.threads auto is this host's usable cores shared by its
// ranks. join_rank() decides and joins; the trainer's side (its options)
// is train::join_data_parallel, which the CLI calls.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "trainscope/config/config.h"
#include "trainscope/dist/replicas.h"
#include "trainscope/dist/world.h"
#include "trainscope/store/store.h"

namespace trainscope::dist {

// What joining needs of its caller. Plain callbacks, called on the calling
// thread during join_rank() only.
struct RankOptions {
  // The store rank 0 records into; called by rank 0 only (ranks > 0 never
  // open the caller's store).
  std::function<std::shared_ptr<store::Store>()> store;
  // Rank 0: the path of the checkpoint the run it resumes continues from,
  // "" when it resumes none; called by rank 0 only, after joining. Rank 0
  // puts it in the rendezvous store, and every other rank starts from it
  // (ranks on several hosts need a shared filesystem). Unset: no resume.
  std::function<std::string()> resume_checkpoint;
  // Whether this rank was asked to stop; the ranks agree after every step
  // (ReplicaObserver). Unset: join_rank installs SIGINT and SIGTERM
  // handlers that only note the request (a launcher kills its ranks on a
  // second signal), as `train --nproc N`'s ranks have.
  std::function<bool()> stop_requested;
};

// One process's part in a data-parallel training, joined (see the file
// comment). Held by the caller for the training; `world` and `sync` are
// shared with the trainer that uses them.
struct Rank {
  std::shared_ptr<World> world;
  // The loop's gradient sync (TrainOptions::gradient_sync), with its
  // read-only observer.
  std::shared_ptr<ReplicaSync> sync;
  // Rank 0: records the run into options.store(), captures the
  // environment manifest, evaluates and writes checkpoints. The others do
  // none of it.
  bool records = false;
  // The store this rank's run goes to: options.store()'s for rank 0; null
  // for the others, which train with a recorder that records nothing
  // (TrainOptions::record false, store::RunRecorder::unrecorded).
  std::shared_ptr<store::Store> store;
  // Ranks > 0 of a resumed run: the checkpoint file rank 0 resumes from,
  // to start from (its weights, optimizer state and position); else "".
  std::string init_checkpoint;
  // Rank 0 started by the local launcher: the launcher's pid, whose
  // process tree holds every local rank (RunContext::process_root); else 0.
  int64_t process_root = 0;
};

// When this process is a rank of a training of `config` (dist.nproc > 1
// and a rendezvous in its environment, dist::rendezvous_from_env), joins
// the world and returns its part; nullopt when it is not a rank (nothing
// changed). Sets config.compute.threads "auto" to this host's usable
// cores divided by its ranks (recorded as the number each rank used), and
// makes a rank > 0 quiet (core::Verbosity::kQuiet unless verbose).
// Throws Error(kUsage) when the rendezvous's world size is not
// dist.nproc, and what World's constructor and the callbacks throw. Call
// it on the thread that trains, once per process.
std::optional<Rank> join_rank(config::Config& config, const RankOptions& options);

}  // namespace trainscope::dist
