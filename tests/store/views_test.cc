// The capabilities' views (store/views.h): registration, the views a run
// holds, reading one, and the refusals.
#include "trainscope/store/views.h"

#include <gtest/gtest.h>

#include "trainscope/core/error.h"
#include "trainscope/store/payload.h"

namespace trainscope::store {
namespace {

std::string f64(double v) {
  PayloadWriter w;
  w.f64(v);
  return w.take();
}

View numbers_view(const std::string& name, const std::string& kind) {
  return View{.name = name,
              .title = "Numbers of " + name,
              .kind = kind,
              .read =
                  [kind](Store& s, const RunInfo& r) {
                    return read_number_records(s, r, kind, "tensor", "value");
                  },
              .chart = ViewChart{.series = "tensor", .y = "value"}};
}

// Registered once for the test program (the registry lives as long as it).
TRAINSCOPE_VIEW(test_numbers, numbers_view("test_numbers", "test_numbers"));

struct ViewsTest : ::testing::Test {
  std::shared_ptr<Store> store = Store::open({.uri = "sqlite::memory:"});
  RunInfo run = store->create_run({.experiment = "e", .name = "r"});
};

TEST_F(ViewsTest, ARunHoldsTheViewsOfTheKindsItHasRecordsOf) {
  EXPECT_TRUE(views_of(*store, run.uuid).empty());
  store->append_records(run.uuid, "test_numbers", {{"a", 2, 0, f64(0.5)}, {"b", 2, 0, f64(-1)}});
  const auto held = views_of(*store, run.uuid);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].name, "test_numbers");
  const ViewTable t = read_view(*store, run, find_view_of(*store, run, "test_numbers"));
  EXPECT_EQ(t.columns, (std::vector<std::string>{"tensor", "step", "value"}));
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[1], (std::vector<ViewCell>{std::string("b"), int64_t{2}, -1.0}));
}

TEST_F(ViewsTest, AViewTheRunHoldsNoRecordOfOrNoViewAtAllIsNotFound) {
  try {
    find_view_of(*store, run, "test_numbers");
    FAIL() << "a view without records was found";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::kNotFound);
    EXPECT_NE(std::string(e.what()).find("holds no test_numbers records"), std::string::npos);
  }
  try {
    find_view("nope\n");
    FAIL() << "an unknown view was found";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::kNotFound);
    EXPECT_NE(std::string(e.what()).find("no view 'nope\\n': the views are "), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("test_numbers"), std::string::npos) << e.what();
  }
}

TEST_F(ViewsTest, ADamagedPayloadNamesTheRecord) {
  store->append_records(run.uuid, "test_numbers", {{"w", 7, 0, "abc"}});
  try {
    read_view(*store, run, find_view("test_numbers"));
    FAIL() << "a 3-byte payload was read as a number";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::kStore);
    EXPECT_NE(std::string(e.what()).find("test_numbers record w of run"), std::string::npos)
        << e.what();
  }
}

TEST(ViewsRegistry, RefusesATakenNameAndAViewItCouldNotShow) {
  auto refused = [](View v, const std::string& words) {
    try {
      register_view(std::move(v));
      ADD_FAILURE() << "registered: " << words;
    } catch (const core::Error& e) {
      EXPECT_EQ(e.kind(), core::ErrorKind::kUsage);
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  refused(numbers_view("test_numbers", "other"), "view test_numbers is registered twice");
  refused(numbers_view("", "k"), "needs a name and a title");
  refused(numbers_view("bad_kind", "Not A Kind"), "Not A Kind");
  View no_read = numbers_view("no_read", "k");
  no_read.read = nullptr;
  refused(no_read, "view no_read has no read function");
  View no_y = numbers_view("no_y", "k");
  no_y.chart->y.clear();
  refused(no_y, "names no column to draw");
  for (const auto& v : views()) EXPECT_NE(v.name, "no_y");  // nothing refused was kept
}

// Eleventh tester, 11b-D7: the dashboard's view of a run read every record
// of its kind, then kept every k-th row. A view that makes a row per record
// is read from the sampled records alone, and its rows are those of the
// whole view sampled; another view is read whole, then sampled the same way.
TEST_F(ViewsTest, AViewsSampleIsReadFromItsSampledRecords) {
  std::vector<Record> recs;
  for (int i = 0; i < 100; ++i) recs.push_back({"t" + std::to_string(i % 3), i, 0, f64(i)});
  store->append_records(run.uuid, "test_numbers", recs);
  int64_t records_read = 0;
  View counted = numbers_view("counted", "test_numbers");
  counted.read = [&](Store& s, const RunInfo& r) {
    ViewTable t = read_number_records(s, r, "test_numbers", "tensor", "value");
    records_read += std::ssize(t.rows);
    return t;
  };
  const ViewTable whole = read_view(*store, run, counted);
  ASSERT_EQ(whole.rows.size(), 100u);
  for (const size_t max_rows : {1, 7, 33, 100, 500}) {
    records_read = 0;
    int64_t total = -1;
    const ViewTable t = read_view_sample(*store, run, counted, max_rows, total);
    EXPECT_EQ(total, 100) << max_rows;
    const size_t k = (100 + max_rows - 1) / max_rows;
    std::vector<std::vector<ViewCell>> want;
    for (size_t i = 0; i < whole.rows.size(); i += k) want.push_back(whole.rows[i]);
    EXPECT_EQ(t.rows, want) << max_rows;
    EXPECT_EQ(records_read, std::ssize(want)) << max_rows;  // never all 100 for a sample
  }
  // Two rows a record: read whole, then sampled.
  View doubled = numbers_view("doubled", "test_numbers");
  doubled.read = [](Store& s, const RunInfo& r) {
    ViewTable t = read_number_records(s, r, "test_numbers", "tensor", "value");
    std::vector<std::vector<ViewCell>> rows;
    for (const auto& row : t.rows) rows.insert(rows.end(), {row, row});
    t.rows = std::move(rows);
    return t;
  };
  int64_t total = -1;
  const ViewTable t = read_view_sample(*store, run, doubled, 7, total);
  EXPECT_EQ(total, 200);
  ASSERT_EQ(t.rows.size(), 7u);  // every ceil(200 / 7) = 29th row
  EXPECT_EQ(t.rows[1], whole.rows[14]);
  EXPECT_EQ(t.rows[6], whole.rows[87]);
}

TEST_F(ViewsTest, ARowOfTheWrongWidthOrAChartOfAnAbsentColumnIsABugNamed) {
  store->append_records(run.uuid, "test_numbers", {{"a", 1, 0, f64(1)}});
  View v = numbers_view("wide", "test_numbers");
  v.read = [](Store&, const RunInfo&) { return ViewTable{{"a", "b"}, {{int64_t{1}}}}; };
  EXPECT_THROW(read_view(*store, run, v), core::Error);
  v = numbers_view("absent", "test_numbers");
  v.chart->x = "epoch";
  try {
    read_view(*store, run, v);
    FAIL() << "a chart of a column the view has not was drawn";
  } catch (const core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("draws column 'epoch'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trainscope::store
