// EarthMoversDistance (kplab/emd.h): hand-worked cases written out below, FastEMD's integer rounding
// worked out by hand, hostile inputs, and cases whose distances and flows pyemd 0.5.1 (Debian
// python3-pyemd, FastEMD) printed (tests/data/mover/emd_pyemd.tsv, written by
// tests/data/mover/gen_emd_cases.py).
#include "kplab/emd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace kplab {
namespace {

// Bins at positions xs on a line; the cost is |x_i - x_j| (a metric).
std::vector<double> LineCosts(const std::vector<double>& xs) {
  std::vector<double> c;
  for (double a : xs) {
    for (double b : xs) c.push_back(std::fabs(a - b));
  }
  return c;
}

TEST(Emd, EqualMassOnALineIsTheAreaBetweenTheCumulativeDistributions) {
  // Points 0, 1, 3, 4; p = (.5, .5, 0, 0), q = (0, 0, .25, .75). On a line the EMD is the integral of
  // |CDF_p - CDF_q|: [0,1) .5 x 1 + [1,3) 1 x 2 + [3,4) .75 x 1 = 3.25. Every scaled mass and cost is an
  // integer here (1e6 / 1 and 1e6 / 4), so FastEMD's rounding loses nothing.
  const auto c = LineCosts({0, 1, 3, 4});
  auto r = EarthMoversDistance(std::vector<double>{.5, .5, 0, 0}, std::vector<double>{0, 0, .25, .75}, c);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->distance, 3.25);
}

TEST(Emd, UnequalMassesPayTheSurplusAtTheLargestCostAfterRoundingToMillionths) {
  // Points 0, 1, 2; p = (.6, 0, 0), q = (0, .3, .2). Mass factor 1e6 / .6, cost factor 1e6 / 2:
  //   p_0 -> 1,000,000; q_1 -> floor(.3 * 1666666.67 + .5) = 500,000; q_2 -> floor(333333.33 + .5) = 333,333;
  //   costs 0, 500,000, 1,000,000 (the largest, served through FastEMD's threshold node).
  // Cost 500,000 x 500,000 + 333,333 x 1,000,000; distance = that / (1e6 / .6) / (1e6 / 2) plus the
  // surplus (.6 - .5) x max cost 2. The rounding of q_2 shows: the unrounded answer is .9.
  const auto c = LineCosts({0, 1, 2});
  EmdOptions opt;
  opt.flow = true;
  auto r = EarthMoversDistance(std::vector<double>{.6, 0, 0}, std::vector<double>{0, .3, .2}, c, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const double pq = 1000000.0 / 0.6, cf = 1000000.0 / 2;
  const double expected = (500000.0 * 500000.0 + 333333.0 * 1000000.0) / pq / cf + (0.6 - (0.3 + 0.2)) * 2;
  EXPECT_EQ(r->distance, expected);
  EXPECT_NEAR(r->distance, 0.9, 1e-6);
  EXPECT_NE(r->distance, 0.9);
  // Flow: .3 moves 0 -> 1 directly; the 333,333 units served through the threshold are put back on the
  // first bins with mass left (0 -> 2); the surplus stays unassigned.
  ASSERT_EQ(r->flow.size(), 9u);
  EXPECT_EQ(r->flow[1], 500000.0 / pq);
  EXPECT_EQ(r->flow[2], 333333.0 / pq);
  for (int k : {0, 3, 4, 5, 6, 7, 8}) EXPECT_EQ(r->flow[k], 0.0) << k;
}

TEST(Emd, MassPresentOnBothSidesStaysInPlace) {
  // p = (.5, .5), q = (.5, .5): everything stays, distance 0, flow on the diagonal.
  EmdOptions opt;
  opt.flow = true;
  auto r = EarthMoversDistance(std::vector<double>{.5, .5}, std::vector<double>{.5, .5}, LineCosts({0, 7}), opt);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->distance, 0.0);
  EXPECT_EQ(r->flow, (std::vector<double>{.5, 0, 0, .5}));
}

TEST(Emd, EmptyAndAllZeroHistograms) {
  auto none = EarthMoversDistance({}, {}, {});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->distance, 0.0);
  auto zeros = EarthMoversDistance(std::vector<double>{0, 0}, std::vector<double>{0, 0}, LineCosts({0, 1}));
  ASSERT_TRUE(zeros.ok());
  EXPECT_EQ(zeros->distance, 0.0);
  // One side empty: all of the other side's mass is surplus, paid at the largest cost.
  auto one = EarthMoversDistance(std::vector<double>{0, 0, 0}, std::vector<double>{0, .25, .5}, LineCosts({0, 1, 3}));
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->distance, 0.75 * 3);
  // Every cost 0: only the surplus counts, at cost 0.
  auto flat = EarthMoversDistance(std::vector<double>{1, 0}, std::vector<double>{0, .5}, std::vector<double>(4, 0.0));
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(flat->distance, 0.0);
}

