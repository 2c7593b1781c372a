// The resource monitor against known loads, recorded RAPL sysfs values and
// an NVML test double; `trainscope watch` on real commands.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <thread>

#include "support/test_util.h"
#include "trainscope/monitor/procfs.h"
#include "trainscope/monitor/rapl.h"
#include "trainscope/monitor/report.h"
#include "trainscope/monitor/sampler.h"
#include "trainscope/monitor/watch.h"

namespace trainscope::monitor {
using store::RunInfo;
using store::RunRecorder;
using store::RunStatus;
using store::Store;
using store::StoreOptions;

namespace {

using testing::TempDir;

char* volatile g_keep = nullptr;

std::shared_ptr<Store> temp_store(const TempDir& dir) {
  StoreOptions o;
  o.uri = "sqlite:" + (dir / "t.db").string();
  return Store::open(o);
}

std::vector<double> values(Store& s, const std::string& uuid, const std::string& key) {
  std::vector<double> v;
  for (const auto& p : s.metric(uuid, key)) v.push_back(p.value);
  return v;
}

// Runs `body` in a child process and samples it for `seconds`.
std::string sample_child(const std::shared_ptr<Store>& store, double interval, double seconds,
                         const std::function<void()>& body) {
  pid_t pid = fork();
  if (pid == 0) {
    body();
    _exit(0);
  }
  auto rec = RunRecorder::start(store, {});
  {
    SamplerOptions o;
    o.pid = pid;
    o.interval_s = interval;
    ResourceSampler sampler(*rec, o);
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    sampler.stop();
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  rec->end();
  return rec->uuid();
}

// Twenty-first hunt, A-D2: a user's gpu_util, gpu/x or gpu-1/x were listed
// by `resources` as the sampler's GPU series (at -5). Only the keys the
// writers reserve are.
TEST(ResourceKeyTest, OnlyTheSamplersReservedKeysAreResources) {
  for (const char* own : {"proc/rss_mib", "sys/cpu_percent", "gpu0/util_percent", "gpu12/mem_mib",
                          "energy/total_kwh"})
    EXPECT_TRUE(is_resource_key(own)) << own;
  for (const char* mine : {"gpu_util", "gpu/x", "gpu-1/x", "gpus", "exit_code", "loss"})
    EXPECT_FALSE(is_resource_key(mine)) << mine;
}

TEST(SamplerTest, ASpinningChildReadsAboutOneCore) {
  TempDir dir;
  auto store = temp_store(dir);
  auto uuid = sample_child(store, 0.25, 2.6, [] {
    volatile uint64_t x = 0;
    for (;;) x = x + 1;
  });
  auto cpu = values(*store, uuid, "proc/cpu_percent");
  ASSERT_GE(cpu.size(), 6u);
  double mean = 0;
  for (double v : cpu) mean += v;
  mean /= static_cast<double>(cpu.size());
  EXPECT_NEAR(mean, 100.0, 15.0);
  for (double v : values(*store, uuid, "proc/threads")) EXPECT_EQ(v, 1);
}

TEST(SamplerTest, TouchingFiveHundredMibRaisesRssByThat) {
  TempDir dir;
  auto store = temp_store(dir);
  auto uuid = sample_child(store, 0.1, 2.5, [] {
    usleep(600 * 1000);  // baseline samples first
    const size_t n = size_t{500} << 20;
    char* p = static_cast<char*>(std::malloc(n));
    std::memset(p, 1, n);
    g_keep = p;  // keeps the compiler from eliding the allocation
    for (;;) pause();
  });
  auto rss = values(*store, uuid, "proc/rss_mib");
  ASSERT_GE(rss.size(), 10u);
  double lo = *std::min_element(rss.begin(), rss.end());
  double hi = *std::max_element(rss.begin(), rss.end());
  EXPECT_NEAR(hi - lo, 500.0, 25.0);
  EXPECT_NEAR(values(*store, uuid, "proc/peak_rss_mib").back(), hi, 5.0);
}

TEST(ProcfsTest, ProcessTreeIncludesGrandchildren) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  if (child == 0) {
    pid_t grandchild = fork();
    if (grandchild == 0) {
      for (;;) pause();
    }
    write(fds[1], &grandchild, sizeof grandchild);
    for (;;) pause();
  }
  pid_t grandchild = 0;
  ASSERT_EQ(read(fds[0], &grandchild, sizeof grandchild), static_cast<ssize_t>(sizeof grandchild));
  auto tree = process_tree(child);
  EXPECT_NE(std::find(tree.begin(), tree.end(), grandchild), tree.end());
  EXPECT_EQ(read_tree(child).threads, 2);
  kill(grandchild, SIGKILL);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

void put(const std::filesystem::path& p, const std::string& content) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << content;
}

// Everyday-use defect 10: the tree's "peak RSS" was the sum of each
// process's own peak, reached at different moments.
TEST(ProcfsTest, ATreesPeakRssIsNotTheSumOfItsProcessesPeaks) {
  TempDir proc;
  auto stat = [](int pid, int ppid, int rss_pages) {
    std::string f = std::to_string(pid) + " (p) S " + std::to_string(ppid);
    for (int i = 5; i <= 23; ++i) f += " 1";  // fields 5..23
    return f + " " + std::to_string(rss_pages) + " 0\n";
  };
  const long page = sysconf(_SC_PAGESIZE);
  const int mib = static_cast<int>((1 << 20) / page);
  put(proc / "100/stat", stat(100, 1, 10 * mib));
  put(proc / "100/status", "VmHWM:\t  102400 kB\n");  // 100 MiB, earlier
  put(proc / "101/stat", stat(101, 100, 70 * mib));
  put(proc / "101/status", "VmHWM:\t   81920 kB\n");  // 80 MiB, now near it
  ProcessStat t = read_tree(100, proc.path());
  EXPECT_EQ(t.rss_bytes, int64_t{80} << 20);
  EXPECT_EQ(t.peak_rss_bytes, int64_t{100} << 20);  // not 180
}

// Values as recorded from a two-socket Intel server's /sys/class/powercap.
TEST(RaplTest, AccumulatesEnergyAcrossCounterWrapAround) {
  TempDir root;
  const uint64_t range = 262143328850ull;
  put(root / "intel-rapl:0/name", "package-0\n");
  put(root / "intel-rapl:0/max_energy_range_uj", std::to_string(range) + "\n");
  put(root / "intel-rapl:0/energy_uj", "262142900000\n");
  put(root / "intel-rapl:0:0/name", "core\n");
  put(root / "intel-rapl:0:0/max_energy_range_uj", std::to_string(range) + "\n");
  put(root / "intel-rapl:0:0/energy_uj", "1000000\n");
  put(root / "intel-rapl:0:1/name", "dram\n");
  put(root / "intel-rapl:0:1/max_energy_range_uj", "65532610987\n");
  put(root / "intel-rapl:0:1/energy_uj", "5000000\n");
  put(root / "intel-rapl:1/name", "package-1\n");
  put(root / "intel-rapl:1/max_energy_range_uj", std::to_string(range) + "\n");
  put(root / "intel-rapl:1/energy_uj", "10000000\n");
  Rapl rapl(root.path());
  ASSERT_TRUE(rapl.available()) << rapl.reason();
  EXPECT_EQ(rapl.domains().size(), 4u);
  // 1 s later: package-0 wrapped past its range, the others advanced.
  put(root / "intel-rapl:0/energy_uj", "499571150\n");
  put(root / "intel-rapl:0:0/energy_uj", "51000000\n");
  put(root / "intel-rapl:0:1/energy_uj", "13000000\n");
  put(root / "intel-rapl:1/energy_uj", "95000000\n");
  rapl.update();
  // package-0: (range - 262142900000) + 499571150 uJ = 500 J; package-1: 85 J.
  EXPECT_NEAR(rapl.package_joules(), (range - 262142900000ull + 499571150ull) * 1e-6 + 85.0, 1e-9);
  EXPECT_NEAR(rapl.package_joules(), 500.0 + 85.0, 1e-3);
  EXPECT_NEAR(rapl.dram_joules(), 8.0, 1e-9);
  rapl.update();  // no change: no energy
  EXPECT_NEAR(rapl.package_joules(), 585.0, 1e-3);
}

TEST(RaplTest, UnreadableOrAbsentSaysWhy) {
  TempDir root;
  Rapl none(root / "missing");
  EXPECT_FALSE(none.available());
  EXPECT_NE(none.reason().find("does not exist"), std::string::npos) << none.reason();
  put(root / "intel-rapl:0/name", "package-0\n");
  put(root / "intel-rapl:0/energy_uj", "garbage\n");
  put(root / "intel-rapl:0/max_energy_range_uj", "100\n");
  Rapl bad(root.path());
  EXPECT_FALSE(bad.available());
  EXPECT_NE(bad.reason().find("not a number"), std::string::npos) << bad.reason();
}

TEST(SamplerTest, WithoutRaplTheCpuEnergyIsAnEstimateAndSaysSo) {
  TempDir dir;
  auto store = temp_store(dir);
  auto rec = RunRecorder::start(store, {});
  SamplerOptions o;
  o.interval_s = 0.1;
  o.powercap_root = dir / "no-powercap";
  o.cpu_tdp_watts = 100;
  o.carbon_kg_per_kwh = 0.5;
  EnergySummary e;
  {
    ResourceSampler s(*rec, o);
    volatile uint64_t x = 0;
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(800);
    while (std::chrono::steady_clock::now() < end) x = x + 1;
    e = s.stop();
  }
  EXPECT_EQ(e.cpu_source.rfind("estimated: TDP 100 W", 0), 0u) << e.cpu_source;
  EXPECT_NE(e.cpu_source.find("does not exist"), std::string::npos);
  EXPECT_GT(e.cpu_j, 0);
  EXPECT_EQ(store->tags(rec->uuid()).at("energy.cpu.source"), e.cpu_source);
  rec->flush();
  auto co2 = store->metric(rec->uuid(), "energy/co2_kg");
  ASSERT_EQ(co2.size(), 1u);
  EXPECT_DOUBLE_EQ(co2[0].value, e.kwh() * 0.5);
}

TEST(SamplerTest, GpusThroughTheNvmlTestDouble) {
  setenv("TRAINSCOPE_NVML_LIBRARY", TS_FAKE_NVML, 1);
  TempDir dir;
  auto store = temp_store(dir);
  auto rec = RunRecorder::start(store, {});
  EnergySummary e;
  {
    SamplerOptions o;
    o.interval_s = 0.1;
    ResourceSampler s(*rec, o);
    std::this_thread::sleep_for(std::chrono::milliseconds(350));
    e = s.stop();
  }
  unsetenv("TRAINSCOPE_NVML_LIBRARY");
  rec->flush();
  const auto& u = rec->uuid();
  EXPECT_EQ(values(*store, u, "gpu0/util_percent").back(), 40);
  EXPECT_EQ(values(*store, u, "gpu1/util_percent").back(), 50);
  EXPECT_EQ(values(*store, u, "gpu1/power_w").back(), 200);
  EXPECT_EQ(values(*store, u, "gpu0/temp_c").back(), 60);
  EXPECT_EQ(values(*store, u, "gpu0/sm_clock_mhz").back(), 1200);
  EXPECT_EQ(values(*store, u, "gpu0/mem_clock_mhz").back(), 1000);
  EXPECT_EQ(values(*store, u, "gpu0/mem_total_mib").back(), 40 * 1024);
  EXPECT_EQ(values(*store, u, "gpu1/mem_used_mib").back(), 2 * 1024);
  EXPECT_EQ(values(*store, u, "gpu0/proc_mem_mib").back(), 3 * 1024);  // this process
  EXPECT_EQ(values(*store, u, "gpu1/proc_mem_mib").back(), 0);
  // The fake counter advances 150 J per reading per GPU.
  auto samples = values(*store, u, "energy/gpu_j");
  EXPECT_EQ(e.gpu_j, 2 * 150.0 * static_cast<double>(samples.size() - 1));
  EXPECT_EQ(e.gpu_source, "nvml energy counter");
}

// --- trainscope watch --------------------------------------------------------------

class WatchTest : public ::testing::Test {
 protected:
  testing::CommandResult watch(const std::string& args) {
    return testing::run_command(std::string(TS_CLI_BIN) + " --store sqlite:" +
                                (dir_ / "t.db").string() + " watch --interval 0.2 " + args);
  }
  std::unique_ptr<Store> store() {
    StoreOptions o;
    o.uri = "sqlite:" + (dir_ / "t.db").string();
    return Store::open(o);
  }
  TempDir dir_;
};

TEST_F(WatchTest, PythonPyTorchScriptMetricLinesSamplesAndExitCode) {
  if (access(TS_TORCH_PYTHON, X_OK) != 0)
    GTEST_FAIL() << "a python with torch is required: configure with -DTRAINSCOPE_TEST_PYTHON";
  std::ofstream(dir_ / "train.py") << R"(import json, sys
import torch
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
opt = torch.optim.SGD(m.parameters(), lr=0.1)
x = torch.randn(2048, 20); y = (x[:, 0] > 0).long()
for step in range(1, 401):
    opt.zero_grad(); loss = torch.nn.functional.cross_entropy(m(x), y); loss.backward(); opt.step()
    if step % 50 == 0:
        print(f"trainscope: step={step} loss={loss.item():.5f}", flush=True)
print(json.dumps({"step": 400, "train_acc": (m(x).argmax(1) == y).float().mean().item()}))
print("trainscope: step=oops loss", flush=True)
print("ordinary output", flush=True)
print("to stderr", file=sys.stderr)
)";
  auto r =
      watch(std::string("--name py -- ") + TS_TORCH_PYTHON + " " + (dir_ / "train.py").string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(
      r.out.find("skipped 1 malformed metric line(s); the first was: trainscope: step=oops loss"),
      std::string::npos)
      << r.out;
  auto s = store();
  RunInfo run = s->resolve_run("py");
  EXPECT_EQ(run.status, RunStatus::kFinished);
  auto loss = s->metric(run.uuid, "loss");
  ASSERT_EQ(loss.size(), 8u);
  EXPECT_EQ(loss.front().step, 50);
  EXPECT_LT(loss.back().value, loss.front().value);
  EXPECT_EQ(s->metric(run.uuid, "train_acc").size(), 1u);
  EXPECT_GE(s->metric(run.uuid, "proc/rss_mib").size(), 2u);
  auto tags = s->tags(run.uuid);
  EXPECT_EQ(tags.at("exit_code"), "0");
  EXPECT_EQ(tags.at("metric_lines.parsed"), "9");
  EXPECT_EQ(tags.at("metric_lines.malformed"), "1");
  std::map<std::string, std::string> arts;
  for (const auto& a : s->artifacts(run.uuid)) {
    std::ifstream in(a.path);
    arts[a.name] = std::string(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_NE(arts["stdout.txt"].find("ordinary output"), std::string::npos);
  EXPECT_EQ(arts["stderr.txt"], "to stderr\n");
  EXPECT_FALSE(s->environment(run.uuid).empty());
}

TEST_F(WatchTest, FailingCommandIsRecordedFailedWithItsExitCodeAndSamples) {
  auto r = watch("--name failing -- /bin/sh -c 'sleep 0.5; exit 3'");
  EXPECT_EQ(r.exit_code, 3) << r.out;
  auto s = store();
  RunInfo run = s->resolve_run("failing");
  EXPECT_EQ(run.status, RunStatus::kFailed);
  EXPECT_EQ(s->tags(run.uuid).at("exit_code"), "3");
  EXPECT_GE(s->metric(run.uuid, "sys/mem_used_mib").size(), 2u);
}

// Everyday use: the child learns its run and store, so a script can attach
// records of its own (as W&B's and MLflow's run-id variables allow).
TEST_F(WatchTest, TheChildGetsItsRunIdAndStore) {
  auto r =
      watch("--name env -- /bin/sh -c 'echo \"id=$TRAINSCOPE_RUN_ID store=$TRAINSCOPE_STORE\"'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  RunInfo run = store()->resolve_run("env");
  EXPECT_NE(r.out.find("id=" + run.uuid), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("store=sqlite:" + (dir_ / "t.db").string()), std::string::npos) << r.out;
}

TEST_F(WatchTest, CommandNotFoundExits127AndRecordsNothing) {
  auto r = watch("-- no-such-command-xyz --flag");
  EXPECT_EQ(r.exit_code, 127) << r.out;
  EXPECT_NE(r.out.find("command not found: 'no-such-command-xyz'"), std::string::npos) << r.out;
  EXPECT_TRUE(store()->list_runs().empty());
}

// Issue 29, item 10: `watch` stays linear. One rule for metric lines in
// both forms; '\r' ends a line; a line's length is bounded; the stored
// output is the program's, byte for byte; a folder is not a program.
TEST(MetricLineTest, OneRuleForKeysNumbersAndStepsInBothForms) {
  TempDir dir;
  auto store = temp_store(dir);
  auto rec = RunRecorder::start(store, {});
  MetricLineParser parser(*rec);
  const std::vector<std::string> good = {
      "trainscope: step=1 a=0.5 b=-2 c=1e-3 d=NaN e=Infinity f=-Infinity g=nan h=inf",
      R"({"step": 2, "a": 0.5, "b": -2, "c": 1e-3, "d": NaN, "e": Infinity, "f": -Infinity})",
      R"({"step": 3, "a": 1, "name": "x", "flag": true, "none": null, "cfg": {"lr": [1, 2]}})",
      "trainscope: step=1e3 a=1",
      R"({"step": 4.0, "\u00e9t\u00e9": 2})",
      "trainscope: a=7",
      "ordinary output, not a metric line",
  };
  for (const auto& l : good) parser.line(l);
  EXPECT_EQ(parser.parsed(), 6);
  EXPECT_EQ(parser.malformed(), 0);
  const std::vector<std::string> bad = {
      "trainscope: step=1 =1",                       // an empty key
      std::string("trainscope: step=1 a\0b=1", 24),  // a NUL in a key
      R"({"step": 1, "": 1})",
      R"({"step": 1, "a\u0000b": 1})",
      "trainscope: step=1.5 a=1",  // a fractional step
      R"({"step": 1.5, "a": 1})",
      "trainscope: step=1e30 a=1",  // a step out of range
      R"({"step": -1, "a": 1})",
      R"({"step": "1", "a": 1})",
      "trainscope: step=1 a=0x10",  // numbers JSON does not write, in either form
      R"({"step": 1, "a": 0x10})",
      "trainscope: step=1 a=+1",
      "trainscope: step=1 a=.5",
      R"({"step": 1, "a": .5})",
      "trainscope: step=1 a=1e999",
      "trainscope: step=1 a=1 a=2",  // a key twice
      R"({"step": 1, "a": 1, "a": 2})",
      "trainscope: step=1",  // no metric
      R"({"step": 1, "a": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]})",
      R"({"step": 1, "a": 1)",
  };
  for (const auto& l : bad) parser.line(l);
  EXPECT_EQ(parser.parsed(), 6);
  EXPECT_EQ(parser.malformed(), static_cast<int64_t>(bad.size()));
  rec->end();
  for (const char* k : {"a", "b", "c", "d", "e", "f"}) {
    EXPECT_EQ(store->metric(rec->uuid(), k).front().step, 1) << k;
    EXPECT_EQ(store->metric(rec->uuid(), k)[1].step, 2) << k;
  }
  EXPECT_TRUE(std::isnan(store->metric(rec->uuid(), "d")[1].value));
  EXPECT_EQ(store->metric(rec->uuid(), "e")[1].value, HUGE_VAL);
  EXPECT_EQ(store->metric(rec->uuid(), "a")[3].step, 1000);
  EXPECT_EQ(store->metric(rec->uuid(), "\xc3\xa9t\xc3\xa9").at(0).step, 4);
  EXPECT_TRUE(store->metric(rec->uuid(), "name").empty());
  EXPECT_TRUE(store->metric(rec->uuid(), "cfg").empty());
}

// Issue 51 (third hunt, D7): a step is read exactly from its digits, in
// both forms: 2^53 + 1 is refused, never stored as 2^53 (a double rounds
// it); 1e3, 3.0, 0.01e2 and 90071992547409.92e2 are the integers they write.
TEST(MetricLineTest, AStepIsReadExactlyFromItsDigits) {
  TempDir dir;
  auto store = temp_store(dir);
  auto rec = RunRecorder::start(store, {});
  MetricLineParser parser(*rec);
  const std::vector<std::pair<std::string, int64_t>> good = {
      {"trainscope: step=9007199254740992 a=1", int64_t{1} << 53},
      {R"({"step": 9007199254740992, "b": 1})", int64_t{1} << 53},
      {"trainscope: step=90071992547409.92e2 c=1", int64_t{1} << 53},
      {R"({"step": 1e3, "d": 1})", 1000},
      {"trainscope: step=3.0 e=1", 3},
      {R"({"step": 0.01e2, "f": 1})", 1},
      {"trainscope: step=-0 g=1", 0},
      {R"({"step": 0e99999999999999999999, "h": 1})", 0},
      {"trainscope: step=9007199254740991 i=1", (int64_t{1} << 53) - 1},
  };
  for (const auto& [l, step] : good) parser.line(l);
  EXPECT_EQ(parser.malformed(), 0) << parser.first_malformed_reason();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"trainscope: step=9007199254740993 a=1", "9007199254740993"},
      {R"({"step": 9007199254740993, "a": 1})", "9007199254740993"},
      {"trainscope: step=9007199254740992.5 a=1", "9007199254740992.5"},
      {R"({"step": 9.007199254740993e15, "a": 1})", "9.007199254740993e15"},
      {"trainscope: step=99999999999999999999 a=1", "99999999999999999999"},
      {"trainscope: step=1e16 a=1", "1e16"},
      {R"({"step": 1e99999999999999999999, "a": 1})", "1e99999999999999999999"},
      {"trainscope: step=1.0000000000000000001 a=1", "1.0000000000000000001"},
      {"trainscope: step=1e-99999999999999999999 a=1", "1e-99999999999999999999"},
      {"trainscope: step=-1 a=1", "-1"},
      {"trainscope: step=NaN a=1", "NaN"},
  };
  for (const auto& [l, token] : bad) {
    MetricLineParser one(*rec);
    one.line(l);
    EXPECT_EQ(one.malformed(), 1) << l;
    EXPECT_EQ(one.first_malformed_reason(), "step " + token + " is not an integer from 0 to 2^53")
        << l;
  }
  rec->end();
  for (const auto& [l, step] : good) {
    const std::string key = l.substr(l.rfind(l.front() == '{' ? '"' : '=') - 1, 1);
    ASSERT_EQ(store->metric(rec->uuid(), key).size(), 1u) << l;
    EXPECT_EQ(store->metric(rec->uuid(), key)[0].step, step) << l;
  }
}

// Issue 51 (third hunt, D8, D9): a key holding a C1 control (NEL, CSI; in
// JSON also as an escape) or bytes that are not UTF-8 is refused, by the
// rule of every entry point.
TEST(MetricLineTest, KeysWithC1ControlsOrBytesThatAreNotUtf8AreRefused) {
  TempDir dir;
  auto store = temp_store(dir);
  auto rec = RunRecorder::start(store, {});
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"trainscope: step=1 a\xc2\205b=1", "key 'a\\u0085b' holds a control character"},
      {R"({"step": 1, "a\u009bb": 1})", "key 'a\\u009bb' holds a control character"},
      {"trainscope: step=1 a\377b=1", "key 'a\\xffb' is not UTF-8 text"},
      {"{\"step\": 1, \"a\xc3(\": 1}", "key 'a\\xc3(' is not UTF-8 text"},
  };
  for (const auto& [l, why] : bad) {
    MetricLineParser one(*rec);
    one.line(l);
    EXPECT_EQ(one.malformed(), 1) << l;
    EXPECT_EQ(one.first_malformed_reason(), why) << l;
  }
  rec->end();
}

// Issue 51 (fifth hunt, D3): a key's steps only go forward (store::StepOrder,
// as Python and `import tfevents` refuse a step that goes back): a line
// that gives a key a step below its last one is malformed, nothing of it
// recorded; the same step again is taken, and a line without a step gives
// each key the step after its last.
TEST(MetricLineTest, AStepThatGoesBackMakesTheLineMalformed) {
  TempDir dir;
  auto store = temp_store(dir);
  auto rec = RunRecorder::start(store, {});
  MetricLineParser parser(*rec);
  for (const char* l : {"trainscope: step=5 a=1", R"({"step": 3, "a": 2})",
                        "trainscope: step=5 a=3 b=1", "trainscope: step=4 b=2 c=1",
                        "trainscope: step=9 c=2", "trainscope: a=4", "trainscope: step=0 d=1"})
    parser.line(l);
  EXPECT_EQ(parser.parsed(), 5);
  EXPECT_EQ(parser.malformed(), 2);
  EXPECT_EQ(parser.first_malformed(), R"({"step": 3, "a": 2})");
  EXPECT_EQ(parser.first_malformed_reason(),
            "metric 'a' at step 3 goes back: it was logged at step 5 before; steps of a key only "
            "go forward");
  // The step after 2^53 is no step: a line without one is malformed then.
  MetricLineParser last(*rec);
  last.line("trainscope: step=9007199254740992 e=1");
  last.line("trainscope: e=2");
  EXPECT_EQ(last.malformed(), 1);
  EXPECT_EQ(last.first_malformed_reason(),
            "step 9007199254740993 is not an integer from 0 to 2^53");
  rec->end();
  auto steps = [&](const char* key) {
    std::vector<int64_t> out;
    for (const auto& p : store->metric(rec->uuid(), key)) out.push_back(p.step);
    return out;
  };
  EXPECT_EQ(steps("a"), (std::vector<int64_t>{5, 5, 6}));  // "a=4": the step after 5
  EXPECT_EQ(steps("b"), std::vector<int64_t>{5});          // its whole line was refused
  EXPECT_EQ(steps("c"), std::vector<int64_t>{9});
  EXPECT_EQ(steps("d"), std::vector<int64_t>{0});
}

// Issue 34: a watched script's params, in either form, set once.
TEST(MetricLineTest, ParamsInBothFormsAreSetOnceAndFlattenLikeAConfig) {
  TempDir dir;
  auto store = temp_store(dir);
  auto rec = RunRecorder::start(store, {});
  MetricLineParser parser(*rec, {{"framework", "pytorch"}});
  rec->set_params({{"framework", "pytorch"}});
  const std::vector<std::string> good = {
      "trainscope: param lr=0.1 optimizer=adam",
      R"({"params": {"batch": 64, "model": {"name": "mlp", "deep": true}, "note": "a \"b\"", "x": null}})",
      "trainscope: param lr=0.1",  // the same value again: nothing new
      "trainscope:\tparam  framework=pytorch seed=7",
      R"({"params": "step"})",              // not a params object: malformed (below)
      R"({"message": "params are fine"})",  // ordinary output that names params
  };
  for (const auto& l : good) parser.line(l);
  EXPECT_EQ(parser.param_lines(), 4);
  EXPECT_EQ(parser.malformed(), 1);
  EXPECT_EQ(parser.first_malformed_reason(), "the value of params is not an object of key: value");
  const std::vector<std::string> bad = {
      "trainscope: param lr=0.2",            // another value
      "trainscope: param framework=jax",     // another value than --param's
      "trainscope: param",                   // no param
      "trainscope: param =1",                // an empty key
      "trainscope: param a=1 a=1",           // a key twice
      "trainscope: param lr",                // not key=value
      R"({"params": {"lr": 0.3}})",          // another value
      R"({"params": {"layers": [1, 2]}})",   // a list
      R"({"params": {"a": 1}, "b": 2})",     // not alone on its line... and no step
      R"({"step": 1, "params": {"a": 1}})",  // params beside a step
      "trainscope: param v=" + std::string(kMaxParamValue + 1, 'x'),
  };
  for (const auto& l : bad) parser.line(l);
  EXPECT_EQ(parser.param_lines(), 4);
  EXPECT_EQ(parser.parsed(), 0);
  EXPECT_EQ(parser.malformed(), 1 + static_cast<int64_t>(bad.size()) - 1)
      << "the line with params and another member is ordinary output";
  rec->end();
  const std::map<std::string, std::string> want = {{"batch", "64"},       {"framework", "pytorch"},
                                                   {"lr", "0.1"},         {"model.deep", "true"},
                                                   {"model.name", "mlp"}, {"note", "a \"b\""},
                                                   {"optimizer", "adam"}, {"seed", "7"},
                                                   {"x", "null"}};
  EXPECT_EQ(store->params(rec->uuid()), want);
}

