// End-to-end tests of the trainscope executable on real store files.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "support/sqlite_check.h"
#include "support/test_util.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/store/store.h"

namespace trainscope {
using store::NewRun;
using store::RunInfo;
using store::RunStatus;
using store::Store;
using store::StoreOptions;

namespace {

using testing::CommandResult;
using testing::run_command;
using testing::shell_quote;
using testing::TempDir;

class CliTest : public ::testing::Test {
 protected:
  CommandResult ts(const std::string& args) {
    return run_command(std::string(TS_CLI_BIN) + " --store " +
                       shell_quote("sqlite:" + (dir_ / "t.db").string()) + " " + args);
  }
  std::string make_run(const std::string& name) {
    auto r = ts("numerics logmap --steps 50 --name " + name + " --json");
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return nlohmann::json::parse(r.out.substr(r.out.find('{'))).at("run");
  }
  std::unique_ptr<Store> store() {
    StoreOptions o;
    o.uri = "sqlite:" + (dir_ / "t.db").string();
    return Store::open(o);
  }
  TempDir dir_;
};

TEST_F(CliTest, Version) {
  auto r = run_command(std::string(TS_CLI_BIN) + " --version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("trainscope 0."), std::string::npos) << r.out;
}

// Every command, those that need libtorch included: --help is parsed by the
// torch-free executable and never loads libtorch.
TEST_F(CliTest, EveryCommandHasHelpWithAnExample) {
  for (const char* cmd : {"",
                          "runs",
                          "runs list",
                          "runs show",
                          "runs export",
                          "runs delete",
                          "metrics",
                          "numerics",
                          "numerics logmap",
                          "numerics sum",
                          "watch",
                          "resources",
                          "report",
                          "report throughput",
                          "train",
                          "config",
                          "config show",
                          "config keys",
                          "eval",
                          "env",
                          "env diff",
                          "diff",
                          "rerun",
                          "card",
                          "checklist",
                          "profile",
                          "profile grid",
                          "profile show",
                          "costmodel",
                          "costmodel fit",
                          "costmodel predict",
                          "costmodel eval",
                          "stats",
                          "study",
                          "probes",
                          "plot",
                          "completion"}) {
    auto r = run_command("LD_DEBUG=files " + std::string(TS_CLI_BIN) + " " + cmd + " --help");
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_NE(r.out.find("Example:"), std::string::npos) << cmd << ":\n" << r.out;
    EXPECT_NE(r.out.find("--store URI"), std::string::npos) << cmd << ": no global options";
    EXPECT_NE(r.out.find("-v,--verbose"), std::string::npos) << cmd << ": no global options";
    EXPECT_EQ(r.out.find("file=libtorch"), std::string::npos) << cmd << " --help loaded libtorch";
  }
}

// The bash completion is generated from the command table: sourced into a
// real bash, it completes commands, subcommands and options of the path.
TEST_F(CliTest, BashCompletionCompletesCommandsAndOptions) {
  std::ofstream(dir_ / "t.sh")
      << "source <(\"$1\" completion bash)\n"
         "c() { COMP_WORDS=(\"$@\"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=();\n"
         "  _trainscope; echo \"${COMPREPLY[*]}\"; }\n"
         "c trainscope ru\nc trainscope runs li\nc trainscope --store x.db runs list --fi\n"
         "c trainscope runs list --format csv --js\nc trainscope profile show --o\n"
         "c trainscope study ''\n";
  auto r = run_command("bash " + shell_quote((dir_ / "t.sh").string()) + " " + TS_CLI_BIN);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "runs\nlist\n--filter\n--json\n--ops\nrun resume status task report\n");
}

// The dynamic loader names every library it maps (LD_DEBUG=files): reading
// the store, reading a config and refusing a --code path that names nothing
// must not map libtorch; training must (or this test could not tell the
// difference).
TEST_F(CliTest, ReadingTheStoreNeverLoadsLibtorch) {
  make_run("logged");
  const std::string cfg = (dir_ / "c.yaml").string();
  std::ofstream(cfg) << "data: {dataset: synthetic, synthetic: {size: 256}}\nmodel: {name: mlp}\n"
                        "train: {epochs: 1, max_steps: 1}\n";
  const std::string show = "config show " + shell_quote(cfg) + " --set train.epochs=2";
  const std::string no_code =
      "train " + shell_quote(cfg) + " --code " + shell_quote((dir_ / "no-such-code").string());
  for (const std::string& cmd :
       {std::string("--version"), std::string("runs list"), std::string("runs show logged"),
        std::string("runs export logged"), std::string("metrics logged lyapunov"),
        std::string("env"), std::string("checklist logged"), std::string("config keys"), show,
        no_code}) {
    auto r = run_command("LD_DEBUG=files " + std::string(TS_CLI_BIN) + " --store " +
                         shell_quote("sqlite:" + (dir_ / "t.db").string()) + " " + cmd);
    EXPECT_EQ(r.exit_code, cmd == no_code ? 2 : 0) << cmd << ":\n"
                                                   << r.out.substr(r.out.size() - 2000);
    EXPECT_NE(r.out.find("file=libsqlite3"), std::string::npos) << cmd;  // LD_DEBUG works
    EXPECT_EQ(r.out.find("file=libtorch"), std::string::npos) << cmd << " loaded libtorch";
    EXPECT_EQ(r.out.find("file=libc10"), std::string::npos) << cmd << " loaded libc10";
  }
  auto r = ts(show);
  EXPECT_NE(r.out.find("epochs: 2"), std::string::npos) << r.out;
  r = ts("config keys");
  EXPECT_NE(r.out.find("fingerprint.every_steps"), std::string::npos) << "a unit's key: " << r.out;
  r = ts(no_code);
  EXPECT_NE(r.out.find("no-such-code: no such file or folder"), std::string::npos) << r.out;
#ifdef TS_WITH_TORCH
  r = run_command("LD_DEBUG=files " + std::string(TS_CLI_BIN) + " --store " +
                  shell_quote("sqlite:" + (dir_ / "t.db").string()) + " train " + shell_quote(cfg) +
                  " --no-progress");
  EXPECT_EQ(r.exit_code, 0) << r.out.substr(r.out.size() - 2000);
  EXPECT_NE(r.out.find("file=libtorch_cpu.so"), std::string::npos) << "training needs libtorch";
#endif
}

TEST_F(CliTest, ListShowByNameAndPrefix) {
  std::string uuid = make_run("first");
  auto list = ts("runs list");
  ASSERT_EQ(list.exit_code, 0) << list.out;
  EXPECT_NE(list.out.find(uuid.substr(0, 8)), std::string::npos);
  EXPECT_NE(list.out.find("finished"), std::string::npos);

  auto show = ts("runs show first");
  ASSERT_EQ(show.exit_code, 0) << show.out;
  EXPECT_NE(show.out.find(uuid), std::string::npos);
  EXPECT_NE(show.out.find("x/f32.rx_1mx"), std::string::npos);
  auto by_prefix = ts("runs show " + uuid.substr(0, 6));
  EXPECT_EQ(by_prefix.exit_code, 0) << by_prefix.out;

  auto json = ts("--json runs list");
  ASSERT_EQ(json.exit_code, 0);
  auto arr = nlohmann::json::parse(json.out);
  ASSERT_EQ(arr.size(), 1u);
  EXPECT_EQ(arr[0]["uuid"], uuid);
  EXPECT_EQ(arr[0]["status"], "finished");

  auto filtered = ts("--json runs list --status running");
  EXPECT_EQ(nlohmann::json::parse(filtered.out).size(), 0u);
  make_run("second");
  EXPECT_EQ(nlohmann::json::parse(ts("--json runs list --limit 1").out).size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(ts("--json runs list --experiment numerics").out).size(), 2u);
}

TEST_F(CliTest, ExportAndMetricsMatchTheStore) {
  std::string uuid = make_run("exp");
  auto pts = store()->metric(uuid, "x/f64.rx_1mx");
  ASSERT_EQ(pts.size(), 51u);

  auto csv = ts("metrics exp x/f64.rx_1mx --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.out;
  std::istringstream lines(csv.out);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "step,wall_time,value");
  size_t n = 0;
  while (std::getline(lines, line)) {
    auto last = line.rfind(',');
    ASSERT_EQ(std::stod(line.substr(last + 1)), pts[n].value) << line;  // exact round trip
    ++n;
  }
  EXPECT_EQ(n, pts.size());

  auto out = dir_ / "run.json";
  auto ex = ts("runs export exp --format json --out " + shell_quote(out.string()));
  ASSERT_EQ(ex.exit_code, 0) << ex.out;
  std::ifstream in(out);
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["uuid"], uuid);
  EXPECT_EQ(j["params"]["r"], "3.7");
  EXPECT_EQ(j["metrics"]["x/f64.rx_1mx"].size(), 51u);
  EXPECT_EQ(j["metrics"]["x/f64.rx_1mx"][50]["value"].get<double>(), pts[50].value);

