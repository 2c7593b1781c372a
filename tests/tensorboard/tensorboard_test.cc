// TensorBoard both ways, through the real executable on real SQLite stores:
// `runs export --format tfevents` read back by an independent decoder
// (python3-protobuf, tests/probes/decode_tfevents.py), `import tfevents` of
// those files and of files an independent writer made
// (tests/tensorboard/write_tfevents.py), damaged files refused whole, and
// (with libtorch) a real training out and back.
#include "trainscope/tensorboard/tensorboard.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "support/test_util.h"
#include "trainscope/core/util.h"
#include "trainscope/probes/records.h"
#include "trainscope/store/store.h"
#include "trainscope/tfevents/tfevents.h"

namespace trainscope {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::CommandResult;
using testing::run_command;
using testing::shell_quote;

uint64_t bits_of(double v) { return std::bit_cast<uint64_t>(v); }
uint64_t hex_bits(const json& j) { return std::stoull(j.get<std::string>(), nullptr, 16); }
double from_hex(const json& j) { return std::bit_cast<double>(hex_bits(j)); }

// What a value becomes as TensorBoard's simple_value, widened back.
double as_float32(double v) { return static_cast<double>(static_cast<float>(v)); }

// Equal bit for bit; any NaN equals any NaN (float32 keeps no payload).
bool same(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || bits_of(a) == bits_of(b);
}

std::vector<fs::path> event_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && tfevents::is_event_file(e.path())) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

class TensorBoardTest : public ::testing::Test {
 protected:
  std::string uri(const std::string& name = "t.db") const {
    return "sqlite:" + (dir_ / name).string();
  }
  CommandResult ts(const std::string& args, const std::string& db = "t.db") {
    return run_command(std::string(TS_CLI_BIN) + " --store " + shell_quote(uri(db)) + " " + args);
  }
  std::unique_ptr<store::Store> open(const std::string& db = "t.db") {
    return store::Store::open({.uri = uri(db)});
  }
  json decode(const fs::path& file) {
    const fs::path out = dir_ / "decoded.json";
    auto r = run_command("/usr/bin/python3 " TS_TFEVENTS_DECODER " " + shell_quote(file.string()) +
                         " " + shell_quote(out.string()));
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return json::parse(std::ifstream(out));
  }

  // Two runs named "rt" (so two folders) with values float32 cannot hold,
  // non-finite ones, a signed zero and subnormals, and probe histograms.
  void record_runs() {
    auto s = open();
    const double inf = std::numeric_limits<double>::infinity();
    const std::vector<double> odd = {0.1, 1e300, -1e300, 1e-310,  -0.0,      std::nan(""),
                                     inf, -inf,  M_PI,   1.0 / 3, 16777217.0};
    for (int k = 0; k < 2; ++k) {
      auto r = s->create_run({.experiment = "tb", .name = "rt"});
      std::vector<store::MetricPoint> loss, edge;
      for (int i = 0; i < 40; ++i)
        loss.push_back({i * 10, 1.7e9 + i * 0.123456789, std::exp(-0.07 * i) + k * 1e-9});
      for (size_t i = 0; i < odd.size(); ++i)
        edge.push_back({static_cast<int64_t>(i), 1.7e9 + 1000.5 + i, odd[i]});
      s->append_metrics(r.uuid, {{"train/loss", loss}, {"edge", edge}});
      std::vector<store::Record> hist;
      for (int step : {0, 10, 20}) {
        probes::Histogram h{-1.0 - step, 2.0, {1, 4, 0, step + 1}, 1, 0, 2, 0, 0};
        hist.push_back(probes::histogram_record({"fc1/weights", step, 1.7e9 + step, h}));
      }
      s->append_records(r.uuid, probes::kHistogramsKind, hist);
      s->set_status(r.uuid, store::RunStatus::kFinished);
      runs_.push_back(r.uuid);
    }
  }

