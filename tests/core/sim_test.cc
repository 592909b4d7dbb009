// Similarity matrices and maximum-weight assignment, checked against hand-worked examples, brute force,
// and scipy/numpy outputs stored in tests/data/sim/reference.txt (tests/reference/gen_assign.py).
#include "kplab/sim.h"
#include "../../core/src/sim/dot_internal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace kplab {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Matrix MakeMatrix(int rows, int cols, std::vector<double> v) {
  Matrix m(rows, cols);
  m.v = std::move(v);
  return m;
}

// Checks that a is a one-to-one assignment of min(rows, cols) pairs whose total is the sum of its
// entries.
void ExpectValid(const Matrix& m, const Assignment& a) {
  ASSERT_EQ(a.row_to_col.size(), static_cast<std::size_t>(m.rows));
  std::vector<int> used(m.cols, 0);
  int pairs = 0;
  double total = 0;
  for (int r = 0; r < m.rows; ++r) {
    const int c = a.row_to_col[r];
    if (c < 0) {
      EXPECT_EQ(c, -1);
      continue;
    }
    ASSERT_LT(c, m.cols);
    EXPECT_EQ(used[c]++, 0) << "column " << c << " assigned twice";
    ++pairs;
    total += m.at(r, c);
  }
  EXPECT_EQ(pairs, std::min(m.rows, m.cols));
  EXPECT_DOUBLE_EQ(a.total, total);
}

// Best total over all injections of the smaller side into the larger, by enumeration.
double BruteForceMax(const Matrix& m) {
  const bool tall = m.rows > m.cols;
  const int small = tall ? m.cols : m.rows;
  const int large = tall ? m.rows : m.cols;
  std::vector<int> perm(large);
  std::iota(perm.begin(), perm.end(), 0);
  double best = -std::numeric_limits<double>::infinity();
  // Each permutation of the large side; its first `small` entries give an injection (repeats are fine).
  do {
    double t = 0;
    for (int k = 0; k < small; ++k) t += tall ? m.at(perm[k], k) : m.at(k, perm[k]);
    best = std::max(best, t);
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

TEST(Assign, HandWorked3x3) {
  // Greedy (take 0.9 first) is not optimal here. All 6 permutations, column of rows 0, 1, 2:
  //   (0,1,2): .9 + .2 + .5 = 1.6      (1,2,0): .8 + .3 + .1 = 1.2
  //   (0,2,1): .9 + .3 + .4 = 1.6      (2,0,1): .1 + .8 + .4 = 1.3
  //   (1,0,2): .8 + .8 + .5 = 2.1      (2,1,0): .1 + .2 + .1 = 0.4
  // Unique optimum (1,0,2), total 2.1.
  const Matrix m = MakeMatrix(3, 3,
                              {0.9, 0.8, 0.1,  //
                               0.8, 0.2, 0.3,  //
                               0.1, 0.4, 0.5});
  const Result<Assignment> a = MaxWeightAssignment(m);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->row_to_col, (std::vector<int>{1, 0, 2}));
  EXPECT_DOUBLE_EQ(a->total, 0.8 + 0.8 + 0.5);
  ExpectValid(m, *a);
}

TEST(Assign, HandWorked2x3AndTransposed) {
  // Rows 0, 1 take distinct columns (c0, c1); the 6 choices:
  //   (0,1): .7 + .2 = 0.9   (1,0): .6 + .9 = 1.5   (2,0): 0 + .9 = 0.9
  //   (0,2): .7 + .5 = 1.2   (1,2): .6 + .5 = 1.1   (2,1): 0 + .2 = 0.2
  // Unique optimum (1,0), total 1.5; column 2 stays unassigned.
  const Matrix m = MakeMatrix(2, 3,
                              {0.7, 0.6, 0.0,  //
                               0.9, 0.2, 0.5});
  const Result<Assignment> a = MaxWeightAssignment(m);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->row_to_col, (std::vector<int>{1, 0}));
  EXPECT_DOUBLE_EQ(a->total, 1.5);
  // The 3x2 transpose: same pairs, row 2 (old column 2) unassigned.
  const Matrix t = Transposed(m);
  ASSERT_EQ(t.rows, 3);
  ASSERT_EQ(t.cols, 2);
  EXPECT_EQ(t.at(2, 1), 0.5);
  const Result<Assignment> b = MaxWeightAssignment(t);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->row_to_col, (std::vector<int>{1, 0, -1}));
  EXPECT_DOUBLE_EQ(b->total, 1.5);
}

