// Where a study's trainings run. Each training is one process, so a crash
// or a kill of one never stops the others or the study. The local executor
// runs up to N at once on this machine; a cluster executor (Slurm) joins
// behind the same interface.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace trainscope::study {

// One training for an executor to run: a command, where its output goes,
// and what is added to its environment.
struct Job {
  std::string id;                 // the planned run's name
  std::vector<std::string> argv;  // argv[0]: the program
  std::filesystem::path log;      // stdout and stderr go here
  // Added to its environment, not its command line (which `ps` shows to
  // everyone): the store's password (PGPASSWORD), say.
  std::map<std::string, std::string> env;
};

// How a job ended (wait_any).
struct JobEnd {
  std::string id;
  int exit_code = 0;  // -1 when killed by a signal
  int signal = 0;     // the signal that ended it, 0 if it exited
  double seconds = 0;
  // Whether it exited with 0.
  bool ok() const { return exit_code == 0 && signal == 0; }
};

// Runs a study's jobs: used from the study's thread only (start, wait_any
// and stop_all are not synchronised).
class Executor {
 public:
  virtual ~Executor() = default;
  // How many jobs may run at once.
  virtual int slots() const = 0;
  // Starts a job; the caller keeps at most slots() running.
  virtual void start(const Job& job) = 0;
  // Blocks until a running job ends; nullopt when none is running, or when
  // a signal interrupted the wait (the study's SIGTERM, SIGINT or SIGHUP:
  // the caller looks at why and calls again).
  virtual std::optional<JobEnd> wait_any() = 0;
  // Jobs started and not yet returned by wait_any.
  virtual int running() const = 0;
  // Asks every running job to stop (SIGTERM: the trainer checkpoints and
  // marks its run stopped). The local executor signals each job's process
  // group (a wrapper script's training too), and SIGKILLs what is left of
  // it kStopGraceS later; the warm executor SIGKILLs a training still
  // running kTrainingStopGraceS later.
  virtual void stop_all() = 0;
};

// How long a stopped job has to end after its SIGTERM before SIGKILL (a
// command that ignores SIGTERM), as `watch` gives its program.
inline constexpr double kStopGraceS = 5;
// The same for a training forked by the warm worker: it stops at its next
// step and checkpoints, which may take a while, but never forever.
inline constexpr double kTrainingStopGraceS = 60;

// Child processes on this machine. They get SIGTERM if the study process
// dies, so a killed study leaves stopped runs that resume, not orphans.
std::unique_ptr<Executor> local_executor(int slots);

// What a warm worker prepares once for every training it forks: the
// dataset of `config` with `sets` applied, decoded and its files hashed,
// and the git state of `code`, which the trainings record
// (env::warm_git_state). Any may be empty.
struct Warm {
  std::string config;
  std::vector<std::string> sets;
  std::string code;
};

// A worker process (`trainscope study worker --fd 3`) and its end of the
// socket pair it was given as fd 3.
struct WorkerProcess {
  int fd = -1;
  pid_t pid = -1;
};
// Starts `argv` as a worker now and sends it `warm`: a study starts it
// before it plans, so that the worker loads libtorch and decodes the
// dataset while the study loads libtorch and plans (two cores, half the
// wait); warm_executor then adopts it.
WorkerProcess start_worker(const std::vector<std::string>& argv, const Warm& warm);

// Warm workers: `worker` (`trainscope study worker --fd 3`, started with
// one end of a socket pair as fd 3, or adopted from start_worker) loads
// libtorch, is sent `warm` (unless adopted: start_worker sent it its own)
// and prepares it once, then forks a fresh child per job
// that runs the job's command line in-process (serve_jobs). Each run stays a process of its own (a
// crash or kill ends only it), and is what a fresh `trainscope train` would be: nothing runs
// threads in the worker before it forks (libtorch runs its intra-op threads on libgomp, the
// wheels' own copy as Debian's did, and the wheels' MKL on the same threads: a pool that does not
// survive a fork), and nothing the worker warms changes a result (the decoded
// files are compared by size and time before use). A worker that dies is started again; the jobs it
// held end as killed by SIGTERM once their processes are gone (they checkpoint and stop), so the
// study retries or resumes them.
std::unique_ptr<Executor> warm_executor(int slots, std::vector<std::string> worker, Warm warm,
                                        WorkerProcess early = {});

// The worker's side: reads the warm frame from `fd`, captures its code's
// git state and calls warm(it) (returns at once when `fd` closes first),
// then reads jobs and forks a
// child per job, which
// enters the job (log, environment, death signal) and exits with run(job).
// Reports each child's start and end on `fd`; returns when `fd` is closed
// and every child has ended. The caller must not run threads.
void serve_jobs(int fd, const std::function<void(const Warm&)>& warm,
                const std::function<int(const Job&)>& run);

// Slurm: the jobs started between two waits go out as one sbatch job array
// (one task per training, --requeue, at most `array_parallelism` at once);
// wait_any() polls squeue and scontrol for tasks that ended. A task runs
// `task_command` followed by its job's id (`trainscope study task STUDY
// NAME`), which decides on the node whether to train, resume or skip, so a
// requeued task continues its run.
struct SlurmOptions {
  std::string partition;      // empty: the cluster's default
  int array_parallelism = 0;  // 0: no limit
  std::filesystem::path dir;  // the sbatch scripts, task lists and logs
  std::vector<std::string> task_command;
  // Set in sbatch's environment, which Slurm hands to every task, and never
  // written into the script: the store's password (PGPASSWORD), say.
  std::map<std::string, std::string> environment;
  double poll_seconds = 1.0;
  // Called with the id of every array submitted (the study records them).
  std::function<void(const std::string& job_id)> on_submit;
};
// An Executor that submits to Slurm (see above); constructing it runs
// nothing. wait_any submits the jobs started since the last wait as one
// array and throws Error (kUsage for a missing partition, kRuntime when
// sbatch refuses or squeue fails).
std::unique_ptr<Executor> slurm_executor(SlurmOptions options);

// What Slurm's queue holds of these jobs' tasks, by state ("PENDING": 3,
// "RUNNING": 2); empty once they all ended. Throws Error when squeue fails.
std::map<std::string, int> slurm_queue(const std::vector<std::string>& job_ids);

// Checks that Slurm answers and has `partition` (any, when empty) before a
// study records anything; throws Error naming what is wrong otherwise.
void check_slurm(const std::string& partition);

// The sbatch script of one array over `names` (written beside it as
// NAME-list.txt): what slurm_executor submits, for reading and tests.
std::string slurm_script(const SlurmOptions& options, const std::filesystem::path& list,
                         size_t tasks);

}  // namespace trainscope::study
