// The run query language (store/query.h) on a real SQLite store.
#include "trainscope/store/query.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/test_util.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"

namespace trainscope::store {
namespace {

class QueryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions o;
    o.uri = "sqlite:" + (dir_ / "q.db").string();
    store_ = Store::open(o);
    add("a1", "adam", "0.1", 0.95, "finished");
    add("a2", "adam", "1e-2", 0.80, "finished");
    add("s1", "sgd", "0.1", 0.91, "failed");
    add("s2", "sgd", "0.01", std::numeric_limits<double>::quiet_NaN(), "finished");
    RunInfo bare = store_->create_run({.experiment = "other", .name = "bare"});
    store_->set_status(bare.uuid, RunStatus::kKilled);
  }

  void add(const std::string& name, const std::string& opt, const std::string& lr, double acc,
           const std::string& status) {
    RunInfo r = store_->create_run({.experiment = "exp", .name = name});
    store_->set_params(r.uuid, {{"optimizer.name", opt}, {"optimizer.lr", lr}});
    store_->set_tag(r.uuid, "team", name[0] == 'a' ? "red" : "blue");
    store_->append_metrics(r.uuid, {{"test/accuracy", {{1, 1.0, acc / 2}, {2, 2.0, acc}}}});
    store_->set_status(r.uuid, parse_run_status(status));
  }

  // Names of the matching runs, sorted by name unless `sort` is given.
  std::vector<std::string> names(const std::string& filter, const std::string& sort = "name") {
    RunQuery q;
    q.filter = filter;
    q.sort = sort;
    std::vector<std::string> out;
    for (const auto& row : query_runs(*store_, q).rows) out.push_back(row.info.name);
    return out;
  }

  std::string error_of(const std::string& filter) {
    try {
      RunFilterExpr::parse(filter);
    } catch (const core::Error& e) {
      EXPECT_EQ(e.kind(), core::ErrorKind::kUsage);
      return e.what();
    }
    return "(no error)";
  }

  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
};

using V = std::vector<std::string>;

TEST_F(QueryTest, ComparesMetricsAsNumbersAndParamsAsTheyRead) {
  EXPECT_EQ(names("metrics.test/accuracy > 0.9"), (V{"a1", "s1"}));
  EXPECT_EQ(names("metrics.test/accuracy > 0.9 and params.optimizer.name = 'adam'"), V{"a1"});
  // 0.01 and 1e-2 are the same number; text would tell them apart.
  EXPECT_EQ(names("params.optimizer.lr = 0.01"), (V{"a2", "s2"}));
  EXPECT_EQ(names("params.optimizer.lr = '0.01'"), (V{"a2", "s2"}));
  EXPECT_EQ(names("params.optimizer.lr < 0.05 or tags.team = \"red\""), (V{"a1", "a2", "s2"}));
  EXPECT_EQ(names("not (status = 'finished')"), (V{"bare", "s1"}));
}

TEST_F(QueryTest, MissingFieldsNeverMatchAndNanIsFoundByName) {
  EXPECT_EQ(names("params.optimizer.name != 'adam'"), (V{"s1", "s2"}));  // not "bare"
  EXPECT_EQ(names("metrics.test/accuracy = nan"), V{"s2"});
  EXPECT_EQ(names("metrics.test/accuracy >= 0"), (V{"a1", "a2", "s1"}));
  EXPECT_EQ(names("tags.team exists"), (V{"a1", "a2", "s1", "s2"}));
  EXPECT_EQ(names("not tags.team exists"), V{"bare"});
}

TEST_F(QueryTest, LikeInAndAttributes) {
  EXPECT_EQ(names("name like 'a%'"), (V{"a1", "a2"}));
  EXPECT_EQ(names("name like '_1'"), (V{"a1", "s1"}));
  EXPECT_EQ(names("NAME ILIKE 'A_' AND experiment = 'exp'"), (V{"a1", "a2"}));
  EXPECT_EQ(names("status in ('failed', 'killed')"), (V{"bare", "s1"}));
  EXPECT_EQ(names("attributes.experiment = 'other'"), V{"bare"});
  EXPECT_EQ(names("duration >= 0 and start_time > 1e9"), (V{"a1", "a2", "bare", "s1", "s2"}));
}

