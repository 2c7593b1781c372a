// A study is its recorded plan: what `study run` planned is what `study
// resume` trains, whatever the files on disk say later; a plan is counted
// before it is built; retried attempts are counted once. Through the real
// CLI, on real (small) trainings.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include "support/test_util.h"
#include "trainscope/core/error.h"
#include "trainscope/predictions/predictions.h"
#include "trainscope/store/store.h"
#include "trainscope/study/report.h"
#include "trainscope/study/study.h"

namespace fs = std::filesystem;
namespace store = trainscope::store;
namespace tst = trainscope::testing;
namespace predictions = trainscope::predictions;
namespace core = trainscope::core;
namespace study = trainscope::study;
using trainscope::testing::TempDir;

namespace {

constexpr const char* kBase =
    "data: {dataset: synthetic, synthetic: {size: 256}}\n"
    "model: {name: mlp, hidden: 16}\n"
    "train: {epochs: 1, batch_size: 64}\n"
    "monitor: {interval_s: 0}\n";

class StudyPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir_ / "base.yaml") << kBase;
    std::ofstream(dir_ / "study.yaml")
        << "study: plan\nbase: base.yaml\nsources: [init, data_order]\nreplicates: 2\n"
        << "workers: 2\n";
  }
  std::string cli(const std::string& args) {
    return std::string(TS_CLI_BIN) + " --store sqlite:" + (dir_ / "s.db").string() + " " + args;
  }
  std::unique_ptr<store::Store> open() {
    return store::Store::open({.uri = "sqlite:" + (dir_ / "s.db").string(), .read_only = true});
  }
  // The study's children: name -> runs of that name.
  std::map<std::string, std::vector<store::RunInfo>> children(const std::string& study) {
    auto s = open();
    std::map<std::string, std::vector<store::RunInfo>> out;
    auto parent = s->resolve_run(study);
    for (const auto& r : s->list_runs({.parent_uuid = parent.uuid}))
      out[r.name].push_back(*s->find_run(r.uuid));
    return out;
  }
  std::map<std::string, std::vector<store::RunInfo>> children_if_any(const std::string& study) {
    std::error_code ec;
    if (!fs::exists(dir_ / "s.db", ec)) return {};
    try {
      return children(study);
    } catch (const std::exception&) {
      return {};  // not created yet
    }
  }
  void edit(const std::string& file, const std::string& from, const std::string& to) {
    std::string text = tst::run_command("cat " + (dir_ / file).string()).out;
    text.replace(text.find(from), from.size(), to);
    std::ofstream(dir_ / file) << text;
  }
  TempDir dir_;
};

// Eighteenth hunt, 18A-D1: a 40-byte predictions file whose header
// claims 2^32 predictions made study report allocate 48 GiB. The size its
// count says is checked first: a damaged file, exit 5.
TEST(PredictionsFileTest, ACountTheFileCannotHoldIsADamagedFile) {
  tst::TempDir dir;
  predictions::Predictions p;
  p.labels = {1, 2};
  p.predicted = {1, 3};
  p.top_logit = {0.5f, 0.25f};
  {
    std::ofstream out(dir / "ok.bin", std::ios::binary);
    predictions::write_predictions(out, p);
  }
  EXPECT_EQ(predictions::read_predictions(dir / "ok.bin").labels, p.labels);
  std::string claim("TSPRED01", 8);
  const uint64_t n = uint64_t{1} << 32;
  claim.append(reinterpret_cast<const char*>(&n), 8);
  claim += std::string(24, '\0');
  std::ofstream(dir / "big.bin", std::ios::binary) << claim;
  try {
    predictions::read_predictions(dir / "big.bin");
    ADD_FAILURE() << "a count of 2^32 in 40 bytes was read";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::kStore);
    EXPECT_NE(std::string(e.what()).find("is 40 bytes, not the"), std::string::npos) << e.what();
  }
}