TEST(Assign, EmptyMatrices) {
  for (auto [r, c] : {std::pair{0, 0}, std::pair{0, 3}, std::pair{3, 0}}) {
    const Result<Assignment> a = MaxWeightAssignment(Matrix(r, c));
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->total, 0.0);
    EXPECT_EQ(a->row_to_col, std::vector<int>(r, -1));
  }
}

TEST(Assign, NonFiniteIsAnErrorNamingTheEntry) {
  Matrix m(2, 3, 0.5);
  m.at(1, 2) = kNaN;
  Result<Assignment> a = MaxWeightAssignment(m);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find("row 1, column 2"), std::string::npos) << a.error().message;
  EXPECT_NE(a.error().message.find("nan"), std::string::npos) << a.error().message;
  m.at(1, 2) = 0;
  m.at(0, 1) = -std::numeric_limits<double>::infinity();
  a = MaxWeightAssignment(Transposed(m));  // tall: reported in the caller's coordinates
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find("row 1, column 0"), std::string::npos) << a.error().message;
  EXPECT_NE(a.error().message.find("-inf"), std::string::npos) << a.error().message;
}

TEST(Assign, MatchesBruteForceOnSmallRandomMatrices) {
  // Independent oracle: enumeration. Values from small sets (many ties) and continuous ones.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> small(0, 2);
  for (int trial = 0; trial < 400; ++trial) {
    const int rows = 1 + trial % 6;
    const int cols = 1 + (trial / 6) % 6;
    Matrix m(rows, cols);
    for (double& x : m.v) x = trial % 2 ? real(rng) : 0.5 * small(rng);
    const Result<Assignment> a = MaxWeightAssignment(m);
    ASSERT_TRUE(a.ok());
    ExpectValid(m, *a);
    EXPECT_NEAR(a->total, BruteForceMax(m), 1e-12) << rows << "x" << cols << " trial " << trial;
  }
}

TEST(Assign, ConstantMatrixGivesIdentity) {
  // scipy's documented tie behaviour (https://github.com/scipy/scipy/issues/11602), which the column
  // scan order reproduces.
  const Result<Assignment> a = MaxWeightAssignment(Matrix(3, 5, 0.25));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->row_to_col, (std::vector<int>{0, 1, 2}));
  EXPECT_DOUBLE_EQ(a->total, 0.75);
}

// ---- The generated reference file -------------------------------------------------------------

struct AssignCase {
  std::string name;
  Matrix m;
  bool unique = false;
  double total = 0;
  std::vector<int> row_to_col;  // scipy's pairs
};

struct CosineCase {
  std::string name;
  int na = 0, nb = 0, dims = 0;
  std::vector<std::uint8_t> a_has, b_has;
  std::vector<float> a, b;
  Matrix cos;
};

struct Reference {
  std::vector<AssignCase> assign;
  std::vector<CosineCase> cosine;
};

void Expect(std::istream& in, const std::string& word) {
  std::string w;
  in >> w;
  ASSERT_EQ(w, word);
}

Reference LoadReference() {
  Reference ref;
  std::ifstream file(std::string(KPLAB_TEST_DATA) + "/sim/reference.txt");
  EXPECT_TRUE(file) << "missing tests/data/sim/reference.txt";
  std::string text, line;
  while (std::getline(file, line)) {
    if (!line.starts_with("#")) text += line + "\n";
  }
  std::istringstream in(text);
  std::string kind;
  while (in >> kind) {
    if (kind == "assign") {
      AssignCase c;
      int rows, cols, unique;
      in >> c.name >> rows >> cols >> unique;
      c.unique = unique != 0;
      c.m = Matrix(rows, cols);
      for (double& x : c.m.v) in >> x;
      Expect(in, "total");
      in >> c.total;
      Expect(in, "pairs");
      int n;
      in >> n;
      c.row_to_col.assign(rows, -1);
      for (int k = 0; k < n; ++k) {
        int r, col;
        in >> r >> col;
        c.row_to_col[r] = col;
      }
      Expect(in, "end");
      ref.assign.push_back(std::move(c));
    } else if (kind == "cosine") {
      CosineCase c;
      in >> c.name >> c.na >> c.nb >> c.dims;
      auto read_side = [&](const char* label, int n, std::vector<std::uint8_t>& has,
                           std::vector<float>& x) {
        Expect(in, label);
        has.resize(n);
        for (auto& h : has) {
          int v;
          in >> v;
          h = static_cast<std::uint8_t>(v);
        }
        x.resize(static_cast<std::size_t>(n) * c.dims);
        for (float& f : x) in >> f;  // shortest float32 repr -> strtof gives the same float
      };
      read_side("has_a", c.na, c.a_has, c.a);
      read_side("has_b", c.nb, c.b_has, c.b);
      Expect(in, "cos");
      c.cos = Matrix(c.na, c.nb);
      for (double& x : c.cos.v) in >> x;
      Expect(in, "end");
      ref.cosine.push_back(std::move(c));
    } else {
      ADD_FAILURE() << "unexpected token " << kind;
      break;
    }
  }
  EXPECT_FALSE(in.fail() && !in.eof()) << "parse error";
  return ref;
}

