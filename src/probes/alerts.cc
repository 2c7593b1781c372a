// Alert rules over probe series. Each rule raises its alert once per run.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <set>

#include "trainscope/probes/builtin.h"

namespace trainscope::probes {

namespace {

class AlertRules : public Subscriber {
 public:
  explicit AlertRules(const AlertSettings& s) : s_(s) {}
  std::string name() const override { return "alerts"; }
  bool wants_series(const SeriesPoint& p) const override {
    return p.name == "weights/update_ratio" || p.name == "activations/dead_fraction" ||
           p.name == "activations/saturated_fraction" || p.name == "activations/sd" ||
           p.name == "weight_gradients/l2" || p.name == "loss" || p.name == "train_accuracy" ||
           p.name == "test_accuracy" || p.name == "test_loss";
  }
  void on_series(const SeriesPoint& p, Sink& sink) override {
    if (p.name == "weights/update_ratio") return update_ratio(p, sink);
    if (p.name == "activations/dead_fraction")
      return streak(p, p.value > s_.dead_fraction, "dead_units", sink,
                    fmt("{:.0f}% of the units of {} output only zeros (dead ReLUs) for {} "
                        "observations: lower the learning rate or change the init",
                        100 * p.value, p.layer, s_.patience));
    if (p.name == "activations/saturated_fraction")
      return streak(p, p.value > s_.saturated_fraction, "saturation", sink,
                    fmt("{:.0f}% of the outputs of {} are saturated (tanh beyond 0.99, sigmoid "
                        "beyond 0.01-0.99) for {} observations: its gradients vanish; lower the "
                        "initial weights or the learning rate, or normalise its input",
                        100 * p.value, p.layer, s_.patience));
    if (p.name == "activations/sd") return init_scale(p, sink);
    if (p.name == "weight_gradients/l2") return depth(p, sink);
    if (p.name == "loss") return loss(p, sink);
    if (p.name == "train_accuracy") train_accuracy_ = p.value;
    if (p.name == "test_accuracy") test_accuracy_ = p.value;
    if (p.name == "test_loss") overfitting(p, sink);
  }
  void on_end(Sink& sink) override {
    check_depth(sink);
    check_init(sink);
  }

 private:
  template <typename... A>
  static std::string fmt(const char* f, A&&... a) {
    return fmt::format(fmt::runtime(f), std::forward<A>(a)...);
  }

  void raise(Sink& sink, const std::string& name, const SeriesPoint& p, std::string message) {
    if (!raised_.insert(name).second) return;
    sink.alert({name, p.layer.empty() ? p.name : p.layer, p.at, std::move(message)});
  }

  // Counts consecutive observations of (rule, layer) for which `bad` holds.
  void streak(const SeriesPoint& p, bool bad, const std::string& rule, Sink& sink,
              const std::string& message) {
    int& n = streaks_[rule + "|" + p.layer];
    n = bad ? n + 1 : 0;
    if (n >= s_.patience) raise(sink, rule, p, message);
  }

  void update_ratio(const SeriesPoint& p, Sink& sink) {
    streak(p, p.value > s_.update_ratio_high, "lr_too_high", sink,
           fmt("update/weight ratio of {} is {:.3g} > {:g} for {} observations: the learning "
               "rate is too high",
               p.layer, p.value, s_.update_ratio_high, s_.patience));
    streak(p, p.value < s_.update_ratio_low, "lr_too_low", sink,
           fmt("update/weight ratio of {} is {:.3g} < {:g} for {} observations: the learning "
               "rate is too low (or the layer is frozen)",
               p.layer, p.value, s_.update_ratio_low, s_.patience));
  }

  // Gradient norm of the first layer against the last one, per step: a
  // step's values are complete when a later step begins.
  void depth(const SeriesPoint& p, Sink& sink) {
    if (p.at.step != grad_step_) {
      check_depth(sink);
      grads_.clear();
      grad_step_ = p.at.step;
    }
    grads_[p.layer_index] = p;
  }
  void check_depth(Sink& sink) {
    if (grads_.size() < 2) return;
    const SeriesPoint &first = grads_.begin()->second, &last = grads_.rbegin()->second;
    if (!(last.value > 0)) return;
    double r = first.value / last.value;
    streak(first, r > s_.grad_depth_ratio, "gradients_exploding", sink,
           fmt("gradient norm grows {:.3g}x from {} (last) to {} (first) for {} observations: "
               "gradients explode with depth",
               r, last.layer, first.layer, s_.patience));
    streak(first, r < 1 / s_.grad_depth_ratio, "gradients_vanishing", sink,
           fmt("gradient norm shrinks {} from {} (last) to {} (first) for {} observations: "
               "gradients vanish with depth",
               r > 0 ? fmt("{:.3g}x", 1 / r) : std::string("to zero"), last.layer, first.layer,
               s_.patience));
  }