  auto ecsv = ts("runs export exp --format csv");
  EXPECT_NE(ecsv.out.find("key,step,wall_time,value\n"), std::string::npos);
  EXPECT_NE(ecsv.out.find("x/f32.rx_1mx,0,"), std::string::npos);
}

// Issue 51: `plot` ignored --json and wrote SVG. It writes its curves as
// JSON now; a command with no JSON output refuses --json rather than ignore
// it, before it runs (watch records no run).
TEST_F(CliTest, JsonIsWrittenWhereAskedAndRefusedWhereACommandHasNone) {
  const std::string uuid = make_run("plotted");
  for (const std::string how :
       {"--json plot plotted x/f64.rx_1mx", "plot plotted x/f64.rx_1mx -f json"}) {
    auto r = ts(how);
    ASSERT_EQ(r.exit_code, 0) << how << r.out;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["x"], "step");
    ASSERT_EQ(j["curves"].size(), 1u);
    EXPECT_EQ(j["curves"][0]["run"], uuid);
    EXPECT_EQ(j["curves"][0]["key"], "x/f64.rx_1mx");
    EXPECT_EQ(j["curves"][0]["x"].size(), 51u);
    EXPECT_EQ(j["curves"][0]["value"][50].get<double>(),
              store()->metric(uuid, "x/f64.rx_1mx")[50].value);
  }
  for (const std::string how : {"--json card plotted", "card plotted --json", "--json config keys",
                                "--json completion bash", "--json watch --name w -- true"}) {
    auto r = ts(how);
    EXPECT_EQ(r.exit_code, 2) << how << r.out;
    EXPECT_NE(r.out.find("writes no JSON output"), std::string::npos) << how << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  }
  for (const auto& r : store()->list_runs({})) EXPECT_NE(r.name, "w");  // watch ran nothing
  // report throughput's JSON holds numbers and nulls, not its table's
  // strings ("71.16", "-": the sixteenth hunt's note).
  store()->append_metrics(uuid, {{"steps_per_s", {{1, 0, 71.5}}}});
  auto tp = ts("report throughput plotted -f json");
  ASSERT_EQ(tp.exit_code, 0) << tp.out;
  const auto row = nlohmann::json::parse(tp.out).at(0);
  EXPECT_EQ(row["run"], uuid);
  EXPECT_EQ(row["name"], "plotted");
  EXPECT_TRUE(row["batch size"].is_null()) << row;
  EXPECT_TRUE(row["test accuracy"].is_null()) << row;
  EXPECT_EQ(row["target missed"], false);
  EXPECT_EQ(row["steps/s"], 71.5);
}

TEST_F(CliTest, OddKeysAndNonFiniteValuesAreEscaped) {
  std::string uuid;
  {
    auto s = store();
    RunInfo r = s->create_run({});
    uuid = r.uuid;
    s->set_param(uuid, "we,ird\nkey", "va\"lue");
    s->append_metrics(r.uuid, {{"lo,ss\n", {{0, 1, std::nan("")}, {1, 2, -1.0 / 0.0}}}});
    s->set_status(uuid, RunStatus::kFinished);
  }
  auto show = ts("runs show " + uuid);
  ASSERT_EQ(show.exit_code, 0) << show.out;
  EXPECT_NE(show.out.find("we,ird\\nkey"), std::string::npos) << show.out;
  auto csv = ts("runs export " + uuid + " --format csv");
  // A line break is shown escaped, as in every reader (thirteenth hunt,
  // A-D3); the comma still quotes the field.
  EXPECT_NE(csv.out.find("\"lo,ss\\n\",0,1,nan\n"), std::string::npos) << csv.out;
  EXPECT_NE(csv.out.find(",-inf\n"), std::string::npos) << csv.out;
  // The list of a run's metrics is CSV too when asked (fourteenth hunt, D1:
  // it was the table).
  auto keys = ts("metrics " + uuid + " -f csv");
  ASSERT_EQ(keys.exit_code, 0) << keys.out;
  EXPECT_EQ(keys.out,
            "key,count,last_step,last,min,max\n\"lo,ss\\n\",2,1,-inf,nan,nan\n");  // NaN spreads to
                                                                                   // min and max
  auto json = ts("runs export " + uuid + " --format json");
  auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["metrics"]["lo,ss\n"][0]["value"], "nan");
  EXPECT_EQ(j["params"]["we,ird\nkey"], "va\"lue");
}

