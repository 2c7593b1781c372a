#include "trainscope/optim/optim.h"

#include <torch/torch.h>

#include <cmath>

#include "trainscope/core/error.h"

namespace trainscope::optim {
using core::ErrorKind;
using core::fail;

namespace {

// Any libtorch optimizer.
template <typename T>
class TorchOptimizer : public Optimizer {
 public:
  template <typename Options>
  TorchOptimizer(std::vector<torch::Tensor> params, Options o) : opt_(std::move(params), o) {}
  // Gradients are dropped rather than zeroed (PyTorch's set_to_none): the
  // backward pass then writes them instead of adding to zeros, and no
  // memset runs over every gradient each step. The values are the same:
  // 0 + g = g (only a -0 gradient keeps its sign).
  void zero_grad() override {
    for (auto& group : opt_.param_groups())
      for (auto& p : group.params()) p.mutable_grad() = torch::Tensor();
  }
  void step() override { opt_.step(); }
  void set_lr(double lr) override {
    for (auto& g : opt_.param_groups()) g.options().set_lr(lr);
  }
  void save(torch::serialize::OutputArchive& a) override { opt_.save(a); }
  void load(torch::serialize::InputArchive& a) override { opt_.load(a); }
  std::vector<std::pair<torch::Tensor, torch::Tensor>> state_tensors() const override {
    namespace o = torch::optim;
    std::vector<std::pair<torch::Tensor, torch::Tensor>> out;
    auto& state = const_cast<T&>(opt_).state();
    for (const auto& group : opt_.param_groups())
      for (const auto& p : group.params()) {
        auto it = state.find(p.unsafeGetTensorImpl());
        if (it == state.end() || !it->second) continue;
        std::vector<torch::Tensor> ts;
        if (auto* a = dynamic_cast<o::AdamParamState*>(it->second.get()))
          ts = {a->exp_avg(), a->exp_avg_sq(), a->max_exp_avg_sq()};
        else if (auto* w = dynamic_cast<o::AdamWParamState*>(it->second.get()))
          ts = {w->exp_avg(), w->exp_avg_sq(), w->max_exp_avg_sq()};
        else if (auto* m = dynamic_cast<o::SGDParamState*>(it->second.get()))
          ts = {m->momentum_buffer()};
        else if (auto* r = dynamic_cast<o::RMSpropParamState*>(it->second.get()))
          ts = {r->square_avg(), r->momentum_buffer(), r->grad_avg()};
        for (auto& t : ts)
          if (t.defined()) out.emplace_back(p, t);
      }
    return out;
  }

 protected:
  T opt_;
};

// The fused Adam loop, vectorised by the compiler (optim.cc is built with
// -O3 -fno-math-errno, so sqrt is one instruction) and cloned for AVX2,
// picked at load time where the CPU has it, as ATen's own kernels are.
#define TS_ADAM_MOMENTS(S, NAME)                                                                \
  __attribute__((target_clones("avx2", "default"))) void NAME(                                  \
      S* __restrict pp, const S* __restrict gp, S* __restrict mp, S* __restrict vp, S b1, S a1, \
      S b2, S a2, S sb2, S eps, S lr_step, int64_t begin, int64_t end) {                        \
    for (int64_t i = begin; i < end; ++i) {                                                     \
      S mi = mp[i] * b1;                                                                        \
      mi = mi + a1 * gp[i];                                                                     \
      S vi = vp[i] * b2;                                                                        \
      vi = vi + a2 * gp[i] * gp[i];                                                             \
      const S denom = std::sqrt(vi) / sb2 + eps;                                                \
      mp[i] = mi;                                                                               \
      vp[i] = vi;                                                                               \
      pp[i] = pp[i] + lr_step * (mi / denom);                                                   \
    }                                                                                           \
  }
TS_ADAM_MOMENTS(float, adam_moments)
TS_ADAM_MOMENTS(double, adam_moments)
#undef TS_ADAM_MOMENTS

// torch::optim::Adam's update, fused: one pass over each parameter computes
// the moments and the new weight, where libtorch makes seven passes and
// allocates two temporaries. The state lives in libtorch's Adam (so
// checkpoints are the same); the arithmetic is libtorch's, in its order,
// so results agree with torch::optim::Adam to a few ULP, not bit for bit.
class FusedAdam : public TorchOptimizer<torch::optim::Adam> {
 public:
  using TorchOptimizer::TorchOptimizer;
  void step() override {
    torch::NoGradGuard ng;
    for (auto& group : opt_.param_groups()) {
      auto& o = static_cast<torch::optim::AdamOptions&>(group.options());
      for (auto& p : group.params()) {
        if (!p.grad().defined()) continue;
        if (o.amsgrad() || !fusable(p)) {
          opt_.step();
          return;
        }
      }
      for (auto& p : group.params())
        if (p.grad().defined()) update(p, o);
    }
  }