// Eighteenth hunt, 18A-D3 and D4: runs whose predictions hold none gave a
// disagreement of -nan, and diverged runs' NaN logits a correlation of 1.
TEST(CrossRunTest, NoPredictionsAreNoComparisonAndNaNLogitsNoCorrelation) {
  predictions::Predictions empty;
  EXPECT_FALSE(study::cross_run({empty, empty}).has_value());
  predictions::Predictions a;
  a.labels = {1, 2, 3};
  a.predicted = {1, 2, 0};
  a.top_logit = {0.5f, 0.25f, 0.75f};
  predictions::Predictions b = a;
  b.top_logit = {NAN, NAN, NAN};
  const auto c = study::cross_run({a, b});
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(std::isnan(c->logit_correlation)) << c->logit_correlation;
  EXPECT_EQ(c->disagreement, 0);
  EXPECT_NEAR(study::cross_run({a, a})->logit_correlation, 1.0, 1e-12);
}

}  // namespace

TEST_F(StudyPlanTest, AResumedStudyTrainsItsRecordedPlanWhateverTheFilesSayNow) {
  auto run = tst::run_command(cli("study run " + (dir_ / "study.yaml").string()));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  // One planned run is left to do, and then the base is edited.
  auto del = tst::run_command(cli("runs delete data_order/r2 --yes"));
  ASSERT_EQ(del.exit_code, 0) << del.out;
  edit("base.yaml", "epochs: 1", "epochs: 3");

  // The changed file is refused, naming the key, and nothing is trained.
  auto refused = tst::run_command(cli("study resume plan"));
  EXPECT_EQ(refused.exit_code, 4) << refused.out;
  EXPECT_NE(refused.out.find("train.epochs was 1 when study plan was planned and is 3"),
            std::string::npos)
      << refused.out;
  EXPECT_EQ(children("plan").count("data_order/r2"), 0u);

  // A changed study file too.
  edit("base.yaml", "epochs: 3", "epochs: 1");
  edit("study.yaml", "replicates: 2", "replicates: 3");
  refused = tst::run_command(cli("study resume plan"));
  EXPECT_EQ(refused.exit_code, 4) << refused.out;
  EXPECT_NE(refused.out.find("replicates was 2 when study plan was planned and is 3"),
            std::string::npos)
      << refused.out;

  // With the files moved away, status and report read the store alone, and
  // resume trains the recorded plan: every run one epoch.
  edit("base.yaml", "epochs: 1", "epochs: 3");
  fs::create_directories(dir_ / "moved");
  fs::rename(dir_ / "study.yaml", dir_ / "moved/study.yaml");
  fs::rename(dir_ / "base.yaml", dir_ / "moved/base.yaml");
  auto status = tst::run_command(cli("study status plan"));
  EXPECT_EQ(status.exit_code, 0) << status.out;
  EXPECT_NE(status.out.find("init"), std::string::npos) << status.out;
  auto report = tst::run_command(cli("study report plan --format md --no-weights"));
  EXPECT_EQ(report.exit_code, 0) << report.out;
  auto resumed = tst::run_command(cli("study resume plan"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("4/4 runs finished"), std::string::npos) << resumed.out;
  auto runs = children("plan");
  ASSERT_EQ(runs.size(), 4u);
  for (const auto& [name, attempts] : runs) {
    ASSERT_EQ(attempts.size(), 1u) << name;
    EXPECT_NE(attempts[0].config_text.find("epochs: 1\n"), std::string::npos) << name;
    EXPECT_EQ(attempts[0].config_text.find("epochs: 3\n"), std::string::npos) << name;
  }

  // A run whose predictions file is gone is left out of the cross-run
  // measures, with a note that says why; the report is still written.
  auto s = open();
  auto preds = s->artifacts(runs["init/r1"][0].uuid);
  for (const auto& a : preds)
    if (a.name == "predictions/test.bin") fs::remove(a.path);
  auto noted = tst::run_command(cli("study report plan --format json --no-weights"));
  EXPECT_EQ(noted.exit_code, 0) << noted.out;
  EXPECT_NE(noted.out.find("init/r1 (" + runs["init/r1"][0].uuid.substr(0, 8) +
                           ") is left out of the cross-run measures: artifact "
                           "'predictions/test.bin' of this run is missing"),
            std::string::npos)
      << noted.out;
}

TEST_F(StudyPlanTest, APlanIsCountedBeforeItIsBuiltAndALargeOneNeedsAFlag) {
  // 7 keys x 20 values x 2 replicates: 2.56e9 runs. Refused at once, in
  // bounded memory (a list of them would need hundreds of GB).
  std::string grid = "grid:\n";
  for (int k = 0; k < 7; ++k) {
    grid += "  seeds.k" + std::to_string(k) + ": [";
    for (int v = 0; v < 20; ++v) grid += (v ? ", " : "") + std::to_string(v);
    grid += "]\n";
  }
  std::ofstream(dir_ / "huge.yaml") << "study: huge\nbase: base.yaml\n"
                                    << grid << "replicates: 2\n";
  auto huge =
      tst::run_command("ulimit -v 8000000; " + cli("study run " + (dir_ / "huge.yaml").string()));
  EXPECT_EQ(huge.exit_code, 2) << huge.out;
  EXPECT_NE(huge.out.find("plans 2,560,000,000 runs"), std::string::npos) << huge.out;
  EXPECT_NE(huge.out.find("--max-runs 2560000000"), std::string::npos) << huge.out;

  // A small plan above a small limit: refused with its estimate; the flag
  // confirms it. The estimate comes from the study's earlier runs.
  auto first = tst::run_command(cli("study run " + (dir_ / "study.yaml").string()));
  ASSERT_EQ(first.exit_code, 0) << first.out;
  auto limited =
      tst::run_command(cli("study run " + (dir_ / "study.yaml").string() + " --max-runs 3"));
  EXPECT_EQ(limited.exit_code, 2) << limited.out;
  EXPECT_NE(limited.out.find("plans 4 runs"), std::string::npos) << limited.out;
  EXPECT_NE(limited.out.find("the mean of 4 earlier run(s)"), std::string::npos) << limited.out;
  auto list = tst::run_command(cli("runs list --filter \"experiment = 'plan'\" --format csv"));
  EXPECT_EQ(std::count(list.out.begin(), list.out.end(), '\n'), 1 + 5) << list.out;
  // The same study again is refused (it would train every run twice);
  // under another name, the flag lets its 4 runs through.
  auto again = tst::run_command(cli("study run " + (dir_ / "study.yaml").string()));
  EXPECT_EQ(again.exit_code, 4) << again.out;
  EXPECT_NE(again.out.find("study plan already exists"), std::string::npos) << again.out;
  std::ifstream in(dir_ / "study.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(dir_ / "study2.yaml")
      << std::regex_replace(text, std::regex("study: plan"), "study: plan2");
  auto allowed =
      tst::run_command(cli("study run " + (dir_ / "study2.yaml").string() + " --max-runs 4"));
  EXPECT_EQ(allowed.exit_code, 0) << allowed.out;
}

// The study process plans (resolves its base config, checks every run's)
// without the torch half of the CLI: only its trainings load libtorch.
// With the torch half out of reach, a plan above --max-runs is still
// refused with its size and a bad key with its name, as with it.
TEST_F(StudyPlanTest, PlanningAStudyNeedsNoLibtorch) {
  const std::string no_torch = "TRAINSCOPE_TORCH_COMMANDS=" + (dir_ / "missing.so").string() + " ";
  auto limited = tst::run_command(
      no_torch + cli("study run " + (dir_ / "study.yaml").string() + " --cold --max-runs 3"));
  EXPECT_EQ(limited.exit_code, 2) << limited.out;
  EXPECT_NE(limited.out.find("plans 4 runs"), std::string::npos) << limited.out;
  std::ofstream(dir_ / "bad.yaml")
      << "study: bad\nbase: base.yaml\ngrid:\n  optimizer.nam: [adam]\n";
  auto bad =
      tst::run_command(no_torch + cli("study run " + (dir_ / "bad.yaml").string() + " --cold"));
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("optimizer.nam"), std::string::npos) << bad.out;
  EXPECT_EQ(bad.out.find("libtorch"), std::string::npos) << bad.out;
}

TEST_F(StudyPlanTest, RetriedAttemptsAreSupersededAndEachPlannedRunCountsOnce) {
  // Each training is killed before its first checkpoint, so the study
  // retries it as a new attempt; the killed attempts are set aside.
  std::ofstream(dir_ / "long.yaml")
      << "data: {dataset: synthetic, synthetic: {size: 60000}}\n"
      << "model: {name: mlp, hidden: 256}\ntrain: {epochs: 1, batch_size: 32}\n"
      << "monitor: {interval_s: 0}\ncheckpoint: {every_epochs: 0}\n";  // no checkpoint to resume
  std::ofstream(dir_ / "retry.yaml")
      << "study: retry\nbase: long.yaml\nsources: [init]\nreplicates: 2\nretries: 1\n"
      << "workers: 1\n";
  pid_t pid = fork();
  if (pid == 0) {
    const std::string cmd = cli("study run " + (dir_ / "retry.yaml").string()) + " > " +
                            (dir_ / "run.out").string() + " 2>&1";
    execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), nullptr);
    _exit(127);
  }
  // Kill the first attempt of each planned run as soon as it trains.
  std::set<std::string> killed;
  for (int i = 0; i < 1200 && killed.size() < 2; ++i) {
    for (const auto& [name, runs] : children_if_any("retry"))
      if (!killed.count(name) && runs.size() == 1 && runs[0].status == store::RunStatus::kRunning &&
          runs[0].pid > 0 && kill(static_cast<pid_t>(runs[0].pid), SIGKILL) == 0)
        killed.insert(name);
    usleep(50000);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_EQ(killed.size(), 2u) << tst::run_command("cat " + (dir_ / "run.out").string()).out;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << tst::run_command("cat " + (dir_ / "run.out").string()).out;

  auto s = open();
  const auto study = s->resolve_run("retry");
  std::map<std::string, int> finished, superseded;
  for (const auto& r : s->list_runs({.parent_uuid = study.uuid})) {
    auto tags = s->tags(r.uuid);
    if (tags.count("study.superseded_by")) {
      ++superseded[r.name];
      EXPECT_EQ(r.status, store::RunStatus::kKilled) << r.name;
    } else {
      EXPECT_EQ(r.status, store::RunStatus::kFinished) << r.name;
      ++finished[r.name];
    }
  }
  EXPECT_EQ(finished, (std::map<std::string, int>{{"init/r1", 1}, {"init/r2", 1}}));
  EXPECT_EQ(superseded, (std::map<std::string, int>{{"init/r1", 1}, {"init/r2", 1}}));
  // What the dashboard shows as the study's children: each planned run once.
  EXPECT_EQ(trainscope::study::counted_children(*s, study.uuid), 2);
  EXPECT_EQ(s->list_runs({.parent_uuid = study.uuid}).size(), 4u);
  auto st = tst::run_command(cli("study status retry"));
  EXPECT_NE(st.out.find("init        2         2        0       0        0"), std::string::npos)
      << st.out;
}

