// A small study on real data, through the real CLI: 2 optimizers x 3 seeds
// x 3 replicates on 2 workers; one worker killed with SIGKILL, then the
// whole study killed and resumed; then the report.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "support/test_util.h"
#include "trainscope/store/store.h"

namespace fs = std::filesystem;
namespace store = trainscope::store;
namespace tst = trainscope::testing;
using trainscope::testing::TempDir;

namespace {

class StudyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir_ / "small.yaml")
        << "study: small\nbase: " << TS_SOURCE_DIR << "/configs/demo.yaml\n"
        << "set:\n  train.epochs: 2\n  data.train_subset: 2048\n  data.test_subset: 500\n"
        << "  fingerprint.every_steps: 4\n  monitor.interval_s: 0.2\n"
        << "grid:\n  optimizer.name: [adam, sgd]\n  seeds.master: [1, 2, 3]\n"
        << "replicates: 3\nvary: data_order\nretries: 2\nworkers: 2\n";
  }
  std::string cli(const std::string& args) {
    return std::string(TS_CLI_BIN) + " --store sqlite:" + (dir_ / "s.db").string() + " " + args;
  }
  std::vector<store::RunInfo> children() {
    auto s = store::Store::open({.uri = "sqlite:" + (dir_ / "s.db").string()});
    auto study = s->list_runs({.experiment = "small", .name = "small"});
    if (study.empty()) return {};
    return s->list_runs({.parent_uuid = study[0].uuid});
  }
  // Starts `trainscope study run` in the background; returns its pid.
  pid_t start_study() {
    pid_t pid = fork();
    if (pid == 0) {
      std::string cmd =
          cli("study run " + (dir_ / "small.yaml").string() + " --logs " +
              (dir_ / "logs").string() + " > " + (dir_ / "run.out").string() + " 2>&1");
      execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), nullptr);
      _exit(127);
    }
    return pid;
  }
  static pid_t parent_of(pid_t pid) {
    std::string stat = tst::run_command("cat /proc/" + std::to_string(pid) + "/stat").out;
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos) return 0;
    return static_cast<pid_t>(std::atol(stat.substr(paren + 4).c_str()));
  }
  // A warm study worker: `trainscope ... study worker --fd 3 ...`.
  static bool is_worker(pid_t pid) {
    std::string cmdline =
        tst::run_command("tr '\\0' ' ' < /proc/" + std::to_string(pid) + "/cmdline").out;
    return cmdline.find(" study worker ") != std::string::npos;
  }
  template <typename F>
  bool wait_for(F done, int seconds) {
    for (int i = 0; i < seconds * 10; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  static std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(line);
    return out;
  }
  int count(store::RunStatus st) {
    int n = 0;
    for (const auto& r : children()) n += r.status == st;
    return n;
  }
  TempDir dir_;
};

}  // namespace