TEST(Emd, HostileInputsAreErrorsNamingTheEntry) {
  const auto c = LineCosts({0, 1});
  auto sizes = EarthMoversDistance(std::vector<double>{1}, std::vector<double>{0, 1}, c);
  ASSERT_FALSE(sizes.ok());
  EXPECT_EQ(sizes.error().message, "emd: the histograms have 1 and 2 bins (expected the same number)");
  auto square = EarthMoversDistance(std::vector<double>{1, 0}, std::vector<double>{0, 1}, std::vector<double>{0, 1, 1});
  ASSERT_FALSE(square.ok());
  EXPECT_EQ(square.error().message, "emd: the cost matrix has 3 entries (expected 2 x 2 = 4)");
  auto neg = EarthMoversDistance(std::vector<double>{1, -0.5}, std::vector<double>{0, 1}, c);
  ASSERT_FALSE(neg.ok());
  EXPECT_EQ(neg.error().message, "emd: bin 2 of the first histogram is -0.5 (expected a finite mass >= 0)");
  auto nan = EarthMoversDistance(std::vector<double>{1, 0}, std::vector<double>{0, NAN}, c);
  ASSERT_FALSE(nan.ok());
  EXPECT_EQ(nan.error().message, "emd: bin 2 of the second histogram is nan (expected a finite mass >= 0)");
  auto inf = EarthMoversDistance(std::vector<double>{1, 0}, std::vector<double>{0, 1}, std::vector<double>{0, INFINITY, 1, 0});
  ASSERT_FALSE(inf.ok());
  EXPECT_EQ(inf.error().message, "emd: cost (1, 2) is inf (expected a finite distance >= 0)");
  auto negc = EarthMoversDistance(std::vector<double>{1, 0}, std::vector<double>{0, 1}, std::vector<double>{0, 1, -1, 0});
  ASSERT_FALSE(negc.ok());
  EXPECT_EQ(negc.error().message, "emd: cost (2, 1) is -1 (expected a finite distance >= 0)");
}

TEST(Emd, CheckpointSeesTheWorkAndMayStopIt) {
  const auto c = LineCosts({0, 1, 2, 3});
  double seen = 0;
  EmdOptions opt;
  opt.checkpoint = [&](double steps) { seen += steps; };
  ASSERT_TRUE(EarthMoversDistance(std::vector<double>{.5, .5, 0, 0}, std::vector<double>{0, 0, .5, .5}, c, opt).ok());
  EXPECT_GE(seen, 16.0);
  opt.checkpoint = [](double) { throw std::runtime_error("stop"); };
  EXPECT_THROW(
      (void)EarthMoversDistance(std::vector<double>{.5, .5, 0, 0}, std::vector<double>{0, 0, .5, .5}, c, opt),
      std::runtime_error);
}

// pyemd's own numbers (gen_emd_cases.py): each row n, p, q, cost (row-major), emd, flow (row-major).
TEST(Emd, AgreesWithPyemdToTheLastBitOnItsOwnOutputs) {
  std::ifstream in(std::string(KPLAB_SOURCE_DIR) + "/tests/data/mover/emd_pyemd.tsv");
  ASSERT_TRUE(in) << "tests/data/mover/emd_pyemd.tsv";
  std::string line;
  int cases = 0, flows_equal = 0;
  auto read = [](std::istringstream& s, std::size_t k) {
    std::vector<double> v(k);
    for (auto& x : v) s >> x;
    return v;
  };
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    std::size_t n = 0;
    std::string name;
    s >> name >> n;
    const auto p = read(s, n), q = read(s, n), c = read(s, n * n);
    double expected = 0;
    s >> expected;
    const auto flow = read(s, n * n);
    ASSERT_TRUE(s) << name;
    EmdOptions opt;
    opt.flow = true;
    auto r = EarthMoversDistance(p, q, c, opt);
    ASSERT_TRUE(r.ok()) << name << ": " << r.error().message;
    EXPECT_EQ(r->distance, expected) << name;
    double cost_ours = 0, cost_theirs = 0;
    for (std::size_t k = 0; k < n * n; ++k) {
      cost_ours += r->flow[k] * c[k];
      cost_theirs += flow[k] * c[k];
    }
    // Where several flows are optimal FastEMD's pick may differ; their costs agree to the rounding.
    EXPECT_NEAR(cost_ours, cost_theirs, 1e-9 * std::max(1.0, cost_theirs)) << name;
    flows_equal += r->flow == flow;
    ++cases;
  }
  EXPECT_GE(cases, 20);
  EXPECT_GE(flows_equal, cases * 3 / 4) << "flows equal to FastEMD's in " << flows_equal << " of " << cases;
}

}  // namespace
}  // namespace kplab