  // Every stored point of run `uuid` as the decoder's events: tag, step, wall
  // time and value (by `value_of`), in the store's order.
  void expect_decoded_equal(const std::string& uuid, const json& d, const std::string& type,
                            double (*value_of)(double)) {
    auto s = open();
    size_t at = 0;
    for (const auto& summary : s->metric_summaries(uuid))
      for (const auto& p : s->metric(uuid, summary.key)) {
        ASSERT_LT(at, d["events"].size());
        const json& e = d["events"][at++];
        EXPECT_EQ(e["tag"], summary.key);
        EXPECT_EQ(e["step"], p.step);
        EXPECT_EQ(e["type"], type);
        EXPECT_EQ(hex_bits(e["wall_time"]), bits_of(p.wall_time));
        EXPECT_TRUE(same(from_hex(e["bits"]), value_of(p.value)))
            << summary.key << " step " << p.step << ": " << p.value << " read "
            << from_hex(e["bits"]);
      }
    EXPECT_EQ(at, d["events"].size());
  }

  testing::TempDir dir_;
  std::vector<std::string> runs_;
};

// Test 1: every stored scalar decodes as written: exact as DT_DOUBLE
// tensors (the default), as the float32 rounding of the stored value as
// simple_value; the histograms come along.
TEST_F(TensorBoardTest, ExportDecodesWithAnIndependentRuntime) {
  record_runs();
  auto r = ts("runs export --filter \"name = 'rt'\" --format tfevents --out " +
              shell_quote((dir_ / "logs").string()));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("wrote 2 runs (102 scalar points as double, 6 histograms)"),
            std::string::npos)
      << r.out;
  auto files = event_files(dir_ / "logs");
  ASSERT_EQ(files.size(), 2u);
  // Two runs of one name: the second folder is told apart by its UUID.
  std::map<std::string, fs::path> by_folder;
  for (const auto& f : files) by_folder[f.parent_path().filename().string()] = f;
  ASSERT_TRUE(by_folder.count("rt"));
  for (const auto& uuid : runs_) {
    auto s = open();
    const std::string other = "rt-" + core::short_uuid(uuid);
    const fs::path file = by_folder.count(other) ? by_folder[other] : by_folder["rt"];
    json d = decode(file);
    EXPECT_EQ(d["file_version"], "brain.Event:2");
    for (const auto& e : d["events"]) EXPECT_EQ(e["plugin"], "scalars");
    expect_decoded_equal(uuid, d, "double", [](double v) { return v; });
    ASSERT_EQ(d["histograms"].size(), 3u);
    EXPECT_EQ(d["histograms"][2]["tag"], "fc1/weights");
    EXPECT_EQ(d["histograms"][2]["step"], 20);
    EXPECT_EQ(d["histograms"][2]["bucket"], json({1, 4, 0, 21}));
    EXPECT_EQ(d["histograms"][2]["min"], -21.0);
  }
  r = ts("runs export " + runs_[0] + " --format tfevents --scalars float32 -o " +
         shell_quote((dir_ / "f32").string()));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  files = event_files(dir_ / "f32");
  ASSERT_EQ(files.size(), 1u);
  expect_decoded_equal(runs_[0], decode(files[0]), "float32", as_float32);
  // A folder that holds event files already is refused: TensorBoard would
  // merge the two.
  r = ts("runs export " + runs_[0] + " --format tfevents -o " +
         shell_quote((dir_ / "f32").string()));
  EXPECT_EQ(r.exit_code, 4) << r.out;
  EXPECT_NE(r.out.find("already holds TensorBoard event files"), std::string::npos) << r.out;
  EXPECT_EQ(event_files(dir_ / "f32").size(), 1u);
  r = ts("runs export --format tfevents");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--out DIR"), std::string::npos) << r.out;
}

