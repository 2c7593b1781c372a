// The Python process that runs MLflow's client for both directions.
#include "bridge.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>

#include "trainscope/core/argv.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"

extern char** environ;

namespace {
// The bridge's exit status when it cannot write its answer (its
// _mlflow_bridge.NO_ROOM).
constexpr int kNoRoomExit = 3;
}  // namespace

namespace trainscope::mlflow {

namespace fs = std::filesystem;
using core::ErrorKind;
using core::fail;

Bridge find_bridge(const fs::path& exe) {
  const char* py = std::getenv("TRAINSCOPE_PYTHON");
  Bridge b{py && *py ? py : "python3", {}};
  const fs::path bin = exe.parent_path();
  // pip install .: <site-packages>/trainscope/bin/trainscope; a build tree:
  // build/bin/trainscope beside build/python/trainscope.
  for (const fs::path& p : {bin.parent_path() / "_mlflow_bridge.py",
                            bin.parent_path() / "python" / "trainscope" / "_mlflow_bridge.py"}) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) {
      b.script = p;
      return b;
    }
  }
  fail(ErrorKind::kUsage,
       "MLflow runs need trainscope's Python package beside this program ({} has no "
       "_mlflow_bridge.py near it): use the trainscope that `pip install .` or `make` installs",
       core::escape_for_display(exe.string()));
}

void refuse_own_store(store::Store& store, const std::string& uri) {
  const std::string own = store.describe();
  if (!uri.starts_with("sqlite:///") || !own.starts_with("sqlite:") || own == "sqlite::memory:")
    return;
  std::error_code ec;
  const fs::path theirs = uri.substr(10), ours = own.substr(7);
  // MLflow's migrations would add their tables to trainscope's store
  // before failing (thirty-fifth hunt, A-D10).
  if (fs::equivalent(theirs, ours, ec))
    fail(ErrorKind::kUsage,
         "'{}' is this command's own trainscope store, not an MLflow one: MLflow's client would "
         "add its tables to it; give another file",
         core::escape_for_display(uri));
}

namespace {

// Runs PYTHON SCRIPT MODE REQ RES, its stdout on our stderr (a stray print
// never mixes with our output), stdin /dev/null; the wait status.
int spawn(const Bridge& b, const std::string& mode, const fs::path& req, const fs::path& res) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, 2, 1);
  const std::vector<std::string> args = {b.python, b.script.string(), mode, req.string(),
                                         res.string()};
  std::vector<char*> argv = core::exec_argv(args);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    fail(ErrorKind::kUsage,
         "cannot run '{}' for MLflow's client: {}; set TRAINSCOPE_PYTHON to a Python that has "
         "the mlflow package",
         core::escape_for_display(b.python), std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

ErrorKind kind_of(const std::string& k) {
  if (k == "usage") return ErrorKind::kUsage;
  if (k == "not_found") return ErrorKind::kNotFound;
  if (k == "conflict") return ErrorKind::kConflict;
  return ErrorKind::kStore;
}

}  // namespace

TempDir::TempDir() {
  std::string t = (fs::temp_directory_path() / "trainscope-mlflow-XXXXXX").string();
  if (!::mkdtemp(t.data()))
    fail(ErrorKind::kUsage,
         "cannot make a temporary folder in {}: {}; set TMPDIR to a folder that can hold one",
         fs::temp_directory_path().string(), std::strerror(errno));
  path = t;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path, ec);
}

format::Json run_bridge(const Bridge& b, const std::string& mode, const format::Json& request) {
  TempDir dir;
  const fs::path req = dir.path / "request.json", res = dir.path / "result.json";
  {
    std::ofstream out(req);
    out << request.dump(-1, ' ', false, format::kInvalidUtf8);
    if (!out.flush())
      fail(ErrorKind::kUsage,
           "cannot write the runs for MLflow into {}: {}; set TMPDIR to a folder with room (or "
           "raise `ulimit -f`)",
           dir.path.string(), std::strerror(errno));
  }
  const int status = spawn(b, mode, req, res);
  std::ifstream in(res);
  format::Json j = format::Json::parse(in, nullptr, false);
  if (WIFEXITED(status) && WEXITSTATUS(status) == kNoRoomExit)
    fail(ErrorKind::kUsage,
         "MLflow's client could not write its answer into {} (no room, or past the file size "
         "limit); set TMPDIR to a folder with room; nothing more was done",
         dir.path.parent_path().string());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || j.is_discarded() || !j.is_object())
    fail(ErrorKind::kUsage,
         "MLflow's client ({} {}) {} without an answer: is TRAINSCOPE_PYTHON a Python with the "
         "mlflow package? nothing more was done",
         core::escape_for_display(b.python), core::escape_for_display(b.script.string()),
         WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                             : "exited " + std::to_string(WEXITSTATUS(status)));
  if (j.contains("error")) fail(kind_of(j.value("kind", "")), "{}", j["error"].get<std::string>());
  return j;
}

// The JSON number for `v`; "nan", "inf" and "-inf" for what JSON has none.
format::Json value_json(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

std::optional<double> value_of(const format::Json& j) {
  if (j.is_number()) return j.get<double>();
  if (!j.is_string()) return std::nullopt;
  const auto s = j.get<std::string>();
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  return std::nullopt;
}

}  // namespace trainscope::mlflow
