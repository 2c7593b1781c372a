// Observers only read (instrument/events.h), and the Instrumentation checks
// it where observer_check_enabled(): an observer that writes a gradient or
// a parameter fails the run, naming itself, the event and the tensor; a
// run with every unit on (profile, probes, fingerprint, monitor, metrics)
// passes the check. Turned on here with set_observer_check, so the check
// is exercised in a release build too.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "support/test_util.h"
#include "trainscope/config/config.h"
#include "trainscope/core/error.h"
#include "trainscope/instrument/instrumentation.h"
#include "trainscope/train/trainer.h"

namespace {

namespace ts = trainscope;
namespace tst = trainscope::testing;
using ts::instrument::RunContext;
using ts::instrument::Step;

// Doubles the first gradient after backward: what a data-parallel sync
// does, wrongly as an observer.
class GradientWriter : public ts::instrument::TrainObserver {
 public:
  void on_after_backward(const RunContext& ctx, const Step&) override {
    torch::NoGradGuard no_grad;
    for (auto& p : ctx.model.parameters())
      if (p.grad().defined()) {
        p.mutable_grad().mul_(2);
        return;
      }
  }
};

// Nudges a weight after the update.
class WeightWriter : public ts::instrument::TrainObserver {
 public:
  void on_after_step(const RunContext& ctx, const Step&) override {
    torch::NoGradGuard no_grad;
    ctx.model.parameters().front().add_(1e-3);
  }
};

// Turns the check on for one test and back to what it was.
class ObserverCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    was_ = ts::instrument::observer_check_enabled();
    ts::instrument::set_observer_check(true);
  }
  void TearDown() override { ts::instrument::set_observer_check(was_); }

  // Trains a small MLP on synthetic data with `observer` added (none when
  // null) and `sets`; the error's message when the run threw, else "".
  std::string train(std::shared_ptr<ts::instrument::TrainObserver> observer,
                    std::vector<std::string> sets = {}) {
    sets.push_back("monitor.interval_s=0");
    auto config = ts::config::parse_config(
        "data: {dataset: synthetic, synthetic: {size: 256}}\nmodel: {name: mlp, hidden: 16}\n"
        "train: {epochs: 1, batch_size: 64}\n",
        sets);
    std::shared_ptr<ts::store::Store> store =
        ts::store::Store::open({.uri = "sqlite:" + (dir_ / "check.db").string()});
    ts::train::TrainOptions options;
    options.name = "check";
    options.record_environment = false;
    ts::train::Trainer trainer(config, store, options);
    if (observer) trainer.add_observer(std::move(observer));
    try {
      trainer.run();
    } catch (const ts::core::Error& e) {
      EXPECT_EQ(e.kind(), ts::core::ErrorKind::kRuntime) << e.what();
      return e.what();
    }
    return {};
  }

  tst::TempDir dir_;
  bool was_ = false;
};

TEST_F(ObserverCheckTest, AnObserverThatWritesAGradientFailsTheRunNamingIt) {
  const std::string what = train(std::make_shared<GradientWriter>());
  EXPECT_NE(what.find("observer"), std::string::npos) << what;
  EXPECT_NE(what.find("GradientWriter"), std::string::npos) << what;
  EXPECT_NE(what.find("wrote the gradient of"), std::string::npos) << what;
  EXPECT_NE(what.find("in on_after_backward"), std::string::npos) << what;
}

TEST_F(ObserverCheckTest, AnObserverThatWritesAWeightFailsTheRunNamingIt) {
  const std::string what = train(std::make_shared<WeightWriter>());
  EXPECT_NE(what.find("WeightWriter"), std::string::npos) << what;
  EXPECT_NE(what.find("wrote parameter"), std::string::npos) << what;
  EXPECT_NE(what.find("in on_after_step"), std::string::npos) << what;
}

TEST_F(ObserverCheckTest, EveryUnitOnPassesTheCheck) {
  EXPECT_EQ(
      train(nullptr, {"profile.enabled=true", "profile.warmup_steps=1", "probes.preset=full",
                      "probes.every=1", "probes.tensorboard=false", "checkpoint.every_steps=2"}),
      "");
}

TEST_F(ObserverCheckTest, OffItLetsAWritingObserverThrough) {
  ts::instrument::set_observer_check(false);
  EXPECT_EQ(train(std::make_shared<GradientWriter>()), "");
}

}  // namespace