TEST_F(StudyTest, SurvivesAKilledWorkerAndAKilledStudyAndReports) {
  pid_t study = start_study();
  // A worker killed outright: the study notices and retries it.
  store::RunInfo victim;
  ASSERT_TRUE(wait_for(
      [&] {
        for (const auto& r : children())
          if (r.status == store::RunStatus::kRunning && r.pid > 0 &&
              kill(static_cast<pid_t>(r.pid), SIGKILL) == 0)
            return victim = r, true;
        return false;
      },
      120));
  const fs::path out = dir_ / "run.out";
  auto log_has = [&](const std::string& what) {
    return tst::run_command("cat " + out.string()).out.find(what) != std::string::npos;
  };
  ASSERT_TRUE(wait_for([&] { return log_has(victim.name + " ended (signal 9), retrying"); }, 60))
      << tst::run_command("cat " + out.string()).out;
  // The runs fork from a warm worker (study/executor.h); killed outright,
  // it takes its running trainings with it (they get SIGTERM, checkpoint
  // and stop): the study starts a new worker and continues them.
  store::RunInfo orphan;
  pid_t worker = 0;
  ASSERT_TRUE(wait_for(
      [&] {
        for (const auto& r : children())
          if (r.status == store::RunStatus::kRunning && r.pid > 0)
            if (pid_t w = parent_of(static_cast<pid_t>(r.pid)); w > 0 && is_worker(w))
              return orphan = r, worker = w, kill(w, SIGKILL) == 0;
        return false;
      },
      120));
  ASSERT_TRUE(wait_for([&] { return log_has(orphan.name + " ended (signal 15), retrying"); }, 120))
      << tst::run_command("cat " + out.string()).out;
  // Then the whole study, once some runs have finished.
  ASSERT_TRUE(wait_for([&] { return count(store::RunStatus::kFinished) >= 5; }, 300));
  // What the study runs as it is killed: its workers and their trainings.
  // A training that was starting records its run after the statuses below
  // could say nothing runs, so the test waits for these processes too.
  std::vector<pid_t> below;
  for (const std::string& w : lines(tst::run_command("pgrep -P " + std::to_string(study)).out)) {
    below.push_back(static_cast<pid_t>(std::stol(w)));
    for (const std::string& t : lines(tst::run_command("pgrep -P " + w).out))
      below.push_back(static_cast<pid_t>(std::stol(t)));
  }
  ASSERT_EQ(kill(study, SIGKILL), 0);
  int status = 0;
  waitpid(study, &status, 0);
  // Its workers get SIGTERM and stop; nothing is left running.
  ASSERT_TRUE(wait_for(
      [&] {
        return std::none_of(below.begin(), below.end(), [](pid_t p) { return kill(p, 0) == 0; });
      },
      120));
  ASSERT_TRUE(wait_for([&] { return count(store::RunStatus::kRunning) == 0; }, 120))
      << tst::run_command(cli("runs list -a")).out;
  std::map<std::string, std::string> finished_before;
  for (const auto& r : children())
    if (r.status == store::RunStatus::kFinished) finished_before[r.name] = r.uuid;
  ASSERT_LT(finished_before.size(), 18u);

  auto st = tst::run_command(cli("study status small"));
  EXPECT_EQ(st.exit_code, 0) << st.out;
  EXPECT_NE(st.out.find("optimizer.name=sgd,seeds.master=3"), std::string::npos) << st.out;

  auto resumed = tst::run_command(cli("study resume small --logs " + (dir_ / "logs").string()));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("18/18 runs finished, 0 failed"), std::string::npos) << resumed.out;

  // Every planned run finished exactly once; what had finished is untouched.
  std::map<std::string, int> finished;
  for (const auto& r : children())
    if (r.status == store::RunStatus::kFinished) ++finished[r.name];
  EXPECT_EQ(finished.size(), 18u);
  for (const auto& [name, n] : finished) EXPECT_EQ(n, 1) << name;
  for (const auto& r : children()) {
    if (finished_before.count(r.name) && r.status == store::RunStatus::kFinished) {
      EXPECT_EQ(finished_before[r.name], r.uuid) << r.name;
    }
  }

  // A run trained by the warm worker is the run `trainscope train` makes
  // alone: its rerun in a fresh process matches it at every fingerprint.
  std::string plain;
  for (const auto& r : children())
    if (r.status == store::RunStatus::kFinished && r.name != orphan.name && r.name != victim.name)
      plain = r.uuid;
  auto rerun = tst::run_command(cli("rerun " + plain + " --verify"));
  EXPECT_EQ(rerun.exit_code, 0) << rerun.out;
  EXPECT_NE(rerun.out.find("verify: bit-identical at all"), std::string::npos) << rerun.out;

  auto report = tst::run_command(
      cli("study report small --format html --out " + (dir_ / "report.html").string()));
  ASSERT_EQ(report.exit_code, 0) << report.out;
  std::string html = tst::run_command("cat " + (dir_ / "report.html").string()).out;
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("optimizer.name=adam,seeds.master=2"), std::string::npos);
  EXPECT_NE(html.find("Weights across runs"), std::string::npos);
  EXPECT_NE(html.find("classifier.fc2 (last)"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // no network
  auto md = tst::run_command(cli("report small --format md --no-weights"));  // top-level form
  ASSERT_EQ(md.exit_code, 0) << md.out;
  EXPECT_NE(md.out.find("optimizer.name=adam,seeds.master=2"), std::string::npos) << md.out;
  auto stats =
      tst::run_command(cli("stats test/accuracy --study small --by optimizer.name --format json"));
  ASSERT_EQ(stats.exit_code, 0) << stats.out;
  EXPECT_NE(stats.out.find("\"n\": 9"), std::string::npos) << stats.out;
  // In a real browser: no console errors, no network, tables and plots drawn.
  auto browser = tst::run_command(std::string(TS_BROWSER_CHECK) + " " +
                                  (dir_ / "report.html").string() + " " TS_SCREENSHOT " 3 3");
  EXPECT_EQ(browser.exit_code, 0) << browser.out;
  EXPECT_TRUE(fs::exists(TS_SCREENSHOT));
  if (const char* keep = std::getenv("TS_KEEP_REPORT"))
    fs::copy_file(dir_ / "report.html", keep, fs::copy_options::overwrite_existing);
}

TEST_F(StudyTest, ABadStudyStopsBeforeAnyRunStarts) {
  std::ofstream(dir_ / "bad.yaml") << "study: bad\nbase: " << TS_SOURCE_DIR
                                   << "/configs/demo.yaml\ngrid:\n  optimizer.nam: [adam]\n";
  auto r = tst::run_command(cli("study run " + (dir_ / "bad.yaml").string()));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("optimizer.nam"), std::string::npos) << r.out;
  auto list = tst::run_command(cli("runs list -a"));
  EXPECT_EQ(list.out.find("bad"), std::string::npos) << list.out;
}

