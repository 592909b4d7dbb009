// kplab::stats against numpy 1.24 / scipy 1.10 / statsmodels / R psych values stored in
// tests/data/stats/reference.txt and fa_reference.txt (tests/reference/gen_stats.py, gen_stats_fa.R),
// plus hand-worked cases written out below. kplab's own output is never the expected value.
#include "kplab/stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iomanip>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "stats_fixture.h"

namespace kplab::stats {
namespace {

using test::CaseNamed;
using test::CasesOf;
using test::FixtureCase;
using test::LoadFixture;

constexpr double kStatsNaN = std::numeric_limits<double>::quiet_NaN();

const std::vector<FixtureCase>& Ref() {
  static const std::vector<FixtureCase> cases = LoadFixture("reference.txt");
  return cases;
}
const std::vector<FixtureCase>& FaRef() {
  static const std::vector<FixtureCase> cases = LoadFixture("fa_reference.txt");
  return cases;
}

// |a - e| <= abs + rel * |e|; NaN matches NaN only.
::testing::AssertionResult Close(double a, double e, double rel, double abs = 0) {
  if (std::isnan(e)) {
    if (std::isnan(a)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "got " << a << ", expected NaN";
  }
  if (std::fabs(a - e) <= abs + rel * std::fabs(e)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << std::setprecision(17) << "got " << a << ", expected " << e
                                       << " (diff " << a - e << ")";
}

DenseMatrix ReadCsv(const std::string& name) {
  std::ifstream in(std::string(KPLAB_TEST_DATA) + "/stats/" + name);
  EXPECT_TRUE(in) << name;
  DenseMatrix m;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream ls(line);
    std::string cell;
    int cols = 0;
    while (std::getline(ls, cell, ',')) {
      m.v.push_back(std::stod(cell));
      ++cols;
    }
    m.cols = cols;
    ++m.rows;
  }
  return m;
}

// ---- Descriptive -------------------------------------------------------------------------------------------

TEST(StatsDescriptive, MatchesNumpy) {
  for (const FixtureCase& c : CasesOf(Ref(), "descriptive")) {
    SCOPED_TRACE(c.name);
    const std::vector<double> x = c.nums("x");
    EXPECT_TRUE(Close(*Mean(x), c.num("mean"), 1e-14, 1e-15));
    EXPECT_TRUE(Close(*Median(x), c.num("median"), 1e-15, 1e-15));
    const std::vector<double> qs = c.nums("q");
    const std::vector<double> want = c.nums("quantile");
    auto got = Quantiles(x, qs);
    ASSERT_TRUE(got.ok()) << got.error().message;
    for (std::size_t i = 0; i < qs.size(); ++i) {
      EXPECT_TRUE(Close((*got)[i], want[i], 1e-15, 1e-15)) << "q = " << qs[i];
      EXPECT_TRUE(Close(*Quantile(x, qs[i]), want[i], 1e-15, 1e-15)) << "q = " << qs[i];
    }
    EXPECT_TRUE(Close(*Variance(x, 0), c.num("var0"), 1e-13, 1e-15));
    EXPECT_TRUE(Close(*StdDev(x, 0), c.num("sd0"), 1e-13, 1e-15));
    if (c.has("var1")) {
      EXPECT_TRUE(Close(*Variance(x), c.num("var1"), 1e-13, 1e-15));
      EXPECT_TRUE(Close(*StdDev(x), c.num("sd1"), 1e-13, 1e-15));
    }
  }
}

TEST(StatsDescriptive, HandWorked) {
  const std::vector<double> x = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(*Mean(x), 2.5);
  EXPECT_DOUBLE_EQ(*Median(x), 2.5);
  EXPECT_DOUBLE_EQ(*Quantile(x, 0.25), 1.75);  // h = 3 * 0.25 = 0.75 -> 1 + 0.75 * (2 - 1)
  EXPECT_DOUBLE_EQ(*Variance(x), 5.0 / 3);      // (2.25 + 0.25 + 0.25 + 2.25) / 3
  EXPECT_DOUBLE_EQ(*Variance(x, 0), 1.25);
}

// Python's math.fsum (CPython 3.11, /usr/bin/python3) printed each expected value; the last four lists are
// CPython's own test_math cases for the half-even step across partials, where summing the partials'
// rounded values gives the wrong neighbour. The plain left-to-right sum (`sum(c)`) is shown beside.
TEST(StatsDescriptive, FSumIsPythonsMathFsum) {
  const double p53 = 9007199254740992.0;  // 2**53
  const struct {
    std::vector<double> x;
    double fsum, naive;
  } cases[] = {
      {std::vector<double>(10, 0.1), 1.0, 0.9999999999999999},
      {{1e100, 1.0, -1e100, 1e-100, 1e50, -1.0, -1e50}, 1e-100, 0.0},
      {{p53, -0.5, -5.551115123125783e-17}, 9007199254740991.0, p53},  // 2**53 - 0.5 - 2**-54
      {{p53, 1.0, 7.888609052210118e-31}, 9007199254740994.0, p53},    // 2**53 + 1 + 2**-100
      {{p53 + 10.0, 1.0, 7.888609052210118e-31}, 9007199254741004.0, 9007199254741004.0},
      {{p53 - 4.0, 0.5, 5.551115123125783e-17}, 9007199254740989.0, 9007199254740988.0},
      {{}, 0.0, 0.0},
      {{1.7976931348623157e308, -1.7976931348623157e308, 1.0}, 1.0, 1.0},
  };
  for (const auto& c : cases) {
    ASSERT_TRUE(FSum(c.x).ok());
    EXPECT_EQ(*FSum(c.x), c.fsum) << ::testing::PrintToString(c.x);
    double naive = 0;
    for (double v : c.x) naive += v;
    EXPECT_EQ(naive, c.naive) << "the plain sum is not what Python's sum(c) printed";
    std::vector<double> reversed(c.x.rbegin(), c.x.rend());
    EXPECT_EQ(*FSum(reversed), c.fsum) << "fsum depends on the order";
  }
  EXPECT_EQ(*FSum(std::vector<double>{HUGE_VAL, 1.0}), HUGE_VAL);  // math.fsum([inf, 1.0]) = inf
  // math.fsum raises OverflowError("intermediate overflow in fsum") and ValueError("-inf + inf in fsum").
  EXPECT_EQ(FSum(std::vector<double>{1e308, 1e308}).error().message,
            "fsum: intermediate overflow (the sum of x is not finite)");
  EXPECT_EQ(FSum(std::vector<double>{HUGE_VAL, -HUGE_VAL}).error().message, "fsum: x holds both +inf and -inf");
  EXPECT_EQ(FSum(std::vector<double>{1, kStatsNaN}).error().message, "fsum: x[1] is NaN");
}

TEST(StatsDescriptive, AverageRanksMatchScipy) {
  const FixtureCase c = CaseNamed(Ref(), "ranks", "ties");
  const std::vector<double> got = AverageRanks(c.nums("x"));
  const std::vector<double> want = c.nums("ranks");
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_DOUBLE_EQ(got[i], want[i]) << i;
}

TEST(StatsDescriptive, Errors) {
  const std::vector<double> empty;
  const std::vector<double> with_nan = {1, 2, kStatsNaN, 4};
  EXPECT_EQ(Mean(empty).error().message, "mean: needs at least 1 value (got 0)");
  EXPECT_EQ(Mean(with_nan).error().message, "mean: x[2] is NaN");
  EXPECT_EQ(Median(with_nan).error().message, "median: x[2] is NaN");
  EXPECT_EQ(Quantile(std::vector<double>{1, 2}, 1.5).error().message, "quantile: q = 1.5 is not in [0, 1]");
  EXPECT_EQ(Variance(std::vector<double>{1}).error().message,
            "variance: needs more than ddof = 1 observations (got 1)");
  EXPECT_EQ(StdDev(std::vector<double>{1}).error().message,
            "sd: needs more than ddof = 1 observations (got 1)");
  EXPECT_EQ(Variance(std::vector<double>{1, 2}, -1).error().message, "variance: ddof must be >= 0 (got -1)");
}

// ---- Correlation -----------------------------------------------------------------------------------------

TEST(StatsCorrelation, MatchesScipy) {
  for (const FixtureCase& c : CasesOf(Ref(), "corr")) {
    SCOPED_TRACE(c.name);
    const std::vector<double> x = c.nums("x");
    const std::vector<double> y = c.nums("y");
    auto p = Pearson(x, y);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_TRUE(Close(p->r, c.num("pearson_r"), 1e-12, 1e-15)) << "pearson r";
    EXPECT_TRUE(Close(p->p, c.num("pearson_p"), 1e-9, 1e-300)) << "pearson p";
    if (c.has("spearman_r")) {
      auto s = Spearman(x, y);
      ASSERT_TRUE(s.ok()) << s.error().message;
      EXPECT_TRUE(Close(s->r, c.num("spearman_r"), 1e-12, 1e-15)) << "spearman rho";
      if (c.name == "perfect") {
        // scipy's corrcoef of the ranks gives rho = 1 - 2^-52 and so p = 1.4e-24; ours is exactly 1, p = 0.
        EXPECT_LT(s->p, 1e-20);
      } else {
        EXPECT_TRUE(Close(s->p, c.num("spearman_p"), 1e-9, 1e-300)) << "spearman p";
      }
    }
    auto k = Kendall(x, y);
    ASSERT_TRUE(k.ok()) << k.error().message;
    EXPECT_TRUE(Close(k->r, c.num("kendall_r"), 1e-12, 1e-15)) << "kendall tau";
    EXPECT_TRUE(Close(k->p, c.num("kendall_p"), 1e-9, 1e-300)) << "kendall p (auto)";
    auto ka = Kendall(x, y, KendallMethod::kAsymptotic);
    ASSERT_TRUE(ka.ok());
    EXPECT_TRUE(Close(ka->p, c.num("kendall_asymptotic_p"), 1e-9, 1e-300)) << "kendall p (asymptotic)";
    auto ke = Kendall(x, y, KendallMethod::kExact);
    if (c.has("kendall_exact_p")) {
      ASSERT_TRUE(ke.ok()) << ke.error().message;
      EXPECT_TRUE(Close(ke->p, c.num("kendall_exact_p"), 1e-9, 1e-300)) << "kendall p (exact)";
    } else if (!std::isnan(c.num("kendall_r"))) {
      EXPECT_EQ(ke.error().message, "kendall: the exact method needs samples without ties");
    }
  }
}

TEST(StatsCorrelation, HandWorked) {
  // x = 1..5, y = 2 1 4 3 5: 8 concordant, 2 discordant pairs -> tau = 6 / 10.
  const std::vector<double> x = {1, 2, 3, 4, 5};
  const std::vector<double> y = {2, 1, 4, 3, 5};
  EXPECT_DOUBLE_EQ(Kendall(x, y)->r, 0.6);
  // Exact p: permutations of 5 with <= 2 inversions: 1 + 4 + 9 = 14 of 120; two-sided 28 / 120.
  EXPECT_DOUBLE_EQ(Kendall(x, y)->p, 28.0 / 120);
  // d = rank differences 1 -1 1 -1 0 -> rho = 1 - 6 * 4 / (5 * 24) = 0.8.
  EXPECT_NEAR(Spearman(x, y)->r, 0.8, 1e-15);
  EXPECT_NEAR(Pearson(x, y)->r, 0.8, 1e-15);
}

TEST(StatsCorrelation, Errors) {
  const std::vector<double> a = {1, 2, 3};
  const std::vector<double> b = {1, 2};
  const std::vector<double> n = {1, kStatsNaN, 3};
  EXPECT_EQ(Pearson(a, b).error().message, "pearson: x and y must have the same length (got 3 and 2)");
  EXPECT_EQ(Spearman(b, b).error().message, "spearman: needs at least 3 observations (got 2)");
  EXPECT_EQ(Kendall(a, n).error().message, "kendall: y[1] is NaN");
  EXPECT_EQ(Pearson(std::vector<double>{1}, std::vector<double>{2}).error().message,
            "pearson: needs at least 2 observations (got 1)");
  // Constant input: NaN, as scipy.
  const std::vector<double> c = {2, 2, 2};
  EXPECT_TRUE(std::isnan(Pearson(c, a)->r));
  EXPECT_TRUE(std::isnan(Spearman(a, c)->p));
  EXPECT_TRUE(std::isnan(Kendall(c, a)->r));
}

// Knight's algorithm against the O(n^2) definition of tau-b on tied data, and a timing bound for 20k.
TEST(StatsCorrelation, KendallMatchesBruteForceAndScales) {
  std::mt19937_64 gen(5);
  std::uniform_int_distribution<int> small(0, 30);
  const int n = 1500;
  std::vector<double> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = small(gen);
    y[i] = small(gen) + 0.5 * x[i];
  }
  double con = 0, dis = 0, tx = 0, ty = 0;
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      const double s = (x[i] - x[j]) * (y[i] - y[j]);
      if (s > 0) ++con;
      if (s < 0) ++dis;
      if (x[i] == x[j]) ++tx;
      if (y[i] == y[j]) ++ty;
    }
  }
  const double tot = n * (n - 1) / 2.0;
  EXPECT_NEAR(Kendall(x, y)->r, (con - dis) / std::sqrt((tot - tx) * (tot - ty)), 1e-12);

