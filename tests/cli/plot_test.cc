// `trainscope plot` of two demo runs' train/loss, opened in headless
// Chromium: two line series drawn, no console errors.
#include <gtest/gtest.h>

#include <fstream>

#include "support/test_util.h"

namespace tst = trainscope::testing;

TEST(PlotTest, TwoRunsLossCurvesRenderAsTwoLinesInABrowser) {
  tst::TempDir dir;
  std::string ts = std::string(TS_CLI_BIN) + " -q --store sqlite:" + (dir / "p.db").string() + " ";
  // Names that are not hexadecimal: "a" would also be the prefix of a UUID.
  for (const char* run : {"run-one", "run-two"}) {
    auto r = tst::run_command(ts + "train " TS_SOURCE_DIR "/configs/demo.yaml --name " + run +
                              " --set train.epochs=1 --set data.train_subset=2560 "
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