// Test 2: importing the export gives every point back: bit for bit from
// DT_DOUBLE tensors, the float32 rounding from simple_values.
TEST_F(TensorBoardTest, ImportOfTheExportReproducesEveryScalar) {
  record_runs();
  const auto logs = dir_ / "logs", f32 = dir_ / "f32";
  ASSERT_EQ(ts("runs export --format tfevents -o " + shell_quote(logs.string())).exit_code, 0);
  ASSERT_EQ(ts("runs export --format tfevents --scalars float32 -o " + shell_quote(f32.string()))
                .exit_code,
            0);
  auto r = ts("import tfevents " + shell_quote(logs.string()) + " --experiment back", "back.db");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("imported 2 runs (102 scalar points); 0 already imported"),
            std::string::npos)
      << r.out;
  r = ts("import tfevents " + shell_quote(f32.string()), "f32.db");
  ASSERT_EQ(r.exit_code, 0) << r.out;

  auto src = open();
  auto back = open("back.db");
  auto back32 = open("f32.db");
  for (const auto& uuid : runs_) {
    const auto run = src->find_run(uuid);
    // Each folder is named after its run; the import names the run after it.
    std::string folder = "rt-" + core::short_uuid(uuid);
    if (!fs::exists(logs / folder)) folder = "rt";
    for (auto* copy : {back.get(), back32.get()}) {
      auto found = copy->list_runs({.name = folder});
      ASSERT_EQ(found.size(), 1u) << folder;
      EXPECT_EQ(found[0].status, store::RunStatus::kFinished);
      EXPECT_EQ(copy->tags(found[0].uuid).at("import.source"),
                fs::weakly_canonical((copy == back.get() ? logs : f32) / folder).string());
      for (const auto& summary : src->metric_summaries(uuid)) {
        const auto want = src->metric(uuid, summary.key);
        const auto got = copy->metric(found[0].uuid, summary.key);
        ASSERT_EQ(got.size(), want.size()) << summary.key;
        for (size_t i = 0; i < want.size(); ++i) {
          EXPECT_EQ(got[i].step, want[i].step);
          EXPECT_EQ(bits_of(got[i].wall_time), bits_of(want[i].wall_time));
          if (copy == back.get()) {
            EXPECT_EQ(bits_of(got[i].value), bits_of(want[i].value))
                << summary.key << " " << want[i].value << " came back as " << got[i].value;
          } else {
            EXPECT_TRUE(same(got[i].value, as_float32(want[i].value)));
          }
        }
      }
    }
    EXPECT_EQ(back->list_runs({.experiment = "back"}).size(), 2u);
    EXPECT_TRUE(run.has_value());
  }
}

// Test 3: a log folder another program wrote (TF2 tensors, TF1
// simple_values, two files in one run, values that are not scalars).
TEST_F(TensorBoardTest, ImportsFilesOfAnIndependentWriter) {
  const auto logs = dir_ / "keras", want_file = dir_ / "expected.json";
  auto w = run_command("/usr/bin/python3 " TS_TFEVENTS_WRITER " " + shell_quote(logs.string()) +
                       " " + shell_quote(want_file.string()));
  ASSERT_EQ(w.exit_code, 0) << w.out;
  const json want = json::parse(std::ifstream(want_file));
  auto r = ts("--json import tfevents " + shell_quote(logs.string()) + " -e keras");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json printed = json::parse(r.out);
  ASSERT_EQ(printed.size(), want.size());
  auto s = open();
  ASSERT_EQ(s->list_runs().size(), want.size());
  for (const auto& p : printed) {
    const std::string name = p["name"];
    ASSERT_TRUE(want.contains(name)) << name;
    const json& run = want[name];
    EXPECT_EQ(p["skipped_values"], run["skipped"]) << name;
    auto info = s->find_run(p["uuid"].get<std::string>());
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->experiment, "keras");
    EXPECT_EQ(info->name, name);
    EXPECT_EQ(bits_of(info->start_time), hex_bits(run["start"]));
    EXPECT_EQ(bits_of(info->end_time), hex_bits(run["end"]));
    auto keys = s->metric_summaries(info->uuid);
    EXPECT_EQ(keys.size(), run["points"].size()) << name;
    for (const auto& [tag, points] : run["points"].items()) {
      const auto got = s->metric(info->uuid, tag);
      ASSERT_EQ(got.size(), points.size()) << name << " " << tag;
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].step, points[i][0]);
        EXPECT_EQ(bits_of(got[i].wall_time), hex_bits(points[i][1]));
        EXPECT_EQ(bits_of(got[i].value), hex_bits(points[i][2])) << name << " " << tag << " " << i;
      }
    }
  }
  // Exported, each run goes back to its folder, and imported from there,
  // by the same name.
  const auto out = dir_ / "out";
  r = ts("runs export --format tfevents -o " + shell_quote(out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::set<std::string> folders;
  for (const auto& f : event_files(out))
    folders.insert(f.parent_path().lexically_relative(out).generic_string());
  EXPECT_EQ(folders, (std::set<std::string>{"keras/train", "keras/validation"}));
  r = ts("--json import tfevents " + shell_quote(out.string()), "again.db");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::set<std::string> names;
  for (const auto& p : json::parse(r.out)) names.insert(p["name"]);
  EXPECT_EQ(names, folders);
  // Again: nothing is duplicated, and the output says why.
  r = ts("import tfevents " + shell_quote(logs.string()) + " -e keras");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("imported 0 runs (0 scalar points); 2 already imported"), std::string::npos)
      << r.out;
  EXPECT_EQ(s->list_runs().size(), want.size());
  // Files added to a folder imported before: refused, naming the run.
  fs::copy_file(event_files(logs / "keras" / "validation")[0],
                logs / "keras" / "validation" / "events.out.tfevents.1800000000.hostB");
  r = ts("import tfevents " + shell_quote(logs.string()));
  EXPECT_EQ(r.exit_code, 4) << r.out;
  EXPECT_NE(r.out.find("have changed since; delete that run first"), std::string::npos) << r.out;
  EXPECT_EQ(s->list_runs().size(), want.size());
}

