// Non-negative least squares (used by the cost model) against solutions
// worked out by hand.
#include "trainscope/core/nnls.h"

#include <gtest/gtest.h>

namespace trainscope::core {
namespace {

TEST(NnlsTest, RecoversAnExactNonNegativeSolution) {
  // b = 2 * c0 + 0.5 * c1 exactly.
  std::vector<std::vector<double>> a = {{1, 0}, {0, 1}, {1, 1}, {2, 3}};
  std::vector<double> b;
  for (const auto& r : a) b.push_back(2 * r[0] + 0.5 * r[1]);
  auto x = nnls(a, b);
  ASSERT_EQ(x.size(), 2u);
  EXPECT_NEAR(x[0], 2.0, 1e-9);
  EXPECT_NEAR(x[1], 0.5, 1e-9);
}

TEST(NnlsTest, ClampsWhatUnconstrainedLeastSquaresWouldMakeNegative) {
  // Unconstrained: b = 1*c0 - 1*c1 fits exactly. With x >= 0 the best is
  // x1 = 0 and x0 = (a0 . b) / (a0 . a0).
  std::vector<std::vector<double>> a = {{1, 0}, {1, 1}, {1, 2}};
  std::vector<double> b = {1, 0, -1};
  auto free = least_squares(a, b, {0, 1});
  EXPECT_NEAR(free[0], 1.0, 1e-9);
  EXPECT_NEAR(free[1], -1.0, 1e-9);
  auto x = nnls(a, b);
  EXPECT_DOUBLE_EQ(x[1], 0.0);
  EXPECT_NEAR(x[0], 0.0, 1e-12);  // a0 . b = 1 + 0 - 1 = 0
  std::vector<double> b2 = {3, 1, 0};
  auto y = nnls(a, b2);
  EXPECT_DOUBLE_EQ(y[1], 0.0);
  EXPECT_NEAR(y[0], 4.0 / 3.0, 1e-9);
}

TEST(NnlsTest, ColumnsInVeryDifferentUnitsAreSolvedExactly) {
  // The cost model's features: MFLOP in the thousands next to the Mparams of
  // a BatchNorm (1e-4) and a constant. b = 0.02 * mflop + 5e5 * mparams + 3.
  std::vector<std::vector<double>> a;
  std::vector<double> b;
  for (int i = 0; i < 12; ++i) {
    const double mflop = 100.0 * (i % 4 + 1) * (i % 3 + 2), mparams = 1e-4 * (1 + (i * 7) % 5);
    a.push_back({mflop, mparams, 1.0});
    b.push_back(0.02 * mflop + 5e5 * mparams + 3);
  }
  auto x = nnls(a, b);
  EXPECT_NEAR(x[0], 0.02, 1e-9);
  EXPECT_NEAR(x[1], 5e5, 1e-3);
  EXPECT_NEAR(x[2], 3, 1e-6);
}

TEST(NnlsTest, KktConditionsHoldOnARandomProblem) {
  // At the optimum: x >= 0, gradient w = A^T (b - A x) <= 0, and w_i = 0
  // wherever x_i > 0.
  std::vector<std::vector<double>> a;
  std::vector<double> b;
  uint64_t s = 12345;
  auto rnd = [&] {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(s >> 11) / 9007199254740992.0 - 0.5;
  };
  for (int r = 0; r < 40; ++r) {
    a.push_back({rnd(), rnd(), rnd(), rnd(), rnd()});
    b.push_back(rnd());
  }
  auto x = nnls(a, b);
  std::vector<double> w(5, 0.0);
  for (size_t r = 0; r < a.size(); ++r) {
    double res = b[r];
    for (size_t j = 0; j < 5; ++j) res -= a[r][j] * x[j];
    for (size_t j = 0; j < 5; ++j) w[j] += a[r][j] * res;
  }
  int positive = 0;
  for (size_t j = 0; j < 5; ++j) {
    EXPECT_GE(x[j], 0.0);
    EXPECT_LE(w[j], 1e-9) << j;
    if (x[j] > 0) {
      EXPECT_NEAR(w[j], 0.0, 1e-9) << j;
      ++positive;
    }
  }
  EXPECT_GT(positive, 0);
  EXPECT_LT(positive, 5);  // this problem has active constraints
}

TEST(NnlsTest, EmptyProblemsAndZeroColumns) {
  EXPECT_TRUE(nnls({}, {}).empty());
  auto x = nnls({{0, 1}, {0, 2}}, {1, 2});
  EXPECT_DOUBLE_EQ(x[0], 0.0);
  EXPECT_NEAR(x[1], 1.0, 1e-9);
}

}  // namespace
}  // namespace trainscope::core