  std::normal_distribution<double> norm;
  std::vector<double> u(20000), v(20000);
  for (std::size_t i = 0; i < u.size(); ++i) {
    u[i] = norm(gen);
    v[i] = u[i] + norm(gen);
  }
  // 20,000 points: Kendall is O(n log n) (a quadratic loop would be 2e8 pairs); it must finish, its speed
  // is a benchmark's business.
  auto k = Kendall(u, v);
  auto s = Spearman(u, v);
  ASSERT_TRUE(k.ok() && s.ok());
  EXPECT_GT(k->r, 0.3);
  EXPECT_GT(s->r, 0.5);
}

// ---- Wilcoxon ----------------------------------------------------------------------------------------------

TEST(StatsWilcoxon, MatchesScipy) {
  for (const FixtureCase& c : CasesOf(Ref(), "wilcoxon")) {
    const std::vector<double> x = c.nums("x");
    const std::vector<double> y = c.has("y") ? c.nums("y") : std::vector<double>();
    for (const char* zm : {"wilcox", "pratt"}) {
      for (int corr : {0, 1}) {
        for (const char* method : {"auto", "exact", "approx"}) {
          const std::string key = std::string(zm) + "_" + std::to_string(corr) + "_" + method;
          SCOPED_TRACE(c.name + " " + key);
          WilcoxonOptions o;
          o.zero_method = std::string(zm) == "pratt" ? ZeroMethod::kPratt : ZeroMethod::kWilcox;
          o.correction = corr == 1;
          o.method = std::string(method) == "auto"    ? WilcoxonMethod::kAuto
                     : std::string(method) == "exact" ? WilcoxonMethod::kExact
                                                      : WilcoxonMethod::kApprox;
          auto r = c.has("y") ? Wilcoxon(x, y, o) : Wilcoxon(x, o);
          ASSERT_TRUE(r.ok()) << r.error().message;
          const std::vector<double> want = c.nums(key);
          EXPECT_TRUE(Close(r->statistic, want[0], 1e-14)) << "statistic";
          EXPECT_TRUE(Close(r->p, want[1], 1e-9, 1e-300)) << "p";
          EXPECT_TRUE(Close(r->z, want[2], 1e-12)) << "z";
          EXPECT_EQ(r->exact, std::isnan(want[2]));
        }
      }
    }
  }
}

