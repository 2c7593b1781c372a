// The dashboard's JSON API over a real SQLite store, without sockets:
// paging and filters, chart series (downsampled, incremental), errors as
// statuses, user strings kept as data, artifacts checked before serving.
#include "trainscope/serve/api.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/test_util.h"
#include "trainscope/core/util.h"
#include "trainscope/probes/records.h"
#include "trainscope/serve/downsample.h"
#include "trainscope/store/payload.h"
#include "trainscope/store/store.h"
#include "trainscope/store/views.h"

namespace trainscope::serve {
namespace {

using nlohmann::json;
namespace tst = trainscope::testing;

// Records the test's view below has read since it was last set to 0.
int64_t view_records_read = 0;

// A view of one number per record that counts the records it reads.
TRAINSCOPE_VIEW(api_test_numbers,
                store::View{.name = "api_test_numbers",
                            .title = "Numbers",
                            .kind = "api_test_numbers",
                            .read =
                                [](store::Store& s, const store::RunInfo& r) {
                                  auto t = store::read_number_records(s, r, "api_test_numbers",
                                                                      "tensor", "value");
                                  view_records_read += std::ssize(t.rows);
                                  return t;
                                },
                            .chart = store::ViewChart{.series = "tensor", .y = "value"}});

std::string f64(double v) {
  store::PayloadWriter w;
  w.f64(v);
  return w.take();
}

class ServeApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = store::Store::open({.uri = "sqlite:" + (dir_ / "s.db").string()});
  }

  Response get(const std::string& path, std::map<std::string, std::string> query = {}) {
    return handle_api(*store_, {.path = path, .query = std::move(query)}, {});
  }
  json get_json(const std::string& path, std::map<std::string, std::string> query = {},
                int status = 200) {
    Response r = get(path, std::move(query));
    EXPECT_EQ(r.status, status) << path << ": " << r.body;
    EXPECT_EQ(r.content_type, "application/json");
    return json::parse(r.body);
  }
  std::string run(const std::string& name, double loss) {
    auto r = store_->create_run({.name = name, .status = store::RunStatus::kFinished});
    store_->append_metrics(r.uuid, {{"train/loss", {{0, 1, loss}}}});
    return r.uuid;
  }

  tst::TempDir dir_;
  std::unique_ptr<store::Store> store_;
};

// Twenty-first hunt, B-D3: the ranks of a run read its stored
// dist.world_size and dist.buckets with atoi ("2abc" 2 ranks, "4294967298"
// 2, "-5" buckets). A count that is not one is a damaged store (500).
TEST_F(ServeApiTest, ADamagedStoredRankCountIsADamagedStore) {
  const std::string uuid = run("ddp", 1);
  store_->set_tag(uuid, "dist.world_size", "2");
  EXPECT_EQ(get_json("/api/runs/" + uuid + "/ranks")["world_size"], 2);
  for (const std::string bad : {"2abc", "4294967298", "1e2", "3.9", "0"}) {
    store_->set_tag(uuid, "dist.world_size", bad);
    const json j = get_json("/api/runs/" + uuid + "/ranks", {}, 500);
    EXPECT_EQ(j["error"], "run " + uuid.substr(0, 8) + ": its tag dist.world_size is '" + bad +
                              "', not a whole number from 1 to 256; the store is damaged");
  }
  store_->set_tag(uuid, "dist.world_size", "2");
  store_->set_tag(uuid, "dist.buckets", "-5");
  get_json("/api/runs/" + uuid + "/ranks", {}, 500);
}

// Twenty-fourth hunt, B-D3 and B-D4: the live poll showed a NULL
// heartbeat, and the run page an event with no recorded time, as
// 1970-01-01, where the run's own JSON and `runs show` say none.
TEST_F(ServeApiTest, ATimeNothingRecordedIsNull) {
  const std::string uuid = run("quiet", 1);
  store_->append_records(uuid, probes::kEventsKind,
                         {probes::event_record({3, 1.7e9, "alert", "L1", "src", "msg"})});
  store_.reset();
  tst::run_command("sqlite3 " + tst::shell_quote((dir_ / "s.db").string()) +
                   " \"UPDATE runs SET heartbeat = NULL; UPDATE records SET wall_time = NULL\"");
  store_ = store::Store::open({.uri = "sqlite:" + (dir_ / "s.db").string()});
  EXPECT_TRUE(get_json("/api/runs/" + uuid + "/live")["heartbeat"].is_null());
  const json page = get_json("/api/runs/" + uuid);
  ASSERT_EQ(page["events"].size(), 1u) << page;
  EXPECT_TRUE(page["events"][0]["wall_time"].is_null()) << page["events"];
}

