// The torch-free half of the probes: histograms, the hub's delivery and
// queue policies, alert rules on series with known answers, and the
// TensorBoard writer checked by an independent decoder.
#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <fstream>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>

#include "support/test_util.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/probes/builtin.h"
#include "trainscope/probes/hub.h"
#include "trainscope/probes/outputs.h"
#include "trainscope/probes/records.h"
#include "trainscope/store/accept.h"
#include "trainscope/store/payload.h"
#include "trainscope/store/store.h"
#include "trainscope/tfevents/tfevents.h"

namespace fs = std::filesystem;
namespace probes = trainscope::probes;
namespace tst = trainscope::testing;
using nlohmann::json;
using probes::Kind;

namespace {

struct Recorded : probes::Output {
  std::mutex mu;
  std::vector<probes::SeriesPoint> scalars;
  std::vector<probes::Alert> alerts;
  void scalar(const probes::SeriesPoint& p) override { scalars.push_back(p); }
  void alert(const probes::Alert& a) override { alerts.push_back(a); }
  std::vector<std::string> alert_names() {
    std::vector<std::string> out;
    for (const auto& a : alerts) out.push_back(a.name);
    return out;
  }
};

probes::BufferPtr buffer(std::vector<float> v) {
  auto b = std::make_shared<probes::Buffer>();
  b->shape = {static_cast<int64_t>(v.size())};
  b->values = std::move(v);
  return b;
}

// Publishes `values` of one series into alert rules and returns the alerts.
std::vector<std::string> alerts_for(const std::vector<std::vector<probes::SeriesPoint>>& steps,
                                    probes::AlertSettings settings = {}) {
  auto out = std::make_shared<Recorded>();
  {
    probes::Hub hub({probes::alert_rules(settings)}, {out}, {});
    for (const auto& points : steps)
      for (const auto& p : points) hub.sink().scalar(p);
  }
  return out->alert_names();
}

probes::SeriesPoint point(const std::string& layer, const std::string& name, int64_t step, double v,
                          int index = -1) {
  return {layer, name, {step, 0, step}, v, index};
}

}  // namespace

TEST(ProbesTest, Crc32cIsTheCastagnoliChecksum) {
  EXPECT_EQ(trainscope::tfevents::crc32c("123456789", 9), 0xE3069283u);  // the standard check value
  EXPECT_EQ(trainscope::tfevents::crc32c("", 0), 0u);
}

TEST(ProbesTest, HistogramCountsNanAndInfinitiesApart) {
  std::vector<float> v = {0, 1, 2, 3, 4, NAN, INFINITY, -INFINITY, -INFINITY};
  auto h = probes::make_histogram(v, 4);
  EXPECT_EQ(h.low, 0);
  EXPECT_EQ(h.high, 4);
  EXPECT_EQ(h.counts, (std::vector<int64_t>{1, 1, 1, 2}));  // the maximum falls in the last bin
  EXPECT_EQ(h.nan, 1);
  EXPECT_EQ(h.pos_inf, 1);
  EXPECT_EQ(h.neg_inf, 2);
  EXPECT_EQ(h.sum, 10);
  auto constant = probes::make_histogram({2, 2, 2}, 64);
  EXPECT_EQ(constant.counts[0], 3);
  EXPECT_EQ(probes::make_histogram({NAN}, 8).finite(), 0);
}

TEST(ProbesTest, GlobAndLayerFilter) {
  EXPECT_TRUE(probes::glob_match("features.*", "features.conv1"));
  EXPECT_FALSE(probes::glob_match("features.*", "classifier.fc1"));
  EXPECT_TRUE(probes::glob_match("*.conv?", "features.conv2"));
  EXPECT_TRUE(probes::glob_match("*", ""));
  probes::ProbeSettings s;
  s.types = {"Conv2d"};
  s.max_depth = 2;
  EXPECT_TRUE(probes::layer_selected(s, {"features.conv1", "Conv2d", 2, 0}));
  EXPECT_FALSE(probes::layer_selected(s, {"features.relu1", "ReLU", 2, 1}));
  EXPECT_FALSE(probes::layer_selected(s, {"a.b.conv", "Conv2d", 3, 2}));
}

TEST(ProbesTest, UnknownKindsAndPresetsListTheValidOnes) {
  try {
    probes::parse_kind("weight");
    FAIL();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("weights, weight_gradients"), std::string::npos);
  }
  EXPECT_THROW(probes::check_preset("cheap"), std::exception);
}

