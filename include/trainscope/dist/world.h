// The ranks of one data-parallel training: who this process is among them
// and the c10d process group that joins them (dist/README.md).
#pragma once

#include <ATen/Tensor.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/dist/config.h"

namespace trainscope::dist {

// Where a rank finds the others: set by the launcher (`train --nproc N`)
// in TRAINSCOPE_DIST_RANK, _WORLD_SIZE, _ADDR and _PORT.
struct Rendezvous {
  int rank = 0, size = 1;
  std::string addr = "127.0.0.1";
  int port = 0;
};
inline constexpr const char* kRankVar = "TRAINSCOPE_DIST_RANK";
inline constexpr const char* kSizeVar = "TRAINSCOPE_DIST_WORLD_SIZE";
inline constexpr const char* kAddrVar = "TRAINSCOPE_DIST_ADDR";
inline constexpr const char* kPortVar = "TRAINSCOPE_DIST_PORT";

// This process's place in a training, from the environment; nullopt when
// it is not a rank. Throws Error(kUsage) naming a variable that is wrong.
std::optional<Rendezvous> rendezvous_from_env();

// A joined world: a TCPStore client at the rendezvous and a Gloo process
// group over it. Collectives throw Error(kRuntime) naming the rank and
// what failed (a peer that died, a timeout).
class World {
 public:
  // Joins; throws Error(kRuntime) naming the address when the rendezvous
  // cannot be reached, or the other ranks do not come, within the timeout.
  World(const Rendezvous& r, const DistConfig& c);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& host() const { return host_; }

  void allreduce_sum(std::vector<at::Tensor>& tensors);
  void broadcast(std::vector<at::Tensor>& tensors, int root);
  // Every rank's copy of `t` (same shape on all), in rank order.
  std::vector<at::Tensor> allgather(const at::Tensor& t);
  // The rendezvous store: a key set by one rank, read by the others
  // (get waits up to the timeout).
  void set(const std::string& key, const std::string& value);
  std::string get(const std::string& key);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int rank_ = 0, size_ = 1;
  std::string host_;
};

}  // namespace trainscope::dist
