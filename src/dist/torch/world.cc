// Joining the ranks of a training: a TCPStore client at the launcher's
// address, a Gloo process group over a prefix of it, and the collectives
// the replica observer uses, their failures turned into one line.
#include "trainscope/dist/world.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
// The wheel's libtorch_cpu holds c10d's Gloo backend; its header declares it
// only under the macro torch's own build defines.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "trainscope/core/error.h"
#include "trainscope/core/util.h"

namespace trainscope::dist {
using core::ErrorKind;
using core::fail;

namespace {

// The first sentence of a c10d or Gloo error, without the source location
// Gloo starts it with ("[.../gloo/transport/tcp/pair.cc:561] "), the advice
// it follows it with, or its closing period.
std::string first_line(const std::exception& e) {
  const auto* c10 = dynamic_cast<const c10::Error*>(&e);
  std::string line = c10 ? c10->what_without_backtrace() : e.what();
  line = line.substr(0, line.find('\n'));
  if (line.rfind("[", 0) == 0 && line.find("] ") != std::string::npos &&
      line.find(':') < line.find("] "))
    line = line.substr(line.find("] ") + 2);
  if (const auto advice = line.find(". This is typically"); advice != std::string::npos)
    line.resize(advice);
  while (!line.empty() && (line.back() == '.' || line.back() == ' ')) line.pop_back();
  return line;
}

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// This host's address on the route to `addr` (a UDP socket "connected"
// there sends nothing): the interface Gloo must listen on so that the
// other ranks reach it, loopback for a local training.
std::string address_towards(const std::string& addr, int port) {
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  if (getaddrinfo(addr.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || !found)
    fail(ErrorKind::kUsage, "cannot resolve the rendezvous host '{}' ({})", addr, kAddrVar);
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in local{};
  socklen_t len = sizeof(local);
  const bool ok = fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
  const int err = errno;
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  if (!ok)
    fail(ErrorKind::kUsage, "no route to the rendezvous host '{}': {}", addr, std::strerror(err));
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text));
  return text;
}

}  // namespace

struct World::Impl {
  c10::intrusive_ptr<c10d::Store> server;  // rank 0's, when it hosts the rendezvous
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
  std::chrono::milliseconds timeout;
};

World::World(const Rendezvous& r, const DistConfig& c)
    : impl_(std::make_unique<Impl>()), rank_(r.rank), size_(r.size), host_(core::host_name()) {
  impl_->timeout = millis(c.timeout_s);
  address_ = address_towards(r.addr, r.port);
  source_ = r.source;
  local_rank_ = r.local_rank;
  if (r.host_store) host_rendezvous(r);
  try {
    c10d::TCPStoreOptions o;
    o.port = static_cast<uint16_t>(r.port);
    o.isServer = false;
    o.timeout = impl_->timeout;
    impl_->store = c10::make_intrusive<c10d::TCPStore>(r.addr, o);
    auto opts = c10d::ProcessGroupGloo::Options::create(impl_->timeout);
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(address_));
    opts->threads = 1;
    impl_->group = c10::make_intrusive<c10d::ProcessGroupGloo>(
        c10::make_intrusive<c10d::PrefixStore>("pg", impl_->store), r.rank, r.size, opts);
  } catch (const std::exception& e) {
    fail(ErrorKind::kUsage,
         "rank {} of {} could not join the training at {}:{} within {} s: {}; check that rank 0 "
         "runs there and the address and port ({}, {}) are the same for every rank",
         r.rank, r.size, r.addr, r.port, c.timeout_s, first_line(e), kAddrVar, kPortVar);
  }
}

// Rank 0 of ranks not started by the local launcher (Slurm, or a user on
// each host) hosts the store on every interface, at the agreed port.
void World::host_rendezvous(const Rendezvous& r) {
  try {
    c10d::TCPStoreOptions o;
    o.port = static_cast<uint16_t>(r.port);
    o.isServer = true;
    o.waitWorkers = false;
    o.timeout = impl_->timeout;
    impl_->server = c10::make_intrusive<c10d::TCPStore>(r.addr, o);
  } catch (const std::exception& e) {
    fail(ErrorKind::kUsage,
         "rank 0 cannot host the rendezvous on port {} of {}: {}; choose a free port with {}",
         r.port, host_, first_line(e), kPortVar);
  }
}

World::~World() = default;

namespace {

// Waits for a collective; its failure names this rank and the operation.
void wait(const c10::intrusive_ptr<c10d::Work>& work, int rank, const char* what) {
  try {
    work->wait();
  } catch (const std::exception& e) {
    fail(ErrorKind::kRuntime, "rank {}: {} failed, another rank is gone or timed out: {}", rank,
         what, first_line(e));
  }
}

}  // namespace

void World::allreduce_sum(std::vector<at::Tensor>& tensors) {
  wait(impl_->group->allreduce(tensors), rank_, "the gradients' all-reduce");
}

struct PendingReduce::Impl {
  c10::intrusive_ptr<c10d::Work> work;
  int rank = 0;
  double started = 0;
  std::shared_ptr<std::atomic<double>> finished = std::make_shared<std::atomic<double>>(0);
};

PendingReduce World::allreduce_sum_async(std::vector<at::Tensor>& tensors) {
  PendingReduce p;
  p.impl_ = std::make_shared<PendingReduce::Impl>();
  p.impl_->rank = rank_;
  p.impl_->started = core::monotonic_now();
  p.impl_->work = impl_->group->allreduce(tensors);
  // Runs on Gloo's thread when it is done (at once when it already is).
  p.impl_->work->getFuture()->addCallback(
      [finished = p.impl_->finished](c10::ivalue::Future&) { *finished = core::monotonic_now(); });
  return p;
}

double PendingReduce::wait() {
  if (!impl_) return 0;
  dist::wait(impl_->work, impl_->rank, "the gradients' all-reduce");
  const double finished = impl_->finished->load();
  return finished > 0 ? finished - impl_->started : core::monotonic_now() - impl_->started;
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

namespace {
constexpr char kValueTag = '=';
}  // namespace

std::string stored_value(const std::vector<uint8_t>& bytes) {
  const size_t skip = !bytes.empty() && bytes[0] == kValueTag ? 1 : 0;
  return {bytes.begin() + static_cast<std::ptrdiff_t>(skip), bytes.end()};
}

void World::set(const std::string& key, const std::string& value) {
  const std::string tagged = kValueTag + value;
  impl_->store->set(key, std::vector<uint8_t>(tagged.begin(), tagged.end()));
}

std::string World::get(const std::string& key) {
  try {
    return stored_value(impl_->store->get(key));
  } catch (const std::exception& e) {
    fail(ErrorKind::kRuntime, "rank {}: waiting for '{}' from rank 0 failed: {}", rank_, key,
         first_line(e));
  }
}

}  // namespace trainscope::dist
