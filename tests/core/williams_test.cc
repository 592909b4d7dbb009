// stats::Williams against tests/data/meta_eval/expected.txt (Steiger's formula in numpy, Student's t
// from scipy; tests/reference/gen_meta_eval.py), a hand calculation, and its errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kplab/stats.h"
#include "stats_fixture.h"

namespace kplab::stats {
namespace {

using test::CasesOf;
using test::FixtureCase;
using test::LoadFixture;

TEST(Williams, MatchesTheNumpyFormula) {
  const auto cases = LoadFixture("../meta_eval/expected.txt");
  for (const FixtureCase& c : CasesOf(cases, "williams")) {
    auto r = Williams(c.num("r12"), c.num("r13"), c.num("r23"), c.num("n"));
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.error().message;
    EXPECT_EQ(r.value().df, c.num("df")) << c.name;
    if (std::isnan(c.num("t"))) {
      EXPECT_TRUE(std::isnan(r.value().t)) << c.name;
      EXPECT_TRUE(std::isnan(r.value().p)) << c.name;
      continue;
    }
    EXPECT_NEAR(r.value().t, c.num("t"), 1e-12 * std::max(1.0, std::fabs(c.num("t")))) << c.name;
    EXPECT_NEAR(r.value().p, c.num("p"), 1e-10) << c.name;
  }
}

TEST(Williams, HandCalculation) {
  // r12 = 0.5, r13 = 0.3, r23 = 0.5, n = 23: |R| = 1 - .25 - .09 - .25 + 2(.5)(.3)(.5) = 0.56,
  // rbar = 0.4, t = 0.2 sqrt(22 * 1.5 / (2 * 22/20 * 0.56 + 0.16 * 0.125)) = 0.2 sqrt(33 / 1.252).
  auto r = Williams(0.5, 0.3, 0.5, 23);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r.value().t, 0.2 * std::sqrt(33 / 1.252), 1e-12);
  EXPECT_EQ(r.value().df, 20);
  // Equal correlations: t = 0, p = 1.
  r = Williams(0.4, 0.4, 0.2, 10);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().t, 0);
  EXPECT_NEAR(r.value().p, 1, 1e-12);
  // Swapping the metrics flips the sign only.
  auto a = Williams(0.6, 0.2, 0.3, 15), b = Williams(0.2, 0.6, 0.3, 15);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_DOUBLE_EQ(a.value().t, -b.value().t);
  EXPECT_DOUBLE_EQ(a.value().p, b.value().p);
}

TEST(Williams, Errors) {
  EXPECT_EQ(Williams(0.5, 0.3, 0.5, 3).error().message, "williams: needs n >= 4 observations (got 3)");
  EXPECT_EQ(Williams(0.5, 0.3, 0.5, std::nan("")).error().message, "williams: needs n >= 4 observations (got NaN)");
  EXPECT_EQ(Williams(-1.01, 0.3, 0.5, 10).error().message,
            "williams: r12 must be a correlation in [-1, 1] (got -1.01)");
  EXPECT_EQ(Williams(0.5, 0.3, std::nan(""), 10).error().message,
            "williams: r23 must be a correlation in [-1, 1] (got NaN)");
}

}  // namespace
}  // namespace kplab::stats