TEST_F(WatchTest, CarriageReturnsEndLinesAndTheOutputIsKeptByteForByte) {
  // tqdm-style progress redrawn with '\r', a "\r\n", NUL bytes, a line of
  // 200 KB and no newline at the end.
  std::ofstream(dir_ / "p.py") << R"(import sys
out = sys.stdout.buffer
for i in range(1, 1001):
    out.write(b"\rtrainscope: step=%d loss=%f" % (i, 1.0 / i))
out.write(b"\r\ntrainscope: step=1001 loss=0.5\r\n\x00\x01binary\r")
out.write(b"y" * 200000 + b"\ntrainscope: step=1002 loss=0.25")
)";
  auto r = watch("--name cr -- /usr/bin/python3 " + (dir_ / "p.py").string());
  ASSERT_EQ(r.exit_code, 0) << r.out.substr(0, 500);
  EXPECT_NE(r.out.find("1 line(s) longer than 65536 bytes"), std::string::npos);
  auto s = store();
  RunInfo run = s->resolve_run("cr");
  EXPECT_EQ(s->metric(run.uuid, "loss").size(), 1002u);
  EXPECT_EQ(s->metric(run.uuid, "loss").back().step, 1002);
  EXPECT_EQ(s->tags(run.uuid).at("metric_lines.overlong"), "1");
  std::string expected;
  for (int i = 1; i <= 1000; ++i)
    expected += fmt::format("\rtrainscope: step={} loss={:f}", i, 1.0 / i);
  expected += "\r\ntrainscope: step=1001 loss=0.5\r\n";
  expected += std::string(1, '\0') + "\x01" + "binary\r";
  expected += std::string(200000, 'y') + "\ntrainscope: step=1002 loss=0.25";
  for (const auto& a : s->artifacts(run.uuid)) {
    if (a.name != "stdout.txt") continue;
    std::ifstream in(a.path, std::ios::binary);
    const std::string stored((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(stored.size(), expected.size());
    EXPECT_TRUE(stored == expected) << "the stored output is the program's, byte for byte";
  }
}

// Issue 34: watched scripts carry params (--param, metric lines) and take
// TRAINSCOPE_EXPERIMENT, _RUN_NAME and _TAGS as `train` does, so
// `stats --by` groups them (BRIEF §4 compared frameworks' scripts).
TEST_F(WatchTest, ParamsAndTrainscopeVariablesLetStatsGroupWatchedScripts) {
  const std::string db = "sqlite:" + (dir_ / "t.db").string();
  for (int i = 0; i < 4; ++i) {
    const std::string fw = i % 2 ? "tf" : "torch";
    std::ofstream(dir_ / "s.sh") << "echo 'trainscope: param seed=" << i << "'\n"
                                 << "echo '{\"params\": {\"optimizer\": {\"name\": \"sgd\"}}}'\n"
                                 << "echo 'trainscope: step=1 acc=0." << (i % 2 ? 8 : 6) << i
                                 << "'\n";
    const auto r = testing::run_command(
        "TRAINSCOPE_EXPERIMENT=frameworks TRAINSCOPE_RUN_NAME=s" + std::to_string(i) +
        " TRAINSCOPE_TAGS=team=vision,try=" + std::to_string(i) + " " + TS_CLI_BIN + " --store " +
        db + " watch --interval 0.2 --param framework=" + fw + " --tag by=hand" +
        " -- /bin/sh -c '/bin/sh " + (dir_ / "s.sh").string() + "'");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("2 param lines"), std::string::npos) << r.out;
  }
  auto s = store();
  const RunInfo run = s->resolve_run("s3");
  EXPECT_EQ(run.experiment, "frameworks");
  const auto params = s->params(run.uuid);
  EXPECT_EQ(params.at("framework"), "tf");
  EXPECT_EQ(params.at("seed"), "3");
  EXPECT_EQ(params.at("optimizer.name"), "sgd");
  EXPECT_EQ(s->tags(run.uuid).at("team"), "vision");
  EXPECT_EQ(s->tags(run.uuid).at("try"), "3");
  EXPECT_EQ(s->tags(run.uuid).at("by"), "hand");
  const auto shown =
      testing::run_command(std::string(TS_CLI_BIN) + " --store " + db + " runs show s3");
  EXPECT_NE(shown.out.find("optimizer.name  sgd"), std::string::npos) << shown.out;
  const auto stats = testing::run_command(std::string(TS_CLI_BIN) + " --store " + db +
                                          " stats acc --by framework --json");
  ASSERT_EQ(stats.exit_code, 0) << stats.out;
  EXPECT_NE(stats.out.find("\"tf\""), std::string::npos) << stats.out;
  EXPECT_NE(stats.out.find("\"torch\""), std::string::npos) << stats.out;
  EXPECT_EQ(stats.out.find("(unset)"), std::string::npos) << stats.out;
  const auto by_exp = testing::run_command(std::string(TS_CLI_BIN) + " --store " + db +
                                           " stats acc --by experiment");
  EXPECT_NE(by_exp.out.find("frameworks"), std::string::npos) << by_exp.out;
  EXPECT_NE(by_exp.out.find("4"), std::string::npos) << by_exp.out;
  // A --param that is not key=value: one line, exit 2, no run.
  const auto bad = testing::run_command(std::string(TS_CLI_BIN) + " --store " + db +
                                        " watch --param lr -- /bin/true");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--param: 'lr' is not key=value; e.g. --param lr=0.1"), std::string::npos)
      << bad.out;
  EXPECT_EQ(s->list_runs().size(), 4u);
}