// Test 4: one flipped byte, in a record's data or its length, refuses the
// import in one line naming the file and the record's offset; the store
// is unchanged, the other folder's good file included.
TEST_F(TensorBoardTest, ACorruptRecordIsRefusedAndTheStoreIsUnchanged) {
  record_runs();
  const auto logs = dir_ / "logs";
  ASSERT_EQ(ts("runs export --format tfevents -o " + shell_quote(logs.string())).exit_code, 0);
  auto before = ts("runs list --all --format json");
  ASSERT_EQ(before.exit_code, 0);
  const auto files = event_files(logs);
  ASSERT_EQ(files.size(), 2u);
  // The offsets of the records of the second file.
  std::ifstream in(files[1], std::ios::binary);
  std::string blob{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::vector<size_t> starts;
  for (size_t pos = 0; pos < blob.size();) {
    starts.push_back(pos);
    uint64_t len;
    std::memcpy(&len, blob.data() + pos, 8);
    pos += 16 + len;
  }
  ASSERT_GT(starts.size(), 10u);
  for (auto [at, what] : {std::pair{starts[7] + 14, "has a bad data CRC"},
                          std::pair{starts[9] + 2, "has a bad length CRC"},
                          std::pair{blob.size() - 3, "has a bad data CRC"}}) {
    std::string bad = blob;
    bad[at] = static_cast<char>(bad[at] ^ 0x20);
    std::ofstream(files[1], std::ios::binary | std::ios::trunc) << bad;
    auto r = ts("import tfevents " + shell_quote(logs.string()));
    EXPECT_EQ(r.exit_code, 2) << r.out;
    const size_t record = *std::prev(std::upper_bound(starts.begin(), starts.end(), at));
    EXPECT_EQ(r.out, fmt::format("trainscope: {}: the record at byte {} {}; the file is damaged, "
                                 "nothing of its folder was imported\n",
                                 files[1].string(), record, what));
    EXPECT_EQ(ts("runs list --all --format json").out, before.out);
  }
  // Cut short: the last record lacks its data CRC.
  std::ofstream(files[1], std::ios::binary | std::ios::trunc) << blob.substr(0, blob.size() - 2);
  auto r = ts("import tfevents " + shell_quote(logs.string()));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find(fmt::format("the record at byte {} is cut short", starts.back())),
            std::string::npos)
      << r.out;
  EXPECT_EQ(ts("runs list --all --format json").out, before.out);
  // Restored, it imports.
  std::ofstream(files[1], std::ios::binary | std::ios::trunc) << blob;
  r = ts("import tfevents " + shell_quote(logs.string()));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(open()->list_runs().size(), 4u);
}

