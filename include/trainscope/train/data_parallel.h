// A data-parallel rank's training (dist/README.md): the trainer's side of
// dist::join_rank. The rank policy (who records, evaluates, checkpoints,
// which checkpoint every rank starts from, threads per rank) is dist's;
// this puts it into a Trainer's options, so that the CLI's `train`, a
// study's ranks and any other caller train a rank with the same code:
//
//   std::shared_ptr<store::Store> store = ...;
//   auto rank = train::join_data_parallel(cfg, options, [&] { return store; });
//   train::Trainer trainer(cfg, rank ? rank->store : store, options);
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "trainscope/config/config.h"
#include "trainscope/dist/rank.h"
#include "trainscope/store/store.h"
#include "trainscope/train/trainer.h"

namespace trainscope::train {

// When this process is a rank of a data-parallel training of `config`
// (dist::join_rank), joins it and makes `options` this rank's: its shard
// of every batch and the gradient sync (TrainOptions::gradient_sync); rank
// 0 resumes options.resume; the other ranks write no checkpoints, capture
// no environment, evaluate nothing, belong to no parent and start from the
// checkpoint rank 0 resumes from. `store` is called by rank 0 only; the
// rank's store (Rank::store) is the one its Trainer records into. Returns
// nullopt, changing nothing, when this process is not a rank. Throws what
// dist::join_rank throws, and Error(kNotFound) when rank 0's run to resume
// has no checkpoint. `stop_requested`: as dist::RankOptions's (unset:
// SIGINT and SIGTERM handlers). On the thread that trains, once.
std::optional<dist::Rank> join_data_parallel(
    config::Config& config, TrainOptions& options,
    const std::function<std::shared_ptr<store::Store>()>& store,
    std::function<bool()> stop_requested = {});

// The path of the checkpoint a resume of `run` (a reference
// Store::resolve_run takes) continues from: its newest. Throws what
// resolve_run throws, and Error(kNotFound) when the run has no checkpoint.
std::string resume_checkpoint(store::Store& store, const std::string& run);

}  // namespace trainscope::train