// Peak RSS (KiB) of `trainscope watch` recording MIB MiB of output without
// a newline as run NAME: the peak of trainscope and what it started (head
// and tr, a few MB).
long watch_peak_kib(const std::string& db, const std::string& name, long mib) {
  const std::string producer = fmt::format("head -c {} /dev/zero | tr '\\0' x", mib << 20);
  pid_t pid = fork();
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    execl(TS_CLI_BIN, TS_CLI_BIN, "-q", "--store", db.c_str(), "watch", "--name", name.c_str(),
          "--", "/bin/sh", "-c", producer.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  struct rusage ru {};
  if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    ADD_FAILURE() << "watch of " << mib << " MiB ended with status " << status;
    return -1;
  }
  return ru.ru_maxrss;
}

// 128 MB without a newline: the watcher's memory does not grow with it (it
// grew past the output's size, and the time quadratically). Measured as
// the peak's growth over the same watch of 1 MiB, so that what the binary
// and the sanitizers take whatever the output (30-110 MB by build) is not
// counted.
TEST_F(WatchTest, OutputWithoutNewlinesKeepsMemoryBounded) {
  constexpr long kOutputMib = 128;
  const std::string db = "sqlite:" + (dir_ / "t.db").string();
  const long small = watch_peak_kib(db, "short", 1);
  const long large = watch_peak_kib(db, "long", kOutputMib);
  ASSERT_GT(small, 0);
  ASSERT_GT(large, 0);
  // Below half the output: a copy of it would be above.
  EXPECT_LT(large - small, kOutputMib / 2 * 1024)
      << "peak RSS KiB: " << small << " for 1 MiB, " << large << " for " << kOutputMib << " MiB";
  auto s = store();
  RunInfo run = s->resolve_run("long");
  EXPECT_EQ(s->tags(run.uuid).at("metric_lines.overlong"), "1");
  for (const auto& a : s->artifacts(run.uuid)) {
    if (a.name == "stdout.txt") {
      EXPECT_EQ(a.size, kOutputMib << 20);
    }
  }
}