TEST(StatsWilcoxon, HandWorkedAndErrors) {
  // d = 1 2 -3 4: ranks 1 2 3 4, W+ = 7, W- = 3, T = 3. Exact: P(W+ <= 3) = #{{}, {1}, {2}, {3}, {1,2}}
  // / 16 = 5/16; two-sided 10/16.
  auto r = Wilcoxon(std::vector<double>{1, 2, -3, 4});
  EXPECT_DOUBLE_EQ(r->statistic, 3);
  EXPECT_DOUBLE_EQ(r->p, 10.0 / 16);
  EXPECT_TRUE(std::isnan(r->z));
  EXPECT_EQ(Wilcoxon(std::vector<double>{0, 0}).error().message,
            "wilcoxon: every difference is zero (zero_method 'wilcox' and 'pratt' need a nonzero difference)");
  EXPECT_EQ(Wilcoxon(std::vector<double>{1, 2}, std::vector<double>{1}).error().message,
            "wilcoxon: x and y must have the same length (got 2 and 1)");
  EXPECT_EQ(Wilcoxon(std::vector<double>{1, 2}, std::vector<double>{1, kStatsNaN}).error().message,
            "wilcoxon: y[1] is NaN");
  EXPECT_TRUE(std::isnan(Wilcoxon(std::vector<double>{})->p));
}