// A subscriber that records the order of its calls and publishes a derived
// series (the squared L2) that a second subscriber follows.
struct OrderSub : probes::Subscriber {
  std::mutex mu;
  std::map<std::string, std::vector<int64_t>> steps;
  std::string name() const override { return "order"; }
  std::set<Kind> kinds() const override { return {Kind::kWeights}; }
  int64_t every() const override { return 2; }
  void on_layer(const probes::LayerPacket& p, probes::Sink& sink) override {
    {
      std::lock_guard lock(mu);
      steps[p.layer->name].push_back(p.at.step);
    }
    EXPECT_NE(p.get(Kind::kWeights), nullptr);
    EXPECT_NE(p.get(Kind::kWeightGradients), nullptr);  // delivered with the same packet
    sink.scalar({p.layer->name, "weights/sq", p.at, p.get(Kind::kWeights)->values[0] * 2.0});
  }
};
struct DerivedSub : probes::Subscriber {
  std::vector<double> seen;
  std::string name() const override { return "derived"; }
  bool wants_series(const probes::SeriesPoint& p) const override { return p.name == "weights/sq"; }
  void on_series(const probes::SeriesPoint& p, probes::Sink&) override { seen.push_back(p.value); }
};

TEST(ProbesTest, HubDeliversEachLayerInStepOrderAndDerivedSeriesReachSubscribers) {
  auto order = std::make_shared<OrderSub>();
  auto derived = std::make_shared<DerivedSub>();
  auto out = std::make_shared<Recorded>();
  probes::LayerInfo a{"a", "Linear", 1, 0}, b{"b", "Linear", 1, 1};
  {
    probes::Hub hub({order, derived}, {out}, {.workers = 2, .queue_capacity = 4});
    EXPECT_TRUE(hub.kinds_due(3).empty());
    EXPECT_EQ(hub.kinds_due(4), std::set<Kind>{Kind::kWeights});
    for (int64_t step = 2; step <= 40; step += 2)
      for (auto* l : {&a, &b}) {
        probes::LayerPacket p;
        p.layer = l;
        p.at = {step, 0, step};
        p.tensors[Kind::kWeights] = buffer({static_cast<float>(step)});
        p.tensors[Kind::kWeightGradients] = buffer({1});
        hub.publish(std::move(p));
      }
  }
  for (const auto* l : {"a", "b"}) {
    ASSERT_EQ(order->steps[l].size(), 20u) << l;
    EXPECT_TRUE(std::is_sorted(order->steps[l].begin(), order->steps[l].end())) << l;
  }
  EXPECT_EQ(derived->seen.size(), 40u);
  EXPECT_EQ(out->scalars.size(), 40u);
}

// Blocks in on_layer until released.
struct SlowSub : probes::Subscriber {
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, released = false;
  int calls = 0;
  std::string name() const override { return "slow"; }
  std::set<Kind> kinds() const override { return {Kind::kWeights}; }
  int64_t every() const override { return 1; }
  void on_layer(const probes::LayerPacket&, probes::Sink&) override {
    std::unique_lock lock(mu);
    ++calls;
    entered = true;
    cv.notify_all();
    cv.wait(lock, [&] { return released; });
  }
  void release() {
    std::lock_guard lock(mu);
    released = true;
    cv.notify_all();
  }
  void wait_entered() {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return entered; });
  }
};

TEST(ProbesTest, AFullQueueDropsAndCountsUnderTheDropPolicy) {
  auto slow = std::make_shared<SlowSub>();
  probes::LayerInfo l{"a", "Linear", 1, 0};
  auto packet = [&](int64_t step) {
    probes::LayerPacket p;
    p.layer = &l;
    p.at = {step, 0, step};
    p.tensors[Kind::kWeights] = buffer({1});
    return p;
  };
  probes::Hub hub({slow}, {}, {.workers = 1, .queue_capacity = 1, .block_when_full = false});
  hub.publish(packet(1));
  slow->wait_entered();                                     // the worker holds packet 1
  for (int64_t s = 2; s <= 5; ++s) hub.publish(packet(s));  // 2 waits, 3..5 are dropped
  EXPECT_EQ(hub.dropped(), 3);
  slow->release();
  hub.close();
  EXPECT_EQ(slow->calls, 2);
}

TEST(ProbesTest, AFullQueueMakesThePublisherWaitUnderTheBlockPolicy) {
  auto slow = std::make_shared<SlowSub>();
  probes::LayerInfo l{"a", "Linear", 1, 0};
  probes::Hub hub({slow}, {}, {.workers = 1, .queue_capacity = 1, .block_when_full = true});
  std::thread publisher([&] {
    for (int64_t s = 1; s <= 5; ++s) {
      probes::LayerPacket p;
      p.layer = &l;
      p.at = {s, 0, s};
      p.tensors[Kind::kWeights] = buffer({1});
      hub.publish(std::move(p));
    }
  });
  slow->wait_entered();
  slow->release();
  publisher.join();
  hub.close();
  EXPECT_EQ(hub.dropped(), 0);
  EXPECT_EQ(slow->calls, 5);
}

