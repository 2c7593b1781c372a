// Joining the ranks of a training: a TCPStore client at the launcher's
// address, a Gloo process group over a prefix of it, and the collectives
// the replica observer uses, their failures turned into one line.
#include "trainscope/dist/world.h"

#include <chrono>
#include <cstdlib>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "trainscope/core/error.h"
#include "trainscope/core/util.h"

namespace trainscope::dist {
using core::ErrorKind;
using core::fail;

namespace {

int env_int(const char* var, int lo, int hi) {
  const char* v = std::getenv(var);
  char* end = nullptr;
  const long n = v ? std::strtol(v, &end, 10) : -1;
  if (!v || !*v || *end || n < lo || n > hi)
    fail(ErrorKind::kUsage,
         "{} must be an integer in [{}, {}] (got '{}'); it is set by `train "
         "--nproc N` for each rank",
         var, lo, hi, v ? v : "");
  return static_cast<int>(n);
}

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

}  // namespace

std::optional<Rendezvous> rendezvous_from_env() {
  if (!std::getenv(kRankVar)) return std::nullopt;
  Rendezvous r;
  r.size = env_int(kSizeVar, 1, 256);
  r.rank = env_int(kRankVar, 0, r.size - 1);
  r.port = env_int(kPortVar, 1, 65535);
  const char* addr = std::getenv(kAddrVar);
  if (addr && *addr) r.addr = addr;
  return r;
}

struct World::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
  std::chrono::milliseconds timeout;
};

World::World(const Rendezvous& r, const DistConfig& c)
    : impl_(std::make_unique<Impl>()), rank_(r.rank), size_(r.size), host_(core::host_name()) {
  impl_->timeout = millis(c.timeout_s);
  try {
    c10d::TCPStoreOptions o;
    o.port = static_cast<uint16_t>(r.port);
    o.isServer = false;
    o.timeout = impl_->timeout;
    impl_->store = c10::make_intrusive<c10d::TCPStore>(r.addr, o);
    auto opts = c10d::ProcessGroupGloo::Options::create(impl_->timeout);
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(r.addr));
    opts->threads = 1;
    impl_->group = c10::make_intrusive<c10d::ProcessGroupGloo>(
        c10::make_intrusive<c10d::PrefixStore>("pg", impl_->store), r.rank, r.size, opts);
  } catch (const std::exception& e) {
    std::string what = e.what();
    fail(ErrorKind::kRuntime, "rank {} of {} could not join the training at {}:{} within {} s: {}",
         r.rank, r.size, r.addr, r.port, c.timeout_s, what.substr(0, what.find('\n')));
  }
}

World::~World() = default;

namespace {

// Waits for a collective; its failure names this rank and the operation.
void wait(const c10::intrusive_ptr<c10d::Work>& work, int rank, const char* what) {
  try {
    work->wait();
  } catch (const std::exception& e) {
    std::string msg = e.what();
    fail(ErrorKind::kRuntime, "rank {}: {} failed, another rank is gone or timed out: {}", rank,
         what, msg.substr(0, msg.find('\n')));
  }
}

}  // namespace

void World::allreduce_sum(std::vector<at::Tensor>& tensors) {
  wait(impl_->group->allreduce(tensors), rank_, "the gradients' all-reduce");
}

void World::broadcast(std::vector<at::Tensor>& tensors, int root) {
  c10d::BroadcastOptions o;
  o.rootRank = root;
  wait(impl_->group->broadcast(tensors, o), rank_, "the weights' broadcast");
}

std::vector<at::Tensor> World::allgather(const at::Tensor& t) {
  std::vector<std::vector<at::Tensor>> out(1);
  for (int r = 0; r < size_; ++r) out[0].push_back(at::empty_like(t));
  std::vector<at::Tensor> in = {t};
  wait(impl_->group->allgather(out, in), rank_, "an all-gather of the ranks' figures");
  return out[0];
}

void World::set(const std::string& key, const std::string& value) {
  impl_->store->set(key, std::vector<uint8_t>(value.begin(), value.end()));
}

std::string World::get(const std::string& key) {
  try {
    auto v = impl_->store->get(key);
    return {v.begin(), v.end()};
  } catch (const std::exception& e) {
    std::string msg = e.what();
    fail(ErrorKind::kRuntime, "rank {}: waiting for '{}' from rank 0 failed: {}", rank_, key,
         msg.substr(0, msg.find('\n')));
  }
}

}  // namespace trainscope::dist