 private:
  static bool fusable(const torch::Tensor& p) {
    const auto t = p.scalar_type();
    return p.is_cpu() && p.is_contiguous() && p.grad().is_contiguous() && !p.grad().is_sparse() &&
           (t == torch::kFloat32 || t == torch::kFloat64) && p.grad().scalar_type() == t;
  }

  torch::optim::AdamParamState& state_of(const torch::Tensor& p) {
    auto& state = opt_.state();
    void* const key = p.unsafeGetTensorImpl();  // how torch::optim keys its state
    auto it = state.find(key);
    if (it == state.end()) {
      auto s = std::make_unique<torch::optim::AdamParamState>();
      s->step(0);
      s->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      s->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      it = state.emplace(key, std::move(s)).first;
    }
    return static_cast<torch::optim::AdamParamState&>(*it->second);
  }

  void update(torch::Tensor& p, const torch::optim::AdamOptions& o) {
    // An op the profiler sees, with the parameter as its input, so that the
    // update's time goes to the layer that owns the parameter.
    RECORD_FUNCTION("trainscope::fused_adam", std::vector<c10::IValue>({p}));
    auto& s = state_of(p);
    s.step(s.step() + 1);
    const double bc1 = 1 - std::pow(std::get<0>(o.betas()), s.step());
    const double bc2 = 1 - std::pow(std::get<1>(o.betas()), s.step());
    Coefficients c{std::get<0>(o.betas()), 1 - std::get<0>(o.betas()),
                   std::get<1>(o.betas()), 1 - std::get<1>(o.betas()),
                   std::sqrt(bc2),         o.eps(),
                   -(o.lr() / bc1),        o.weight_decay()};
    if (p.scalar_type() == torch::kFloat32)
      apply<float>(p, p.grad(), s.exp_avg(), s.exp_avg_sq(), c);
    else
      apply<double>(p, p.grad(), s.exp_avg(), s.exp_avg_sq(), c);
  }

  struct Coefficients {
    double beta1, one_minus_beta1, beta2, one_minus_beta2, sqrt_bc2, eps, neg_step, wd;
  };

  template <typename S>
  static void apply(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v,
                    const Coefficients& c) {
    S* pp = p.data_ptr<S>();
    const S* gp = g.data_ptr<S>();
    S* mp = m.data_ptr<S>();
    S* vp = v.data_ptr<S>();
    const S b1 = c.beta1, a1 = c.one_minus_beta1, b2 = c.beta2, a2 = c.one_minus_beta2,
            sb2 = c.sqrt_bc2, eps = c.eps, lr_step = c.neg_step, wd = c.wd;
    at::parallel_for(0, p.numel(), 16384, [&](int64_t begin, int64_t end) {
      if (wd != 0) {  // libtorch: grad = grad.add(p, weight_decay), a new tensor
        std::vector<S> with_wd(gp + begin, gp + end);
        for (int64_t i = begin; i < end; ++i) with_wd[i - begin] += wd * pp[i];
        return adam_moments(pp, with_wd.data() - begin, mp, vp, b1, a1, b2, a2, sb2, eps, lr_step,
                            begin, end);
      }
      adam_moments(pp, gp, mp, vp, b1, a1, b2, a2, sb2, eps, lr_step, begin, end);
    });
  }
};

// Adadelta (Zeiler 2012) as in torch.optim.Adadelta:
//   v = rho v + (1-rho) g^2;  d = sqrt(u + eps) / sqrt(v + eps) * g;
//   u = rho u + (1-rho) d^2;  p -= lr d   (g += wd p first)
class Adadelta : public Optimizer {
 public:
  Adadelta(std::vector<torch::Tensor> params, const config::OptimizerConfig& c)
      : params_(std::move(params)), c_(c), lr_(c.lr) {
    for (auto& p : params_) {
      square_avg_.push_back(torch::zeros_like(p));
      acc_delta_.push_back(torch::zeros_like(p));
    }
  }
  void zero_grad() override {
    for (auto& p : params_)
      if (p.grad().defined()) p.grad().zero_();
  }
  void step() override {
    torch::NoGradGuard ng;
    for (size_t i = 0; i < params_.size(); ++i) {
      auto& p = params_[i];
      if (!p.grad().defined()) continue;
      auto g = p.grad();
      if (c_.weight_decay != 0) g = g.add(p, c_.weight_decay);
      square_avg_[i].mul_(c_.rho).addcmul_(g, g, 1 - c_.rho);
      auto std = square_avg_[i].add(c_.eps).sqrt_();
      auto delta = acc_delta_[i].add(c_.eps).sqrt_().div_(std).mul_(g);
      acc_delta_[i].mul_(c_.rho).addcmul_(delta, delta, 1 - c_.rho);
      p.add_(delta, -lr_);
    }
  }
  void set_lr(double lr) override { lr_ = lr; }
  void save(torch::serialize::OutputArchive& a) override {
    for (size_t i = 0; i < params_.size(); ++i) {
      a.write("adadelta.square_avg." + std::to_string(i), square_avg_[i], /*is_buffer=*/true);
      a.write("adadelta.acc_delta." + std::to_string(i), acc_delta_[i], true);
    }
  }
  void load(torch::serialize::InputArchive& a) override {
    for (size_t i = 0; i < params_.size(); ++i) {
      a.read("adadelta.square_avg." + std::to_string(i), square_avg_[i], true);
      a.read("adadelta.acc_delta." + std::to_string(i), acc_delta_[i], true);
    }
  }
  std::vector<std::pair<torch::Tensor, torch::Tensor>> state_tensors() const override {
    std::vector<std::pair<torch::Tensor, torch::Tensor>> out;
    for (size_t i = 0; i < params_.size(); ++i) {
      out.emplace_back(params_[i], square_avg_[i]);
      out.emplace_back(params_[i], acc_delta_[i]);
    }
    return out;
  }