TEST_F(ServeApiTest, RunsArePagedSortedFilteredAndSearched) {
  for (int i = 0; i < 120; ++i) run("run-" + std::to_string(i), i);
  json page = get_json("/api/runs", {{"sort", "-metrics.train/loss"}, {"offset", "50"}});
  EXPECT_EQ(page["total"], 120);
  ASSERT_EQ(page["runs"].size(), 50u);  // the default page
  EXPECT_EQ(page["runs"][0]["metrics.train/loss"], 69.0);
  EXPECT_EQ(page["runs"][0]["name"], "run-69");
  EXPECT_EQ(page["runs"][49]["name"], "run-20");
  EXPECT_EQ(page["runs"][0]["uuid"].get<std::string>().size(), 36u);
  json filtered = get_json("/api/runs", {{"filter", "metrics.train/loss >= 100"}});
  EXPECT_EQ(filtered["total"], 20);
  json searched =
      get_json("/api/runs", {{"search", "RUN-11"}, {"filter", "metrics.train/loss < 115"}});
  EXPECT_EQ(searched["total"], 6);  // run-11, run-110 ... run-114
  json bad = get_json("/api/runs", {{"filter", "metrics.train/loss >"}}, 400);
  EXPECT_NE(bad["error"].get<std::string>().find("filter column"), std::string::npos);
  EXPECT_EQ(bad["status"], 400);
  get_json("/api/runs", {{"limit", "0"}}, 400);
  get_json("/api/runs", {{"limit", "ten"}}, 400);
  get_json("/api/runs", {{"status", "sleeping"}}, 400);
}

// A run laid out as the trainer records it (metrics/observer.h): step
// metrics at the global step, epoch metrics at the 1-based epoch, "epoch"
// = e at the step that ended epoch e.
TEST_F(ServeApiTest, EpochMetricsSitAtTheStepTheirEpochEndedAndShareChartsWithStepMetrics) {
  constexpr int kSteps = 12, kEpochs = 3;
  auto r = store_->create_run({.name = "trained", .status = store::RunStatus::kFinished});
  std::vector<store::MetricPoint> loss, lr, epoch, test_loss, test_acc, epoch_time;
  for (int s = 1; s <= kSteps * kEpochs; ++s) {
    loss.push_back({s, r.start_time + s, 2.0 / s});
    lr.push_back({s, r.start_time + s, 0.1});
  }
  for (int e = 1; e <= kEpochs; ++e) {
    const double t = r.start_time + e * kSteps;
    epoch.push_back({e * kSteps, t, static_cast<double>(e)});
    test_loss.push_back({e, t, 1.0 / e});
    test_acc.push_back({e, t, 0.5 + 0.1 * e});
    epoch_time.push_back({e, t, 1.5});
  }
  store_->append_metrics(r.uuid, {{"train/loss", loss},
                                  {"lr", lr},
                                  {"epoch", epoch},
                                  {"test/loss", test_loss},
                                  {"test/accuracy", test_acc},
                                  {"epoch_time_s", epoch_time}});
  json page = get_json("/api/runs/" + r.uuid);
  std::map<std::string, json> by_key;
  for (auto& m : page["metrics"]) by_key[m["key"]] = m;
  EXPECT_EQ(by_key["train/loss"]["x"], "step");
  EXPECT_EQ(by_key["test/loss"]["x"], "epoch");
  EXPECT_EQ(by_key["train/loss"]["chart"], "loss");
  EXPECT_EQ(by_key["test/loss"]["chart"], "loss");  // train and test loss overlay
  EXPECT_EQ(by_key["test/accuracy"]["chart"], "accuracy");
  EXPECT_EQ(by_key["test/accuracy"]["group"], "learning");
  for (const char* k : {"epoch", "lr", "epoch_time_s"}) {
    EXPECT_EQ(by_key[k]["group"], "bookkeeping") << k;
    EXPECT_EQ(by_key[k]["chart"], k);
  }
  ASSERT_EQ(page["epoch_ends"].size(), static_cast<size_t>(kEpochs));
  EXPECT_EQ(page["epoch_ends"][1], json::array({2, 2 * kSteps}));

  json acc = get_json("/api/runs/" + r.uuid + "/metric", {{"key", "test/accuracy"}});
  EXPECT_EQ(acc["x"], "epoch");
  for (int e = 1; e <= kEpochs; ++e) {
    EXPECT_EQ(acc["steps"][e - 1], e);                 // as recorded
    EXPECT_EQ(acc["at_step"][e - 1], e * kSteps);      // where epoch e ended
    EXPECT_EQ(acc["epochs"][e - 1], e);                // on an epoch axis
    EXPECT_EQ(acc["times"][e - 1], 1.0 * e * kSteps);  // seconds since the start
  }
  json train = get_json("/api/runs/" + r.uuid + "/metric", {{"key", "train/loss"}});
  EXPECT_EQ(train["x"], "step");
  EXPECT_EQ(train["at_step"][kSteps / 2 - 1], kSteps / 2);
  EXPECT_DOUBLE_EQ(train["epochs"][kSteps / 2 - 1].get<double>(), 0.5);  // halfway through 1
  EXPECT_DOUBLE_EQ(train["epochs"][kSteps - 1].get<double>(), 1.0);
  // A run whose "epoch" series is absent (watch, a loop of the user's):
  // everything stays on steps.
  auto plain = store_->create_run({.name = "plain", .status = store::RunStatus::kFinished});
  store_->append_metrics(plain.uuid, {{"test/accuracy", {{100, 1, 0.9}, {200, 2, 0.95}}}});
  json flat = get_json("/api/runs/" + plain.uuid + "/metric", {{"key", "test/accuracy"}});
  EXPECT_EQ(flat["x"], "step");
  EXPECT_EQ(flat["at_step"][1], 200);
}