// ---- Cliff's delta ---------------------------------------------------------------------------------------------

TEST(StatsCliffsDelta, MatchesBruteForce) {
  for (const FixtureCase& c : CasesOf(Ref(), "cliffs")) {
    SCOPED_TRACE(c.name);
    auto d = CliffsDelta(c.nums("x"), c.nums("y"));
    ASSERT_TRUE(d.ok()) << d.error().message;
    EXPECT_TRUE(Close(*d, c.num("delta"), 1e-14, 1e-15));
  }
  EXPECT_EQ(CliffsDelta(std::vector<double>{}, std::vector<double>{1}).error().message,
            "cliffs_delta: needs non-empty samples (got 0 and 1 values)");
}

// ---- ANOVA -------------------------------------------------------------------------------------------------------

TEST(StatsAnova, MatchesStatsmodelsTypeII) {
  for (const FixtureCase& c : CasesOf(Ref(), "anova")) {
    SCOPED_TRACE(c.name);
    auto rows = TwoWayAnova(c.nums("y"), c.ints("a"), c.ints("b"));
    ASSERT_TRUE(rows.ok()) << rows.error().message;
    ASSERT_EQ(rows->size(), 4u);
    const double ss_total = c.num("ss_total");
    const double ss_resid = c.nums("Residual")[0];
    const char* keys[] = {"A", "B", "AB", "Residual"};
    const char* sources[] = {"A", "B", "A:B", "Residual"};
    for (int i = 0; i < 4; ++i) {
      SCOPED_TRACE(sources[i]);
      const AnovaRow& r = (*rows)[i];
      const std::vector<double> want = c.nums(keys[i]);  // sum_sq, df, F, PR(>F)
      EXPECT_EQ(r.source, sources[i]);
      EXPECT_TRUE(Close(r.ss, want[0], 1e-9, 1e-12));
      EXPECT_DOUBLE_EQ(r.df, want[1]);
      EXPECT_TRUE(Close(r.ms, want[0] / want[1], 1e-9, 1e-12));
      EXPECT_TRUE(Close(r.f, want[2], 1e-9, 1e-12));
      EXPECT_TRUE(Close(r.p, want[3], 1e-8, 1e-300));
      EXPECT_TRUE(Close(r.eta2, want[0] / ss_total, 1e-9, 1e-12));
      if (i < 3) {
        EXPECT_TRUE(Close(r.partial_eta2, want[0] / (want[0] + ss_resid), 1e-9, 1e-12));
      }
    }
    EXPECT_TRUE(std::isnan((*rows)[3].partial_eta2));
  }
}