// Reliability defect 4: a run name with invalid UTF-8 broke `--json runs
// list` and JSON export for the whole store. Invalid bytes become U+FFFD.
TEST_F(CliTest, InvalidUtf8InANameKeepsJsonValid) {
  std::string good = make_run("plain");
  std::string bad_uuid;
  {
    auto s = store();
    NewRun n;
    n.name = "caf\xe9-\xff";  // Latin-1 bytes
    RunInfo r = s->create_run(n);
    bad_uuid = r.uuid;
    s->set_tag(r.uuid, "note", "\xc3(");  // a broken two-byte sequence
    s->set_status(r.uuid, RunStatus::kFinished);
  }
  auto list = ts("--json runs list");
  ASSERT_EQ(list.exit_code, 0) << list.out;
  auto j = nlohmann::json::parse(list.out);
  ASSERT_EQ(j.size(), 2u);
  std::string names = j.dump();
  EXPECT_NE(names.find("caf\xef\xbf\xbd-\xef\xbf\xbd"), std::string::npos) << names;
  auto exported = ts("runs export " + bad_uuid + " --format json");
  ASSERT_EQ(exported.exit_code, 0) << exported.out;
  EXPECT_TRUE(nlohmann::json::parse(exported.out).is_object());
  auto other = ts("runs export " + good + " --format json");
  EXPECT_EQ(other.exit_code, 0) << other.out;
}