// MLflow's nested runs: a study's runs sit under it, and filter and sort
// still reach every run.
TEST_F(ServeApiTest, AStudysRunsAreNestedUnderItWhileFilterAndSortSeeThemAll) {
  auto study = store_->create_run({.name = "study-x", .status = store::RunStatus::kFinished});
  store_->set_tag(study.uuid, "kind", "study");
  for (int i = 0; i < 4; ++i) {
    auto c = store_->create_run({.name = "cell-" + std::to_string(i),
                                 .parent_uuid = study.uuid,
                                 .status = store::RunStatus::kFinished});
    store_->append_metrics(c.uuid, {{"train/loss", {{0, 1, 10.0 + i}}}});
  }
  for (int i = 0; i < 3; ++i) run("alone-" + std::to_string(i), i);
  json flat = get_json("/api/runs");
  EXPECT_EQ(flat["total"], 8);
  json nested = get_json("/api/runs", {{"nest", "parent"}, {"sort", "-metrics.train/loss"}});
  EXPECT_EQ(nested["total"], 4);  // the study and three runs of their own
  ASSERT_EQ(nested["runs"].size(), 4u);
  // The study stands where its best child sorts: first.
  EXPECT_EQ(nested["runs"][0]["name"], "study-x");
  EXPECT_EQ(nested["runs"][0]["matched"], true);
  ASSERT_EQ(nested["runs"][0]["children"].size(), 4u);
  EXPECT_EQ(nested["runs"][0]["children"][0]["name"], "cell-3");  // sorted inside too
  EXPECT_EQ(nested["runs"][0]["children_total"], 4);
  EXPECT_EQ(nested["runs"][1]["name"], "alone-2");
  EXPECT_TRUE(nested["runs"][1]["children"].empty());
  // A filter matching two children only: their study is shown above them.
  json some = get_json("/api/runs", {{"nest", "parent"}, {"filter", "metrics.train/loss >= 12"}});
  EXPECT_EQ(some["total"], 1);
  EXPECT_EQ(some["runs"][0]["name"], "study-x");
  EXPECT_EQ(some["runs"][0]["matched"], false);
  EXPECT_EQ(some["runs"][0]["children"].size(), 2u);
  json page2 = get_json("/api/runs", {{"nest", "parent"}, {"limit", "2"}, {"offset", "2"}});
  EXPECT_EQ(page2["runs"].size(), 2u);
  get_json("/api/runs", {{"nest", "sideways"}}, 400);
}