TEST(StatsAnova, Errors) {
  const std::vector<double> y = {1, 2, 3, 4};
  EXPECT_EQ(TwoWayAnova(y, std::vector<int>{0, 0, 0, 0}, std::vector<int>{0, 1, 0, 1}).error().message,
            "anova2: factor a needs at least 2 levels (got 1)");
  EXPECT_EQ(TwoWayAnova(y, std::vector<int>{0, 0, 1, 1}, std::vector<int>{0, 1, 0, 1}).error().message,
            "anova2: no residual degrees of freedom (4 observations in 4 cells)");
  EXPECT_EQ(TwoWayAnova(y, std::vector<int>{0, 0, 1}, std::vector<int>{0, 1, 0, 1}).error().message,
            "anova2: y, a and b must have the same length (got 4, 3 and 4)");
  // a = 0 only with b = 0, a = 1 only with b = 1: the effects cannot be separated.
  const std::vector<double> y6 = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(TwoWayAnova(y6, std::vector<int>{0, 0, 0, 1, 1, 1}, std::vector<int>{0, 0, 0, 1, 1, 1})
                .error()
                .message,
            "anova2: the design is disconnected (the additive model a + b cannot be estimated)");
}

// ---- Holm ---------------------------------------------------------------------------------------------------------

TEST(StatsHolm, MatchesStatsmodels) {
  for (const FixtureCase& c : CasesOf(Ref(), "holm")) {
    SCOPED_TRACE(c.name);
    auto adj = Holm(c.nums("p"));
    ASSERT_TRUE(adj.ok());
    const std::vector<double> want = c.nums("adjusted");
    ASSERT_EQ(adj->size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(Close((*adj)[i], want[i], 1e-15)) << i;
  }
  EXPECT_TRUE(Holm(std::vector<double>{})->empty());
  EXPECT_EQ(Holm(std::vector<double>{0.1, 1.2}).error().message, "holm: p[1] = 1.2 is not in [0, 1]");
}

// ---- Rng, bootstrap, randomization --------------------------------------------------------------------------------

TEST(StatsRng, StreamMatchesIndependentImplementation) {
  const FixtureCase c = CaseNamed(Ref(), "rng", "seed0");
  Rng rng(0);
  for (const std::string& s : c.raw("next64")) EXPECT_EQ(rng.Next(), std::stoull(s));
  const FixtureCase b = CaseNamed(Ref(), "rng", "seed12345_below");
  Rng r2(12345);
  const std::vector<int> ns = b.ints("n");
  const std::vector<int> want = b.ints("below");
  for (std::size_t i = 0; i < ns.size(); ++i) EXPECT_EQ(r2.Below(ns[i]), static_cast<std::uint32_t>(want[i]));
  const FixtureCase rej = CaseNamed(Ref(), "rng", "seed777_below_rejections");
  Rng r4(777);
  const std::vector<std::string> big_n = rej.raw("n");
  const std::vector<std::string> big_want = rej.raw("below");
  ASSERT_EQ(big_n.size(), big_want.size());
  for (std::size_t i = 0; i < big_n.size(); ++i) {
    EXPECT_EQ(r4.Below(static_cast<std::uint32_t>(std::stoull(big_n[i]))), std::stoull(big_want[i])) << i;
  }
  // Normal deviates: mean ~ 0, variance ~ 1 (200,000 draws: 5 standard errors).
  Rng r3(9);
  double s = 0, ss = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double z = r3.Normal();
    s += z;
    ss += z * z;
  }
  EXPECT_NEAR(s / n, 0, 5 / std::sqrt(n));
  EXPECT_NEAR(ss / n, 1, 5 * std::sqrt(2.0 / n));
}

TEST(StatsBootstrap, ReplaysTheSameResamplesAsNumpy) {
  for (const FixtureCase& c : CasesOf(Ref(), "bootstrap")) {
    SCOPED_TRACE(c.name);
    BootstrapOptions o;
    o.n_resamples = static_cast<int>(c.num("n_resamples"));
    o.confidence = c.num("confidence");
    o.seed = static_cast<std::uint64_t>(c.num("seed"));
    auto ci = BootstrapMeanCI(c.nums("x"), o);
    ASSERT_TRUE(ci.ok()) << ci.error().message;
    EXPECT_TRUE(Close(ci->low, c.num("low"), 1e-12));
    EXPECT_TRUE(Close(ci->high, c.num("high"), 1e-12));
  }
  const FixtureCase c = CaseNamed(Ref(), "bootstrap_paired", "paired");
  BootstrapOptions o;
  o.n_resamples = static_cast<int>(c.num("n_resamples"));
  o.seed = static_cast<std::uint64_t>(c.num("seed"));
  auto ci = PairedBootstrapMeanCI(c.nums("x"), c.nums("y"), o);
  ASSERT_TRUE(ci.ok()) << ci.error().message;
  EXPECT_TRUE(Close(ci->low, c.num("low"), 1e-12, 1e-15));
  EXPECT_TRUE(Close(ci->high, c.num("high"), 1e-12, 1e-15));
}

TEST(StatsBootstrap, AgreesWithScipyBootstrap) {
  const FixtureCase c = CaseNamed(Ref(), "bootstrap_scipy", "gamma400");
  auto ci = BootstrapMeanCI(c.nums("x"), BootstrapOptions{10000, 0.95, 2024});
  ASSERT_TRUE(ci.ok());
  // Each endpoint's Monte Carlo error with 10,000 resamples is ~0.03 standard errors of the mean; both
  // sides are random, so allow 0.15 (about 4 sigma).
  const double tol = 0.15 * c.num("se_mean");
  EXPECT_NEAR(ci->low, c.num("low"), tol);
  EXPECT_NEAR(ci->high, c.num("high"), tol);
}