TEST_F(StudyPlanTest, StatusIsAReaderAndShowsARunWhoseWriterIsGoneAsStale) {
  auto run = tst::run_command(cli("study run " + (dir_ / "study.yaml").string()));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  // A training whose process died without a word: still "running" in the
  // store, its writer a process that no longer exists.
  const std::string db = (dir_ / "s.db").string();
  auto crash = tst::run_command("sqlite3 " + db +
                                " \"UPDATE runs SET status = 'running', end_time = NULL, "
                                "pid = 999999999, pid_start = 1 WHERE name = 'init/r2'\"");
  ASSERT_EQ(crash.exit_code, 0) << crash.out;
  const std::string before = tst::run_command("sha256sum " + db).out;
  auto st = tst::run_command(cli("study status plan"));
  EXPECT_EQ(st.exit_code, 0) << st.out;
  EXPECT_NE(st.out.find("STALE"), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("init              2         1        0      1       0        0"),
            std::string::npos)
      << st.out;
  auto json = tst::run_command(cli("--json study status plan"));
  EXPECT_NE(json.out.find("\"stale\": 1"), std::string::npos) << json.out;
  // Reading changed nothing: the run is still "running" in the file.
  EXPECT_EQ(tst::run_command("sha256sum " + db).out, before);
  auto status =
      tst::run_command("sqlite3 " + db + " \"SELECT status FROM runs WHERE name = 'init/r2'\"");
  EXPECT_EQ(status.out, "running\n");
}