// Reliability defect 12: argument errors exited with the parser's own codes
// (104-109) and a mistyped command was not named.
TEST_F(CliTest, ExitCodesFollowTheDocumentedPolicy) {
  auto typo = ts("trian configs/demo.yaml");
  EXPECT_EQ(typo.exit_code, 2) << typo.out;
  EXPECT_NE(typo.out.find("unknown command 'trian' (did you mean 'train'?)"), std::string::npos)
      << typo.out;
  EXPECT_EQ(ts("runs list --limit abc").exit_code, 2);
  EXPECT_EQ(ts("runs list --bogus").exit_code, 2);
  EXPECT_EQ(ts("runs").exit_code, 2);  // a subcommand is required
  EXPECT_EQ(ts("runs show no-such-run").exit_code, 3);
  auto every = ts("profile configs/demo.yaml --every -1");  // defect 11: was accepted
  EXPECT_EQ(every.exit_code, 2) << every.out;
  EXPECT_NE(every.out.find("--every"), std::string::npos) << every.out;
  EXPECT_EQ(ts("profile configs/demo.yaml --steps -3").exit_code, 2);
  auto help = ts("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("Exit codes: 0 success"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("Example:"), std::string::npos) << help.out;
}

// Everyday use, round 2: `--help` lists the commands by task, every one in
// a group (a new command left out of help.cc's table would show under
// "Other"), and `trainscope` alone says where to start instead of failing.
TEST_F(CliTest, HelpGroupsTheCommandsByTaskAndNoArgumentsShowWhereToStart) {
  auto start = run_command(std::string(TS_CLI_BIN));
  EXPECT_EQ(start.exit_code, 0) << start.out;
  for (const char* line : {"trainscope train configs/demo.yaml", "trainscope runs list",
                           "trainscope serve", "`trainscope --help` lists every command by task"})
    EXPECT_NE(start.out.find(line), std::string::npos) << start.out;
  auto help = ts("--help");
  ASSERT_EQ(help.exit_code, 0);
  size_t at = 0;
  for (const char* group : {"\nTrain:\n", "\nInspect runs:\n", "\nCompare and explain:\n",
                            "\nMeasure speed and numerics:\n", "\nStudies (many trainings):\n",
                            "\nStores and the dashboard:\n", "\nShell:\n"}) {
    const size_t found = help.out.find(group, at);
    ASSERT_NE(found, std::string::npos) << group << " missing or out of order:\n" << help.out;
    at = found;
  }
  EXPECT_EQ(help.out.find("\nOther:\n"), std::string::npos) << help.out;
  EXPECT_EQ(help.out.find("\nSubcommands:\n"), std::string::npos) << help.out;
  // Each command once: "  NAME  description" rows between the groups and the example.
  const std::string list = help.out.substr(
      help.out.find("\nTrain:\n"), help.out.find("\nExample:") - help.out.find("\nTrain:\n"));
  for (const char* name : {"train", "runs", "diff", "stats", "study", "serve", "watch", "plot"}) {
    const std::string row = std::string("\n  ") + name + " ";
    const size_t first = list.find(row);
    EXPECT_NE(first, std::string::npos) << name;
    EXPECT_EQ(list.find(row, first + 1), std::string::npos) << name << " listed twice";
  }
}

// Everyday use, round 2: `stats --by` groups by anything the filter
// language names (a tag, the experiment, a run attribute), not only by a
// param, and a bare key is still a param.
TEST_F(CliTest, StatsGroupsByTagsExperimentsAndAttributes) {
  std::vector<std::string> runs;
  for (const char* name : {"a", "b", "c", "d"}) runs.push_back(make_run(name));
  store()->set_tag(runs[0], "team", "red");
  store()->set_tag(runs[1], "team", "blue");
  // Twenty-second hunt, A-D3: a run whose value is the text "(unset)" was
  // one group with the run that has no such tag.
  store()->set_tag(runs[3], "team", "(unset)");
  auto groups = [&](const std::string& by) {
    auto r = ts("--json stats lyapunov --by " + by);
    EXPECT_EQ(r.exit_code, 0) << by << ": " << r.out;
    const auto parsed = nlohmann::json::parse(r.out);
    std::map<std::string, int64_t> out;
    for (const auto& g : parsed.at("groups"))  // null: the runs that lack the field
      out[g.at("group").is_null() ? "null" : g.at("group").get<std::string>()] =
          g.at("n").get<int64_t>();
    return out;
  };
  using Groups = std::map<std::string, int64_t>;
  EXPECT_EQ(groups("tags.team"), (Groups{{"null", 1}, {"(unset)", 1}, {"blue", 1}, {"red", 1}}));
  EXPECT_EQ(groups("experiment"), (Groups{{"numerics", 4}}));
  EXPECT_EQ(groups("status"), (Groups{{"finished", 4}}));
  EXPECT_EQ(groups("r"), (Groups{{"3.7", 4}}));  // a bare key: the param
  EXPECT_EQ(groups("params.steps"), (Groups{{"50", 4}}));
  const auto table = ts("stats lyapunov --by tags.team -f csv");
  EXPECT_NE(table.out.find("\nlyapunov,,1,"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("\nlyapunov,(unset),1,"), std::string::npos) << table.out;
  auto metric = ts("stats lyapunov --by metrics.lyapunov");
  EXPECT_EQ(metric.exit_code, 2);
  EXPECT_NE(metric.out.find("a metric is what stats summarises"), std::string::npos) << metric.out;
}

// Reliability defect 10 (and everyday use 5): read commands opened the store
// read-write, so a store on read-only media could not be inspected.
TEST_F(CliTest, AStoreOnReadOnlyMediaCanBeRead) {
  auto mnt = dir_ / "ro";
  std::filesystem::create_directories(mnt);
  if (mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=16m") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno) << "); needs root";
  struct Unmount {
    std::string p;
    ~Unmount() { umount2(p.c_str(), MNT_DETACH); }
  } unmount{mnt.string()};
  std::string at = std::string(TS_CLI_BIN) + " --store sqlite:" + (mnt / "s.db").string() + " ";
  ASSERT_EQ(run_command(at + "numerics logmap --steps 50 --name lm").exit_code, 0);
  ASSERT_EQ(mount(nullptr, mnt.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr), 0)
      << std::strerror(errno);
  for (const char* read : {"runs list", "--json runs list", "runs show lm",
                           "runs export lm --format json", "checklist lm"}) {
    auto r = run_command(at + read);
    EXPECT_EQ(r.exit_code, 0) << read << ": " << r.out;
  }
  auto del = run_command(at + "runs delete lm --yes");
  EXPECT_EQ(del.exit_code, 5) << del.out;  // a store error, named
  EXPECT_NE(del.out.find("not writable"), std::string::npos) << del.out;
}

// Reading a store never marks another process's run killed (only a writer's
// open reaps stale runs).
TEST_F(CliTest, ReadingDoesNotReapOtherRuns) {
  std::string uuid;
  {
    auto s = store();
    uuid = s->create_run({}).uuid;  // running, written by this process
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "t.db").c_str(), &db), SQLITE_OK);
  // Long silent, on another host (a live process of this host is never reaped).
  sqlite3_exec(db, "UPDATE runs SET heartbeat = 1, host = 'other-host'", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  auto list = ts("--json runs list");
  ASSERT_EQ(list.exit_code, 0) << list.out;
  EXPECT_EQ(nlohmann::json::parse(list.out)[0]["status"], "stale");  // shown, not changed
  {
    auto reader = Store::open({.uri = "sqlite:" + (dir_ / "t.db").string(), .read_only = true});
    EXPECT_EQ(reader->find_run(uuid)->status, RunStatus::kRunning);
  }
  make_run("writer");  // a writer's open reaps it
  EXPECT_EQ(store()->find_run(uuid)->status, RunStatus::kKilled);
}

// Issue 29, item 4: readers never write. A crash leaves a run "running";
// on a store file made read-only, `runs list` (table, CSV, JSON), `runs
// show` and `runs export` show it stale with its last heartbeat, and the
// file is not changed by a byte. (`study status` reaped on a read-only open
// and exited 5 with SQL text.) A writer's open then marks it killed.
TEST_F(CliTest, ReadersShowACrashedRunStaleAndChangeNothing) {
  make_run("done");
  const std::string db = (dir_ / "t.db").string();
  pid_t pid = fork();
  if (pid == 0) {
    execl(TS_CLI_BIN, TS_CLI_BIN, "-q", "--store", ("sqlite:" + db).c_str(), "watch", "--name",
          "crashed", "--", "sleep", "5", static_cast<char*>(nullptr));
    _exit(127);
  }
  bool recorded = false;
  for (int i = 0; i < 1000 && !recorded; ++i) {
    usleep(10 * 1000);
    recorded = !store()->list_runs({.name = "crashed"}).empty();
  }
  ASSERT_TRUE(recorded) << "watch recorded no run in 10 s";
  ASSERT_EQ(kill(pid, SIGKILL), 0);  // the crash
  waitpid(pid, nullptr, 0);
  auto files = [&] {
    std::string all;
    for (const char* f : {"t.db", "t.db-wal"})
      // A WAL file SQLite removes when empty is no change.
      if (std::filesystem::exists(dir_ / f) && std::filesystem::file_size(dir_ / f) > 0)
        all += core::sha256_file(dir_ / f);
    return all;
  };
  std::filesystem::permissions(dir_ / "t.db",
                               std::filesystem::perms::owner_write |
                                   std::filesystem::perms::group_write |
                                   std::filesystem::perms::others_write,
                               std::filesystem::perm_options::remove);
  const std::string before = files();
  auto list = ts("runs list");
  ASSERT_EQ(list.exit_code, 0) << list.out;
  EXPECT_NE(list.out.find("stale"), std::string::npos) << list.out;
  auto json = ts("--json runs list");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  auto runs = nlohmann::json::parse(json.out);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0]["name"], "crashed");
  EXPECT_EQ(runs[0]["status"], "stale");
  EXPECT_NE(runs[0]["stale"].get<std::string>().find("no heartbeat since"), std::string::npos);
  EXPECT_EQ(runs[1]["status"], "finished");
  auto csv = ts("runs list --format csv --columns name,status");
  EXPECT_NE(csv.out.find("crashed,stale\n"), std::string::npos) << csv.out;
  auto cols = ts("--json runs list --columns name,status");
  EXPECT_EQ(nlohmann::json::parse(cols.out)["runs"][0]["status"], "stale") << cols.out;
  auto show = ts("runs show crashed");
  ASSERT_EQ(show.exit_code, 0) << show.out;
  EXPECT_NE(show.out.find("status      stale (recorded as running; no heartbeat since"),
            std::string::npos)
      << show.out;
  EXPECT_EQ(nlohmann::json::parse(ts("--json runs show crashed").out)["status"], "stale");
  auto exported = ts("runs export crashed --format json");
  EXPECT_EQ(nlohmann::json::parse(exported.out)["status"], "stale") << exported.out;
  EXPECT_EQ(files(), before) << "a reader changed the store";
  std::filesystem::permissions(dir_ / "t.db", std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::add);
  EXPECT_EQ(store()->resolve_run("crashed").status, RunStatus::kKilled);  // a writer's open
}