TEST_F(ServeApiTest, AChartGetsAtMost4000PointsKeepingPeaksAndReadsOnlyWhatIsNew) {
  auto r = store_->create_run({.name = "long"});
  std::vector<store::MetricPoint> pts;
  for (int i = 0; i < 300000; ++i) pts.push_back({i, 0, std::sin(i * 1e-4)});
  pts[123457].value = 1e6;  // one spike: LTTB keeps it, striding would not
  store_->append_metrics(r.uuid, {{"loss", pts}});
  json chart = get_json("/api/runs/long/metric", {{"key", "loss"}, {"width", "100000"}});
  EXPECT_EQ(chart["count"], 300000);
  EXPECT_TRUE(chart["downsampled"]);
  ASSERT_EQ(chart["steps"].size(), kMaxChartPoints);
  EXPECT_EQ(chart["steps"][0], 0);
  EXPECT_EQ(chart["steps"].back(), 299999);
  bool spike = false;
  for (size_t i = 0; i < chart["steps"].size(); ++i)
    spike |= chart["steps"][i] == 123457 && chart["values"][i] == 1e6;
  EXPECT_TRUE(spike);
  json narrow = get_json("/api/runs/long/metric", {{"key", "loss"}, {"width", "300"}});
  EXPECT_EQ(narrow["steps"].size(), 600u);  // two points per pixel
  // Twelfth hunt, B-D1: width=1 asked LTTB for 2 points, fewer than it
  // draws, and the whole series came back.
  json thin = get_json("/api/runs/long/metric", {{"key", "loss"}, {"width", "1"}});
  EXPECT_TRUE(thin["downsampled"]);
  EXPECT_EQ(thin["steps"], json({0, thin["steps"][1], 299999}));

  // A live page asks for what it lacks: the points after those it holds.
  store_->append_metrics(r.uuid, {{"loss", {{300000, 0, 5}, {300001, 0, NAN}}}});
  json tail = get_json("/api/runs/long/metric", {{"key", "loss"}, {"after", "299999"}});
  EXPECT_EQ(tail["count"], 300002);
  EXPECT_EQ(tail["from"], 299999);
  EXPECT_FALSE(tail["downsampled"]);
  EXPECT_EQ(tail["steps"], json({299999, 300000, 300001}));
  EXPECT_EQ(tail["values"][1], 5.0);
  EXPECT_TRUE(tail["values"][2].is_null());  // NaN is a gap, and counted
  EXPECT_EQ(tail["nonfinite"], 1);
  json none = get_json("/api/runs/long/metric", {{"key", "loss"}, {"after", "300002"}});
  EXPECT_TRUE(none["steps"].empty());
  // Issue 29, item 13: past the end, the count is the series' (it echoed `after`).
  json past = get_json("/api/runs/long/metric", {{"key", "loss"}, {"after", "999999"}});
  EXPECT_EQ(past["count"], 300002);
  EXPECT_EQ(past["from"], 300002);
  EXPECT_TRUE(past["steps"].empty());
  get_json("/api/runs/long/metric", {{"key", "nope"}}, 404);
  get_json("/api/runs/long/metric", {}, 400);
  get_json("/api/runs/long/metric", {{"key", "loss"}, {"after", "-1"}}, 400);
}

TEST_F(ServeApiTest, LttbKeepsTheEndsAndTheShape) {
  std::vector<double> x, y;
  for (int i = 0; i < 1000; ++i) x.push_back(i), y.push_back(i % 100 == 50 ? 10 : 0);
  auto idx = lttb(x.data(), y.data(), x.size(), 100);
  ASSERT_EQ(idx.size(), 100u);
  EXPECT_EQ(idx.front(), 0u);
  EXPECT_EQ(idx.back(), 999u);
  EXPECT_TRUE(std::is_sorted(idx.begin(), idx.end()));
  int peaks = 0;
  for (size_t i : idx) peaks += y[i] == 10;
  EXPECT_EQ(peaks, 10);  // every one of the ten spikes survives
  EXPECT_EQ(lttb(x.data(), y.data(), 50, 100).size(), 50u);
  EXPECT_EQ(lttb(x.data(), y.data(), 1000, 2).size(), 1000u);
}