TEST_F(StudyPlanTest, ReplanTrainsTheFilesAsTheyAreNowAndSetsAsideWhatNoLongerFits) {
  auto run = tst::run_command(cli("study run " + (dir_ / "study.yaml").string()));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  // The base changes for every run; the study file adds a replicate.
  edit("base.yaml", "epochs: 1", "epochs: 2");
  edit("study.yaml", "replicates: 2", "replicates: 3");
  auto replanned = tst::run_command(cli("study resume plan --replan"));
  ASSERT_EQ(replanned.exit_code, 0) << replanned.out;
  EXPECT_NE(replanned.out.find("4 run(s) it no longer trains set aside"), std::string::npos)
      << replanned.out;
  EXPECT_NE(replanned.out.find("6/6 runs finished"), std::string::npos) << replanned.out;

  auto s = open();
  const auto study = s->resolve_run("plan");
  EXPECT_NE(study.config_text.find("replicates: 3"), std::string::npos);
  EXPECT_EQ(s->tags(study.uuid)["study.planned_runs"], "6");
  int kept = 0, aside = 0;
  for (const auto& r : s->list_runs({.parent_uuid = study.uuid})) {
    const auto run_info = *s->find_run(r.uuid);
    if (s->tags(r.uuid).count("study.superseded_by")) {
      ++aside;
      EXPECT_NE(run_info.config_text.find("epochs: 1\n"), std::string::npos) << r.name;
    } else {
      ++kept;
      EXPECT_NE(run_info.config_text.find("epochs: 2\n"), std::string::npos) << r.name;
    }
  }
  EXPECT_EQ(aside, 4);
  EXPECT_EQ(kept, 6);
  // Planned again with nothing changed: nothing is set aside or trained.
  auto again = tst::run_command(cli("study resume plan --replan"));
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("0 run(s) it no longer trains set aside"), std::string::npos)
      << again.out;
  EXPECT_NE(again.out.find("6 done before, 0 to run"), std::string::npos) << again.out;
}