TEST(AssignReference, MatchesScipy) {
  const Reference ref = LoadReference();
  ASSERT_GE(ref.assign.size(), 30u);
  int unique = 0;
  for (const AssignCase& c : ref.assign) {
    SCOPED_TRACE(c.name);
    const Result<Assignment> a = MaxWeightAssignment(c.m);
    ASSERT_TRUE(a.ok()) << a.error().message;
    ExpectValid(c.m, *a);
    EXPECT_NEAR(a->total, c.total, 1e-9);
    // With several optima the pairs may legitimately differ; with one they must not.
    if (c.unique) {
      ++unique;
      EXPECT_EQ(a->row_to_col, c.row_to_col);
    }
  }
  EXPECT_GE(unique, 15);
}

TEST(CosineReference, MatchesNumpy) {
  const Reference ref = LoadReference();
  ASSERT_EQ(ref.cosine.size(), 2u);
  for (const CosineCase& c : ref.cosine) {
    SCOPED_TRACE(c.name);
    const Matrix m = CosineMatrix(c.a.data(), c.a_has.data(), c.na, c.b.data(), c.b_has.data(), c.nb,
                                  c.dims);
    ASSERT_EQ(m.rows, c.na);
    ASSERT_EQ(m.cols, c.nb);
    for (int i = 0; i < c.na; ++i) {
      for (int j = 0; j < c.nb; ++j) {
        EXPECT_NEAR(m.at(i, j), c.cos.at(i, j), 1e-12) << i << "," << j;
        if (c.cos.at(i, j) == 0) {
          EXPECT_EQ(m.at(i, j), 0.0) << i << "," << j;  // no-vector rows: exactly 0
        }
        EXPECT_LE(std::abs(m.at(i, j)), 1.0);
      }
    }
  }
}

// ---- Cosines by hand --------------------------------------------------------------------------

TEST(Cosine, HandComputed) {
  // a0 = (1,2,2), |a0| = 3;  a1 = (3,4,0), |a1| = 5;  a2 = 0 (zero vector, has = 1).
  // b0 = (2,1,-2), |b0| = 3; b1 = (0,3,4), |b1| = 5;  b2 = (-2,-4,-4), |b2| = 6.
  //   a0.b0 = 2 + 2 - 4 = 0       -> 0
  //   a0.b1 = 0 + 6 + 8 = 14      -> 14/15
  //   a0.b2 = -2 - 8 - 8 = -18    -> -18/18 = -1
  //   a1.b0 = 6 + 4 + 0 = 10      -> 10/15
  //   a1.b1 = 0 + 12 + 0 = 12     -> 12/25
  //   a1.b2 = -6 - 16 + 0 = -22   -> -22/30
  //   a2.*                        -> 0 (zero norm)
  const float a[] = {1, 2, 2, 3, 4, 0, 0, 0, 0};
  const float b[] = {2, 1, -2, 0, 3, 4, -2, -4, -4};
  const Matrix m = CosineMatrix(a, nullptr, 3, b, nullptr, 3, 3);
  ASSERT_EQ(m.rows, 3);
  ASSERT_EQ(m.cols, 3);
  const std::vector<double> want = {0, 14.0 / 15, -1, 10.0 / 15, 12.0 / 25, -22.0 / 30, 0, 0, 0};
  for (int k = 0; k < 9; ++k) EXPECT_DOUBLE_EQ(m.v[k], want[k]) << k;
  EXPECT_EQ(m.at(2, 1), 0.0);

  // has = 0 wins over the stored values: a1 and b1 have vectors on paper but are flagged absent.
  const std::uint8_t a_has[] = {1, 0, 1};
  const std::uint8_t b_has[] = {1, 0, 1};
  const Matrix h = CosineMatrix(a, a_has, 3, b, b_has, 3, 3);
  const std::vector<double> want_h = {0, 0, -1, 0, 0, 0, 0, 0, 0};
  for (int k = 0; k < 9; ++k) EXPECT_DOUBLE_EQ(h.v[k], want_h[k]) << k;

  // Not normalized input, scale-invariant: 10 * a0 against b1 is still 14/15.
  const float a0x10[] = {10, 20, 20};
  EXPECT_DOUBLE_EQ(CosineMatrix(a0x10, nullptr, 1, b + 3, nullptr, 1, 3).at(0, 0), 14.0 / 15);
}