TEST(StatsBootstrap, Errors) {
  EXPECT_EQ(BootstrapMeanCI(std::vector<double>{}).error().message,
            "bootstrap_ci: needs at least 1 observation (got 0)");
  EXPECT_EQ(BootstrapMeanCI(std::vector<double>{1, 2}, BootstrapOptions{100, 1.5, 0}).error().message,
            "bootstrap_ci: confidence must be in (0, 1) (got 1.5)");
  EXPECT_EQ(BootstrapMeanCI(std::vector<double>{1, 2}, BootstrapOptions{0, 0.9, 0}).error().message,
            "bootstrap_ci: n_resamples must be >= 1 (got 0)");
  EXPECT_EQ(PairedBootstrapMeanCI(std::vector<double>{1, 2}, std::vector<double>{1}).error().message,
            "paired_bootstrap_ci: x and y must have the same length (got 2 and 1)");
  // A constant sample: every resample mean is the value.
  auto ci = BootstrapMeanCI(std::vector<double>{0.25, 0.25, 0.25});
  EXPECT_EQ(ci->low, 0.25);
  EXPECT_EQ(ci->high, 0.25);
}

TEST(StatsRandomization, ReplaysTheSameSignFlips) {
  for (const FixtureCase& c : CasesOf(Ref(), "ar")) {
    SCOPED_TRACE(c.name);
    RandomizationOptions o;
    o.n_resamples = static_cast<int>(c.num("n_resamples"));
    o.seed = static_cast<std::uint64_t>(c.num("seed"));
    auto p = ApproximateRandomization(c.nums("x"), c.nums("y"), o);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_DOUBLE_EQ(*p, c.num("p"));
    if (c.has("p_exact")) {
      // The Monte Carlo p-value estimates the exact one (all 2^n flips) within a few standard errors.
      const double pe = c.num("p_exact");
      const double se = std::sqrt(pe * (1 - pe) / o.n_resamples);
      EXPECT_NEAR(*p, pe, 4 * se + 1.0 / o.n_resamples);
    }
  }
  EXPECT_EQ(ApproximateRandomization(std::vector<double>{}, std::vector<double>{}).error().message,
            "approx_randomization: needs at least 1 pair (got 0)");
  // All differences zero: every flip ties the observed statistic, p = 1.
  EXPECT_DOUBLE_EQ(*ApproximateRandomization(std::vector<double>{1, 2}, std::vector<double>{1, 2}), 1.0);
}

// Sequential Monte Carlo p (Besag & Clifford 1991), by hand. One pair: every sign flip gives |s| = |s_obs|,
// so every resample is an exceedance and the test stops at the 5th: p = 5 / 5 = 1. Twenty equal positive
// differences: |s| reaches |s_obs| only when all 20 signs agree (probability 2^-19), so 1000 resamples see
// none and never stop early: p = (1 + 0) / (1 + 1000).
TEST(StatsRandomization, SequentialStopping) {
  RandomizationOptions o;
  o.n_resamples = 1000;
  o.seed = 3;
  o.stop_after_hits = 5;
  EXPECT_DOUBLE_EQ(*ApproximateRandomization(std::vector<double>{2}, std::vector<double>{1}, o), 1.0);
  const std::vector<double> x(20, 1.0), y(20, 0.5);
  EXPECT_DOUBLE_EQ(*ApproximateRandomization(x, y, o), 1.0 / 1001);
}

// The lead's use: 20,000 paired documents x 10,000 resamples (it must finish; speed is for benchmarks).
TEST(StatsRandomization, LargeRuns) {
  std::mt19937_64 gen(1);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> x(20000), y(20000);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = u(gen);
    y[i] = u(gen);
  }
  auto ci = PairedBootstrapMeanCI(x, y);
  auto p = ApproximateRandomization(x, y);
  ASSERT_TRUE(ci.ok() && p.ok());
  EXPECT_LT(ci->low, ci->high);
  // x and y are independent draws of one distribution: no real difference, so p is not tiny.
  EXPECT_GT(*p, 0.001);
  // Sequential stopping (Besag & Clifford): with 50 exceedances required, p = 50 / L at the stop.
  RandomizationOptions seq;
  seq.stop_after_hits = 50;
  auto ps = ApproximateRandomization(x, y, seq);
  ASSERT_TRUE(ps.ok());
  EXPECT_GT(*ps, 0.001);
}

// ---- Distributions --------------------------------------------------------------------------------------------------

TEST(StatsDistributions, HandWorked) {
  EXPECT_NEAR(NormalSf(1.959963984540054), 0.025, 1e-15);
  // t with 1 degree of freedom is Cauchy: P(T > 1) = 1/4.
  EXPECT_NEAR(StudentTSf(1, 1), 0.25, 1e-15);
  // I_x(1, 1) = x; I_x(2, 1) = x^2; F(2, 2): P(F > f) = 1 / (1 + f).
  EXPECT_NEAR(IncompleteBeta(1, 1, 0.3), 0.3, 1e-15);
  EXPECT_NEAR(IncompleteBeta(2, 1, 0.3), 0.09, 1e-15);
  EXPECT_NEAR(FisherFSf(3, 2, 2), 0.25, 1e-15);
}