// Issue 29, item 7: a script naming its runs `a` and `b` failed 1 time in
// 3 once another run's UUID started with those letters. An exact name wins
// over a UUID prefix (a one-line note says how to name the other run),
// prefixes are read in any case, and a run named twice on one command line
// counts once (`runs export A A`, `plot A A KEY`, `stats KEY A A`).
TEST_F(CliTest, ReferencesMeanWhatTheUserMeant) {
  {
    auto s = store();
    bool a = false, b = false;
    while (!a || !b) {
      auto r = s->create_run({});
      s->set_status(r.uuid, RunStatus::kFinished);
      a |= r.uuid[0] == 'a';
      b |= r.uuid[0] == 'b';
    }
  }
  const std::string ua = make_run("a"), ub = make_run("b");
  auto show = ts("--json runs show a");
  ASSERT_EQ(show.exit_code, 0) << show.out;
  EXPECT_NE(show.out.find("note: 'a' is the name of run " + ua.substr(0, 8)), std::string::npos)
      << show.out;
  EXPECT_EQ(nlohmann::json::parse(show.out.substr(show.out.find('{')))["uuid"], ua);
  EXPECT_EQ(ts("-q runs show b").exit_code, 0);
  std::string upper = ub.substr(0, 8);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto by_upper = ts("--json runs show " + upper);
  ASSERT_EQ(by_upper.exit_code, 0) << by_upper.out;
  EXPECT_EQ(nlohmann::json::parse(by_upper.out)["uuid"], ub);
  for (const std::string cmd :
       {"-q runs export {} --format csv", "-q plot {} lyapunov --format csv",
        "-q --json stats lyapunov {}"}) {
    auto once = ts(fmt::format(fmt::runtime(cmd), "a b"));
    auto twice = ts(fmt::format(fmt::runtime(cmd), "a b a " + ub + " b"));
    ASSERT_EQ(once.exit_code, 0) << cmd << ": " << once.out;
    EXPECT_EQ(twice.exit_code, 0) << cmd << ": " << twice.out;
    EXPECT_EQ(twice.out, once.out) << cmd;
  }
  EXPECT_EQ(ts("-q runs export a a --format csv").out, ts("-q runs export a --format csv").out);
}

// Issue 29, item 6: `plot -o DIR`, `runs export -o DIR` and `card -o DIR`
// printed "cannot create 'DIR': Success" and exited 1. Every command that
// writes a file checks its path the same way: a folder, a missing folder, a
// file where a folder belongs, a read-only place: exit 2, one line naming
// the path and what to do, nothing written.
TEST_F(CliTest, EveryOutputPathIsCheckedTheSameWay) {
  make_run("lm");
  std::filesystem::create_directories(dir_ / "folder");
  std::ofstream(dir_ / "file.txt") << "x";
  const std::string d = dir_.path().string();
  struct Bad {
    std::string path, says;
  };
  std::vector<Bad> bad = {
      {d + "/folder", "it is a folder; give a file name in it"},
      {d + "/no/such/out.svg", "folder '" + d + "/no/such' does not exist; create it first"},
      {d + "/file.txt/out.svg", "'" + d + "/file.txt' is not a folder"},
  };
  const auto ro = dir_ / "ro";
  std::filesystem::create_directories(ro);
  const bool mounted = mount("tmpfs", ro.c_str(), "tmpfs", MS_RDONLY, "size=64k") == 0;
  if (mounted) bad.push_back({ro.string() + "/out.svg", "may not be written in (Read-only"});
  for (const std::string cmd :
       {"plot lm lyapunov -o {}", "runs export lm -o {}", "card lm -o {}", "stats lyapunov -o {}",
        "probes lm -o {}", "profile show lm --svg {}", "profile show lm --trace {}"}) {
    for (const auto& b : bad) {
      auto r = ts(fmt::format(fmt::runtime(cmd), shell_quote(b.path)));
      EXPECT_EQ(r.exit_code, 2) << cmd << " " << b.path << ": " << r.out;
      EXPECT_NE(r.out.find("cannot write '" + b.path + "': "), std::string::npos) << r.out;
      EXPECT_NE(r.out.find(b.says), std::string::npos) << cmd << ": " << r.out;
      EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    }
  }
  // An output folder: a file where it belongs, or a read-only place.
  auto logmap = ts("numerics logmap --steps 5 --out " + d + "/file.txt");
  EXPECT_EQ(logmap.exit_code, 2) << logmap.out;
  EXPECT_NE(logmap.out.find("it is a file, not a folder"), std::string::npos) << logmap.out;
  if (mounted) {
    auto in_ro = ts("numerics logmap --steps 5 --out " + ro.string() + "/plots");
    EXPECT_EQ(in_ro.exit_code, 2) << in_ro.out;
    umount2(ro.c_str(), MNT_DETACH);
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "no"));
  EXPECT_TRUE(std::filesystem::is_empty(dir_ / "folder"));
  // What works still works: a new file, stdout, a FIFO (written in place,
  // not replaced by a file).
  EXPECT_EQ(ts("plot lm lyapunov -o " + d + "/folder/p.svg").exit_code, 0);
  EXPECT_TRUE(std::filesystem::exists(dir_ / "folder/p.svg"));
  EXPECT_EQ(ts("runs export lm -o -").exit_code, 0);
  ASSERT_EQ(mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  auto fifo = run_command("cat " + shell_quote(d + "/fifo") + " > " + shell_quote(d + "/got.md") +
                          " & " + TS_CLI_BIN + " --store sqlite:" + shell_quote(d + "/t.db") +
                          " card lm -o " + shell_quote(d + "/fifo") + "; wait");
  EXPECT_EQ(fifo.exit_code, 0) << fifo.out;
  EXPECT_TRUE(std::filesystem::is_fifo(dir_ / "fifo"));
  EXPECT_GT(std::filesystem::file_size(dir_ / "got.md"), 100u);
}

TEST_F(CliTest, DeleteNeedsYes) {
  std::string uuid = make_run("doomed");
  auto no = ts("runs delete doomed");
  EXPECT_NE(no.exit_code, 0);
  EXPECT_NE(no.out.find("--yes"), std::string::npos) << no.out;
  EXPECT_TRUE(store()->find_run(uuid).has_value());
  auto yes = ts("runs delete doomed --yes");
  EXPECT_EQ(yes.exit_code, 0) << yes.out;
  EXPECT_FALSE(store()->find_run(uuid).has_value());
}

