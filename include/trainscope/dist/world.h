// The ranks of one data-parallel training: who this process is among them
// and the c10d process group that joins them (dist/README.md).
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/dist/config.h"
#include "trainscope/dist/rendezvous.h"

namespace trainscope::dist {

// An all-reduce under way on Gloo's thread (World::allreduce_sum_async).
class PendingReduce {
 public:
  PendingReduce() = default;
  // Whether an all-reduce was started (a default-constructed one was not;
  // wait() then returns 0 at once).
  bool started() const { return impl_ != nullptr; }
  // Waits for it and returns how long the all-reduce itself took, from
  // its start to Gloo's thread finishing it, in seconds; throws as
  // World::allreduce_sum does.
  double wait();

 private:
  friend class World;
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// A joined world: a TCPStore client at the rendezvous and a Gloo process
// group over it. Collectives throw Error(kRuntime) naming the rank and
// what failed (a peer that died, a timeout).
class World {
 public:
  // Joins (rank 0 first hosts the store when r.host_store); throws
  // Error(kUsage) naming the address when the rendezvous cannot be hosted
  // (a port in use) or reached, or the other ranks do not come, within the
  // timeout. Gloo binds to this host's address on the route to r.addr.
  World(const Rendezvous& r, const DistConfig& c);
  // Drops the process group and the store client (and the store rank 0
  // hosts); waits for no other rank.
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  // This process's rank, the number of ranks and this host's name, as
  // joined. A World is used from one thread at a time (the training
  // thread); nothing in it is locked.
  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& host() const { return host_; }
  int local_rank() const { return local_rank_; }  // among the ranks of this host
  // The address Gloo bound to on this host (the one facing rank 0's).
  const std::string& address() const { return address_; }
  // How the ranks found each other: launcher, slurm or environment.
  const std::string& source() const { return source_; }

  // Sums each tensor over the ranks in place and waits; every rank must call
  // it with tensors of the same shapes and dtypes in the same order.
  void allreduce_sum(std::vector<at::Tensor>& tensors);
  // Starts the sum and returns: the caller computes on while Gloo's thread
  // communicates, and must not touch the tensors until it has waited.
  PendingReduce allreduce_sum_async(std::vector<at::Tensor>& tensors);
  // Overwrites each tensor in place with rank `root`'s and waits; the same
  // order and shapes on every rank.
  void broadcast(std::vector<at::Tensor>& tensors, int root);
  // Every rank's copy of `t` (same shape on all), in rank order.
  std::vector<at::Tensor> allgather(const at::Tensor& t);
  // The rendezvous store: a key set by one rank, read by the others
  // (get waits up to the timeout). Each value is stored with one byte
  // before it (stored_value): c10d 1.13's TCPStore answers a get of an
  // empty value with its length sent MSG_MORE and nothing after it, which
  // the kernel holds back for 200 ms.
  void set(const std::string& key, const std::string& value);
  // set stores `value` under `key` and returns; get waits for the key (up to
  // DistConfig::timeout_s) and throws Error(kRuntime) naming the rank and
  // the key when it does not come.
  std::string get(const std::string& key);

 private:
  void host_rendezvous(const Rendezvous& r);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int rank_ = 0, size_ = 1, local_rank_ = 0;
  std::string host_, address_, source_;
};

// The value World::set stored under a key, from the bytes the store holds.
std::string stored_value(const std::vector<uint8_t>& bytes);

}  // namespace trainscope::dist
