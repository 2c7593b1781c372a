// Fingerprints, diff and rerun on real training runs.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <torch/torch.h>
#include <zlib.h>

#include <cmath>
#include <fstream>
#include <map>

#include "support/test_util.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/env/cpus.h"
#include "trainscope/fingerprint/records.h"
#include "trainscope/replay/replay.h"
#include "trainscope/repro/diff.h"
#include "trainscope/repro/json.h"
#include "trainscope/train/trainer.h"

namespace trainscope::repro {
using store::RunInfo;
using store::Store;
using store::StoreOptions;

namespace {

using testing::TempDir;

std::shared_ptr<Store> temp_store(const TempDir& dir) {
  StoreOptions o;
  o.uri = "sqlite:" + (dir / "t.db").string();
  return Store::open(o);
}

config::Config small(const std::vector<std::string>& overrides = {}) {
  std::vector<std::string> o = {"data.dataset=synthetic", "data.synthetic.size=512",
                                "train.batch_size=32",    "train.epochs=2",
                                "compute.threads=1",      "checkpoint.every_steps=4"};
  o.insert(o.end(), overrides.begin(), overrides.end());
  return config::parse_config("", o);
}

RunInfo train_run(const std::shared_ptr<Store>& store, const config::Config& c,
                  const std::string& name) {
  train::TrainOptions o;
  o.name = name;
  train::Trainer t(c, store, o);
  auto r = t.run();
  return *store->find_run(r.run_uuid);
}

TEST(CompareTensorsTest, UlpsAbsAndRel) {
  float a[4] = {1.0f, -0.0f, 3.0f, -2.0f};
  float b[4] = {std::nextafter(1.0f, 2.0f), 0.0f, 3.0f,
                std::nextafter(std::nextafter(-2.0f, 0.f), 0.f)};
  TensorDelta d = compare_tensors("t", a, b, 4, false);
  EXPECT_EQ(d.elements, 4);
  EXPECT_EQ(d.differing, 3);  // -0 and +0 differ in bits, by 0 ULP
  EXPECT_EQ(d.max_ulp, 2);
  EXPECT_DOUBLE_EQ(d.max_abs, 2 * std::ldexp(1.0, -23));  // two ULPs of 2.0 below: 2^-22
  double da[2] = {1.0, 1e300}, db[2] = {1.0 + std::ldexp(1.0, -52), -1e300};
  TensorDelta e = compare_tensors("d", da, db, 2, true);
  EXPECT_EQ(e.differing, 2);
  EXPECT_DOUBLE_EQ(e.max_rel, 2.0);
  EXPECT_GT(e.max_ulp, 1e18);  // across zero: almost the whole range
}

// Everyday-use defect 1: float64 ULP distances went through double before
// subtracting: 1 ULP printed 0, 700 printed 512.
TEST(CompareTensorsTest, Float64UlpDistancesAreExact) {
  double x = 1234.5678, one = std::nextafter(x, 1e9), far = x;
  for (int i = 0; i < 700; ++i) far = std::nextafter(far, 1e9);
  double a[1] = {x}, b1[1] = {one}, b700[1] = {far};
  EXPECT_EQ(compare_tensors("d", a, b1, 1, true).max_ulp, 1);
  EXPECT_EQ(compare_tensors("d", a, b700, 1, true).max_ulp, 700);
}

TEST(DiffTest, SameConfigOnOneThreadIsBitIdenticalThroughout) {
  TempDir dir;
  auto store = temp_store(dir);
  auto a = train_run(store, small(), "a");
  auto b = train_run(store, small(), "b");
  auto fp = fingerprint::read(*store, a.uuid);
  ASSERT_EQ(fp.steps.size(), 32u);  // every step of 2 epochs x 16 batches
  EXPECT_EQ(fp.names.back(), "loss");
  EXPECT_EQ(fp.names.front(), "features.conv1.weight");  // forward order
  RunDiff d = diff_runs(*store, a, b);
  EXPECT_TRUE(d.have_fingerprints);
  EXPECT_TRUE(d.identical);
  EXPECT_EQ(d.first_diff_step, -1);
  EXPECT_EQ(d.common_steps, 32);
  EXPECT_EQ(d.max_loss_diff, 0);
  EXPECT_TRUE(d.config.empty());
}

TEST(DiffTest, FindsTheFirstDifferingStepAndMeasuresItByReplay) {
  TempDir dir;
  auto store = temp_store(dir);
  // The learning rates part at epoch 2, i.e. at step 17.
  auto a = train_run(
      store, small({"schedule.name=multistep", "schedule.milestones=[1]", "schedule.gamma=0.5"}),
      "a");
  auto b = train_run(
      store, small({"schedule.name=multistep", "schedule.milestones=[2]", "schedule.gamma=0.5"}),
      "b");
  RunDiff d = diff_runs(*store, a, b);
  EXPECT_FALSE(d.replay_from.has_value());  // the records alone: no replay yet
  replay::replay_divergence(*store, a, b, d);
  EXPECT_FALSE(d.identical);
  EXPECT_EQ(d.first_diff_step, 17);
  ASSERT_FALSE(d.differing_tensors.empty());
  EXPECT_EQ(d.differing_tensors.front(), "features.conv1.weight");
  // The loss of step 17 is computed before the update: still the same.
  EXPECT_EQ(std::count(d.differing_tensors.begin(), d.differing_tensors.end(), "loss"), 0);
  ASSERT_TRUE(d.replay_from.has_value());
  EXPECT_EQ(*d.replay_from, 16);
  EXPECT_TRUE(d.replay_reproduced) << d.replay_note;
  ASSERT_EQ(d.deltas.size(), d.differing_tensors.size());
  for (const auto& x : d.deltas) {
    EXPECT_GT(x.differing, 0) << x.name;
    EXPECT_GT(x.max_abs, 0) << x.name;
    EXPECT_GT(x.max_ulp, 0) << x.name;
  }
  ASSERT_EQ(d.config.size(), 1u);
  EXPECT_EQ(d.config[0].key, "config.schedule.milestones");
  EXPECT_GT(d.max_loss_diff, 0);
  EXPECT_GT(d.max_loss_diff_step, 17);
}

TEST(DiffTest, DeterminismFlagsAreRecorded) {
  TempDir dir;
  auto store = temp_store(dir);
  auto r = train_run(store, small({"determinism.mkldnn=false", "train.max_steps=2"}), "flags");
  auto env = store->environment(r.uuid);
  EXPECT_EQ(env.at("flags.mkldnn"), "off");
  EXPECT_EQ(env.at("threads.torch.intra_op"), "1");
  // One threads setting: a BLAS with a pool of its own gets one thread
  // beside libtorch's; MKL inside libtorch (the wheels') runs on libtorch's
  // threads. Which BLAS it is, and its version, are recorded.
  const std::string blas = env.at("libraries.blas.name");
  EXPECT_TRUE(blas == "mkl" || blas == "openblas" || blas == "blis") << blas;
  EXPECT_EQ(env.at("threads.blas"), blas == "mkl" ? env.at("threads.torch.intra_op") : "1");
  EXPECT_NE(env.at("libraries.blas.version"), "unknown");
  EXPECT_EQ(env.at("flags.deterministic_algorithms"), "false");
  EXPECT_FALSE(env.at("libraries.torch.version").empty());
  EXPECT_FALSE(env.at("hardware.cpu.model_name").empty());
  // The next run in this process gets mkldnn back, and `auto` threads are
  // the physical cores this process may use.
  auto r2 = train_run(store, small({"train.max_steps=2", "compute.threads=auto"}), "flags2");
  auto env2 = store->environment(r2.uuid);
  EXPECT_EQ(env2.at("flags.mkldnn"), "on");
  EXPECT_EQ(env2.at("threads.torch.intra_op"), std::to_string(env::cpu_budget().threads()));
  EXPECT_EQ(env2.at("threads.blas"), blas == "mkl" ? env2.at("threads.torch.intra_op") : "1");
  // An explicit setting holds whichever BLAS it is.
  auto r3 = train_run(
      store, small({"train.max_steps=1", "compute.blas_threads=1", "compute.threads=2"}), "flags3");
  EXPECT_EQ(store->environment(r3.uuid).at("threads.blas"), "1");
}

TEST(DiffTest, WithoutFingerprintsOrWithDifferentModelsComparesWhatItCan) {
  TempDir dir;
  auto store = temp_store(dir);
  auto a = train_run(store, small({"fingerprint.every_steps=0", "train.max_steps=4"}), "nofp");
  auto b = train_run(store, small({"train.max_steps=4"}), "fp");
  auto c = train_run(store, small({"model.name=mlp", "train.max_steps=4"}), "mlp");
  RunDiff d = diff_runs(*store, a, b);
  EXPECT_FALSE(d.have_fingerprints);
  EXPECT_EQ(d.first_diff_step, -1);
  EXPECT_EQ(d.loss_steps_compared, 4);
  RunDiff e = diff_runs(*store, b, c);
  EXPECT_FALSE(e.same_model);
  EXPECT_EQ(e.model_b, "mlp");
  EXPECT_EQ(e.first_diff_step, -1);
  EXPECT_TRUE(e.final_accuracy_a.has_value());
}

// --- rerun through the CLI, on IDX files the test writes --------------------------

void write_idx(const std::filesystem::path& dir, const std::string& prefix, int n, int seed) {
  std::string img, lab;
  auto be32 = [](std::string& s, uint32_t v) {
    for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  be32(img, 0x803), be32(img, n), be32(img, 28), be32(img, 28);
  be32(lab, 0x801), be32(lab, n);
  for (int i = 0; i < n; ++i) {
    int label = (i * 7 + seed) % 10;
    lab.push_back(static_cast<char>(label));
    for (int p = 0; p < 784; ++p)
      img.push_back(static_cast<char>(((p % 28) / 3 == label) ? 200 : (p * 13 + i) % 50));
  }
  for (auto& [name, bytes] : {std::pair{prefix + "-images-idx3-ubyte.gz", img},
                              std::pair{prefix + "-labels-idx1-ubyte.gz", lab}}) {
    gzFile f = gzopen((dir / name).c_str(), "wb");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
  }
}

TEST(RerunTest, VerifyIsBitIdenticalAndAChangedDataFileIsRefused) {
  TempDir dir;
  auto data = dir / "mnist";
  std::filesystem::create_directories(data);
  write_idx(data, "train", 256, 1);
  write_idx(data, "t10k", 64, 2);
  std::ofstream(dir / "c.yaml")
      << "compute: {threads: 1}\ntrain: {epochs: 1, batch_size: 32}\nmodel: {name: lenet5}\n"
         "data: {dataset: mnist, path: "
      << data.string() << "}\n";
  const std::string ts =
      std::string(TS_CLI_BIN) + " --store sqlite:" + (dir / "t.db").string() + " ";
  auto first = testing::run_command(ts + "-q train " + (dir / "c.yaml").string() +
                                    " --name orig --no-progress");
  ASSERT_EQ(first.exit_code, 0) << first.out;

  auto verify = testing::run_command(ts + "rerun orig --verify");
  EXPECT_EQ(verify.exit_code, 0) << verify.out;
  EXPECT_NE(verify.out.find("verify: bit-identical at all 8 steps"), std::string::npos)
      << verify.out;

  write_idx(data, "t10k", 64, 3);  // the test set changes
  auto refused = testing::run_command(ts + "rerun orig");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.out.find("t10k-images-idx3-ubyte.gz' changed"), std::string::npos)
      << refused.out;
  EXPECT_NE(refused.out.find("--force"), std::string::npos);
  auto forced = testing::run_command(ts + "-q rerun orig --force");
  EXPECT_EQ(forced.exit_code, 0) << forced.out;

  auto card = testing::run_command(ts + "card orig");
  EXPECT_EQ(card.exit_code, 0);
  for (const char* section : {"## Model details", "## Intended use", "## Factors", "## Metrics",
                              "## Evaluation data", "## Training data", "## Quantitative analyses",
                              "## Ethical considerations", "## Caveats and recommendations"})
    EXPECT_NE(card.out.find(section), std::string::npos) << section;
  EXPECT_NE(card.out.find("`lenet5`"), std::string::npos);
  EXPECT_NE(card.out.find("TODO"), std::string::npos);
  auto checklist = testing::run_command(ts + "checklist orig");
  EXPECT_NE(checklist.out.find("[x] Compute infrastructure"), std::string::npos) << checklist.out;
  // Everyday-use defect 7: "no energy was metered" while energy/total_kwh
  // was recorded.
  EXPECT_NE(checklist.out.find("[x] Energy consumption: "), std::string::npos) << checklist.out;
  EXPECT_NE(checklist.out.find(" kWh"), std::string::npos) << checklist.out;
  // orig and its two reruns share the config: three runs, with a std.
  EXPECT_NE(checklist.out.find("Number of training runs (same config): 3"), std::string::npos)
      << checklist.out;
}

// Issue 34: the code that ran. A run from a dirty tree holds its diff (what
// `git apply` reads, hashed as git.diff_sha256) and its untracked files'
// names; `rerun` names what differs now and how to get the code back, and
// those commands give back the tree the run came from.
TEST(RerunTest, ADirtyTreesDiffIsStoredAndRerunNamesTheDifference) {
  TempDir dir;
  const auto repo = dir / "project";
  const auto data = repo / "mnist";
  std::filesystem::create_directories(data);
  write_idx(data, "train", 128, 1);
  write_idx(data, "t10k", 32, 2);
  std::ofstream(repo / ".gitignore") << "mnist/\n";
  std::ofstream(repo / "model.py") << "width = 8\n";
  std::ofstream(repo / "notes.txt") << "first\n";
  std::ofstream(repo / "c.yaml")
      << "compute: {threads: 1}\ntrain: {epochs: 1, batch_size: 32}\nmodel: {name: mlp}\n"
         "data: {dataset: mnist, path: "
      << data.string() << "}\n";
  const std::string git = "git -C " + repo.string() + " ";
  ASSERT_EQ(testing::run_command(git + "init -q && " + git + "add -A && " + git +
                                 "-c user.name=t -c user.email=t@t commit -qm start")
                .exit_code,
            0);
  // Dirty: a changed tracked file, a binary one, and an untracked one.
  std::ofstream(repo / "model.py") << "width = 16\n";
  std::ofstream(repo / "weights.bin", std::ios::binary) << std::string("\0\1\2\3", 4);
  ASSERT_EQ(testing::run_command(git + "add weights.bin").exit_code, 0);
  std::ofstream(repo / "scratch.py") << "print(1)\n";
  const std::string diff_then = testing::run_command(git + "diff --binary HEAD").out;
  const std::string ts =
      std::string(TS_CLI_BIN) + " --store sqlite:" + (dir / "t.db").string() + " ";
  auto first = testing::run_command(ts + "-q train " + (repo / "c.yaml").string() +
                                    " --name dirty --no-progress");
  ASSERT_EQ(first.exit_code, 0) << first.out;

  StoreOptions so;
  so.uri = "sqlite:" + (dir / "t.db").string();
  auto store = Store::open(so);
  const RunInfo run = store->resolve_run("dirty");
  const auto m = store->environment(run.uuid);
  EXPECT_EQ(m.at("git.dirty"), "true");
  EXPECT_EQ(m.at("git.untracked_files"), "1");
  std::map<std::string, std::string> arts;
  for (const auto& a : store->artifacts(run.uuid)) {
    std::ifstream in(a.path, std::ios::binary);
    arts[a.name] = std::string(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_TRUE(arts.count("git.diff"));
  EXPECT_EQ(arts["git.diff"], diff_then) << "the diff byte for byte";
  EXPECT_EQ(core::sha256_hex(arts["git.diff"]), m.at("git.diff_sha256"));
  EXPECT_NE(arts["git.diff"].find("GIT binary patch"), std::string::npos);
  EXPECT_EQ(arts["git.untracked.txt"], "scratch.py\n");

  // The same tree: rerun says so.
  auto same = testing::run_command(ts + "rerun dirty");
  EXPECT_EQ(same.exit_code, 0) << same.out;
  EXPECT_NE(same.out.find("code: the git tree holds the code run"), std::string::npos) << same.out;

  // The user edits on: notes.txt changes, model.py goes back.
  std::ofstream(repo / "notes.txt") << "second\n";
  ASSERT_EQ(testing::run_command(git + "checkout -q model.py").exit_code, 0);
  auto moved = testing::run_command(ts + "rerun dirty");
  EXPECT_EQ(moved.exit_code, 0) << moved.out;
  EXPECT_NE(moved.out.find("tracked files that differ from the run's: model.py, notes.txt"),
            std::string::npos)
      << moved.out;
  const std::string marker = "to get the code run " + core::short_uuid(run.uuid) + " ran: ";
  const auto at = moved.out.find(marker);
  ASSERT_NE(at, std::string::npos) << moved.out;
  const std::string restore =
      moved.out.substr(at + marker.size(), moved.out.find('\n', at) - at - marker.size());
  auto restored = testing::run_command(
      "export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t "
      "GIT_COMMITTER_EMAIL=t@t; " +
      restore);
  ASSERT_EQ(restored.exit_code, 0) << restore << "\n" << restored.out;
  EXPECT_EQ(testing::run_command(git + "diff --binary HEAD").out, diff_then)
      << "the restore commands give back the tracked changes that ran";
  auto back = testing::run_command(ts + "rerun dirty");
  EXPECT_NE(back.out.find("code: the git tree holds the code run"), std::string::npos) << back.out;

  // Issue 51, tenth hunt (D12): a store's bytes are untrusted: a commit
  // that is not one never reaches the command printed to restore the code
  // (it held "; touch PWNED; echo", unquoted).
  ASSERT_EQ(
      testing::run_command("python3 -c \"import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); "
                           "db.execute('UPDATE environment SET value = ? WHERE key = ?', "
                           "(sys.argv[2], 'git.commit')); db.commit()\" " +
                           (dir / "t.db").string() + " '1b2d565ce7ba; touch PWNED; echo'")
          .exit_code,
      0);
  auto forged = testing::run_command(ts + "rerun dirty");
  EXPECT_NE(forged.out.find("is not a git commit id"), std::string::npos) << forged.out;
  EXPECT_EQ(forged.out.find("to get the code run"), std::string::npos) << forged.out;
}

// Issue 51 (third hunt, D4): a run's config changed in the store after
// the run recorded it (its config_hash not) is never trained again nor
// built into a model: rerun, a resume, eval and weights refuse it in one
// line (exit 5, a store error, as an artifact that fails its SHA-256), and
// nothing is recorded or written.
TEST(RerunTest, AConfigChangedInTheStoreIsRefusedByEveryReaderThatTrainsOrBuildsIt) {
  TempDir dir;
  std::ofstream(dir / "c.yaml") << "data: {dataset: synthetic, synthetic: {size: 256}}\n"
                                   "model: {name: mlp}\ntrain: {epochs: 1, batch_size: 64}\n";
  const std::string db = (dir / "t.db").string();
  const std::string ts = std::string(TS_CLI_BIN) + " --store sqlite:" + db + " ";
  auto first = testing::run_command(ts + "-q train " + (dir / "c.yaml").string() +
                                    " --name orig --no-progress --set train.max_steps=2 "
                                    "--set checkpoint.every_steps=1");
  ASSERT_EQ(first.exit_code, 0) << first.out;
  std::ofstream(dir / "tamper.py")
      << "import sqlite3, sys\ndb = sqlite3.connect(sys.argv[1])\n"
         "db.execute(\"UPDATE runs SET config_text = replace(config_text, 'lr: 0.001', "
         "'lr: 0.5') WHERE name = 'orig'\")\nprint(db.total_changes)\ndb.commit()\n";
  auto tamper = testing::run_command("/usr/bin/python3 " + (dir / "tamper.py").string() + " " + db);
  ASSERT_EQ(tamper.out, "1\n");
  StoreOptions so;
  so.uri = "sqlite:" + db;
  const RunInfo orig = Store::open(so)->resolve_run("orig");
  ASSERT_NE(orig.config_text.find("lr: 0.5"), std::string::npos) << orig.config_text;
  const std::string refused = "trainscope: the config recorded with run " +
                              core::short_uuid(orig.uuid) +
                              " does not match its recorded SHA-256: it was changed in the store "
                              "after the run recorded it; it cannot be used\n";
  for (const std::string& command : std::vector<std::string>{
           "rerun orig", "train " + (dir / "c.yaml").string() + " --resume orig --no-progress",
           "eval orig", "weights orig -o " + (dir / "w.pt").string()}) {
    auto r = testing::run_command(ts + "-q " + command);
    EXPECT_EQ(r.exit_code, 5) << command << ": " << r.out;
    EXPECT_EQ(r.out, refused) << command;
  }
  EXPECT_EQ(Store::open(so)->list_runs().size(), 1u);  // no rerun was recorded
  EXPECT_FALSE(std::filesystem::exists(dir / "w.pt"));
}

// Issue 51, thirteenth hunt (A-D6): diff replayed from a checkpoint file
// without the checks eval makes: another run's checkpoint put in its place
// was replayed and the difference blamed on this machine; a FIFO was "bad
// input" (exit 2). Both are a damaged artifact now (exit 5).
TEST(RerunTest, DiffReplaysOnlyTheCheckpointItRecorded) {
  TempDir dir;
  std::ofstream(dir / "c.yaml") << "data: {dataset: synthetic, synthetic: {size: 256}}\n"
                                   "model: {name: mlp}\ntrain: {epochs: 1, batch_size: 64}\n";
  const std::string db = (dir / "t.db").string();
  const std::string ts = std::string(TS_CLI_BIN) + " --store sqlite:" + db + " -q ";
  for (const std::string run : {"a", "b"}) {
    auto r = testing::run_command(ts + "train " + (dir / "c.yaml").string() + " --name " + run +
                                  " --no-progress --set train.max_steps=3 "
                                  "--set checkpoint.every_steps=1" +
                                  (run == "b" ? " --set optimizer.lr=0.5" : ""));
    ASSERT_EQ(r.exit_code, 0) << r.out;
  }
  auto store = Store::open({.uri = "sqlite:" + db});
  std::map<std::string, std::filesystem::path> of_a, of_b;
  for (const auto& x : store->artifacts(store->resolve_run("a").uuid)) of_a[x.name] = x.path;
  for (const auto& x : store->artifacts(store->resolve_run("b").uuid)) of_b[x.name] = x.path;
  const std::string first = "checkpoints/step-000000000.pt";
  ASSERT_TRUE(of_a.count(first) && of_b.count(first));
  const std::filesystem::path kept = dir / "kept.pt";
  std::filesystem::copy_file(of_a[first], kept);
  std::filesystem::remove(of_a[first]);
  std::filesystem::copy_file(of_b[first], of_a[first]);
  auto swapped = testing::run_command(ts + "diff a b");
  EXPECT_EQ(swapped.exit_code, 5) << swapped.out;
  EXPECT_NE(swapped.out.find("does not match the SHA-256 recorded"), std::string::npos)
      << swapped.out;
  std::filesystem::remove(of_a[first]);
  ASSERT_EQ(::mkfifo(of_a[first].c_str(), 0600), 0);
  auto fifo = testing::run_command(ts + "diff a b");
  EXPECT_EQ(fifo.exit_code, 5) << fifo.out;
  EXPECT_NE(fifo.out.find("is a FIFO (named pipe), not a regular file"), std::string::npos)
      << fifo.out;
  std::filesystem::remove(of_a[first]);
  std::filesystem::copy_file(kept, of_a[first]);
  auto whole = testing::run_command(ts + "diff a b");
  EXPECT_EQ(whole.exit_code, 0) << whole.out;
}

// Issue 51 (third hunt, D6): `weights -o -` writes the state dict to
// stdout, as every other `-o -` does: the zip `-o FILE` writes, and no
// file named '-'.
TEST(WeightsTest, DashOWritesTheStateDictToStdout) {
  TempDir dir;
  std::ofstream(dir / "c.yaml") << "data: {dataset: synthetic, synthetic: {size: 256}}\n"
                                   "model: {name: mlp}\ntrain: {epochs: 1, batch_size: 64}\n";
  const std::string ts =
      std::string(TS_CLI_BIN) + " --store sqlite:" + (dir / "t.db").string() + " ";
  auto first = testing::run_command(ts + "-q train " + (dir / "c.yaml").string() +
                                    " --name w --no-progress --set train.max_steps=2 "
                                    "--set checkpoint.every_steps=1");
  ASSERT_EQ(first.exit_code, 0) << first.out;
  auto file = testing::run_command(ts + "-q weights w -o " + (dir / "file.pt").string());
  ASSERT_EQ(file.exit_code, 0) << file.out;
  // In a subshell: run_command sends the whole line's stderr to its stdout.
  auto out = testing::run_command("(cd " + dir.path().string() + " && " + ts +
                                  "weights w -o - > stdout.pt 2> stderr.txt)");
  ASSERT_EQ(out.exit_code, 0) << out.out;
  auto bytes = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  // The note goes to stderr, never into the weights on stdout.
  const std::string note = bytes(dir / "stderr.txt");
  EXPECT_NE(note.find("wrote stdout: the weights of run "), std::string::npos) << note;
  EXPECT_FALSE(std::filesystem::exists(dir / "-"));
  const std::string want = bytes(dir / "file.pt"), got = bytes(dir / "stdout.pt");
  EXPECT_GT(want.size(), 1000u);
  EXPECT_EQ(got.size(), want.size());  // the same zip (its times aside)
  EXPECT_EQ(got.substr(0, 4), std::string("PK\x03\x04"));
}

// Twenty-third hunt, A-D1: two runs with no train/loss step in common had
// "max |loss A - loss B| = 0", which reads as curves that agree.
TEST(RunDiffJsonTest, NoCommonLossStepIsNoMaximum) {
  RunDiff d;
  EXPECT_TRUE(run_diff_json(d).at("max_loss_diff").is_null());
  d.loss_steps_compared = 3;
  d.max_loss_diff = 0.5;
  EXPECT_EQ(run_diff_json(d).at("max_loss_diff"), 0.5);
}

// Twenty-third hunt, A-D7: a step's record of 10 hashes for 5 named
// tensors, or of hashes for no names, was compared as if it were data.
TEST(FingerprintRecordsTest, HashesThatAreNotOnePerNamedTensorAreADamagedStore) {
  auto s = Store::open({.uri = "sqlite::memory:"});
  const std::string uuid = s->create_run({}).uuid;
  s->append_records(uuid, fingerprint::kStepsKind, {fingerprint::step_record({1, {11, 12}})});
  auto message = [&] {
    try {
      fingerprint::read(*s, uuid);
    } catch (const core::Error& e) {
      EXPECT_EQ(e.kind(), core::ErrorKind::kStore);
      return std::string(e.what());
    }
    return std::string("read without an error");
  };
  const std::string who = "fingerprints record of run " + core::short_uuid(uuid) + ", step 1: ";
  EXPECT_EQ(message(), who +
                           "2 hashes for the 0 tensors its fingerprint_tensors record names; "
                           "the store is damaged");
  s->append_records(uuid, fingerprint::kNamesKind, {fingerprint::names_record({"w", "loss"})});
  EXPECT_EQ(message(), "read without an error");
  s->append_records(uuid, fingerprint::kStepsKind, {fingerprint::step_record({2, {1, 2, 3}})});
  EXPECT_EQ(message(), "fingerprints record of run " + core::short_uuid(uuid) +
                           ", step 2: 3 hashes for the 2 tensors its fingerprint_tensors record "
                           "names; the store is damaged");
}

}  // namespace
}  // namespace trainscope::repro