// Eleventh tester, 11b-D7: a chart read its whole series before keeping
// LTTB's sample of it, and a view every record of its kind. LttbStream
// keeps what lttb() keeps, given a point at a time ...
TEST_F(ServeApiTest, LttbOverAStreamKeepsWhatLttbKeeps) {
  for (const size_t n : {0, 1, 2, 3, 5, 100, 1001, 4097, 30000}) {
    std::vector<double> x, y;
    for (size_t i = 0; i < n; ++i) {
      x.push_back(static_cast<double>(i / 3));
      y.push_back(std::sin(i * 0.37) * static_cast<double>(i % 17));
    }
    for (const size_t threshold : {2, 3, 4, 7, 100, 4000}) {
      LttbStream<size_t> stream(n, threshold);
      for (size_t i = 0; i < n; ++i) stream.add(x[i], y[i], i);
      EXPECT_EQ(stream.kept(), lttb(x.data(), y.data(), n, threshold)) << n << " " << threshold;
    }
  }
}

// ... so that a chart of a long series, read a chunk at a time, is the
// one lttb() draws from the whole series, non-finite points left out.
TEST_F(ServeApiTest, AChartOfALongSeriesIsLttbsOfTheWholeSeries) {
  auto r = store_->create_run({.name = "long"});
  std::vector<store::MetricPoint> pts;
  for (int i = 0; i < 50000; ++i)
    pts.push_back({i, 0, i % 97 == 5 ? NAN : std::cos(i * 1e-3) + (i % 13) * 0.01});
  for (size_t at = 0; at < pts.size(); at += 7000) {  // several batches, several chunks
    const auto from = pts.begin() + static_cast<std::ptrdiff_t>(at);
    const auto to = pts.begin() + static_cast<std::ptrdiff_t>(std::min(at + 7000, pts.size()));
    store_->append_metrics(r.uuid, {{"loss", std::vector<store::MetricPoint>(from, to)}});
  }
  for (const int64_t after : {0, 1234}) {
    std::vector<double> x, y;
    std::vector<int64_t> steps;
    for (size_t i = static_cast<size_t>(after); i < pts.size(); ++i) {
      if (std::isnan(pts[i].value)) continue;
      x.push_back(static_cast<double>(pts[i].step));
      y.push_back(pts[i].value);
      steps.push_back(pts[i].step);
    }
    for (const int width : {100, 2000}) {
      json chart = get_json(
          "/api/runs/long/metric",
          {{"key", "loss"}, {"width", std::to_string(width)}, {"after", std::to_string(after)}});
      std::vector<int64_t> want;
      for (size_t i : lttb(x.data(), y.data(), x.size(), std::min<size_t>(2 * width, 4000)))
        want.push_back(steps[i]);
      EXPECT_EQ(chart["steps"].get<std::vector<int64_t>>(), want) << after << " " << width;
      EXPECT_TRUE(chart["downsampled"]);
      EXPECT_EQ(chart["count"], 50000);
      EXPECT_EQ(chart["nonfinite"], std::ssize(pts) - after - std::ssize(steps));
    }
  }
}

// ... and a series mostly NaN stays under the limit: its finite points,
// the gaps counted (it was answered whole: 60,000 points for width=1;
// twenty-eighth hunt, B-D2).
TEST_F(ServeApiTest, AMostlyNanSeriesIsAnsweredUnderTheLimit) {
  auto r = store_->create_run({.name = "holes"});
  std::vector<store::MetricPoint> pts;
  for (int i = 0; i < 9000; ++i) pts.push_back({i, 0, i % 4500 == 7 ? 1.0 * i : NAN});
  store_->append_metrics(r.uuid, {{"m", pts}});
  for (const int width : {1, 1000}) {
    json chart =
        get_json("/api/runs/holes/metric", {{"key", "m"}, {"width", std::to_string(width)}});
    EXPECT_EQ(chart["steps"].get<std::vector<int64_t>>(), (std::vector<int64_t>{7, 4507})) << width;
    EXPECT_EQ(chart["nonfinite"], 8998);
    EXPECT_EQ(chart["count"], 9000);
  }
}