// Issue 51: after `study resume --replan`, `stats --study` counted the runs
// the study had set aside (N=6 where status and report said 4). Every
// reader now counts a study's runs through study::study_runs. A study made
// by hand: no training needed.
TEST_F(StudyPlanTest, EveryReaderCountsTheSameRunsOfAStudy) {
  const std::string uri = "sqlite:" + (dir_ / "s.db").string();
  auto s = store::Store::open({.uri = uri});
  const std::string text = "study: hand\ncommand: \"true\"\nreplicates: 2\nsources: [init]\n";
  const auto spec = trainscope::study::parse_study(text, dir_ / "hand.yaml");
  const auto study = s->create_run({.experiment = "hand",
                                    .name = "hand",
                                    .config_text = trainscope::study::recorded_text(spec)});
  s->set_tag(study.uuid, "kind", "study");
  s->set_params(study.uuid,
                {{"study.file", (dir_ / "hand.yaml").string()}, {"study.quick", "false"}});
  s->set_status(study.uuid, store::RunStatus::kFinished);
  // A run of the study: `status`, its test/accuracy, and a tag if any.
  auto child = [&](const std::string& name, store::RunStatus status, double accuracy,
                   const std::string& tag = "") {
    const auto r = s->create_run({.experiment = "hand", .name = name, .parent_uuid = study.uuid});
    s->append_metrics(r.uuid, {{"test/accuracy", {{1, 0, accuracy}}}});
    if (!tag.empty()) s->set_tag(r.uuid, tag, "replan");
    s->set_status(r.uuid, status);
    return r.uuid;
  };
  child("init/r1", store::RunStatus::kFinished, 0.1, trainscope::study::kSupersededTag);
  const std::string r1 = child("init/r1", store::RunStatus::kFinished, 0.5);
  child("init/r2", store::RunStatus::kFailed, 0.2, trainscope::study::kSupersededTag);
  // Nineteenth hunt, B-D4: an older attempt no tag names (recorded by a
  // job's background process after the job ended) is set aside all the
  // same: `study status` said 2 set aside where stats left 4 out.
  child("init/r2", store::RunStatus::kFinished, 0.3);
  const std::string r2 = child("init/r2", store::RunStatus::kFinished, 0.6);
  child("init/r3", store::RunStatus::kFinished, 0.9, trainscope::study::kSupersededTag);
  child("init/r4", store::RunStatus::kFinished, 0.9);  // not in the plan

  const auto runs = trainscope::study::study_runs(*s, study);
  ASSERT_EQ(runs.planned.size(), 2u);
  std::vector<std::string> results;
  for (const auto& r : runs.results()) results.push_back(r.uuid);
  EXPECT_EQ(results, (std::vector<std::string>{r1, r2}));
  EXPECT_EQ(runs.set_aside.size(), 5u);
  EXPECT_EQ(trainscope::study::counted_children(*s, study.uuid), 2);
  const auto status = trainscope::study::study_status(*s, "hand");
  EXPECT_EQ(status.total.finished, 2);
  EXPECT_EQ(status.set_aside, 5);
  EXPECT_EQ(trainscope::study::analyse_study(*s, "hand").finished, 2);
  for (const std::string args : {"--study hand", "-e hand"}) {
    auto st = tst::run_command(cli("stats test/accuracy " + args + " --format json"));
    ASSERT_EQ(st.exit_code, 0) << st.out;
    EXPECT_NE(st.out.find("\"n\": 2,"), std::string::npos) << args << ": " << st.out;
    EXPECT_NE(st.out.find("\"mean\": 0.55"), std::string::npos) << args << ": " << st.out;
    EXPECT_NE(st.out.find("4 finished run(s) left out"), std::string::npos)
        << args << ": " << st.out;
  }
  // A run named explicitly is counted, set aside or not.
  auto named = tst::run_command(cli("stats test/accuracy init/r3 --format json"));
  EXPECT_NE(named.out.find("\"n\": 1,"), std::string::npos) << named.out;
}