// Issue 29, item 11: `runs delete` of a study's parent run orphaned its
// children silently. It is refused (exit 4, how many, which flag) unless
// --with-children or --keep-children says what becomes of them.
TEST_F(CliTest, DeletingAStudysParentSaysWhatBecomesOfItsChildren) {
  std::vector<std::string> kids;
  {
    auto s = store();
    for (const char* name : {"seeds", "other"}) {
      auto parent = s->create_run({.experiment = name, .name = name});
      s->set_tag(parent.uuid, "kind", "study");
      s->set_status(parent.uuid, RunStatus::kFinished);
      for (int i = 0; i < 3; ++i) {
        auto k = s->create_run({.experiment = name,
                                .name = std::string(name) + "/r" + std::to_string(i),
                                .parent_uuid = parent.uuid});
        s->set_status(k.uuid, RunStatus::kFinished);
        kids.push_back(k.uuid);
      }
    }
  }
  auto refused = ts("runs delete seeds --yes");
  EXPECT_EQ(refused.exit_code, 4) << refused.out;
  EXPECT_NE(refused.out.find("has 3 child runs (a study's trainings); deleting it alone would "
                             "orphan them: add --with-children"),
            std::string::npos)
      << refused.out;
  EXPECT_EQ(std::count(refused.out.begin(), refused.out.end(), '\n'), 1) << refused.out;
  EXPECT_EQ(store()->list_runs().size(), 8u);
  auto both = ts("runs delete seeds --yes --with-children --keep-children");
  EXPECT_EQ(both.exit_code, 2) << both.out;
  auto keep = ts("runs delete seeds --yes --keep-children");
  ASSERT_EQ(keep.exit_code, 0) << keep.out;
  EXPECT_NE(keep.out.find("its 3 child run(s) are kept, detached"), std::string::npos) << keep.out;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(store()->find_run(kids[i])->parent_uuid, "");
  // Eighteenth hunt, 18B-D5: every run below it goes, and is counted.
  store()->create_run({.experiment = "other", .name = "other/r0/x", .parent_uuid = kids[3]});
  auto all = ts("runs delete other --yes --with-children");
  ASSERT_EQ(all.exit_code, 0) << all.out;
  EXPECT_NE(all.out.find("and the 4 run(s) below it: its 3 child run(s) and theirs"),
            std::string::npos)
      << all.out;
  auto left = store()->list_runs();
  ASSERT_EQ(left.size(), 3u);
  for (const auto& r : left) EXPECT_TRUE(r.name.starts_with("seeds/")) << r.name;
}

TEST_F(CliTest, BadInputGivesOneLineAndNonZeroExit) {
  make_run("same");
  make_run("same");
  auto check = [](const CommandResult& r, const std::string& needle) {
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find(needle), std::string::npos) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  };
  check(ts("runs show same"), "ambiguous");
  check(ts("runs show nothing-like-this"), "no run matches");
  check(ts("metrics same x"), "ambiguous");
  check(ts("runs list --status sleeping"), "unknown run status");
  check(ts("numerics logmap --r 4.5"), "outside (0, 4]");
  check(ts("numerics logmap --x0 -1"), "outside [0, 1]");
  std::ofstream(dir_ / "junk.db") << "not a database at all, just text";
  check(run_command(std::string(TS_CLI_BIN) + " --store " + (dir_ / "junk.db").string() +
                    " runs list"),
        "not a SQLite database");
  check(run_command(std::string(TS_CLI_BIN) + " --store /proc/version/x.db runs list"),
        "does not exist");  // a reader says so; a writer cannot create it:
  check(run_command(std::string(TS_CLI_BIN) + " --store /proc/version/x.db runs delete x --yes"),
        "cannot create store");
  // The env variable names the store too.
  auto env = run_command("TRAINSCOPE_STORE=sqlite:" + (dir_ / "t.db").string() + " " + TS_CLI_BIN +
                         " --json runs list --limit 0");
  EXPECT_EQ(nlohmann::json::parse(env.out).size(), 2u);
}

// The third hunt's second tester (D1, D2): a name written into a shared
// store past the rules, holding a title-setting OSC and a clear-screen CSI,
// reached the terminal raw in the notes of `stats --by name` and as a
// column of `report throughput` (text and Markdown). Every command that
// prints a stored string shows it escaped; a log line or an error escapes
// what it holds too (core::terminal_text).
TEST_F(CliTest, AStoredNameWithTerminalEscapesIsShownEscapedEverywhere) {
  const std::string evil = "e\x1b]0;pwned\x07\x1b[2J";
  const std::string a = make_run("plain"), b = make_run("other");
  {
    auto s = store();
    s->set_tag(a, "energy.cpu.source", evil);
    s->append_metrics(a, {{"energy/total_kwh", {{1, 0, 1e-6}}}});
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "t.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "UPDATE runs SET name = ?1, host = ?1 WHERE uuid = ?2", -1, &st,
                               nullptr),
            SQLITE_OK);
  sqlite3_bind_text(st, 1, evil.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, a.c_str(), -1, SQLITE_TRANSIENT);
  EXPECT_EQ(sqlite3_step(st), SQLITE_DONE);
  sqlite3_finalize(st);
  sqlite3_close(db);
  const std::string shown = "e\\x1b]0;pwned\\x07\\x1b[2J";
  const std::vector<std::string> commands = {"stats lyapunov --by name",
                                             "report throughput " + a + " " + b,
                                             "report throughput " + a + " " + b + " -f md",
                                             "runs show " + a,
                                             "runs list",
                                             "checklist " + a};
  for (const auto& args : commands) {
    auto r = ts(args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.out;
    EXPECT_EQ(r.out.find_first_of("\x1b\x07"), std::string::npos) << args << ": " << r.out;
    if (args.find("-f md") == std::string::npos) {
      EXPECT_NE(r.out.find(shown), std::string::npos) << args << ": " << r.out;
    }
  }
  auto stats = ts("stats lyapunov --by name");
  EXPECT_NE(stats.out.find("note: " + shown + ": one run, no spread"), std::string::npos)
      << stats.out;
  auto md = ts("report throughput " + a + " " + b + " -f md");
  EXPECT_NE(md.out.find("| metric | e\\\\x1b\\]0;pwned"), std::string::npos) << md.out;
  EXPECT_EQ(core::terminal_text("run " + evil + " a\\b\n\tc\r\xc2\x9b"),
            "run " + shown + " a\\b\n\tc\\r\\u009b");
  // A byte that is not UTF-8 is shown, never written raw (a reader that
  // decodes stderr as UTF-8 failed on it); UTF-8 text passes unchanged.
  EXPECT_EQ(core::terminal_text("e\xff caf\xc3\xa9 \xc3"), "e\\xff caf\xc3\xa9 \\xc3");
}

