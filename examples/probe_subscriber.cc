// A probe subscriber of your own: a per-layer metric written once, computed
// for every layer of any model off the training thread. This one is the
// fraction of weights whose magnitude is below 1e-3 (how sparse a layer is),
// every 5 steps, recorded as probe/<layer>/weights/near_zero.
//   build/examples/probe_subscriber [sqlite:PATH] && trainscope probes probe-subscriber
#include <trainscope/probes/observer.h>
#include <trainscope/probes/probes.h>
#include <trainscope/train/trainer.h>

#include <cmath>
#include <cstdio>

namespace ts = trainscope;
using ts::probes::Kind;

struct NearZero : ts::probes::Subscriber {
  std::string name() const override { return "near_zero"; }
  std::set<Kind> kinds() const override { return {Kind::kWeights}; }
  int64_t every() const override { return 5; }
  // On a probe worker thread; `p` holds copies, never the model's tensors.
  void on_layer(const ts::probes::LayerPacket& p, ts::probes::Sink& sink) override {
    const auto& w = p.get(Kind::kWeights)->values;
    size_t small = 0;
    for (float x : w) small += std::fabs(x) < 1e-3f;
    sink.scalar({p.layer->name, "weights/near_zero", p.at, double(small) / w.size()});
  }
};

int main(int argc, char** argv) {
  std::shared_ptr<ts::store::Store> store =
      ts::store::Store::open({.uri = argc > 1 ? argv[1] : ""});
  auto config = ts::config::parse_config(
      "data: {dataset: fashion-mnist, train_subset: 2560, test_subset: 500}\n", {"train.epochs=1"});
  ts::train::TrainOptions options;
  options.name = "probe-subscriber";
  ts::train::Trainer trainer(config, store, options);
  // A probe subscriber of one's own attaches like any observer.
  trainer.add_observer(std::make_shared<ts::probes::ProbeObserver>(
      std::vector<std::shared_ptr<ts::probes::Subscriber>>{std::make_shared<NearZero>()}));
  auto result = trainer.run();
  std::printf("recorded run %s: %lld steps, probe/<layer>/weights/near_zero every 5 steps\n",
              result.run_uuid.c_str(), static_cast<long long>(result.steps));
}