// ... and a view reads the records of the rows it shows, not all of them.
TEST_F(ServeApiTest, AViewReadsOnlyTheRecordsOfTheRowsItShows) {
  auto r = store_->create_run({.name = "many"});
  std::vector<store::Record> recs;
  for (int i = 0; i < 1000; ++i) recs.push_back({"t" + std::to_string(i % 3), i, 0, f64(i * 0.5)});
  store_->append_records(r.uuid, "api_test_numbers", recs);
  view_records_read = 0;
  json v = get_json("/api/runs/many/views/api_test_numbers", {{"max_rows", "7"}});
  EXPECT_EQ(v["total_rows"], 1000);
  EXPECT_TRUE(v["sampled"]);
  ASSERT_EQ(v["rows"].size(), 7u);  // every ceil(1000 / 7) = 143rd
  for (size_t k = 0; k < 7; ++k) EXPECT_EQ(v["rows"][k][1], 143 * k) << k;
  EXPECT_EQ(view_records_read, 7);  // it read all 1000
  view_records_read = 0;
  json all = get_json("/api/runs/many/views/api_test_numbers");
  EXPECT_EQ(all["rows"].size(), 1000u);
  EXPECT_FALSE(all["sampled"]);
  EXPECT_EQ(all["total_rows"], 1000);
  EXPECT_EQ(view_records_read, 1000);
}

TEST_F(ServeApiTest, ErrorsAreJsonWithTheStatusOfTheirKind) {
  run("twin", 1);
  run("twin", 2);
  EXPECT_EQ(get_json("/api/runs/twin", {}, 409)["status"], 409);
  EXPECT_EQ(get_json("/api/runs/nobody", {}, 404)["status"], 404);
  std::string uuid = run("single", 3);
  get_json("/api/nothing", {}, 404);
  get_json("/api/runs/single/nothing", {}, 404);
  get_json("/api/diff", {{"a", "single"}}, 400);
  EXPECT_EQ(get_json("/api/runs/single/profile", {}, 404)["error"].get<std::string>().substr(0, 4),
            "run ");
  get_json("/api/runs/single/probes", {}, 404);
  get_json("/api/studies/single", {}, 400);  // a run, but not a study

  // Tags change only on a server started with --allow-writes.
  Request put{.method = "PUT", .path = "/api/runs/" + uuid + "/tags/note", .body = "good"};
  EXPECT_EQ(handle_api(*store_, put, {}).status, 403);
  EXPECT_TRUE(store_->tags(uuid).empty());
  Response ok = handle_api(*store_, put, {.allow_writes = true});
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(store_->tags(uuid).at("note"), "good");
}