// The third hunt (D13): a closed terminal (SIGHUP) killed `watch` and left
// its program running and its run "running" (stale). The hang-up is
// passed on to the program, as Ctrl-C and SIGTERM are, and the run ends
// with the program. CI (ASan) once sent it after the program had started
// but before watch had its handler: watch died of it. So the hang-up comes
// both while the program runs and as soon as the run is recorded, when
// the program may not have started yet.
TEST_F(CliTest, AHungUpWatchStopsItsProgramAndEndsItsRun) {
  for (const bool program_started : {true, false}) {
    SCOPED_TRACE(program_started ? "while the program runs" : "as soon as the run is recorded");
    const std::string db = (dir_ / (program_started ? "t.db" : "early.db")).string();
    pid_t pid = fork();
    if (pid == 0) {
      execl(TS_CLI_BIN, TS_CLI_BIN, "-q", "--store", ("sqlite:" + db).c_str(), "watch", "--name",
            "hup", "--", "sleep", "37.25", static_cast<char*>(nullptr));
      _exit(127);
    }
    auto store = Store::open({.uri = "sqlite:" + db});
    bool recorded = false;
    for (int i = 0; i < 2000 && !recorded; ++i) {
      usleep(5 * 1000);
      recorded = !store->list_runs({.name = "hup"}).empty();
    }
    ASSERT_TRUE(recorded) << "watch recorded no run in 10 s";
    for (int i = 0; program_started && i < 1000; ++i) {
      if (run_command("pgrep -xf 'sleep 37.25'").exit_code == 0) break;
      usleep(10 * 1000);  // until the program runs
    }
    ASSERT_EQ(kill(pid, SIGHUP), 0);
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status)) << "watch died of the hang-up itself";
    const auto run = store->resolve_run("hup");
    EXPECT_EQ(run.status, RunStatus::kStopped);
    EXPECT_NE(run.end_time, 0);
    EXPECT_NE(run_command("pgrep -xf 'sleep 37.25'").exit_code, 0) << "the program was orphaned";
  }
}

// Issue 51, tenth hunt (D9): watch killed by SIGKILL (no handler sees it)
// left what its program started running, re-parented to init: its program
// (bash) got SIGTERM, the training bash ran (sleep) did not. Under watch's
// keeper, the whole tree ends with watch.
TEST_F(CliTest, NothingOfAProgramOutlivesAWatchKilledBySigkill) {
  const std::string db = (dir_ / "k.db").string();
  pid_t pid = fork();
  if (pid == 0) {
    execl(TS_CLI_BIN, TS_CLI_BIN, "-q", "--store", ("sqlite:" + db).c_str(), "watch", "--", "bash",
          "-c", "trap '' TERM; sleep 38.75; true", static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 1000 && run_command("pgrep -xf 'sleep 38.75'").exit_code != 0; ++i)
    usleep(10 * 1000);  // until the program's child runs
  ASSERT_EQ(run_command("pgrep -xf 'sleep 38.75'").exit_code, 0) << "the program never ran";
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  waitpid(pid, nullptr, 0);
  // bash ignores SIGTERM (the trap), so it and its sleep last until the
  // keeper's SIGKILL, 5 s after its SIGTERM.
  bool gone = false;
  for (int i = 0; i < 1500 && !gone; ++i) {
    usleep(10 * 1000);
    gone = run_command("pgrep -xf 'sleep 38.75'").exit_code != 0;
  }
  EXPECT_TRUE(gone) << run_command("ps -eo pid,ppid,stat,args | grep -e 38.75").out;
  run_command("pkill -xf 'sleep 38.75'");
}

// Twenty-seventh hunt, B-D2: a SIGKILL to watch's keeper (the OOM killer
// may pick it) was recorded as the program killed by SIGKILL, and the
// still-running program warned of as a process it left behind. The program
// gets SIGTERM from its keeper's death: that is what is recorded.
TEST_F(CliTest, AKilledKeeperIsSaidAndTheProgramsOwnEndRecorded) {
  const std::string db = (dir_ / "kk.db").string();
  pid_t pid = fork();
  if (pid == 0) {
    execl(TS_CLI_BIN, TS_CLI_BIN, "-q", "--store", ("sqlite:" + db).c_str(), "watch", "--name",
          "kk", "--", "sh", "-c", "sleep 41.25; true", static_cast<char*>(nullptr));
    _exit(127);
  }
  const std::string keeper = "pgrep -P " + std::to_string(pid) + " -x trainscope-keep";
  for (int i = 0; i < 1000 && run_command("pgrep -xf 'sleep 41.25'").exit_code != 0; ++i)
    usleep(10 * 1000);  // until the program runs
  const auto found = run_command(keeper);
  ASSERT_EQ(found.exit_code, 0) << "no keeper below watch";
  ASSERT_EQ(kill(std::stoi(found.out), SIGKILL), 0);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 143);  // the program's SIGTERM, not the keeper's SIGKILL
  auto store = Store::open({.uri = "sqlite:" + db});
  const auto run = store->resolve_run("kk");
  EXPECT_EQ(run.status, RunStatus::kFailed);
  const auto tags = store->tags(run.uuid);
  EXPECT_EQ(tags.at("watch.keeper_killed"), "true");
  EXPECT_EQ(tags.at("killed_by_signal"), "15 (SIGTERM)");
  EXPECT_FALSE(tags.count("watch.left_behind"));
  EXPECT_NE(run_command("pgrep -xf 'sleep 41.25'").exit_code, 0) << "the program was orphaned";
  run_command("pkill -xf 'sleep 41.25'");
}