TEST(ProbesTest, UpdateRatioAlertsNeedPatienceAndFireOnce) {
  std::vector<std::vector<probes::SeriesPoint>> high, spike, fine;
  for (int s = 1; s <= 6; ++s) {
    high.push_back({point("fc1", "weights/update_ratio", s, 2.0)});
    spike.push_back({point("fc1", "weights/update_ratio", s, s == 3 ? 2.0 : 1e-3)});
    fine.push_back({point("fc1", "weights/update_ratio", s, 1e-3)});
  }
  EXPECT_EQ(alerts_for(high), std::vector<std::string>{"lr_too_high"});
  EXPECT_TRUE(alerts_for(spike).empty());
  EXPECT_TRUE(alerts_for(fine).empty());
  std::vector<std::vector<probes::SeriesPoint>> frozen;
  for (int s = 1; s <= 3; ++s) frozen.push_back({point("fc1", "weights/update_ratio", s, 0.0)});
  EXPECT_EQ(alerts_for(frozen), std::vector<std::string>{"lr_too_low"});
}

TEST(ProbesTest, DeadUnitsAndVanishingGradientsWithDepth) {
  std::vector<std::vector<probes::SeriesPoint>> dead, vanishing;
  for (int s = 1; s <= 5; ++s) {
    dead.push_back({point("relu", "activations/dead_fraction", s, 0.9)});
    vanishing.push_back({point("conv1", "weight_gradients/l2", s, 1e-9, 0),
                         point("fc2", "weight_gradients/l2", s, 1.0, 5)});
  }
  EXPECT_EQ(alerts_for(dead), std::vector<std::string>{"dead_units"});
  EXPECT_EQ(alerts_for(vanishing), std::vector<std::string>{"gradients_vanishing"});
}

TEST(ProbesTest, LossRisingAndOverfitting) {
  probes::AlertSettings s;
  s.loss_window = 3;
  std::vector<std::vector<probes::SeriesPoint>> rising, falling;
  for (int i = 1; i <= 20; ++i) {
    rising.push_back({point("", "loss", i * 10, 1.0 + 0.1 * i)});
    falling.push_back({point("", "loss", i * 10, 2.0 / i)});
  }
  EXPECT_EQ(alerts_for(rising, s), std::vector<std::string>{"loss_rising"});
  EXPECT_TRUE(alerts_for(falling, s).empty());
  // Train loss falls every epoch; the test loss is best at epoch 2, then climbs.
  std::vector<std::vector<probes::SeriesPoint>> overfit, healthy;
  for (int e = 1; e <= 8; ++e) {
    double test_loss = e <= 2 ? 1.0 / e : 0.5 + 0.2 * (e - 2);
    overfit.push_back({point("", "loss", e * 100, 1.0 / e),
                       point("", "test_accuracy", e * 100, 0.8),
                       point("", "test_loss", e * 100, test_loss)});
    healthy.push_back({point("", "loss", e * 100, 1.0 / e),
                       point("", "test_accuracy", e * 100, 0.8 + 0.01 * e),
                       point("", "test_loss", e * 100, 1.0 / e)});
  }
  EXPECT_EQ(alerts_for(overfit), std::vector<std::string>{"overfitting"});
  EXPECT_TRUE(alerts_for(healthy).empty());
}

// The writer's file, read back by python3-protobuf with the public schema.
TEST(ProbesTest, TensorBoardFileDecodesWithAnIndependentRuntime) {
  tst::TempDir dir;
  fs::path file;
  {
    probes::TfEventsWriter w(dir.path() / "tb");
    file = w.path();
    w.scalar(point("features.conv1", "weights/l2", 10, 2.5));
    w.scalar(point("", "loss", 20, 0.125));
    auto h = probes::make_histogram({0, 1, 1, 2, 3, NAN}, 4);
    w.histogram("features.conv1", Kind::kWeights, {10, 0, 10}, h, trainscope::core::unix_now());
  }
  EXPECT_EQ(file.filename().string().rfind("events.out.tfevents.", 0), 0u);
  auto out = dir.path() / "out.json";
  std::string cmd =
      "/usr/bin/python3 " TS_TFEVENTS_DECODER " " + file.string() + " " + out.string();
  auto r = tst::run_command(cmd);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json d = json::parse(std::ifstream(out));
  EXPECT_EQ(d["file_version"], "brain.Event:2");
  EXPECT_EQ(d["scalars"][0], json({"features.conv1/weights/l2", 10, 2.5}));
  EXPECT_EQ(d["scalars"][1], json({"loss", 20, 0.125}));
  const auto& hist = d["histograms"][0];
  EXPECT_EQ(hist["tag"], "features.conv1/weights");
  EXPECT_EQ(hist["num"], 5);
  EXPECT_EQ(hist["bucket"], json({1, 2, 1, 1}));
  EXPECT_EQ(hist["bucket_limit"], json({0.75, 1.5, 2.25, 3.0}));
  // One flipped byte: the decoder's CRC check refuses the file.
  std::string bytes = tst::run_command("cat " + file.string()).out;
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(bytes.size()) - 6);
  f.put('\x7f');
  f.close();
  EXPECT_NE(tst::run_command(cmd).exit_code, 0);
}