// The third hunt (D14, D15): `checklist` of a study's run counted an
// attempt the study had set aside (3 where `study status` said 2), and of
// the study's own run it ticked "0 runs" beside "only one run". A run's
// repeats are counted as every reader counts runs (study::repeats_of); a
// study's own run has none, and both items say so, open.
TEST_F(StudyPlanTest, ChecklistCountsTheRunsEveryReaderCounts) {
  auto s = store::Store::open({.uri = "sqlite:" + (dir_ / "s.db").string()});
  const std::string text = "study: hand\ncommand: \"true\"\nreplicates: 2\nsources: [init]\n";
  const auto spec = trainscope::study::parse_study(text, dir_ / "hand.yaml");
  const auto study = s->create_run({.experiment = "hand",
                                    .name = "hand",
                                    .config_text = trainscope::study::recorded_text(spec)});
  s->set_tag(study.uuid, "kind", "study");
  s->set_params(study.uuid,
                {{"study.file", (dir_ / "hand.yaml").string()}, {"study.quick", "false"}});
  s->set_status(study.uuid, store::RunStatus::kFinished);
  auto run = [&](const std::string& name, const std::string& parent, const std::string& config,
                 double accuracy, bool aside) {
    const auto r = s->create_run(
        {.experiment = "hand", .name = name, .parent_uuid = parent, .config_text = config});
    if (accuracy >= 0) s->append_metrics(r.uuid, {{"test/accuracy", {{1, 0, accuracy}}}});
    if (aside) s->set_tag(r.uuid, trainscope::study::kSupersededTag, "replan");
    s->set_status(r.uuid, store::RunStatus::kFinished);
    return *s->find_run(r.uuid);
  };
  const std::string same = "train: {epochs: 1}\n";
  run("init/r1", study.uuid, same, 0.1, true);  // set aside by a replan
  const auto r1 = run("init/r1", study.uuid, same, 0.5, false);
  run("init/r2", study.uuid, same, 0.6, false);
  run("init/r3", study.uuid, same, 0.9, false);  // the plan no longer names it
  const auto lone = run("lone", "", "train: {epochs: 2}\n", -1, false);
  ASSERT_EQ(trainscope::study::repeats_of(*s, r1)->size(), 2u);
  EXPECT_FALSE(trainscope::study::repeats_of(*s, study).has_value());

  auto child = tst::run_command(cli("checklist " + r1.uuid));
  ASSERT_EQ(child.exit_code, 0) << child.out;
  EXPECT_NE(child.out.find("[x] Number of training runs (same config): 2\n"), std::string::npos)
      << child.out;
  EXPECT_NE(child.out.find("[x] Mean and variation of test accuracy: mean 0.5500"),
            std::string::npos)
      << child.out;
  auto parent = tst::run_command(cli("checklist hand"));
  ASSERT_EQ(parent.exit_code, 0) << parent.out;
  EXPECT_NE(parent.out.find("[ ] Number of training runs (same config): OPEN: not a training"),
            std::string::npos)
      << parent.out;
  EXPECT_NE(parent.out.find("[ ] Mean and variation of test accuracy: OPEN: not a training"),
            std::string::npos)
      << parent.out;
  // One finished run, which recorded no accuracy: one run, and the spread open.
  auto alone = tst::run_command(cli("checklist " + lone.uuid));
  EXPECT_NE(alone.out.find("[x] Number of training runs (same config): 1\n"), std::string::npos)
      << alone.out;
  EXPECT_NE(alone.out.find("OPEN: only one finished run with this config"), std::string::npos)
      << alone.out;
}