TEST(Cosine, EmptyAndSelf) {
  const float x[] = {1, 2};
  EXPECT_EQ(CosineMatrix(x, nullptr, 0, x, nullptr, 1, 2).rows, 0);
  const Matrix e = CosineMatrix(x, nullptr, 1, x, nullptr, 0, 2);
  EXPECT_EQ(e.rows, 1);
  EXPECT_EQ(e.cols, 0);
  // Self-cosines of awkward float vectors stay within [-1, 1] (the clamp) and within 1e-15 of 1.
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> v(200 * 37);
  for (float& f : v) f = g(rng) * 1e-3f;
  const Matrix s = CosineMatrix(v.data(), nullptr, 200, v.data(), nullptr, 200, 37);
  for (int i = 0; i < 200; ++i) {
    EXPECT_LE(s.at(i, i), 1.0);
    EXPECT_GT(s.at(i, i), 1.0 - 1e-15);
    for (int j = 0; j < 200; ++j) EXPECT_EQ(s.at(i, j), s.at(j, i));  // same arithmetic both ways
  }
}

// ---- Maxima and top-k -------------------------------------------------------------------------

TEST(Sim, RowColMaxTies) {
  const Matrix m = MakeMatrix(2, 5,
                              {0.3, 0.9, 0.1, 0.9, 0.5,  //
                               0.2, 0.2, 0.2, -1, 0.5});
  EXPECT_EQ(RowMax(m), (std::vector<double>{0.9, 0.5}));
  EXPECT_EQ(RowArgmax(m), (std::vector<int>{1, 4}));  // 0.9 at columns 1 and 3: the first
  EXPECT_EQ(ColMax(m), (std::vector<double>{0.3, 0.9, 0.2, 0.9, 0.5}));
  EXPECT_EQ(ColArgmax(m), (std::vector<int>{0, 0, 1, 0, 0}));  // column 4: 0.5 twice, the first

  // Empty rows / columns: NaN and -1.
  const Matrix no_cols(2, 0);
  EXPECT_EQ(RowArgmax(no_cols), (std::vector<int>{-1, -1}));
  for (double x : RowMax(no_cols)) EXPECT_TRUE(std::isnan(x));
  EXPECT_TRUE(ColMax(no_cols).empty());
  const Matrix no_rows(0, 3);
  EXPECT_EQ(ColArgmax(no_rows), (std::vector<int>{-1, -1, -1}));
  for (double x : ColMax(no_rows)) EXPECT_TRUE(std::isnan(x));
  EXPECT_TRUE(RowMax(no_rows).empty());
}

TEST(Sim, RowTopKTies) {
  const Matrix m = MakeMatrix(2, 5,
                              {0.3, 0.9, 0.1, 0.9, 0.5,  //
                               0.2, 0.2, 0.2, -1, 0.5});
  EXPECT_EQ(RowTopK(m, 0, 3), (std::vector<int>{1, 3, 4}));
  EXPECT_EQ(RowTopK(m, 0, 99), (std::vector<int>{1, 3, 4, 0, 2}));  // k > cols -> cols
  EXPECT_EQ(RowTopK(m, 1, 4), (std::vector<int>{4, 0, 1, 2}));      // three 0.2s by column
  EXPECT_TRUE(RowTopK(m, 0, 0).empty());
  EXPECT_TRUE(RowTopK(m, 0, -2).empty());

  EXPECT_DOUBLE_EQ(RowTopKMean(m, 0, 1), 0.9);
  EXPECT_DOUBLE_EQ(RowTopKMean(m, 0, 2), 0.9);
  EXPECT_DOUBLE_EQ(RowTopKMean(m, 0, 3), (0.9 + 0.9 + 0.5) / 3);
  EXPECT_DOUBLE_EQ(RowTopKMean(m, 0, 99), (0.9 + 0.9 + 0.5 + 0.3 + 0.1) / 5);
  EXPECT_DOUBLE_EQ(RowTopKMean(m, 1, 2), (0.5 + 0.2) / 2);
  EXPECT_TRUE(std::isnan(RowTopKMean(m, 0, 0)));
  EXPECT_TRUE(std::isnan(RowTopKMean(Matrix(1, 0), 0, 3)));
  EXPECT_TRUE(RowTopK(Matrix(1, 0), 0, 3).empty());
}