// The ranks of a data-parallel training in a study are forked from the warm
// worker (dist::LaunchOptions::in_process) instead of exec'd: the run they
// make is the one `trainscope train CONFIG --nproc N` makes alone, at every
// fingerprint and in every logged loss.
TEST_F(StudyTest, DataParallelRunsForkedFromTheWorkerAreTheRunsTrainedAlone) {
  std::ofstream(dir_ / "ranks.yaml")
      << "study: ranks\nbase: " << TS_SOURCE_DIR << "/configs/demo.yaml\n"
      << "set:\n  train.epochs: 1\n  data.train_subset: 1024\n  data.test_subset: 300\n"
      << "  fingerprint.every_steps: 2\n"
      << "sources: [world_size]\nreplicates: 3\nworkers: 2\n";
  auto run = tst::run_command(
      cli("study run " + (dir_ / "ranks.yaml").string() + " --logs " + (dir_ / "logs").string()));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("3/3 runs finished, 0 failed"), std::string::npos) << run.out;
  auto s = store::Store::open({.uri = "sqlite:" + (dir_ / "s.db").string()});
  const auto study = s->list_runs({.experiment = "ranks", .name = "ranks"});
  ASSERT_EQ(study.size(), 1u);
  int compared = 0;
  for (const auto& r : s->list_runs({.parent_uuid = study[0].uuid})) {
    const auto params = s->params(r.uuid);
    const std::string nproc = params.count("dist.nproc") ? params.at("dist.nproc") : "1";
    if (nproc == "1") continue;
    const fs::path config = dir_ / (nproc + ".yaml");
    const auto recorded = s->find_run(r.uuid);  // list_runs leaves the config out
    ASSERT_TRUE(recorded && !recorded->config_text.empty()) << r.name;
    std::ofstream(config) << recorded->config_text;
    auto alone = tst::run_command(
        cli("train " + config.string() + " --name alone-" + nproc + " --no-progress"));
    ASSERT_EQ(alone.exit_code, 0) << alone.out;
    auto diff = tst::run_command(cli("diff " + r.uuid + " alone-" + nproc));
    ASSERT_EQ(diff.exit_code, 0) << diff.out;
    EXPECT_NE(diff.out.find("fingerprints: BIT-IDENTICAL at all"), std::string::npos) << diff.out;
    EXPECT_NE(diff.out.find("max |train/loss A - B| = 0 "), std::string::npos) << diff.out;
    ++compared;
  }
  EXPECT_EQ(compared, 2);  // 2 and 3 ranks
}

// A study's runs record the code of the study file's repository (not the
// repository, if any, of the folder the study runs in or logs into), dirty
// tree and all: with warm workers, which capture it once, as with --cold,
// where each run captures it itself.
TEST_F(StudyTest, RunsRecordTheGitStateOfTheStudyFilesRepository) {
  const fs::path repo = dir_ / "repo", elsewhere = dir_ / "elsewhere";
  fs::create_directories(repo);
  fs::create_directories(elsewhere);
  std::ofstream(repo / "code.yaml")
      << "study: code\nbase: " << TS_SOURCE_DIR << "/configs/demo.yaml\n"
      << "set:\n  train.epochs: 1\n  data.train_subset: 256\n  data.test_subset: 100\n"
      << "sources: [init]\nreplicates: 2\nworkers: 2\n";
  std::ofstream(repo / "notes.txt") << "before\n";
  const std::string git = "git -C " + repo.string() + " ";
  ASSERT_EQ(tst::run_command(git + "init -q && " + git + "add -A && " + git +
                             "-c user.name=t -c user.email=t@t commit -qm study")
                .exit_code,
            0);
  std::ofstream(repo / "notes.txt") << "after\n";  // dirty: a diff to record
  const std::string head = tst::run_command(git + "rev-parse HEAD").out.substr(0, 40);
  for (const std::string mode : {"", " --cold"}) {
    const fs::path db = dir_ / ("code" + mode.substr(mode.empty() ? 0 : 3) + ".db");
    auto run = tst::run_command("cd " + elsewhere.string() + " && " + TS_CLI_BIN +
                                " --store sqlite:" + db.string() + " study run " +
                                (repo / "code.yaml").string() + mode);
    ASSERT_EQ(run.exit_code, 0) << run.out;
    auto s = store::Store::open({.uri = "sqlite:" + db.string()});
    const auto study = s->list_runs({.experiment = "code", .name = "code"});
    ASSERT_EQ(study.size(), 1u);
    const auto runs = s->list_runs({.parent_uuid = study[0].uuid});
    ASSERT_EQ(runs.size(), 2u);
    for (const auto& r : runs) {
      auto env = s->environment(r.uuid);
      EXPECT_EQ(env["git.commit"], head) << r.name << mode;
      EXPECT_EQ(fs::path(env["git.root"]), fs::canonical(repo)) << r.name << mode;
      EXPECT_EQ(env["git.dirty"], "true") << r.name << mode;
      bool diff = false;
      for (const auto& a : s->artifacts(r.uuid)) diff |= a.name == "git.diff";
      EXPECT_TRUE(diff) << r.name << mode;
    }
  }
}