// Issue 29, item 13: DELETE on a run answered "start it with --allow-writes
// to change tags". A method an endpoint does not take is 405 saying what
// the API changes; every error is JSON with a one-line message.
TEST_F(ServeApiTest, AMethodAnEndpointDoesNotTakeIs405) {
  run("single", 1);
  for (const auto& [method, path] :
       std::vector<std::pair<std::string, std::string>>{{"DELETE", "/api/runs/single"},
                                                        {"PUT", "/api/runs/single/metric"},
                                                        {"POST", "/api/runs"},
                                                        {"PUT", "/api/info"},
                                                        {"DELETE", "/api/studies/x"}}) {
    for (bool writes : {false, true}) {
      Response r = handle_api(*store_, {.method = method, .path = path}, {.allow_writes = writes});
      EXPECT_EQ(r.status, 405) << method << " " << path << ": " << r.body;
      const json j = json::parse(r.body);
      const std::string msg = j["error"];
      EXPECT_EQ(j["status"], 405);
      EXPECT_NE(msg.find(method + " " + path + ": this endpoint only reads"), std::string::npos)
          << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos);
    }
  }
  // Twelfth hunt, noted: a tag's PUT without its key was this 405, as if
  // tags could not be written; it is a request missing its key (400), or
  // a write a read-only server refuses (403).
  for (const std::string path : {"/api/runs/single/tags", "/api/runs/single/tags/"})
    for (const std::string method : {"PUT", "DELETE"}) {
      Response r = handle_api(*store_, {.method = method, .path = path}, {.allow_writes = true});
      EXPECT_EQ(r.status, 400) << method << " " << path << ": " << r.body;
      EXPECT_NE(r.body.find("no tag key; a tag is set or deleted by its key"), std::string::npos)
          << r.body;
      EXPECT_EQ(handle_api(*store_, {.method = method, .path = path}, {}).status, 403) << path;
    }
  Response none = handle_api(*store_, {.method = "POST", .path = "/api/nothing"}, {});
  EXPECT_EQ(none.status, 404);
  EXPECT_EQ(json::parse(none.body)["status"], 404);
  // Nineteenth hunt, B-D5: a path under a run that is no endpoint was 405
  // "only reads" to PUT and DELETE, and 404 to GET. It is 404 to any method.
  for (const std::string path :
       {"/api/runs/single/nosuch", "/api/runs/single/tags/x/y", "/api/runs/single/live/x"})
    for (const std::string method : {"GET", "PUT", "DELETE", "POST"})
      for (bool writes : {false, true}) {
        Response r =
            handle_api(*store_, {.method = method, .path = path}, {.allow_writes = writes});
        EXPECT_EQ(r.status, 404) << method << " " << path << ": " << r.body;
        EXPECT_NE(r.body.find("no API endpoint " + method + " " + path), std::string::npos)
            << r.body;
      }
}

TEST_F(ServeApiTest, UserStringsAreDataInValidJson) {
  const std::string xss = "<script>alert(1)</script>", latin1 = "caf\xe9";
  std::string a = run(xss, 1), b = run(latin1, 2);
  store_->set_params(b, {{"bad\xff key", "\xfe"}});
  json list = get_json("/api/runs", {{"columns", "name,params.*"}});
  ASSERT_EQ(list["runs"].size(), 2u);
  json page = get_json("/api/runs/" + a);
  EXPECT_EQ(page["run"]["name"], xss);  // exactly: escaping is the page's job
  json other = get_json("/api/runs/" + b);
  EXPECT_EQ(other["run"]["name"], "caf\xef\xbf\xbd");  // U+FFFD for the invalid byte
}

// Twelfth hunt, B-D2: a file name from the store went into the header as
// it was, ESC and BEL included; a line break made the header vanish.
TEST(ContentDispositionTest, AStoredNameNeverPutsAControlByteInAHeader) {
  EXPECT_EQ(content_disposition("model.pt"), "attachment; filename=\"model.pt\"");
  EXPECT_EQ(content_disposition("e\x1b]0;PWNED\x07.txt"),
            "attachment; filename=\"e_]0;PWNED_.txt\"; filename*=UTF-8''e%1B%5D0%3BPWNED%07.txt");
  EXPECT_EQ(content_disposition("a\r\nSet-Cookie: x"),
            "attachment; filename=\"a__Set-Cookie:_x\"; filename*=UTF-8''a%0D%0ASet-Cookie%3A%20x");
  EXPECT_EQ(content_disposition("caf\xc3\xa9 \"q\".csv"),
            "attachment; filename=\"caf____q_.csv\"; filename*=UTF-8''caf%C3%A9%20%22q%22.csv");
}

TEST_F(ServeApiTest, ArtifactsAreServedOnlyWhenTheyMatchTheirRecord) {
  std::string uuid = run("with-file", 1);
  std::ofstream(dir_ / "notes.txt") << "hello artifact";
  store_->add_artifact(uuid, dir_ / "notes.txt", "notes");
  json page = get_json("/api/runs/" + uuid);
  ASSERT_EQ(page["artifacts"].size(), 1u);
  EXPECT_FALSE(page["artifacts"][0].contains("path"));
  const std::string url = page["artifacts"][0]["url"];
  Response file = get(url);
  EXPECT_EQ(file.status, 200);
  // The file itself, streamed by the server (thirteenth hunt, B-D2: a
  // 10-byte range of a 38 MB artifact read the whole file into memory).
  EXPECT_TRUE(file.body.empty());
  EXPECT_EQ(file.file, store_->artifacts(uuid)[0].path);
  EXPECT_EQ(file.file_offset, 0u);
  EXPECT_EQ(file.file_length, 14u);
  std::ofstream(store_->artifacts(uuid)[0].path) << "tampered";
  Response bad = get(url);
  EXPECT_EQ(bad.status, 500);
  EXPECT_NE(bad.body.find("notes.txt"), std::string::npos) << bad.body;
  get_json("/api/runs/" + uuid + "/artifacts/other.txt", {}, 404);
}