TEST_F(QueryTest, SortsWithMissingAndNanLast) {
  EXPECT_EQ(names("", "metrics.test/accuracy desc"), (V{"a1", "s1", "a2", "s2", "bare"}));
  EXPECT_EQ(names("", "-metrics.test/accuracy"), (V{"a1", "s1", "a2", "s2", "bare"}));
  EXPECT_EQ(names("", "metrics.test/accuracy"), (V{"a2", "s1", "a1", "s2", "bare"}));
  EXPECT_EQ(names("", "params.optimizer.name desc, name desc"),
            (V{"s2", "s1", "a2", "a1", "bare"}));
}

TEST_F(QueryTest, PagesAndExpandsColumnGlobs) {
  RunQuery q;
  q.sort = "name";
  q.offset = 1;
  q.limit = 2;
  q.columns = {"name", "params.*", "metrics.test/*"};
  auto res = query_runs(*store_, q);
  EXPECT_EQ(res.total, 5);
  ASSERT_EQ(res.rows.size(), 2u);
  EXPECT_EQ(res.rows[0].info.name, "a2");
  EXPECT_EQ(res.columns,
            (V{"name", "params.optimizer.lr", "params.optimizer.name", "metrics.test/accuracy"}));
  EXPECT_EQ(std::get<double>(field_value(res.rows[0], "metrics.test/accuracy")), 0.80);
  EXPECT_EQ(std::get<std::string>(field_value(res.rows[0], "params.optimizer.lr")), "1e-2");
  EXPECT_TRUE(std::holds_alternative<std::monostate>(field_value(res.rows[1], "params.x")));
  // Twenty-second hunt, B-D1: a column named twice, or by two globs, is
  // one column (900 globs made a 50 MB answer).
  q.columns = {"name", "name", "params.*", "params.*", "params.optimizer.lr", "params.opt*"};
  EXPECT_EQ(query_runs(*store_, q).columns,
            (V{"name", "params.optimizer.lr", "params.optimizer.name"}));
}

TEST_F(QueryTest, BackquotesHoldOddKeys) {
  RunInfo r = store_->create_run({.experiment = "exp", .name = "odd"});
  store_->set_param(r.uuid, "my key (v2)", "x");
  EXPECT_EQ(names("params.`my key (v2)` = 'x'"), V{"odd"});
}

TEST_F(QueryTest, ErrorsNameTheColumn) {
  EXPECT_EQ(error_of("metrics.acc > "),
            "filter column 15: expected a number or a quoted string after '>' (see `trainscope "
            "runs list --help`)");
  EXPECT_NE(error_of("metrics.acc > 0.9 and params.opt = adam")
                .find("filter column 36: 'adam' is not a value: quote text"),
            std::string::npos);
  EXPECT_NE(error_of("metrics.acc >> 1").find("filter column 14:"), std::string::npos);
  EXPECT_NE(error_of("(metrics.acc > 1").find("filter column 17: expected ')'"), std::string::npos);
  EXPECT_NE(error_of("metrics.acc ! 1").find("filter column 13: '!' must be followed by '='"),
            std::string::npos);
  EXPECT_NE(error_of("colour = 'red'").find("filter column 1: unknown field 'colour'"),
            std::string::npos);
  EXPECT_NE(error_of("name = 'x").find("filter column 8: string opened with ' is not closed"),
            std::string::npos);
  EXPECT_NE(error_of("metrics.acc > 1 metrics.b < 2").find("filter column 17: expected 'and'"),
            std::string::npos);
  EXPECT_NE(error_of("name like 3").find("filter column 11: expected a quoted pattern"),
            std::string::npos);
  EXPECT_EQ(error_of("   "), "(no error)");
}