TEST_F(WatchTest, AFolderIsRefusedLikeAFileThatDoesNotRunAndRecordsNothing) {
  auto r = watch("-- " + dir_.path().string());
  EXPECT_EQ(r.exit_code, 127) << r.out;
  EXPECT_EQ(r.out, "trainscope: command not found: '" + dir_.path().string() +
                       "' is a folder, not a program\n");
  std::ofstream(dir_ / "data.txt") << "not a program\n";
  r = watch("-- " + (dir_ / "data.txt").string());
  EXPECT_EQ(r.exit_code, 127) << r.out;
  EXPECT_TRUE(store()->list_runs().empty());
}

// Thirtieth hunt, B-D3: an executable script without a #! line, or whose
// #! names no program, was recorded failed with exit 127 and exec's reason
// lost. It is refused before any run, saying why; a good one still runs.
TEST_F(WatchTest, AScriptExecCannotStartIsRefusedBeforeAnyRun) {
  auto script = [&](const std::string& name, const std::string& text) {
    const auto p = dir_ / name;
    std::ofstream(p) << text;
    std::filesystem::permissions(p, std::filesystem::perms::owner_all);
    return p.string();
  };
  const std::string bare = script("bare.sh", "echo hi\n");
  auto r = watch("-- " + bare);
  EXPECT_EQ(r.exit_code, 127) << r.out;
  EXPECT_EQ(r.out, "trainscope: '" + bare +
                       "' cannot run: it is a script without a #! line; add one (#!/bin/sh) or "
                       "give its interpreter (watch -- sh " +
                       bare + ")\n");
  const std::string lost = script("lost.sh", "#!/nonexistent/interp -x\necho hi\n");
  r = watch("-- " + lost);
  EXPECT_EQ(r.exit_code, 127) << r.out;
  EXPECT_EQ(r.out, "trainscope: '" + lost +
                       "' cannot run: its #! line names '/nonexistent/interp', which is not a "
                       "program here; fix the line, or put an interpreter first (watch -- "
                       "INTERPRETER " +
                       lost + ")\n");
  EXPECT_TRUE(store()->list_runs().empty());
  r = watch("--name good -- " + script("good.sh", "#! /bin/sh\necho hi\n"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(store()->resolve_run("good").status, RunStatus::kFinished);
}

}  // namespace
}  // namespace trainscope::monitor