#ifdef TS_WITH_TORCH
// A real training (the demo CNN on a slice of Fashion-MNIST, standard
// probes): its export decodes to every recorded point and histogram, and
// its import gives every point back bit for bit.
TEST_F(TensorBoardTest, ATrainedRunGoesOutAndComesBackBitForBit) {
  auto r = ts("train " TS_SOURCE_DIR
              "/configs/demo.yaml --set probes=standard --set data.train_subset=1280 "
              "--set data.test_subset=200 --set train.epochs=1 --name tiny");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto logs = dir_ / "logs";
  r = ts("runs export tiny --format tfevents -o " + shell_quote(logs.string()));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto s = open();
  const auto run = s->resolve_run("tiny");
  const auto files = event_files(logs);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].parent_path().filename(), "tiny");
  json d = decode(files[0]);
  expect_decoded_equal(run.uuid, d, "double", [](double v) { return v; });
  const auto histograms = s->records(run.uuid, probes::kHistogramsKind);
  EXPECT_GT(histograms.size(), 0u);
  EXPECT_EQ(d["histograms"].size(), histograms.size());
  r = ts("import tfevents " + shell_quote(logs.string()), "back.db");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto back = open("back.db");
  const auto copy = back->resolve_run("tiny");
  // Issue 51, second hunt: the copy ended when it was exported. The file's
  // first event is the run's start; its end is its last point's time.
  EXPECT_EQ(bits_of(copy.start_time), bits_of(run.start_time));
  EXPECT_LE(copy.end_time, run.end_time);
  double last = 0;
  for (const auto& k : s->metric_summaries(run.uuid))
    for (const auto& p : s->metric(run.uuid, k.key)) last = std::max(last, p.wall_time);
  for (const auto& h : s->records(run.uuid, probes::kHistogramsKind))
    last = std::max(last, h.wall_time);
  EXPECT_EQ(bits_of(copy.end_time), bits_of(std::max(last, run.start_time)));
  const auto keys = s->metric_summaries(run.uuid);
  EXPECT_GT(keys.size(), 10u);
  EXPECT_EQ(back->metric_summaries(copy.uuid).size(), keys.size());
  for (const auto& k : keys) {
    const auto want = s->metric(run.uuid, k.key), got = back->metric(copy.uuid, k.key);
    ASSERT_EQ(got.size(), want.size()) << k.key;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].step, want[i].step) << k.key;
      EXPECT_EQ(bits_of(got[i].wall_time), bits_of(want[i].wall_time)) << k.key;
      EXPECT_EQ(bits_of(got[i].value), bits_of(want[i].value)) << k.key;
    }
  }
}
#endif

// An import killed between its run and its last tag left a run without
// "import.sha256": the next import replaces it instead of skipping the
// folder or adding a second run.
TEST_F(TensorBoardTest, ARunLeftByAnImportCutShortIsReplaced) {
  const auto logs = dir_ / "keras", want_file = dir_ / "expected.json";
  ASSERT_EQ(run_command("/usr/bin/python3 " TS_TFEVENTS_WRITER " " + shell_quote(logs.string()) +
                        " " + shell_quote(want_file.string()))
                .exit_code,
            0);
  const std::string folder = fs::weakly_canonical(logs / "keras" / "train").string();
  std::string partial;
  {
    auto s = open();
    store::RunInfo run{.uuid = core::new_uuid(), .experiment = "x", .name = "keras/train"};
    run.status = store::RunStatus::kFinished;
    s->import_run(run);
    s->set_tag(run.uuid, "import.source", folder);
    s->append_metrics(run.uuid, {{"epoch_loss", {{0, 1.0, 9.0}}}});
    partial = run.uuid;
  }
  auto r = ts("import tfevents " + shell_quote(logs.string()));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("replacing run keras/train (" + core::short_uuid(partial) +
                       "), left by an import of '" + folder + "' that did not finish"),
            std::string::npos)
      << r.out;
  auto s = open();
  EXPECT_FALSE(s->find_run(partial).has_value());
  auto runs = s->list_runs({.name = "keras/train"});
  ASSERT_EQ(runs.size(), 1u);
  const json want = json::parse(std::ifstream(want_file));
  EXPECT_EQ(s->metric(runs[0].uuid, "epoch_loss").size(),
            want["keras/train"]["points"]["epoch_loss"].size());
  EXPECT_EQ(s->list_runs().size(), 2u);
}