// Sixteenth hunt, 16B-D4: a store migrated to a newer schema while the
// server ran was served as if it had not changed, while the CLI refused
// it. The server answers what the CLI says, 500.
TEST_F(ServeApiTest, AStoreMigratedByANewerTrainscopeIsRefusedAsAtOpen) {
  run("done", 1);
  const std::string uri = "sqlite:" + (dir_ / "s.db").string();
  store_.reset();
  store_ = store::Store::open({.uri = uri, .read_only = true});
  get_json("/api/runs/done");
  tst::run_command("sqlite3 " + tst::shell_quote((dir_ / "s.db").string()) +
                   " \"INSERT INTO schema_migrations VALUES (99, 'future', 0)\"");
  for (const char* path : {"/api/info", "/api/runs", "/api/runs/done"}) {
    json e = get_json(path, {}, 500);
    EXPECT_NE(e["error"].get<std::string>().find("has schema version 99, newer than this"),
              std::string::npos)
        << e;
  }
}

// Issue 29, item 4: the dashboard only reads. A run left "running" by a
// writer that went silent on another host is shown stale in the runs
// table, on its page and in its live poll, through a read-only store, and
// the store file is not changed.
TEST_F(ServeApiTest, ARunWhoseWriterIsGoneIsShownStaleAndNothingIsWritten) {
  const std::string uri = "sqlite:" + (dir_ / "s.db").string();
  const std::string uuid =
      store::Store::open({.uri = uri, .writer = store::WriterIdentity{"node-b", 4242, 1}})
          ->create_run({.name = "lost"})
          .uuid;
  run("done", 1);
  store_.reset();
  // Its last heartbeat an hour ago.
  {
    auto s = store::Store::open({.uri = uri});
    s->append_metrics(uuid, {{"train/loss", {{0, 1, 0.5}}}});
  }
  tst::run_command("sqlite3 " + tst::shell_quote((dir_ / "s.db").string()) +
                   " \"UPDATE runs SET heartbeat = heartbeat - 3600 WHERE name = 'lost'\"");
  auto bytes = [&] {
    std::string all;
    for (const char* f : {"s.db", "s.db-wal"})
      // A WAL file SQLite removes when empty is no change.
      if (std::filesystem::exists(dir_ / f) && std::filesystem::file_size(dir_ / f) > 0)
        all += core::sha256_file(dir_ / f);
    return all;
  };
  const std::string before = bytes();
  store_ = store::Store::open({.uri = uri, .read_only = true});
  json page = get_json("/api/runs");
  ASSERT_EQ(page["runs"].size(), 2u);
  EXPECT_EQ(page["runs"][1]["name"], "lost");
  EXPECT_EQ(page["runs"][1]["status"], "stale");
  EXPECT_NE(page["runs"][1]["stale"].get<std::string>().find("no heartbeat since"),
            std::string::npos);
  EXPECT_EQ(page["runs"][0]["status"], "finished");
  json one = get_json("/api/runs/lost");
  EXPECT_EQ(one["run"]["status"], "stale");
  EXPECT_NE(one["run"]["stale"].get<std::string>().find("node-b"), std::string::npos);
  EXPECT_EQ(get_json("/api/runs/lost/live")["status"], "stale");
  EXPECT_EQ(store_->reap_stale_runs(), 0);  // a read-only store never writes
  store_.reset();
  EXPECT_EQ(bytes(), before);
  EXPECT_EQ(store::Store::open({.uri = uri, .read_only = true})->find_run(uuid)->status,
            store::RunStatus::kRunning);
}

}  // namespace
}  // namespace trainscope::serve
