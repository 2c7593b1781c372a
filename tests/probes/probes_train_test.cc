// Probes on real training through the real CLI: what `probes: standard`
// records, the TensorBoard file decoded by an independent runtime, and the
// alerts of configs/probes/ (learning rate 100x too high, overflow,
// overfitting) against a healthy demo that raises none.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "support/test_util.h"
#include "trainscope/probes/records.h"
#include "trainscope/store/store.h"

namespace fs = std::filesystem;
namespace store = trainscope::store;
namespace tst = trainscope::testing;
namespace probes = trainscope::probes;
using nlohmann::json;

namespace {

class ProbesTrainTest : public ::testing::Test {
 protected:
  std::string cli(const std::string& args) {
    return std::string(TS_CLI_BIN) + " --store sqlite:" + (dir_ / "p.db").string() + " " + args;
  }
  tst::CommandResult train(const std::string& config, const std::string& sets) {
    return tst::run_command(cli("train " + std::string(TS_SOURCE_DIR) + "/" + config + " " + sets));
  }
  std::unique_ptr<store::Store> open() {
    return store::Store::open({.uri = "sqlite:" + (dir_ / "p.db").string()});
  }
  std::vector<probes::RunEvent> alerts(const std::string& name) {
    auto s = open();
    auto runs = s->list_runs({.name = name});
    EXPECT_EQ(runs.size(), 1u) << name;
    return runs.empty() ? std::vector<probes::RunEvent>{} : probes::read_events(*s, runs[0].uuid);
  }
  tst::TempDir dir_;
};

// Scalars in the store and in the TensorBoard file, by (tag, step).
void expect_scalars_match(store::Store& s, const std::string& uuid, const json& file) {
  std::map<std::pair<std::string, int64_t>, double> in_file;
  for (const auto& v : file["scalars"]) in_file[{v[0], v[1]}] = v[2];
  size_t checked = 0;
  for (const auto& m : s.metric_summaries(uuid)) {
    if (m.key.rfind("probe/", 0) != 0 || m.key == "probe/dropped") continue;
    std::string tag = m.key.substr(6);
    for (const auto& p : s.metric(uuid, m.key)) {
      auto it = in_file.find({tag, p.step});
      ASSERT_NE(it, in_file.end()) << tag << " step " << p.step;
      EXPECT_EQ(it->second, static_cast<double>(static_cast<float>(p.value))) << tag;
      ++checked;
    }
  }
  EXPECT_EQ(checked, in_file.size());
}

void expect_histograms_match(store::Store& s, const std::string& uuid, const json& file) {
  auto hs = probes::read_histograms(s, uuid);
  ASSERT_EQ(hs.size(), file["histograms"].size());
  std::map<std::pair<std::string, int64_t>, json> in_file;
  for (const auto& h : file["histograms"]) in_file[{h["tag"], h["step"]}] = h;
  for (const auto& at : hs) {
    const probes::Histogram& h = at.histogram;
    auto it = in_file.find({at.key, at.step});
    ASSERT_NE(it, in_file.end()) << at.key << " step " << at.step;
    const json& f = it->second;
    EXPECT_EQ(f["bucket"].size(), 64u);
    int64_t total = 0;
    for (size_t b = 0; b < h.counts.size(); ++b) {
      EXPECT_EQ(f["bucket"][b].get<double>(), static_cast<double>(h.counts[b]));
      total += h.counts[b];
    }
    EXPECT_EQ(f["num"].get<double>(), static_cast<double>(total));
    EXPECT_EQ(f["min"].get<double>(), h.low);
    EXPECT_EQ(f["max"].get<double>(), h.high);
    EXPECT_EQ(f["bucket_limit"].back().get<double>(), h.high);
    EXPECT_EQ(h.nan + h.pos_inf + h.neg_inf, 0);
  }
}

}  // namespace