TEST_F(QueryTest, BadSortAndColumnsAreUsageErrors) {
  EXPECT_THROW(parse_sort("metrics.a sideways"), core::Error);
  EXPECT_THROW(parse_sort("colour"), core::Error);
  RunQuery q;
  q.columns = {"colour"};
  EXPECT_THROW(query_runs(*store_, q), core::Error);
}

// Twentieth hunt, A-D4: a heartbeat of 1e300 was said to be "1000000...
// s ahead of this machine's clock". A time past the year 9999 is none.
TEST(LivenessTest, AHeartbeatThatIsNoTimeIsSaidSo) {
  RunInfo r;
  r.status = RunStatus::kRunning;
  r.host = "node-b";
  r.pid = 4242;
  r.start_time = 1.7e9;
  for (double beat : {1e300, 1e16}) {
    r.heartbeat = beat;
    const Liveness l = liveness(r, 1.7e9, 60);
    EXPECT_EQ(l.status, "stale");
    EXPECT_EQ(l.note,
              "its heartbeat is no time (past the year 9999) (written by pid 4242 on node-b)");
  }
  r.heartbeat = 0;  // NULL: none, not 1970 (A-D7)
  EXPECT_EQ(liveness(r, 1.7e9, 60).note, "no heartbeat recorded (written by pid 4242 on node-b)");
  r.heartbeat = 1.7e9 + 3600;
  EXPECT_NE(liveness(r, 1.7e9, 60).note.find("is 3600 s ahead of this machine's clock"),
            std::string::npos);
}

// Issue 51 (fifth hunt, D9): a run recorded "running" whose writer is gone
// is shown "stale" by every reader (Store::liveness), and a filter's
// `status`, a status column and RunQuery::status (`runs list --status`,
// the API's `status=`) find it by that word, never as "running".
TEST_F(QueryTest, StatusIsTheOneReadersShowStaleIncluded) {
  RunInfo lost;  // written by a process of another host, silent for an hour
  lost.uuid = core::new_uuid();
  lost.experiment = "exp";
  lost.name = "lost";
  lost.status = RunStatus::kRunning;
  lost.start_time = lost.heartbeat = core::unix_now() - 3600;
  lost.host = "node-b";
  lost.pid = 4242;
  lost.pid_start = 1;
  store_->import_run(lost);
  store_->create_run({.experiment = "exp", .name = "live"});  // this process writes it
  ASSERT_EQ(store_->liveness(*store_->find_run(lost.uuid), store_->now()).status, "stale");

  EXPECT_EQ(names("status = 'stale'"), V{"lost"});
  EXPECT_EQ(names("status = 'running'"), V{"live"});
  EXPECT_EQ(names("status in ('running', 'stale')"), (V{"live", "lost"}));
  EXPECT_EQ(names("", "status, name").back(), "lost");  // "stale" sorts after "running"

  auto by_status = [&](const std::string& status) {
    RunQuery q;
    q.status = status;
    q.sort = "name";
    q.columns = {"name", "status"};
    V out;
    for (const auto& row : query_runs(*store_, q).rows) {
      out.push_back(row.info.name);
      EXPECT_EQ(std::get<std::string>(field_value(row, "status")), status) << row.info.name;
    }
    return out;
  };
  EXPECT_EQ(by_status("stale"), V{"lost"});
  EXPECT_EQ(by_status("running"), V{"live"});
  EXPECT_EQ(by_status("killed"), V{"bare"});
  EXPECT_EQ(by_status("finished"), (V{"a1", "a2", "s2"}));
  try {
    by_status("sleeping");
    ADD_FAILURE() << "a status no run has was taken";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::kUsage);
    EXPECT_STREQ(e.what(),
                 "unknown run status 'sleeping'; valid: created, running, finished, failed, "
                 "killed, stopped, stale");
  }
  // A row built outside query_runs (stats --by status) is judged alike.
  RunRow row{*store_->find_run(lost.uuid), {}, {}, {}};
  EXPECT_EQ(std::get<std::string>(field_value(row, "status")), "stale");
}

}  // namespace
}  // namespace trainscope::store
