// The Trainer as an event source: what its units may ask of it besides
// the events (instrument::Source).
#include <torch/torch.h>

#include "session.h"
#include "trainscope/train/torch_env.h"

namespace trainscope::train {
using data::channels_last;
using data::Dataset;
using data::dtype_of;
using data::to_input;
using models::Classifier;

namespace {

class SessionSource final : public instrument::Source {
 public:
  SessionSource(Trainer::Session& s, Classifier& model) : s_(s), model_(model) {}

  torch::nn::Module& model() override { return model_; }
  std::string model_name() const override { return s_.cfg.model.name; }
  torch::Tensor forward(const torch::Tensor& x) override { return model_.forward(x); }
  torch::Tensor train_inputs(int64_t n) override { return inputs(s_.data.train, n); }
  torch::Tensor test_inputs(int64_t n) override { return inputs(s_.data.test, n); }
  std::optional<instrument::EvalResult> evaluate_test(int64_t n) override {
    const Dataset& test = s_.data.test;
    if (test.size() == 0) return std::nullopt;
    Dataset part = test.select(torch::arange(std::min<int64_t>(n, test.size())));
    return evaluate(model_, part, s_.data, s_.cfg.eval.batch_size, dtype_of(s_.cfg),
                    channels_last(s_.cfg));
  }
  std::vector<std::pair<torch::Tensor, torch::Tensor>> optimizer_state() override {
    return s_.opt ? s_.opt->state_tensors()
                  : std::vector<std::pair<torch::Tensor, torch::Tensor>>{};
  }
  std::optional<at::Generator> dropout_generator() override { return s_.dropout_gen; }

 private:
  // The first n examples of a split as the loop feeds them.
  torch::Tensor inputs(const Dataset& d, int64_t n) const {
    if (d.size() == 0) return {};
    return to_input(d.images.narrow(0, 0, std::min<int64_t>(n, d.size())), s_.data.mean,
                    s_.data.std, dtype_of(s_.cfg), channels_last(s_.cfg));
  }

  Trainer::Session& s_;
  Classifier& model_;
};

}  // namespace

std::unique_ptr<instrument::Source> Trainer::make_source(Session& s) {
  return std::make_unique<SessionSource>(s, *model_);
}

}  // namespace trainscope::train