// ---- Eigen-solver, correlation, factor analysis ------------------------------------------------------------------------

TEST(StatsEigen, MatchesNumpyEigvalsh) {
  for (const FixtureCase& c : CasesOf(Ref(), "eigen")) {
    SCOPED_TRACE(c.name);
    const int n = static_cast<int>(c.num("n"));
    DenseMatrix a(n, n);
    a.v = c.nums("a");
    auto e = EigenSymmetric(a);
    ASSERT_TRUE(e.ok()) << e.error().message;
    const std::vector<double> want = c.nums("values");
    double scale = 1;
    for (double v : want) scale = std::max(scale, std::fabs(v));
    for (int k = 0; k < n; ++k) EXPECT_NEAR(e->values[k], want[k], 1e-12 * scale) << k;
    // Eigenvectors: A v = lambda v and V'V = I.
    for (int k = 0; k < n; ++k) {
      for (int i = 0; i < n; ++i) {
        double av = 0;
        for (int j = 0; j < n; ++j) av += a.at(i, j) * e->vectors.at(j, k);
        EXPECT_NEAR(av, e->values[k] * e->vectors.at(i, k), 1e-11 * scale);
      }
      for (int l = 0; l < n; ++l) {
        double dot = 0;
        for (int i = 0; i < n; ++i) dot += e->vectors.at(i, k) * e->vectors.at(i, l);
        EXPECT_NEAR(dot, k == l ? 1.0 : 0.0, 1e-12);
      }
    }
  }
}

TEST(StatsFactor, CorrelationMatrixMatchesNumpy) {
  for (const char* set : {"fa2", "fa3"}) {
    SCOPED_TRACE(set);
    const DenseMatrix data = ReadCsv(std::string(set) + ".csv");
    const FixtureCase c = CaseNamed(Ref(), "corr_eigen", set);
    auto r = CorrelationMatrix(data);
    ASSERT_TRUE(r.ok()) << r.error().message;
    const std::vector<double> corr = c.nums("corr");
    ASSERT_EQ(r->v.size(), corr.size());
    for (std::size_t i = 0; i < corr.size(); ++i) EXPECT_NEAR(r->v[i], corr[i], 1e-14) << i;
    auto e = EigenSymmetric(*r);
    const std::vector<double> values = c.nums("values");
    for (std::size_t k = 0; k < values.size(); ++k) EXPECT_NEAR(e->values[k], values[k], 1e-12) << k;
  }
  DenseMatrix constant(3, 2);
  constant.v = {1, 5, 2, 5, 3, 5};
  EXPECT_EQ(CorrelationMatrix(constant).error().message, "correlation: column 1 is constant");
}

// Loadings are compared as psych reports them (same factor order and signs: our convention is psych's).
void ExpectFaMatches(const FixtureCase& c, const FactorResult& got, double tol) {
  const int p = static_cast<int>(c.num("rows"));
  const int f = static_cast<int>(c.num("factors"));
  ASSERT_EQ(got.loadings.rows, p);
  ASSERT_EQ(got.loadings.cols, f);
  const std::vector<double> l = c.nums("loadings");
  for (int i = 0; i < p; ++i) {
    for (int k = 0; k < f; ++k) EXPECT_NEAR(got.loadings.at(i, k), l[i * f + k], tol) << i << "," << k;
  }
  const std::vector<double> h = c.nums("communalities");
  const std::vector<double> u = c.nums("uniquenesses");
  for (int i = 0; i < p; ++i) {
    EXPECT_NEAR(got.communalities[i], h[i], tol) << i;
    EXPECT_NEAR(got.uniquenesses[i], u[i], tol) << i;
  }
  const std::vector<double> ss = c.nums("ss_loadings");
  const std::vector<double> prop = c.nums("proportion");
  for (int k = 0; k < f; ++k) {
    EXPECT_NEAR(got.ss_loadings[k], ss[k], tol) << k;
    EXPECT_NEAR(got.proportion[k], prop[k], tol) << k;
  }
}