// A run's name never leads out of the export folder, and two runs never
// share a folder.
TEST(TensorBoardFolders, NamesStayInsideTheFolderAndApart) {
  std::vector<store::RunInfo> runs;
  for (const char* name : {"keras/train", "../../etc/x", "/abs//path/", "", "é ü", "rt", "rt", "."})
    runs.push_back({.uuid = core::new_uuid(), .name = name});
  const auto f = tensorboard::run_folders(runs);
  EXPECT_EQ(
      f, (std::vector<std::string>{"keras/train", "__/__/etc/x", "abs/path", runs[3].uuid, "_____",
                                   "rt", "rt-" + core::short_uuid(runs[6].uuid), "_"}));
}

TEST_F(TensorBoardTest, ImportOfAFolderWithoutEventFilesIsNotFound) {
  fs::create_directories(dir_ / "nothing" / "here");
  auto r = ts("import tfevents " + shell_quote((dir_ / "nothing").string()));
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("no TensorBoard event file"), std::string::npos) << r.out;
  r = ts("import tfevents " + shell_quote((dir_ / "absent").string()));
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("does not exist"), std::string::npos) << r.out;
  // Twenty-ninth hunt, A-D4: a file or a device where the folder belongs is
  // a usage error (2), as elsewhere, not "not found".
  std::ofstream(dir_ / "events.out.tfevents.1.file") << "x";
  for (const fs::path& p : {dir_ / "events.out.tfevents.1.file", fs::path("/dev/null")}) {
    r = ts("import tfevents " + shell_quote(p.string()));
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_EQ(r.out, fmt::format("trainscope: '{}' is not a folder; give the folder that holds "
                                 "the event files\n",
                                 p.string()));
  }
}

// Issue 51 (third hunt, D3): an entry named as an event file that is not a
// regular file (a FIFO, a link to /dev/zero) refuses the import in one line
// naming it, whether it is alone or beside good files: never opened (a FIFO
// would block), never skipped in silence; nothing is written. A folder
// whose name holds "tfevents" is still a folder.
TEST_F(TensorBoardTest, AFifoOrDeviceNamedAsAnEventFileRefusesTheImport) {
  const auto logs = dir_ / "special";
  fs::create_directories(logs / "a");
  const fs::path fifo = logs / "a" / "events.out.tfevents.1.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto r = ts("import tfevents " + shell_quote(logs.string()));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out, fmt::format("trainscope: cannot read event file '{}': it is a FIFO (named "
                               "pipe), not a regular file; move it out of '{}' to import the "
                               "rest; nothing was imported\n",
                               fifo.string(), logs.string()));
  tfevents::Writer w(logs / "b");  // a good file beside it
  w.scalar("loss", 0, 1.7e9, 1.0f);
  w.close();
  r = ts("import tfevents " + shell_quote(logs.string()));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("a FIFO (named pipe)"), std::string::npos) << r.out;
  fs::remove(fifo);
  fs::create_symlink("/dev/zero", logs / "a" / "events.out.tfevents.2.zero");
  r = ts("import tfevents " + shell_quote(logs.string()));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("events.out.tfevents.2.zero': it is a character device, not a regular file"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(open()->list_runs().empty());
  fs::remove(logs / "a" / "events.out.tfevents.2.zero");
  fs::create_directories(logs / "a" / "tfevents.d");  // a folder so named: looked into
  r = ts("import tfevents " + shell_quote(logs.string()));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(open()->list_runs().size(), 1u);
}