// Sixteenth hunt, 16B-D2: SIGTERM to watch whose program was stopped
// (SIGSTOP, Ctrl-Z) was passed on, but a stopped process cannot act on it:
// watch waited for good and the run stayed running. SIGCONT follows it.
TEST_F(CliTest, AStopSignalReachesAStoppedProgram) {
  const std::string db = (dir_ / "st.db").string();
  pid_t pid = fork();
  if (pid == 0) {
    execl(TS_CLI_BIN, TS_CLI_BIN, "-q", "--store", ("sqlite:" + db).c_str(), "watch", "--name",
          "stopped", "--", "sh", "-c", "kill -STOP $$; sleep 39.5", static_cast<char*>(nullptr));
    _exit(127);
  }
  auto stopped = [] {
    return run_command("ps -eo stat,args | grep -e '^T.*kill -STOP' | grep -v grep").exit_code == 0;
  };
  for (int i = 0; i < 1000 && !stopped(); ++i) usleep(10 * 1000);
  ASSERT_TRUE(stopped()) << "the program never stopped itself";
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 1500 && done == 0; ++i) {
    usleep(10 * 1000);
    done = waitpid(pid, &status, WNOHANG);
  }
  if (done == 0) {
    run_command("pkill -CONT -f 'kill -STOP'");
    waitpid(pid, &status, 0);
  }
  ASSERT_EQ(done, pid) << "watch still waits on its stopped program";
  EXPECT_EQ(WEXITSTATUS(status), 143);
  // Twenty-eighth hunt, B-D4: the user stopped it, as Ctrl-C stops a
  // training: stopped, not failed.
  const auto run = Store::open({.uri = "sqlite:" + db})->resolve_run("stopped");
  EXPECT_EQ(run.status, RunStatus::kStopped);
}

#ifdef TS_WITH_TORCH
// Issue 29, item 3: a training paused with Ctrl-Z for 35 s was marked
// killed, `--resume` was accepted, and when the original went on two
// processes wrote one run (steps 99 and 100 twice). Now a training paused
// longer than the stale threshold (its heartbeat aged by an hour while it
// is stopped) is not reaped, its resume is refused with exit 4, and after
// SIGCONT it finishes with exactly one point per step.
TEST_F(CliTest, APausedTrainingIsNeverReapedAndItsResumeIsRefused) {
  std::ofstream(dir_ / "c.yaml") << "compute: {threads: 1}\n"
                                    "data: {dataset: synthetic, synthetic: {size: 2048}}\n"
                                    "model: {name: demo_cnn}\n"
                                    "train: {epochs: 2, batch_size: 16}\n"
                                    "checkpoint: {every_steps: 16}\n";
  const std::string store_uri = "sqlite:" + (dir_ / "t.db").string();
  const std::string config = (dir_ / "c.yaml").string();
  pid_t pid = fork();
  if (pid == 0) {
    execl(TS_CLI_BIN, TS_CLI_BIN, "-q", "--store", store_uri.c_str(), "train", config.c_str(),
          "--name", "paused", "--no-progress", static_cast<char*>(nullptr));
    _exit(127);
  }
  auto loss_points = [&] {
    try {
      auto s = Store::open({.uri = store_uri, .read_only = true});
      auto runs = s->list_runs({.name = "paused"});
      return runs.empty() ? size_t{0} : s->metric(runs[0].uuid, "train/loss").size();
    } catch (const std::exception&) {
      return size_t{0};  // not created yet
    }
  };
  for (int i = 0; i < 6000 && loss_points() < 40; ++i) usleep(10 * 1000);
  ASSERT_GE(loss_points(), 40u) << "the training recorded nothing in 60 s";
  ASSERT_TRUE(testing::stop_outside_a_write(pid, dir_ / "t.db",
                                            "UPDATE runs SET heartbeat = heartbeat - 3600"));
  auto resume = ts("train " + shell_quote(config) + " --resume paused --no-progress");
  EXPECT_EQ(resume.exit_code, 4) << resume.out;
  EXPECT_NE(resume.out.find("still running"), std::string::npos) << resume.out;
  EXPECT_NE(resume.out.find(std::to_string(pid)), std::string::npos) << resume.out;
  EXPECT_EQ(std::count(resume.out.begin(), resume.out.end(), '\n'), 1) << resume.out;
  auto run = store()->resolve_run("paused");  // a writer's open: still not reaped
  EXPECT_EQ(run.status, RunStatus::kRunning);
  EXPECT_EQ(run.pid, pid);
  ASSERT_EQ(kill(pid, SIGCONT), 0);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the training failed";
  auto s = store();
  EXPECT_EQ(s->find_run(run.uuid)->status, RunStatus::kFinished);
  auto loss = s->metric(run.uuid, "train/loss");
  std::set<int64_t> steps;
  for (const auto& p : loss) steps.insert(p.step);
  EXPECT_EQ(loss.size(), 256u);  // 2 epochs of 128 steps, one point each
  EXPECT_EQ(steps.size(), loss.size());
}

// The third hunt (D13): a closed terminal (SIGHUP) killed `train` at once:
// its run was left running (stale) with no final checkpoint. A hang-up
// stops it at a step, as Ctrl-C and SIGTERM do: checkpointed, "stopped".
TEST_F(CliTest, AHungUpTrainingStopsAtAStepWithItsCheckpoint) {
  std::ofstream(dir_ / "c.yaml") << "compute: {threads: 1}\n"
                                    "data: {dataset: synthetic, synthetic: {size: 2048}}\n"
                                    "model: {name: mlp}\n"
                                    "train: {epochs: 50, batch_size: 16}\n";
  const std::string store_uri = "sqlite:" + (dir_ / "t.db").string();
  const std::string config = (dir_ / "c.yaml").string();
  pid_t pid = fork();
  if (pid == 0) {
    execl(TS_CLI_BIN, TS_CLI_BIN, "-q", "--store", store_uri.c_str(), "train", config.c_str(),
          "--name", "hup", "--no-progress", static_cast<char*>(nullptr));
    _exit(127);
  }
  auto loss_points = [&] {
    try {
      auto s = Store::open({.uri = store_uri, .read_only = true});
      auto runs = s->list_runs({.name = "hup"});
      return runs.empty() ? size_t{0} : s->metric(runs[0].uuid, "train/loss").size();
    } catch (const std::exception&) {
      return size_t{0};  // not created yet
    }
  };
  for (int i = 0; i < 6000 && loss_points() < 10; ++i) usleep(10 * 1000);
  ASSERT_GE(loss_points(), 10u) << "the training recorded nothing in 60 s";
  ASSERT_EQ(kill(pid, SIGHUP), 0);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "train died of the hang-up itself";
  EXPECT_EQ(WEXITSTATUS(status), 1);  // "stopped by signal"
  auto s = store();
  const auto run = s->resolve_run("hup");
  EXPECT_EQ(run.status, RunStatus::kStopped);
  bool checkpoint = false;  // besides step 0's: the step it stopped at
  for (const auto& a : s->artifacts(run.uuid))
    checkpoint |= a.name.ends_with(".pt") && a.name != "checkpoints/step-000000000.pt";
  EXPECT_TRUE(checkpoint) << "no checkpoint of the step it stopped at";
}
#endif

}  // namespace
}  // namespace trainscope