// Issue 51: a command study whose command never called trainscope said
// "failed 2 times, last exit 0" and `study status` showed FAILED 0. The
// study now says that no run was recorded and how to fix it, and status
// counts such a planned run failed.
TEST_F(StudyPlanTest, APlannedRunThatRecordedNothingIsAFailureThatSaysWhy) {
  std::ofstream(dir_ / "silent.yaml")
      << "study: silent\ncommand: \"true\"\nreplicates: 2\nsources: [init]\nretries: 1\n";
  auto run = tst::run_command(cli("study run " + (dir_ / "silent.yaml").string()));
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_NE(run.out.find("init/r1 ended (exit 0, no run recorded), retrying"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("the command exited 0 but recorded no run"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("call trainscope.start_run() of the Python package"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("2 of 2 planned runs ended without recording a run"), std::string::npos)
      << run.out;
  auto st = tst::run_command(cli("study status silent"));
  EXPECT_EQ(st.exit_code, 0) << st.out;
  EXPECT_NE(st.out.find("init        2         0        0       2        0"), std::string::npos)
      << st.out;
  EXPECT_NE(st.out.find("2 failed run(s) recorded nothing: init/r1: the command exited 0"),
            std::string::npos)
      << st.out;
  // A resume tries again, and the placeholder it replaces is set aside.
  auto again = tst::run_command(cli("-q study resume silent"));
  EXPECT_EQ(again.exit_code, 1) << again.out;
  st = tst::run_command(cli("study status silent"));
  EXPECT_NE(st.out.find("init        2         0        0       2        0"), std::string::npos)
      << st.out;
  EXPECT_NE(st.out.find("2 run(s) set aside"), std::string::npos) << st.out;
}