 private:
  std::vector<torch::Tensor> params_, square_avg_, acc_delta_;
  config::OptimizerConfig c_;
  double lr_;
};

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const config::OptimizerConfig& c,
                                          std::vector<torch::Tensor> params) {
  namespace o = torch::optim;
  if (c.name == "sgd")
    return std::make_unique<TorchOptimizer<o::SGD>>(
        std::move(params),
        o::SGDOptions(c.lr).momentum(c.momentum).nesterov(c.nesterov).weight_decay(c.weight_decay));
  if (c.name == "adam")
    return std::make_unique<FusedAdam>(
        std::move(params),
        o::AdamOptions(c.lr).betas({c.beta1, c.beta2}).eps(c.eps).weight_decay(c.weight_decay));
  if (c.name == "adamw")
    return std::make_unique<TorchOptimizer<o::AdamW>>(
        std::move(params),
        o::AdamWOptions(c.lr).betas({c.beta1, c.beta2}).eps(c.eps).weight_decay(c.weight_decay));
  if (c.name == "rmsprop")
    return std::make_unique<TorchOptimizer<o::RMSprop>>(std::move(params),
                                                        o::RMSpropOptions(c.lr)
                                                            .alpha(c.alpha)
                                                            .eps(c.eps)
                                                            .momentum(c.momentum)
                                                            .weight_decay(c.weight_decay));
  if (c.name == "adadelta") return std::make_unique<Adadelta>(std::move(params), c);
  fail(ErrorKind::kUsage, "unknown optimizer '{}'; valid: sgd, adam, adamw, adadelta, rmsprop",
       c.name);
}

double scheduled_lr(const config::Config& c, int64_t epoch, int64_t step) {
  const auto& s = c.schedule;
  double lr = c.optimizer.lr;
  if (s.name == "step") {
    lr *= std::pow(s.gamma, static_cast<double>(epoch / s.step_size));
  } else if (s.name == "multistep") {
    for (int64_t m : s.milestones)
      if (epoch >= m) lr *= s.gamma;
  } else if (s.name == "exponential") {
    lr *= std::pow(s.gamma, static_cast<double>(epoch));
  } else if (s.name == "cosine") {
    double t_max = static_cast<double>(s.t_max > 0 ? s.t_max : c.train.epochs);
    lr = s.eta_min +
         (lr - s.eta_min) * (1 + std::cos(M_PI * static_cast<double>(epoch) / t_max)) / 2;
  }
  if (s.warmup_steps > 0 && step < s.warmup_steps)
    lr *= static_cast<double>(step + 1) / static_cast<double>(s.warmup_steps);
  return lr;
}

}  // namespace trainscope::optim