  // The spread of the activations at the first probed step: their SD
  // differing between two layers by more than alert_grad_depth_ratio means
  // the initial weights scale the signal up or down layer after layer.
  void init_scale(const SeriesPoint& p, Sink& sink) {
    if (init_step_ < 0) init_step_ = p.at.step;
    if (p.at.step != init_step_) return check_init(sink);
    if (p.value > 0 && std::isfinite(p.value)) init_sd_[p.layer_index] = p;
  }
  void check_init(Sink& sink) {
    if (init_sd_.size() < 2) return init_sd_.clear();
    auto by_value = [](const auto& a, const auto& b) { return a.second.value < b.second.value; };
    const SeriesPoint& low = std::min_element(init_sd_.begin(), init_sd_.end(), by_value)->second;
    const SeriesPoint& high = std::max_element(init_sd_.begin(), init_sd_.end(), by_value)->second;
    const double r = high.value / low.value;
    if (r > s_.grad_depth_ratio) {
      const bool shrinks = high.layer_index < low.layer_index;
      raise(sink, "bad_init", shrinks ? low : high,
            fmt("the activations' SD is {:.3g} at {} and {:.3g} at {} at step {}, {:.3g}x apart: "
                "the initial weights {} the signal layer after layer; use an init that keeps "
                "its scale (kaiming for ReLU, xavier for tanh)",
                high.value, high.layer, low.value, low.layer, init_step_, r,
                shrinks ? "shrink" : "amplify"));
    }
    init_sd_.clear();
  }

  // Mean of the last window against the window before it.
  void loss(const SeriesPoint& p, Sink& sink) {
    train_loss_ = p.value;
    losses_.push_back(p.value);
    size_t w = static_cast<size_t>(s_.loss_window);
    if (losses_.size() > 2 * w) losses_.pop_front();
    if (losses_.size() < 2 * w) return;
    double before = 0, after = 0;
    for (size_t i = 0; i < w; ++i) before += losses_[i], after += losses_[w + i];
    before /= w;
    after /= w;
    if (!std::isfinite(after)) return;  // the NaN rule speaks for that
    streak(p, after > before * 1.01, "loss_rising", sink,
           fmt("the loss rose from {:.4g} to {:.4g} (means of {} observations) for {} "
               "observations in a row",
               before, after, w, s_.patience));
    streak(p, std::fabs(after - before) <= 1e-4 * std::fabs(before), "loss_flat", sink,
           fmt("the loss stays at {:.4g} (means of {} observations) for {} observations: "
               "training has stalled",
               after, w, s_.patience));
  }

  // After each evaluation (its loss comes after its accuracy): the test loss
  // well above its best, or the test accuracy below its best, while the
  // training loss or accuracy kept improving.
  void overfitting(const SeriesPoint& p, Sink& sink) {
    double loss = p.value;
    if (test_accuracy_ > best_acc_)
      best_acc_ = test_accuracy_, train_acc_at_best_ = train_accuracy_;
    if (loss < best_loss_)
      best_loss_ = loss, train_loss_at_best_ = train_loss_, best_step_ = p.at.step;
    bool loss_up = loss > best_loss_ * 1.1 && train_loss_ < train_loss_at_best_;
    bool acc_down =
        test_accuracy_ < best_acc_ - s_.overfit_drop && train_accuracy_ > train_acc_at_best_;
    streak(p, loss_up || acc_down, "overfitting", sink,
           fmt("test loss {:.4g} (best {:.4g} at step {}), test accuracy {:.2f}% (best {:.2f}%), "
               "while the training loss fell to {:.4g}, for {} evaluations: the model overfits",
               loss, best_loss_, best_step_, 100 * test_accuracy_, 100 * best_acc_, train_loss_,
               s_.patience));
  }

  AlertSettings s_;
  std::set<std::string> raised_;
  std::map<std::string, int> streaks_;
  std::map<int, SeriesPoint> grads_;
  int64_t grad_step_ = -1;
  std::map<int, SeriesPoint> init_sd_;  // the first probed step's activation SD, by layer
  int64_t init_step_ = -1;
  std::deque<double> losses_;
  double train_accuracy_ = 0, train_loss_ = INFINITY, test_accuracy_ = 0;
  double best_acc_ = -1, train_acc_at_best_ = 0, best_loss_ = INFINITY, train_loss_at_best_ = 0;
  int64_t best_step_ = 0;
};

}  // namespace

std::shared_ptr<Subscriber> alert_rules(const AlertSettings& settings) {
  return std::make_shared<AlertRules>(settings);
}

}  // namespace trainscope::probes