// SVCCA is invariant to invertible linear maps of a representation and
// near zero between unrelated ones.
TEST(ProbesTest, SvccaOfALinearImageIsOneAndOfNoiseIsSmall) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> z;
  const int n = 500, d = 6;
  std::vector<double> x(n * d), mixed(n * d), noise(n * 4);
  for (double& v : x) v = z(rng);
  for (double& v : noise) v = z(rng);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < d; ++j)  // an invertible mixing: x_j + 0.5 x_{j+1}, scaled
      mixed[i * d + j] = 3 * (x[i * d + j] + 0.5 * x[i * d + (j + 1) % d]) + 7;
  EXPECT_NEAR(probes::svcca(x, d, mixed, d, n), 1.0, 1e-9);
  EXPECT_LT(probes::svcca(x, d, noise, 4, n), 0.15);
  // One shared direction out of three: the mean correlation is about 1/3.
  std::vector<double> a(n * 3), b(n * 3);
  for (int i = 0; i < n; ++i) {
    double shared = z(rng);
    a[i * 3] = shared, b[i * 3] = shared;
    for (int j = 1; j < 3; ++j) a[i * 3 + j] = z(rng), b[i * 3 + j] = z(rng);
  }
  EXPECT_NEAR(probes::svcca(a, 3, b, 3, n), 1.0 / 3, 0.1);
}

// A long event key is cut at a character's start: cut inside a
// multi-byte character it was not UTF-8, and no store took the record.
TEST(EventKeyTest, ALongKeyIsCutAtACharactersStart) {
  for (size_t pad = 0; pad < 3; ++pad) {
    std::string name(pad, 'x');
    for (int i = 0; i < 200; ++i) name += "\u20ac";  // 3 bytes each
    const std::string key = probes::event_key("alert", name, "probe");
    EXPECT_LE(key.size(), trainscope::store::kMaxRecordKeyBytes) << pad;
    EXPECT_EQ(trainscope::store::record_problem("events", key, 0), std::nullopt) << key;
    EXPECT_EQ(key[key.size() - 17], '#');
  }
}

// Twenty-third hunt, A-D6: a histogram record with NaN, infinite or
// swapped bounds, or a count of 2^63, was drawn (y="nan") with exit 0.
TEST(HistogramRecordTest, BoundsAndCountsNoWriterRecordsAreADamagedStore) {
  namespace store = trainscope::store;
  auto s = store::Store::open({.uri = "sqlite::memory:"});
  const std::string uuid = s->create_run({}).uuid;
  auto read = [&](double low, double high, uint64_t count) -> std::string {
    store::PayloadWriter w;
    w.f64(low).f64(high).uvarint(0).uvarint(0).uvarint(0).uvarint(1).uvarint(count);
    const std::string key = "l/weights" + std::to_string(low) + std::to_string(count);
    s->append_records(uuid, probes::kHistogramsKind, {{key, 1, 1.0, w.take()}});
    try {
      return std::to_string(probes::read_histograms(*s, uuid, key).size());
    } catch (const trainscope::core::Error& e) {
      EXPECT_EQ(e.kind(), trainscope::core::ErrorKind::kStore);
      return e.what();
    }
  };
  EXPECT_EQ(read(0, 1, 5), "1");
  for (const double low : {std::nan(""), -std::numeric_limits<double>::infinity(), 2.0})
    EXPECT_NE(read(low, 1, 5).find("is no range of values; the store is damaged"),
              std::string::npos)
        << low;
  EXPECT_NE(read(0, 1, uint64_t{1} << 63)
                .find("a count of 9223372036854775808 is no element "
                      "count; the store is damaged"),
            std::string::npos);
}
