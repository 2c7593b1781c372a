// A run killed with SIGKILL mid-epoch and resumed ends with weights
// bit-identical to an uninterrupted run. Uses the real trainscope executable.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "support/test_util.h"
#include "trainscope/core/util.h"
#include "trainscope/models/models.h"
#include "trainscope/train/trainer.h"

namespace trainscope::train {
using store::ArtifactInfo;
using store::RunInfo;
using store::RunStatus;
using store::Store;
using store::StoreOptions;

namespace {

using testing::run_command;
using testing::TempDir;

constexpr const char* kConfig = R"(run:
  experiment: resume
seeds:
  master: 3
compute:
  threads: 1
data:
  dataset: synthetic
  synthetic:
    size: 4096
  crop_padding: 2
  hflip: true
model:
  name: demo_cnn
  dropout: 0.3
optimizer:
  name: sgd
  lr: 0.05
  momentum: 0.9
schedule:
  name: cosine
  warmup_steps: 20
train:
  epochs: 2
  batch_size: 16
checkpoint:
  every_steps: 16
)";

std::map<std::string, torch::Tensor> final_state(Store& store, const std::string& uuid) {
  std::optional<ArtifactInfo> last;
  for (auto& a : store.artifacts(uuid))
    if (a.kind == "checkpoint" && (!last || a.name > last->name)) last = a;
  EXPECT_TRUE(last.has_value());
  torch::serialize::InputArchive a, m;
  a.load_from(last->path.string());
  a.read("model", m);
  config::Config c = config::parse_config(kConfig, {});
  auto model = models::make_model(c.model, {1, 28, 28, 10}, at::detail::createCPUGenerator(0));
  model->load(m);
  std::map<std::string, torch::Tensor> out;
  for (const auto& p : model->named_parameters()) out[p.key()] = p.value().detach().clone();
  for (const auto& b : model->named_buffers()) out[b.key()] = b.value().clone();
  return out;
}

TEST(ResumeTest, SigkilledRunResumesBitIdentical) {
  TempDir dir;
  std::ofstream(dir / "c.yaml") << kConfig;
  const std::string store_uri = "sqlite:" + (dir / "t.db").string();
  const std::string base = std::string(TS_CLI_BIN) + " -q --store " + store_uri + " ";

  auto full =
      run_command(base + "train " + (dir / "c.yaml").string() + " --name full --no-progress");
  ASSERT_EQ(full.exit_code, 0) << full.out;

  pid_t pid = fork();
  if (pid == 0) {
    execl(TS_CLI_BIN, TS_CLI_BIN, "-q", "--store", store_uri.c_str(), "train",
          (dir / "c.yaml").c_str(), "--name", "victim", "--no-progress",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  StoreOptions so;
  so.uri = store_uri;
  std::string victim;
  bool killed = false;
  for (int i = 0; i < 3000 && !killed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto store = Store::open(so);
    for (const auto& r : store->list_runs())
      if (r.name == "victim") victim = r.uuid;
    if (victim.empty()) continue;
    for (const auto& a : store->artifacts(victim))
      if (a.name == "checkpoints/step-000000064.pt") {
        ASSERT_EQ(kill(pid, SIGKILL), 0);
        killed = true;
      }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(killed) << "the victim run never reached its step-64 checkpoint";
  ASSERT_TRUE(WIFSIGNALED(status)) << "the victim finished before it could be killed";

  auto store = Store::open(so);
  auto r = store->find_run(victim);
  ASSERT_EQ(r->status, RunStatus::kKilled);
  auto loss_before = store->metric(victim, "train/loss").size();
  EXPECT_GE(loss_before, 64u);
  EXPECT_LT(loss_before, 512u) << "killed mid-run";

  // Changing the config is refused.
  auto changed = run_command(base + "train " + (dir / "c.yaml").string() +
                             " --set optimizer.lr=0.1 --resume " + victim.substr(0, 8));
  EXPECT_NE(changed.exit_code, 0);
  EXPECT_NE(changed.out.find("config differs"), std::string::npos) << changed.out;

  auto resumed = run_command(base + "train " + (dir / "c.yaml").string() +
                             " --no-progress --resume " + victim.substr(0, 8));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  store = Store::open(so);
  EXPECT_EQ(store->find_run(victim)->status, RunStatus::kFinished);

  std::string full_uuid = store->resolve_run("full").uuid;
  auto a = final_state(*store, full_uuid);
  auto b = final_state(*store, victim);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) EXPECT_TRUE(torch::equal(t, b.at(name))) << name;
  // Step losses after the resume point match the uninterrupted run's.
  auto la = store->metric(full_uuid, "train/loss");
  auto lb = store->metric(victim, "train/loss");
  ASSERT_EQ(la.back().step, 512);
  EXPECT_EQ(la.back().value, lb.back().value);
  // One point per step: the replayed steps after the checkpoint are not
  // recorded twice.
  std::set<int64_t> steps;
  for (const auto& p : lb) steps.insert(p.step);
  EXPECT_EQ(steps.size(), lb.size());
  EXPECT_EQ(lb.size(), la.size());
  EXPECT_EQ(store->metric(victim, "test/accuracy").size(), 2u);  // one per epoch
}

// Ctrl-C (SIGINT) to the training `pid` once its run `name` has its first
// checkpoint; whether it was sent (within 15 s).
bool interrupt_at_first_checkpoint(pid_t pid, const StoreOptions& so, const std::string& name) {
  for (int i = 0; i < 3000; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto store = Store::open(so);
    for (const auto& r : store->list_runs())
      if (r.name == name && !store->artifacts(r.uuid).empty()) return kill(pid, SIGINT) == 0;
  }
  return false;
}

TEST(ResumeTest, CtrlCFinishesTheStepCheckpointsAndStops) {
  TempDir dir;
  std::ofstream(dir / "c.yaml") << kConfig;
  const std::string store_uri = "sqlite:" + (dir / "t.db").string();
  const std::string out_path = (dir / "out.txt").string();
  pid_t pid = fork();
  if (pid == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    execl(TS_CLI_BIN, TS_CLI_BIN, "-q", "--store", store_uri.c_str(), "train",
          (dir / "c.yaml").c_str(), "--name", "interrupted", "--no-progress",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  StoreOptions so;
  so.uri = store_uri;
  const bool sent = interrupt_at_first_checkpoint(pid, so, "interrupted");
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(sent);
  ASSERT_TRUE(WIFEXITED(status)) << "Ctrl-C must end the process cleanly, not kill it";
  EXPECT_NE(WEXITSTATUS(status), 0);
  auto store = Store::open(so);
  RunInfo r = store->resolve_run("interrupted");
  EXPECT_EQ(r.status, RunStatus::kStopped);
  // The last checkpoint is at the step the metrics end at.
  auto loss = store->metric(r.uuid, "train/loss");
  ASSERT_FALSE(loss.empty());
  std::string last;
  for (const auto& a : store->artifacts(r.uuid)) last = std::max(last, a.name);
  EXPECT_EQ(last, fmt::format("checkpoints/step-{:09d}.pt", loss.back().step));
  EXPECT_LT(loss.back().step, 256) << "stopped within the first epoch";
  // Issue 29, item 13: it printed "test accuracy 0.0000"; no evaluation
  // ran, so it says what is true.
  std::ifstream in(out_path);
  const std::string printed((std::istreambuf_iterator<char>(in)), {});
  const std::string said =
      fmt::format("run {} stopped at step {}, before an evaluation (no test accuracy), ", r.uuid,
                  loss.back().step);
  EXPECT_EQ(printed.rfind(said, 0), 0u) << printed;
  EXPECT_EQ(printed.find('\n'), printed.size() - 1) << printed;
  EXPECT_EQ(printed.find("test accuracy 0"), std::string::npos) << printed;
}

// Thirty-first hunt, B-D1: the resume command a stopped training printed
// left out its --set values and --store, so running it exited 4 ("config
// differs"). Run as printed (with `trainscope` on PATH), it continues the
// run to its end.
TEST(ResumeTest, TheResumeCommandAStoppedTrainingPrintsContinuesIt) {
  TempDir dir;
  std::ofstream(dir / "c.yaml") << kConfig;
  const std::string store_uri = "sqlite:" + (dir / "t .db").string();  // a space: quoted
  const std::string err_path = (dir / "err.txt").string();
  pid_t pid = fork();
  if (pid == 0) {
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(err, 2);
    execl(TS_CLI_BIN, TS_CLI_BIN, "--store", store_uri.c_str(), "train", (dir / "c.yaml").c_str(),
          "--set", "train.epochs=1", "--set", "optimizer.lr=0.01", "--name", "stopped-here",
          "--no-progress", static_cast<char*>(nullptr));
    _exit(127);
  }
  StoreOptions so;
  so.uri = store_uri;
  const bool sent = interrupt_at_first_checkpoint(pid, so, "stopped-here");
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(sent);
  std::ifstream in(err_path);
  const std::string err((std::istreambuf_iterator<char>(in)), {});
  const size_t at = err.find("resume with `");
  ASSERT_NE(at, std::string::npos) << err;
  const std::string command = err.substr(at + 13, err.find('`', at + 13) - at - 13);
  EXPECT_NE(command.find("--set train.epochs=1 --set optimizer.lr=0.01"), std::string::npos)
      << command;
  EXPECT_NE(command.find("'sqlite:"), std::string::npos) << command;
  const std::string bin_dir = std::filesystem::path(TS_CLI_BIN).parent_path().string();
  auto r =
      run_command("PATH=" + testing::shell_quote(bin_dir) + ":$PATH " + command + " --no-progress");
  EXPECT_EQ(r.exit_code, 0) << command << "\n" << r.out;
  auto store = Store::open(so);
  EXPECT_EQ(store->resolve_run("stopped-here").status, RunStatus::kFinished);
}

}  // namespace
}  // namespace trainscope::train