TEST(Sim, NaNRanksFirstLikeNumpy) {
  // np.max -> nan, np.argmax -> 1 (the first NaN).
  const Matrix m = MakeMatrix(1, 4, {0.1, kNaN, 0.5, kNaN});
  EXPECT_TRUE(std::isnan(RowMax(m)[0]));
  EXPECT_EQ(RowArgmax(m)[0], 1);
  EXPECT_EQ(ColArgmax(Transposed(m))[0], 1);
  EXPECT_EQ(RowTopK(m, 0, 3), (std::vector<int>{1, 3, 2}));
  EXPECT_TRUE(std::isnan(RowTopKMean(m, 0, 1)));
}

TEST(Sim, TopOneIsArgmax) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> d(0, 3);
  for (int t = 0; t < 200; ++t) {
    Matrix m(3, 1 + t % 7);
    for (double& x : m.v) x = d(rng) / 3.0;
    const std::vector<int> arg = RowArgmax(m);
    for (int r = 0; r < m.rows; ++r) {
      EXPECT_EQ(RowTopK(m, r, 1), std::vector<int>{arg[r]});
      EXPECT_DOUBLE_EQ(RowTopKMean(m, r, 1), RowMax(m)[r]);
    }
  }
}


// Every cosine goes through one dot product; the AVX2 path must give the portable loop's bits, or
// numbers would change with the machine. Hostile: every length around the 4-wide step (0..13 and
// 100, 300), magnitudes from subnormal to near FLT_MAX, cancellation, inf and NaN, unaligned starts.
TEST(Dot, Avx2GivesThePortableBits) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> unit(-1, 1);
  std::uniform_int_distribution<int> exponent(-149, 127);
  std::vector<float> x(400), y(400);
  auto fill = [&](int mode) {
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (mode == 0) {
        x[i] = unit(rng), y[i] = unit(rng);
      } else if (mode == 1) {  // any magnitude
        x[i] = std::ldexp(unit(rng), exponent(rng)), y[i] = std::ldexp(unit(rng), exponent(rng) / 2);
      } else {  // cancellation: y = -x except one element
        x[i] = unit(rng) * 1e30f, y[i] = (i % 7 == 3) ? 1e-30f : -x[i];
      }
    }
  };
  double probe = 0;
  if (!sim_internal::DotAvx2(x.data(), y.data(), 0, &probe)) GTEST_SKIP() << "CPU has no AVX2";
  EXPECT_EQ(probe, 0.0);
  int compared = 0;
  for (int mode = 0; mode < 3; ++mode) {
    for (int round = 0; round < 20; ++round) {
      fill(mode);
      for (int n : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 100, 300}) {
        for (int offset : {0, 1, 3}) {
          const double a = sim_internal::DotPortable(x.data() + offset, y.data() + offset, n);
          double b = -1;
          ASSERT_TRUE(sim_internal::DotAvx2(x.data() + offset, y.data() + offset, n, &b));
          ASSERT_EQ(std::bit_cast<std::uint64_t>(a), std::bit_cast<std::uint64_t>(b))
              << "mode " << mode << " n " << n << " offset " << offset << ": " << a << " vs " << b;
          ++compared;
        }
      }
    }
  }
  EXPECT_EQ(compared, 3 * 20 * 16 * 3);
  // Infinities and NaN go through both alike: inf * 0 is NaN in both, inf - inf too.
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> p = {inf, 1, 2, 3, 4}, q = {0, 1, 1, 1, 1}, r = {1, 1, 1, 1, -inf}, s = {inf, 0, 0, 0, 1};
  double b = 0;
  ASSERT_TRUE(sim_internal::DotAvx2(p.data(), q.data(), 5, &b));
  EXPECT_TRUE(std::isnan(b));
  EXPECT_TRUE(std::isnan(sim_internal::DotPortable(p.data(), q.data(), 5)));
  ASSERT_TRUE(sim_internal::DotAvx2(s.data(), r.data(), 5, &b));
  EXPECT_TRUE(std::isnan(b));  // inf + (-inf)
  // A hand sum: 1*2 + 2*3 + 3*4 + 4*5 + 5*6 = 70.
  std::vector<float> u = {1, 2, 3, 4, 5}, v = {2, 3, 4, 5, 6};
  ASSERT_TRUE(sim_internal::DotAvx2(u.data(), v.data(), 5, &b));
  EXPECT_EQ(b, 70.0);
  EXPECT_EQ(sim_internal::Dot(u.data(), v.data(), 5), 70.0);
}

}  // namespace
}  // namespace kplab
