// Evaluation of a classifier on a split: loss, accuracy, macro-F1, top-5,
// ROC-AUC and the confusion matrix.
#include <torch/torch.h>

#include <algorithm>
#include <numeric>

#include "trainscope/checkpoint/checkpoint.h"
#include "trainscope/config/seeds.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/train/torch_env.h"
#include "trainscope/train/trainer.h"

namespace trainscope::train {
using checkpoint::read_checkpoint;
using checkpoint::require_checkpoint;
using config::derive_seeds;
using config::StreamSeeds;
using core::ErrorKind;
using core::fail;
using data::channels_last;
using data::Dataset;
using data::DataSplits;
using data::dtype_of;
using data::load_data;
using data::to_input;
using models::Classifier;
using models::make_model;
using models::shape_of;
using models::to_channels_last;

namespace {

// What a pass over the split accumulates.
struct Tally {
  double loss_sum = 0;
  int64_t top5 = 0;
  std::vector<double> scores;  // P(class 1), for two-class ROC-AUC
  std::vector<int64_t> truth;
};

void tally_batch(const torch::Tensor& out, const torch::Tensor& y, instrument::EvalResult& r,
                 Tally& t) {
  namespace F = torch::nn::functional;
  t.loss_sum +=
      F::cross_entropy(out, y, F::CrossEntropyFuncOptions().reduction(torch::kSum)).item<double>();
  auto [top_value, pred] = out.max(1);
  const torch::Tensor top32 = top_value.to(torch::kFloat32);
  auto pa = pred.accessor<int64_t, 1>();
  auto ya = y.accessor<int64_t, 1>();
  auto ta = top32.accessor<float, 1>();
  const int64_t n = y.size(0);
  for (int64_t i = 0; i < n; ++i) {
    ++r.confusion[ya[i]][pa[i]];
    r.labels.push_back(static_cast<int32_t>(ya[i]));
    r.predicted.push_back(static_cast<int32_t>(pa[i]));
    r.top_logit.push_back(ta[i]);
  }
  if (r.confusion.size() > 5) {
    auto top = std::get<1>(out.topk(5, 1));
    t.top5 += top.eq(y.unsqueeze(1)).any(1).sum().item<int64_t>();
  }
  if (r.confusion.size() == 2) {
    auto p1 = torch::softmax(out.to(torch::kFloat64), 1).select(1, 1);
    auto pacc = p1.accessor<double, 1>();
    for (int64_t i = 0; i < n; ++i) {
      t.scores.push_back(pacc[i]);
      t.truth.push_back(ya[i]);
    }
  }
}

// ROC-AUC as the Mann-Whitney statistic (ties count one half); -1 when one
// class is absent.
double roc_auc(const std::vector<double>& scores, const std::vector<int64_t>& truth) {
  std::vector<size_t> idx(scores.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  double rank_sum = 0;
  int64_t pos = 0;
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j < idx.size() && scores[idx[j]] == scores[idx[i]]) ++j;
    double avg_rank = (static_cast<double>(i) + static_cast<double>(j) + 1) / 2.0;
    for (size_t t = i; t < j; ++t)
      if (truth[idx[t]] == 1) rank_sum += avg_rank, ++pos;
    i = j;
  }
  const int64_t neg = static_cast<int64_t>(scores.size()) - pos;
  if (pos == 0 || neg == 0) return -1;
  const double p = static_cast<double>(pos), q = static_cast<double>(neg);
  return (rank_sum - p * (p + 1) / 2.0) / (p * q);
}

// Accuracy, per-class accuracy and macro-F1 from the confusion matrix.
void summarize_confusion(instrument::EvalResult& r) {
  const size_t k = r.confusion.size();
  int64_t correct = 0, f1_classes = 0;
  double f1_sum = 0;
  for (size_t c = 0; c < k; ++c) {
    int64_t tp = r.confusion[c][c], row = 0, col = 0;
    for (size_t j = 0; j < k; ++j) {
      row += r.confusion[c][j];
      col += r.confusion[j][c];
    }
    correct += tp;
    r.per_class_accuracy.push_back(row ? static_cast<double>(tp) / static_cast<double>(row) : 0.0);
    if (row + col > 0) {
      f1_sum += 2.0 * static_cast<double>(tp) / static_cast<double>(row + col);
      ++f1_classes;
    }
  }
  r.accuracy = static_cast<double>(correct) / static_cast<double>(r.samples);
  r.macro_f1 = f1_classes ? f1_sum / static_cast<double>(f1_classes) : 0.0;
}

}  // namespace

instrument::EvalResult evaluate(Classifier& model, const Dataset& data, const DataSplits& splits,
                                int64_t batch_size, torch::ScalarType dtype, bool channels_last) {
  torch::NoGradGuard ng;
  const bool was_training = model.is_training();
  model.eval();
  const auto k = static_cast<size_t>(data.classes);
  instrument::EvalResult r;
  r.confusion.assign(k, std::vector<int64_t>(k, 0));
  Tally t;
  // The model's device (compute.device); the tally is the CPU's.
  const auto params = model.parameters();
  const torch::Device device = params.empty() ? torch::kCPU : params.front().device();
  for (int64_t begin = 0; begin < data.size(); begin += batch_size) {
    const int64_t len = std::min(batch_size, data.size() - begin);
    auto x =
        to_input(data.images.narrow(0, begin, len), splits.mean, splits.std, dtype, channels_last);
    tally_batch(model.forward(x.to(device)).to(torch::kCPU), data.labels.narrow(0, begin, len), r,
                t);
  }
  model.train(was_training);
  r.samples = data.size();
  if (r.samples == 0) return r;
  r.loss = t.loss_sum / static_cast<double>(r.samples);
  summarize_confusion(r);
  if (k > 5) r.top5 = static_cast<double>(t.top5) / static_cast<double>(r.samples);
  if (k == 2) r.roc_auc = roc_auc(t.scores, t.truth);
  return r;
}

CheckpointEval evaluate_run(store::Store& store, const store::RunInfo& run,
                            const std::string& checkpoint) {
  if (run.config_text.empty())
    fail(ErrorKind::kUsage, "run {} was not recorded by the trainer (it has no config)",
         core::short_uuid(run.uuid));
  store::verify_config(run);  // the model is built from it
  const auto ck = require_checkpoint(store, run, checkpoint);
  config::Config cfg =
      config::parse_trained_config(run.config_text, "run " + core::short_uuid(run.uuid));
  apply_determinism(cfg);
  const StreamSeeds seeds = derive_seeds(cfg);
  DataSplits data = load_data(cfg.data, seeds.data_order);
  at::Generator g = at::detail::createCPUGenerator(seeds.dropout);
  auto model = make_model(cfg.model, shape_of(data), g);
  model->to(dtype_of(cfg));
  read_checkpoint(ck.path, *model, nullptr, nullptr);
  if (channels_last(cfg)) to_channels_last(*model);
  CheckpointEval out;
  out.checkpoint = ck.name;
  out.result =
      evaluate(*model, data.test, data, cfg.eval.batch_size, dtype_of(cfg), channels_last(cfg));
  out.class_names = data.test.class_names;
  return out;
}

}  // namespace trainscope::train
