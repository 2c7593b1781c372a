// Where a rank finds the others (dist/README.md): from the local launcher
// of `train --nproc N`, from Slurm's environment when `srun` started the
// ranks, or from variables a user sets on each host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace trainscope::dist {

// Where a rank finds the others: what rendezvous_from_env returns and
// World's constructor joins. A plain value.
struct Rendezvous {
  int rank = 0, size = 1;
  std::string addr = "127.0.0.1";  // rank 0's host: the store's address
  int port = 0;
  bool host_store = false;  // this rank (0) hosts the store; else the launcher does
  std::string source;       // "launcher", "slurm" or "environment"
  int local_size = 1;       // ranks on this host, which share its cores
  int local_rank = 0;       // this rank's index among them (its GPU's index)
};

// The variables a rank reads (rendezvous_from_env): its rank, the number
// of ranks, rank 0's host and the store's port.
inline constexpr const char* kRankVar = "TRAINSCOPE_DIST_RANK";
inline constexpr const char* kSizeVar = "TRAINSCOPE_DIST_WORLD_SIZE";
inline constexpr const char* kAddrVar = "TRAINSCOPE_DIST_ADDR";
inline constexpr const char* kPortVar = "TRAINSCOPE_DIST_PORT";
// Set by the local launcher, which hosts the store itself.
inline constexpr const char* kLocalSizeVar = "TRAINSCOPE_DIST_LOCAL_SIZE";
inline constexpr const char* kLocalRankVar = "TRAINSCOPE_DIST_LOCAL_RANK";
inline constexpr const char* kLauncherVar = "TRAINSCOPE_DIST_LAUNCHER";
// Set by the local launcher: the descriptor a rank writes its error's line
// into instead of stderr (at most kMaxErrorLine bytes of it), so that the
// launcher says one line for all its ranks (a config every rank refuses is
// one line, not one per rank and the launcher's).
inline constexpr const char* kErrorFdVar = "TRAINSCOPE_DIST_ERROR_FD";
inline constexpr size_t kMaxErrorLine = 4096;

// This process's place in a training of `nproc` ranks; nullopt when it is
// not a rank (it then launches them, or trains alone). In order:
//  - TRAINSCOPE_DIST_RANK and _WORLD_SIZE, _ADDR (default 127.0.0.1),
//    _PORT: the local launcher's, or a user's on each host (rank 0 then
//    hosts the store at ADDR:PORT; TRAINSCOPE_DIST_LOCAL_SIZE says how
//    many ranks share this host, default 1, TRAINSCOPE_DIST_LOCAL_RANK
//    which of them this is, default 0);
//  - when nproc > 1 and Slurm started as many tasks (SLURM_NTASKS =
//    nproc): SLURM_PROCID is the rank, the first host of the step's node
//    list hosts the store, on TRAINSCOPE_DIST_PORT or 15000 + the last four
//    digits of SLURM_JOB_ID (one port per job, as Lightning picks it); the
//    ranks on this host from SLURM_STEP_TASKS_PER_NODE, and this one's
//    index among them from SLURM_LOCALID.
// Throws Error(kUsage) naming a variable that is wrong.
std::optional<Rendezvous> rendezvous_from_env(int64_t nproc);

// The first host of a Slurm node list: "gpu[07-09,12],cpu1" -> "gpu07".
// Throws Error(kUsage) when the list is empty or malformed.
std::string first_slurm_host(const std::string& nodelist);

}  // namespace trainscope::dist
