// The sign-flips capability (sign_flips.cc): a unit of the test suite's own.
#pragma once

#include <map>
#include <string>

#include "trainscope/instrument/events.h"

namespace sign_flips {

struct SignFlipsConfig {
  static constexpr const char* kName = "sign_flips";
  int64_t every = 0;  // 0: off
};

inline constexpr const char* kKind = "sign_flips";

class SignFlipsObserver : public trainscope::instrument::TrainObserver {
 public:
  void on_run_begin(const trainscope::instrument::RunContext& ctx) override;
  void on_after_step(const trainscope::instrument::RunContext& ctx,
                     const trainscope::instrument::Step& step) override;

 private:
  std::map<std::string, torch::Tensor> last_;  // sign of each weight tensor when last measured
};

// The fraction a record holds.
double read_fraction(const trainscope::store::Record& r);

}  // namespace sign_flips