// Issue 51: an event file's scalar whose tag or step no other entry point
// takes (store/accept.h) refuses the import in one line naming the file;
// nothing is written.
TEST_F(TensorBoardTest, AScalarNoRunTakesRefusesTheImport) {
  const std::string rule =
      "; a key is 1 to 256 bytes of UTF-8 text without control characters, not only blanks";
  const std::vector<std::tuple<std::string, int64_t, std::string>> cases = {
      {"loss", -1, "step -1 is not an integer from 0 to 2^53"},
      {"loss", (int64_t{1} << 53) + 1, "step 9007199254740993 is not an integer from 0 to 2^53"},
      {"", 1, "metric key '' is empty" + rule},
      {"a\nb", 1, "metric key 'a\\nb' holds a control character" + rule},
      {"  ", 1, "metric key '  ' is only blanks" + rule},
      {std::string(300, 'k'), 1,
       "metric key '" + std::string(64, 'k') + "...' is longer than 256 bytes" + rule}};
  for (const auto& [tag, step, why] : cases) {
    const auto logs = dir_ / "bad";
    fs::remove_all(logs);
    tfevents::Writer w(logs / "run");
    w.scalar("good", 0, 1.7e9, 1.0f);
    w.scalar(tag, step, 1.7e9 + 1, 0.5f);
    w.close();
    auto r = ts("import tfevents " + shell_quote(logs.string()));
    EXPECT_EQ(r.exit_code, 2) << r.out;
    const std::string shown = tag.size() > 64 ? std::string(64, 'k') + "..."
                              : tag == "a\nb" ? "a\\nb"
                                              : tag;
    EXPECT_EQ(r.out, fmt::format("trainscope: {}: the scalar '{}': {}; nothing was imported\n",
                                 w.path().string(), shown, why));
    EXPECT_TRUE(open()->list_runs().empty());
  }
}

// Eighteenth hunt, A-D8: trainscope's own series come back from its export
// (the file is then their one writer), but a value its sampler never
// records (-5 kWh, an exit code of 3.5) is refused as a key is.
TEST_F(TensorBoardTest, AValueTrainscopesOwnSeriesNeverHoldRefusesTheImport) {
  const std::vector<std::tuple<std::string, float, std::string>> cases = {
      {"energy/total_kwh", -5.0f,
       "metric 'energy/total_kwh' is -5, which trainscope's resource sampler never records (a "
       "count, rate or amount: finite and not negative)"},
      {"proc/rss_mib", std::numeric_limits<float>::infinity(),
       "metric 'proc/rss_mib' is inf, which trainscope's resource sampler never records (a "
       "count, rate or amount: finite and not negative)"},
      {"exit_code", 3.5f, "metric 'exit_code' is 3.5, which no program exits with (0 to 255)"},
      {"exit_code", 256.0f, "metric 'exit_code' is 256, which no program exits with (0 to 255)"}};
  for (const auto& [tag, value, why] : cases) {
    const auto logs = dir_ / "own";
    fs::remove_all(logs);
    tfevents::Writer w(logs / "run");
    w.scalar("good", 0, 1.7e9, 1.0f);
    w.scalar(tag, 1, 1.7e9 + 1, value);
    w.close();
    auto r = ts("import tfevents " + shell_quote(logs.string()));
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_EQ(r.out, fmt::format("trainscope: {}: the scalar '{}': {}; nothing was imported\n",
                                 w.path().string(), tag, why));
    EXPECT_TRUE(open()->list_runs().empty());
  }
  const auto logs = dir_ / "own-ok";  // what the sampler records comes in
  tfevents::Writer w(logs / "run");
  w.scalar("energy/total_kwh", 1, 1.7e9, 0.25f);
  w.scalar("exit_code", 1, 1.7e9, 137.0f);
  w.close();
  auto r = ts("import tfevents " + shell_quote(logs.string()));
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

}  // namespace
}  // namespace trainscope
