// `trainscope plot` of two demo runs' train/loss, opened in headless
// Chromium: two line series drawn, no console errors.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_util.h"

namespace tst = trainscope::testing;

TEST(PlotTest, TwoRunsLossCurvesRenderAsTwoLinesInABrowser) {
  tst::TempDir dir;
  std::string ts = std::string(TS_CLI_BIN) + " -q --store sqlite:" + (dir / "p.db").string() + " ";
  // Names that are not hexadecimal: "a" would also be the prefix of a UUID.
  for (const char* run : {"run-one", "run-two"}) {
    auto r = tst::run_command(ts + "train " TS_SOURCE_DIR "/configs/demo.yaml --name " + run +
                              " --set train.epochs=2 --set data.train_subset=2560 "
                              "--set data.test_subset=200 --set seeds.master=" +
                              (run[5] == 'o' ? "1" : "2"));
    ASSERT_EQ(r.exit_code, 0) << r.out;
  }
  auto svg = dir / "loss.svg";
  auto plot = tst::run_command(ts + "plot run-one run-two train/loss -o " + svg.string());
  ASSERT_EQ(plot.exit_code, 0) << plot.out;
  // An HTML page holding the SVG, as a browser opens it.
  std::ofstream(dir / "loss.html")
      << "<!doctype html><html><body>" << tst::run_command("cat " + svg.string()).out
      << "</body></html>";
  auto browser = tst::run_command(std::string(TS_BROWSER_CHECK) + " " +
                                  (dir / "loss.html").string() + " " TS_SCREENSHOT " 0 1 2");
  EXPECT_EQ(browser.exit_code, 0) << browser.out;
  EXPECT_NE(browser.out.find("lines 2"), std::string::npos) << browser.out;
  auto csv = tst::run_command(ts + "plot run-one run-two train/loss --x epoch -f csv");
  EXPECT_NE(csv.out.find("run,name,key,x,value,smoothed"), std::string::npos) << csv.out;
  auto missing = tst::run_command(ts + "plot run-one no/such/key");
  EXPECT_EQ(missing.exit_code, 3) << missing.out;
}

// Rows of `plot -f csv` (run,name,key,x,value,smoothed) of one key: its x.
std::vector<std::string> xs_of(const std::string& csv, const std::string& key) {
  std::vector<std::string> out;
  std::istringstream in(csv);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string x; std::getline(fields, x, ',');) f.push_back(x);
    if (f.size() == 6 && f[2] == key) out.push_back(f[3]);
  }
  return out;
}

// Epoch metrics sit where their epoch ended: test/loss at the steps the
// run's "epoch" series records, not at steps 1, 2; on --x epoch at 1, 2.
// "loss" overlays train/loss and test/loss.
TEST(PlotTest, TestMetricsSitAtTheStepTheirEpochEndedAndLossOverlaysTrainAndTest) {
  tst::TempDir dir;
  std::string ts = std::string(TS_CLI_BIN) + " -q --store sqlite:" + (dir / "p.db").string() + " ";
  auto r = tst::run_command(ts + "train " TS_SOURCE_DIR
                                 "/configs/demo.yaml --name two-epochs "
                                 "--set train.epochs=2 --set data.train_subset=1280 "
                                 "--set data.test_subset=200");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto ends = tst::run_command(ts + "metrics two-epochs epoch --format csv");
  ASSERT_EQ(ends.exit_code, 0) << ends.out;
  std::vector<std::string> end_steps;  // step,wall_time,value rows (or similar): the step
  std::istringstream in(ends.out);
  std::string header;
  std::getline(in, header);
  ASSERT_EQ(header.rfind("step,", 0), 0u) << header;
  for (std::string line; std::getline(in, line);)
    end_steps.push_back(line.substr(0, line.find(',')));
  ASSERT_EQ(end_steps.size(), 2u) << ends.out;
  EXPECT_NE(end_steps[0], "1");
  auto by_step = tst::run_command(ts + "plot two-epochs test/loss -f csv");
  ASSERT_EQ(by_step.exit_code, 0) << by_step.out;
  EXPECT_EQ(xs_of(by_step.out, "test/loss"), end_steps) << by_step.out;
  auto by_epoch = tst::run_command(ts + "plot two-epochs test/loss --x epoch -f csv");
  EXPECT_EQ(xs_of(by_epoch.out, "test/loss"), (std::vector<std::string>{"1", "2"})) << by_epoch.out;
  // train/loss on the epoch axis: its last step ended epoch 2.
  auto train =
      xs_of(tst::run_command(ts + "plot two-epochs train/loss --x epoch -f csv").out, "train/loss");
  ASSERT_FALSE(train.empty());
  EXPECT_EQ(train.back(), "2");
  EXPECT_LT(std::stod(train.front()), 1.0);
  auto loss = tst::run_command(ts + "plot two-epochs loss -f csv");
  ASSERT_EQ(loss.exit_code, 0) << loss.out;
  EXPECT_EQ(xs_of(loss.out, "test/loss"), end_steps);
  EXPECT_FALSE(xs_of(loss.out, "train/loss").empty());
  EXPECT_TRUE(xs_of(loss.out, "lr").empty());  // bookkeeping only when named
}
