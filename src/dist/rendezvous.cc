// Finding the rendezvous from the environment (rendezvous.h).
#include "trainscope/dist/rendezvous.h"

#include <algorithm>
#include <cstdlib>

#include "trainscope/core/error.h"

namespace trainscope::dist {
using core::ErrorKind;
using core::fail;

namespace {

const char* env(const char* var) {
  const char* v = std::getenv(var);
  return v && *v ? v : nullptr;
}

int env_int(const char* var, int lo, int hi, const char* who) {
  const char* v = std::getenv(var);
  char* end = nullptr;
  const long n = v ? std::strtol(v, &end, 10) : -1;
  if (!v || !*v || *end || n < lo || n > hi)
    fail(ErrorKind::kUsage, "{} must be an integer in [{}, {}] (got '{}'); {}", var, lo, hi,
         v ? v : "", who);
  return static_cast<int>(n);
}

constexpr const char* kByLauncher = "it is set by `train --nproc N` for each rank";
constexpr const char* kBySlurm = "it is set by srun for each task";

Rendezvous from_trainscope_vars() {
  Rendezvous r;
  r.size = env_int(kSizeVar, 1, 256, kByLauncher);
  r.rank = env_int(kRankVar, 0, r.size - 1, kByLauncher);
  r.port = env_int(kPortVar, 1, 65535, kByLauncher);
  if (const char* addr = env(kAddrVar)) r.addr = addr;
  r.source = env(kLauncherVar) ? "launcher" : "environment";
  r.local_size = r.source == "launcher" ? r.size
                 : env(kLocalSizeVar)   ? env_int(kLocalSizeVar, 1, r.size, "ranks on this host")
                                        : 1;
  r.local_rank = r.source == "launcher" ? r.rank
                 : env(kLocalRankVar)   ? env_int(kLocalRankVar, 0, r.size - 1,
                                                  "this rank's "
                                                    "index on its host")
                                        : 0;
  r.host_store = r.rank == 0 && r.source != "launcher";
  return r;
}

std::optional<Rendezvous> from_slurm(int64_t nproc) {
  if (nproc <= 1 || !env("SLURM_PROCID") || !env("SLURM_NTASKS")) return std::nullopt;
  const int tasks = env_int("SLURM_NTASKS", 1, 1 << 20, kBySlurm);
  if (tasks == 1) return std::nullopt;  // one task: it launches the ranks itself
  if (tasks != nproc)
    fail(ErrorKind::kUsage,
         "SLURM_NTASKS={} but the config's dist.nproc is {}: start one task per rank "
         "(`srun --ntasks {}`) or one task that launches them (`srun --ntasks 1`)",
         tasks, nproc, nproc);
  Rendezvous r;
  r.size = tasks;
  r.rank = env_int("SLURM_PROCID", 0, tasks - 1, kBySlurm);
  const char* nodes =
      env("SLURM_STEP_NODELIST") ? env("SLURM_STEP_NODELIST") : env("SLURM_JOB_NODELIST");
  if (!nodes) fail(ErrorKind::kUsage, "SLURM_JOB_NODELIST is not set; {}", kBySlurm);
  r.addr = first_slurm_host(nodes);
  if (env(kPortVar)) {
    r.port = env_int(kPortVar, 1, 65535, "the port rank 0 hosts the rendezvous on");
  } else {
    const std::string job = env("SLURM_JOB_ID") ? env("SLURM_JOB_ID") : "0";
    const std::string tail = job.size() > 4 ? job.substr(job.size() - 4) : job;
    r.port = 15000 + std::atoi(tail.c_str());
  }
  r.host_store = r.rank == 0;
  r.source = "slurm";
  // "2(x3),1": the tasks on each node; this rank's node is one of them.
  if (const char* per_node = env("SLURM_STEP_TASKS_PER_NODE"))
    r.local_size = std::max(1, std::min(tasks, std::atoi(per_node)));
  if (env("SLURM_LOCALID")) r.local_rank = env_int("SLURM_LOCALID", 0, tasks - 1, kBySlurm);
  return r;
}

}  // namespace

std::optional<Rendezvous> rendezvous_from_env(int64_t nproc) {
  if (env(kRankVar)) return from_trainscope_vars();
  return from_slurm(nproc);
}

std::string first_slurm_host(const std::string& nodelist) {
  const size_t end = nodelist.find_first_of(",[");
  std::string host = nodelist.substr(0, end);
  if (end != std::string::npos && nodelist[end] == '[') {
    const size_t close = nodelist.find(']', end);
    const size_t stop = nodelist.find_first_of(",-]", end + 1);
    if (close == std::string::npos || stop == end + 1)
      fail(ErrorKind::kUsage, "cannot read the Slurm node list '{}': an unclosed or empty '['",
           nodelist);
    host += nodelist.substr(end + 1, stop - end - 1);
  }
  if (host.empty()) fail(ErrorKind::kUsage, "the Slurm node list '{}' names no host", nodelist);
  return host;
}

}  // namespace trainscope::dist