TEST_F(ProbesTrainTest, StandardProbesRecordSeriesHistogramsAndATensorBoardFile) {
  auto r = train("configs/demo.yaml",
                 "--set probes=standard --set data.train_subset=2560 --set data.test_subset=500 "
                 "--set train.epochs=2 --name healthy");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto s = open();
  std::string uuid = s->list_runs({.name = "healthy"}).at(0).uuid;

  auto ratios = tst::run_command(cli("probes healthy --kind weights --stat update_ratio -f json"));
  ASSERT_EQ(ratios.exit_code, 0) << ratios.out;
  std::map<std::string, std::vector<int64_t>> steps;
  for (const auto& row : json::parse(ratios.out)) steps[row["layer"]].push_back(row["step"]);
  EXPECT_EQ(steps.size(), 4u);  // conv1, conv2, fc1, fc2
  // Every step up to 10, then every 10th: 1..10, 20, 30, 40.
  EXPECT_EQ(steps["features.conv1"],
            (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 30, 40}));
  auto norms =
      tst::run_command(cli("probes healthy --layer 'classifier.*' --kind weight_gradients"));
  EXPECT_NE(norms.out.find("weight_gradients/l2"), std::string::npos) << norms.out;
  EXPECT_NE(norms.out.find("no alerts"), std::string::npos) << norms.out;  // healthy

  auto svg = tst::run_command(cli("probes healthy --svg " + (dir_ / "ratio.svg").string()));
  ASSERT_EQ(svg.exit_code, 0) << svg.out;
  std::string text = tst::run_command("cat " + (dir_ / "ratio.svg").string()).out;
  EXPECT_NE(text.find("features.conv2"), std::string::npos);
  auto heat = tst::run_command(
      cli("probes healthy --histogram features.conv1/weights --svg " + (dir_ / "h.svg").string()));
  ASSERT_EQ(heat.exit_code, 0) << heat.out;

  // The event file among the artifacts, decoded with python3-protobuf.
  std::string events;
  for (const auto& a : s->artifacts(uuid))
    if (a.kind == "tensorboard") events = a.path.string();
  ASSERT_FALSE(events.empty());
  EXPECT_NE(events.find("events.out.tfevents."), std::string::npos);
  auto out = dir_ / "tb.json";
  auto dec =
      tst::run_command("/usr/bin/python3 " TS_TFEVENTS_DECODER " " + events + " " + out.string());
  ASSERT_EQ(dec.exit_code, 0) << dec.out;  // every CRC checked
  json file = json::parse(std::ifstream(out));
  EXPECT_EQ(file["file_version"], "brain.Event:2");
  expect_scalars_match(*s, uuid, file);
  expect_histograms_match(*s, uuid, file);
  EXPECT_EQ(probes::read_histograms(*s, uuid, "features.conv1/weights").size(),
            4u);  // steps 10..40
}

TEST_F(ProbesTrainTest, ALearningRate100xTooHighIsCaughtInTheFirstEpoch) {
  auto r = train("configs/probes/lr_too_high.yaml", "--set data.train_subset=3840");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto ev = alerts("lr_too_high");
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev[0].name, "lr_too_high");
  EXPECT_LE(ev[0].step, 30);  // one epoch of 3840 / 128 steps
  EXPECT_NE(r.out.find("learning rate is too high"), std::string::npos) << r.out;  // printed
}

TEST_F(ProbesTrainTest, AnOverflowNamesTheFirstNonFiniteLayer) {
  auto r = train("configs/probes/overflow.yaml", "");
  EXPECT_NE(r.exit_code, 0) << r.out;  // the run fails on the NaN loss ...
  auto ev = alerts("overflow");
  ASSERT_EQ(ev.size(), 1u);  // ... and says where it began
  EXPECT_EQ(ev[0].name, "nan_origin");
  EXPECT_EQ(ev[0].source, "features.conv2");
  EXPECT_NE(ev[0].message.find("forward pass"), std::string::npos) << ev[0].message;
}

TEST_F(ProbesTrainTest, OverfittingIsCaught) {
  auto r = train("configs/probes/overfit.yaml", "");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto ev = alerts("overfit");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].name, "overfitting");
}

TEST_F(ProbesTrainTest, BadProbeSettingsSayWhatIsValid) {
  auto layer = train("configs/demo.yaml", "--set probes=economy --set probes.layers='nope.*'");
  EXPECT_NE(layer.exit_code, 0);
  EXPECT_NE(layer.out.find("features.conv1 (Conv2d)"), std::string::npos) << layer.out;
  auto preset = train("configs/demo.yaml", "--set probes=cheap");
  EXPECT_NE(preset.exit_code, 0);
  EXPECT_NE(preset.out.find("economy"), std::string::npos) << preset.out;
  auto every = train("configs/demo.yaml", "--set probes=economy --set probes.every=0");
  EXPECT_NE(every.exit_code, 0);
  EXPECT_NE(every.out.find("probes.every"), std::string::npos) << every.out;
  auto kind = train("configs/demo.yaml", "--set probes=economy --set probes.kinds=weight");
  EXPECT_NE(kind.exit_code, 0);
  EXPECT_NE(kind.out.find("weight_gradients"), std::string::npos) << kind.out;
  auto no_probes = tst::run_command(cli("probes nothing"));
  EXPECT_NE(no_probes.exit_code, 0);
}