TEST(StatsFactor, MatchesPsychFa) {
  for (const FixtureCase& c : CasesOf(FaRef(), "fa")) {
    SCOPED_TRACE(c.name);
    const DenseMatrix data = ReadCsv(c.str("data") + ".csv");
    FactorOptions o;
    o.factors = static_cast<int>(c.num("factors"));
    o.method = c.str("method") == "pa" ? FactorMethod::kPrincipalAxis : FactorMethod::kMinres;
    o.rotation = c.str("rotate") == "varimax" ? Rotation::kVarimax : Rotation::kNone;
    auto fa = FactorAnalysis(data, o);
    ASSERT_TRUE(fa.ok()) << fa.error().message;
    // Principal axis follows psych's own iteration (and stopping rule), so it agrees to rounding.
    // psych's minres stops its L-BFGS-B early (differences up to ~1.2e-5 here); we iterate to the
    // stationary point, which fits at least as well: the minres criterion (squared off-diagonal residuals
    // of R - L L') of our loadings is no larger than that of psych's.
    ExpectFaMatches(c, *fa, o.method == FactorMethod::kMinres ? 5e-5 : 1e-10);
    if (o.method == FactorMethod::kMinres) {
      auto r = CorrelationMatrix(data);
      const int p = r->rows;
      const int f = o.factors;
      const std::vector<double> psych = c.nums("loadings");
      auto criterion = [&](auto loading) {
        double s = 0;
        for (int i = 0; i < p; ++i) {
          for (int j = 0; j < i; ++j) {
            double m = 0;
            for (int k = 0; k < f; ++k) m += loading(i, k) * loading(j, k);
            s += (r->at(i, j) - m) * (r->at(i, j) - m);
          }
        }
        return s;
      };
      const double ours = criterion([&](int i, int k) { return fa->loadings.at(i, k); });
      const double theirs = criterion([&](int i, int k) { return psych[i * f + k]; });
      EXPECT_LE(ours, theirs + 1e-15);
    }
  }
}

TEST(StatsFactor, VarimaxMatchesR) {
  for (const FixtureCase& c : CasesOf(FaRef(), "varimax")) {
    SCOPED_TRACE(c.name);
    DenseMatrix in(static_cast<int>(c.num("rows")), static_cast<int>(c.num("cols")));
    in.v = c.nums("input");
    auto out = Varimax(in);
    ASSERT_TRUE(out.ok());
    const std::vector<double> want = c.nums("output");
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(out->v[i], want[i], 1e-10) << i;
  }
}

TEST(StatsFactor, Errors) {
  const DenseMatrix data = ReadCsv("fa2.csv");
  FactorOptions o;
  o.factors = 8;
  EXPECT_EQ(FactorAnalysis(data, o).error().message,
            "factor_analysis: factors must be between 1 and 7 for 8 variables (got 8)");
  DenseMatrix bad = data;
  bad.at(3, 2) = kStatsNaN;
  EXPECT_EQ(FactorAnalysis(bad).error().message, "factor_analysis: correlation: data[3][2] is NaN");
}

TEST(StatsFactor, ParallelAnalysis) {
  for (const auto& [set, want] : {std::pair<const char*, int>{"fa2", 2}, {"fa3", 3}}) {
    SCOPED_TRACE(set);
    const DenseMatrix data = ReadCsv(std::string(set) + ".csv");
    auto pa = ParallelAnalysis(data, ParallelOptions{50, 1});
    ASSERT_TRUE(pa.ok()) << pa.error().message;
    EXPECT_EQ(pa->factors, want);
    EXPECT_EQ(pa->factors_p95, want);
    const std::vector<double> obs = CaseNamed(Ref(), "corr_eigen", set).nums("values");
    for (std::size_t k = 0; k < obs.size(); ++k) {
      EXPECT_NEAR(pa->observed[k], obs[k], 1e-12);
      EXPECT_GE(pa->random_p95[k], pa->random_mean[k] - 1e-12);
    }
  }
  // Pure noise. The 95th-percentile criterion finds 0 or 1 factors; the mean criterion finds 0 or 1 on
  // most data sets (about 74% at n = 300, p = 10 by a numpy simulation; see ParallelAnalysis), and more
  // than 3 rarely (about 7%).
  std::mt19937_64 gen(3);
  std::normal_distribution<double> norm;
  int at_most_one = 0, more_than_three = 0;
  const int reps = 40;
  for (int rep = 0; rep < reps; ++rep) {
    DenseMatrix noise(300, 10);
    for (double& v : noise.v) v = norm(gen);
    auto pa = ParallelAnalysis(noise, ParallelOptions{20, static_cast<std::uint64_t>(rep)});
    ASSERT_TRUE(pa.ok());
    EXPECT_LE(pa->factors_p95, 1) << "rep " << rep;
    at_most_one += pa->factors <= 1;
    more_than_three += pa->factors > 3;
  }
  EXPECT_GE(at_most_one, reps / 2);
  EXPECT_LE(more_than_three, reps / 4);
}

TEST(StatsFactor, SmcMatchesPsych) {
  // SMC enters principal axis as its starting communalities; psych's first-iteration input is checked
  // through the PA results above, and directly here via 1 - 1/diag(R^-1) on the same data.
  for (const FixtureCase& c : CasesOf(FaRef(), "smc")) {
    SCOPED_TRACE(c.name);
    const DenseMatrix data = ReadCsv(c.name + ".csv");
    auto r = CorrelationMatrix(data);
    ASSERT_TRUE(r.ok());
    auto e = EigenSymmetric(*r);
    const std::vector<double> want = c.nums("smc");
    for (int i = 0; i < r->rows; ++i) {
      double inv = 0;
      for (int k = 0; k < r->rows; ++k) inv += e->vectors.at(i, k) * e->vectors.at(i, k) / e->values[k];
      EXPECT_NEAR(1 - 1 / inv, want[i], 1e-12) << i;
    }
  }
}

}  // namespace
}  // namespace kplab::stats
