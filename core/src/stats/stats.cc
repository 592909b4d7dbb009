// kplab::stats: descriptive statistics, correlations, Wilcoxon, Cliff's delta, two-way ANOVA,
// distributions, the Rng, bootstrap, approximate randomization and Holm. Factor analysis and the
// eigen-solver are in stats_fa.cc. Conventions are documented in kplab/stats.h.
#include "kplab/stats.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "stats_internal.h"

namespace kplab::stats {

namespace internal {

std::optional<Error> CheckNoNaN(std::span<const double> x, std::string_view fn, std::string_view arg) {
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) return Error::Input(fmt::format("{}: {}[{}] is NaN", fn, arg, i));
  }
  return std::nullopt;
}

std::optional<Error> CheckSameLength(std::span<const double> x, std::span<const double> y,
                                     std::string_view fn) {
  if (x.size() != y.size()) {
    return Error::Input(fmt::format("{}: x and y must have the same length (got {} and {})", fn, x.size(), y.size()));
  }
  return std::nullopt;
}

double PairwiseSum(const double* x, std::size_t n) {
  if (n <= 128) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
      s0 += x[i];
      s1 += x[i + 1];
      s2 += x[i + 2];
      s3 += x[i + 3];
    }
    for (; i < n; ++i) s0 += x[i];
    return (s0 + s1) + (s2 + s3);
  }
  const std::size_t half = n / 2;
  return PairwiseSum(x, half) + PairwiseSum(x + half, n - half);
}

}  // namespace internal

double QuantileSorted(std::span<const double> s, double q) {
  const std::size_t n = s.size();
  const double h = static_cast<double>(n - 1) * q;  // numpy: (n - 1) * quantiles
  if (h >= static_cast<double>(n - 1)) return s[n - 1];
  const double lo = std::floor(h);
  const std::size_t i = static_cast<std::size_t>(lo);
  const double g = h - lo;
  const double a = s[i];
  const double b = s[i + 1];
  const double diff = b - a;
  // numpy's _lerp: from the upper neighbour when the weight is >= 0.5.
  return g >= 0.5 ? b - diff * (1 - g) : a + diff * g;
}

using internal::CheckNoNaN;
using internal::CheckSameLength;
using internal::PairwiseSum;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double MeanOf(std::span<const double> x) {
  return PairwiseSum(x.data(), x.size()) / static_cast<double>(x.size());
}

bool IsConstant(std::span<const double> x) {
  for (double v : x) {
    if (v != x[0]) return false;
  }
  return true;
}

Result<std::vector<double>> Differences(std::span<const double> x, std::span<const double> y,
                                        std::string_view fn) {
  if (auto e = CheckSameLength(x, y, fn)) return *e;
  if (auto e = CheckNoNaN(x, fn, "x")) return *e;
  if (auto e = CheckNoNaN(y, fn, "y")) return *e;
  std::vector<double> d(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) d[i] = x[i] - y[i];
  return d;
}

// Continued fraction of I_x(a, b) (Abramowitz & Stegun 26.5.8), evaluated by the modified Lentz method.
double BetaContinuedFraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kEps = 1e-16;
  const double qab = a + b;
  const double qap = a + 1;
  const double qam = a - 1;
  double c = 1;
  double d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 100000; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < kEps) break;
  }
  return h;
}

// log B(a, b).
double LogBeta(double a, double b) { return std::lgamma(a) + std::lgamma(b) - std::lgamma(a + b); }

// I_x(a, b) given both x and y = 1 - x (so that callers keep the precision of whichever is small).
double IncompleteBetaXY(double a, double b, double x, double y) {
  if (x <= 0) return 0;
  if (y <= 0) return 1;
  const double log_front = a * std::log(x) + b * std::log(y) - LogBeta(a, b);
  if (x < (a + 1) / (a + b + 2)) {
    return std::exp(log_front) * BetaContinuedFraction(a, b, x) / a;
  }
  return 1 - std::exp(log_front) * BetaContinuedFraction(b, a, y) / b;
}

}  // namespace

// ---- Distributions ------------------------------------------------------------------------------------------

double IncompleteBeta(double a, double b, double x) {
  if (std::isnan(x) || std::isnan(a) || std::isnan(b)) return kNaN;
  x = std::clamp(x, 0.0, 1.0);
  return IncompleteBetaXY(a, b, x, 1 - x);
}

double StudentTSf(double t, double df) {
  if (std::isnan(t) || std::isnan(df)) return kNaN;
  if (std::isinf(t)) return t > 0 ? 0.0 : 1.0;
  const double t2 = t * t;
  // P(|T| > |t|) = I_{df / (df + t^2)}(df / 2, 1 / 2).
  const double x = df / (df + t2);
  const double y = t2 / (df + t2);
  const double two_tail = IncompleteBetaXY(df / 2, 0.5, x, y);
  return t >= 0 ? two_tail / 2 : 1 - two_tail / 2;
}

double FisherFSf(double f, double d1, double d2) {
  if (std::isnan(f) || std::isnan(d1) || std::isnan(d2)) return kNaN;
  if (f <= 0) return 1;
  if (std::isinf(f)) return 0;
  // P(F > f) = I_{d2 / (d2 + d1 f)}(d2 / 2, d1 / 2).
  const double x = d2 / (d2 + d1 * f);
  const double y = d1 * f / (d2 + d1 * f);
  return IncompleteBetaXY(d2 / 2, d1 / 2, x, y);
}

double NormalSf(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

// ---- Descriptive ----------------------------------------------------------------------------------------------

Result<double> Mean(std::span<const double> x) {
  if (x.empty()) return Error::Input("mean: needs at least 1 value (got 0)");
  if (auto e = CheckNoNaN(x, "mean", "x")) return *e;
  return MeanOf(x);
}

Result<double> FSum(std::span<const double> x) {
  if (auto e = CheckNoNaN(x, "fsum", "x")) return *e;
  // CPython's math_fsum: partials stay non-overlapping and increasing in magnitude, so their count is
  // bounded by the exponent range (~40), and each value costs O(1).
  std::vector<double> p;
  bool pos_inf = false, neg_inf = false;
  for (double v : x) {
    if (std::isinf(v)) {
      (v > 0 ? pos_inf : neg_inf) = true;
      continue;
    }
    std::size_t i = 0;
    for (std::size_t j = 0; j < p.size(); ++j) {
      double y = p[j];
      if (std::fabs(v) < std::fabs(y)) std::swap(v, y);
      const double hi = v + y;
      const double lo = y - (hi - v);
      if (lo != 0.0) p[i++] = lo;
      v = hi;
    }
    if (!std::isfinite(v)) return Error::Input("fsum: intermediate overflow (the sum of x is not finite)");
    p.resize(i);
    p.push_back(v);
  }
  if (pos_inf && neg_inf) return Error::Input("fsum: x holds both +inf and -inf");
  if (pos_inf || neg_inf) return pos_inf ? HUGE_VAL : -HUGE_VAL;
  if (p.empty()) return 0.0;
  std::size_t n = p.size();
  double hi = p[--n], lo = 0.0;
  while (n > 0) {
    const double prev = hi;
    const double y = p[--n];
    hi = prev + y;
    lo = y - (hi - prev);
    if (lo != 0.0) break;
  }
  // Half-even across partials: when the rest below lo has lo's sign, the exact sum is past the halfway
  // point that hi + lo rounded to even on, so round away.
  if (n > 0 && ((lo < 0.0 && p[n - 1] < 0.0) || (lo > 0.0 && p[n - 1] > 0.0))) {
    const double y = lo * 2.0;
    const double up = hi + y;
    if (y == up - hi) hi = up;
  }
  return hi;
}

Result<std::vector<double>> Quantiles(std::span<const double> x, std::span<const double> qs) {
  if (x.empty()) return Error::Input("quantile: needs at least 1 value (got 0)");
  if (auto e = CheckNoNaN(x, "quantile", "x")) return *e;
  for (std::size_t i = 0; i < qs.size(); ++i) {
    if (!(qs[i] >= 0 && qs[i] <= 1)) {
      return Error::Usage(fmt::format("quantile: q[{}] = {} is not in [0, 1]", i, qs[i]));
    }
  }
  std::vector<double> s(x.begin(), x.end());
  std::sort(s.begin(), s.end());
  std::vector<double> out;
  out.reserve(qs.size());
  for (double q : qs) out.push_back(QuantileSorted(s, q));
  return out;
}

Result<double> Quantile(std::span<const double> x, double q) {
  if (!(q >= 0 && q <= 1)) return Error::Usage(fmt::format("quantile: q = {} is not in [0, 1]", q));
  auto r = Quantiles(x, std::span<const double>(&q, 1));
  if (!r) return r.error();
  return (*r)[0];
}

Result<double> Median(std::span<const double> x) {
  if (x.empty()) return Error::Input("median: needs at least 1 value (got 0)");
  if (auto e = CheckNoNaN(x, "median", "x")) return *e;
  std::vector<double> s(x.begin(), x.end());
  std::sort(s.begin(), s.end());
  return QuantileSorted(s, 0.5);
}

namespace {

Result<double> VarianceImpl(std::span<const double> x, int ddof, std::string_view fn) {
  if (ddof < 0) return Error::Usage(fmt::format("{}: ddof must be >= 0 (got {})", fn, ddof));
  if (x.size() <= static_cast<std::size_t>(ddof)) {
    return Error::Input(fmt::format("{}: needs more than ddof = {} observations (got {})", fn, ddof, x.size()));
  }
  if (auto e = CheckNoNaN(x, fn, "x")) return *e;
  const double m = MeanOf(x);
  std::vector<double> sq(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) sq[i] = (x[i] - m) * (x[i] - m);
  return PairwiseSum(sq.data(), sq.size()) / static_cast<double>(x.size() - ddof);
}

}  // namespace

Result<double> Variance(std::span<const double> x, int ddof) { return VarianceImpl(x, ddof, "variance"); }

Result<double> StdDev(std::span<const double> x, int ddof) {
  auto v = VarianceImpl(x, ddof, "sd");
  if (!v) return v.error();
  return std::sqrt(*v);
}

std::vector<double> AverageRanks(std::span<const double> x) {
  const std::size_t n = x.size();
  std::vector<std::size_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return x[a] < x[b]; });
  std::vector<double> ranks(n);
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i + 1;
    while (j < n && x[idx[j]] == x[idx[i]]) ++j;
    const double r = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;  // mean of i+1 .. j
    for (std::size_t k = i; k < j; ++k) ranks[idx[k]] = r;
    i = j;
  }
  return ranks;
}

// ---- Correlation --------------------------------------------------------------------------------------------

namespace {

// Pearson's r of two non-constant samples (centred, each scaled to unit norm, dot product; clipped).
double PearsonR(std::span<const double> x, std::span<const double> y) {
  const std::size_t n = x.size();
  const double mx = MeanOf(x);
  const double my = MeanOf(y);
  std::vector<double> xm(n), ym(n);
  for (std::size_t i = 0; i < n; ++i) {
    xm[i] = x[i] - mx;
    ym[i] = y[i] - my;
  }
  // Scaled norms (as scipy.linalg.norm) so huge values do not overflow.
  auto norm = [](const std::vector<double>& v) {
    double scale = 0;
    for (double a : v) scale = std::max(scale, std::fabs(a));
    if (scale == 0) return 0.0;
    double s = 0;
    for (double a : v) s += (a / scale) * (a / scale);
    return scale * std::sqrt(s);
  };
  const double nx = norm(xm);
  const double ny = norm(ym);
  double r = 0;
  for (std::size_t i = 0; i < n; ++i) r += (xm[i] / nx) * (ym[i] / ny);
  return std::clamp(r, -1.0, 1.0);
}

std::optional<Error> CheckPair(std::span<const double> x, std::span<const double> y, std::string_view fn,
                               std::size_t min_n) {
  if (auto e = CheckSameLength(x, y, fn)) return e;
  if (x.size() < min_n) {
    return Error::Input(fmt::format("{}: needs at least {} observations (got {})", fn, min_n, x.size()));
  }
  if (auto e = CheckNoNaN(x, fn, "x")) return e;
  if (auto e = CheckNoNaN(y, fn, "y")) return e;
  return std::nullopt;
}

}  // namespace

Result<Correlation> Pearson(std::span<const double> x, std::span<const double> y) {
  if (auto e = CheckPair(x, y, "pearson", 2)) return *e;
  if (IsConstant(x) || IsConstant(y)) return Correlation{kNaN, kNaN};
  const std::size_t n = x.size();
  if (n == 2) {
    auto sign = [](double v) { return v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0); };
    return Correlation{sign(x[1] - x[0]) * sign(y[1] - y[0]), 1.0};
  }
  const double r = PearsonR(x, y);
  // Under H0, (r + 1) / 2 ~ Beta(n/2 - 1, n/2 - 1): p = 2 P(B > (1 + |r|) / 2) = 2 I_{(1 - |r|)/2}(ab, ab).
  const double ab = static_cast<double>(n) / 2 - 1;
  const double lo = (1 - std::fabs(r)) / 2;
  const double hi = (1 + std::fabs(r)) / 2;
  const double p = 2 * IncompleteBetaXY(ab, ab, lo, hi);
  return Correlation{r, std::min(p, 1.0)};
}

Result<Correlation> Spearman(std::span<const double> x, std::span<const double> y) {
  if (auto e = CheckPair(x, y, "spearman", 3)) return *e;
  if (IsConstant(x) || IsConstant(y)) return Correlation{kNaN, kNaN};
  const std::vector<double> rx = AverageRanks(x);
  const std::vector<double> ry = AverageRanks(y);
  const double rho = PearsonR(rx, ry);
  const double dof = static_cast<double>(x.size()) - 2;
  const double denom = (rho + 1.0) * (1.0 - rho);
  double t;
  if (denom <= 0) {
    t = rho > 0 ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  } else {
    t = rho * std::sqrt(dof / denom);
  }
  const double p = 2 * StudentTSf(std::fabs(t), dof);
  return Correlation{rho, p};
}

namespace {

// Number of pairs i < j with v[i] > v[j] (strict), by merge sort. Sorts v.
std::int64_t CountInversions(std::vector<std::int64_t>& v) {
  const std::size_t n = v.size();
  std::vector<std::int64_t> buf(n);
  std::int64_t inv = 0;
  for (std::size_t width = 1; width < n; width *= 2) {
    for (std::size_t lo = 0; lo < n; lo += 2 * width) {
      const std::size_t mid = std::min(lo + width, n);
      const std::size_t hi = std::min(lo + 2 * width, n);
      std::size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        if (v[j] < v[i]) {
          inv += static_cast<std::int64_t>(mid - i);
          buf[k++] = v[j++];
        } else {
          buf[k++] = v[i++];
        }
      }
      while (i < mid) buf[k++] = v[i++];
      while (j < hi) buf[k++] = v[j++];
    }
    v.swap(buf);
  }
  return inv;
}

// Dense ranks 0, 1, ... of x (equal values share a rank).
std::vector<std::int64_t> DenseRanks(std::span<const double> x) {
  const std::size_t n = x.size();
  std::vector<std::size_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return x[a] < x[b]; });
  std::vector<std::int64_t> r(n);
  std::int64_t cur = -1;
  for (std::size_t i = 0; i < n; ++i) {
    if (i == 0 || x[idx[i]] != x[idx[i - 1]]) ++cur;
    r[idx[i]] = cur;
  }
  return r;
}

struct TieStats {
  std::int64_t pairs = 0;  // sum t(t-1)/2
  double v0 = 0;           // sum t(t-1)(t-2)
  double v1 = 0;           // sum t(t-1)(2t+5)
};

TieStats CountTies(const std::vector<std::int64_t>& dense) {
  std::vector<std::int64_t> cnt(dense.empty() ? 0 : *std::max_element(dense.begin(), dense.end()) + 1, 0);
  for (std::int64_t r : dense) ++cnt[r];
  TieStats s;
  for (std::int64_t t : cnt) {
    if (t < 2) continue;
    const double td = static_cast<double>(t);
    s.pairs += t * (t - 1) / 2;
    s.v0 += td * (td - 1) * (td - 2);
    s.v1 += td * (td - 1) * (2 * td + 5);
  }
  return s;
}

// Two-sided exact p-value of Kendall's statistic with c concordant pairs out of n(n-1)/2, no ties
// (as scipy.stats._mstats_basic._kendall_p_exact): twice the lower tail of the number of inversions of
// a random permutation at min(c, tot - c).
double KendallExactP(std::int64_t n, std::int64_t c) {
  const std::int64_t tot = n * (n - 1) / 2;
  c = std::min(c, tot - c);
  if (n <= 2) return 1.0;
  if (4 * c == n * (n - 1)) return 1.0;
  // f[k] = P(a random permutation of j elements has k inversions), k <= c, built up j = 1 .. n.
  std::vector<double> f(static_cast<std::size_t>(c) + 1, 0.0), g(f.size());
  f[0] = 1.0;
  std::vector<double> prefix(f.size() + 1);
  for (std::int64_t j = 2; j <= n; ++j) {
    prefix[0] = 0;
    for (std::size_t k = 0; k < f.size(); ++k) prefix[k + 1] = prefix[k] + f[k];
    for (std::size_t k = 0; k < f.size(); ++k) {
      // g[k] = (1/j) sum_{i=0}^{min(k, j-1)} f[k - i]
      const std::size_t lo = k >= static_cast<std::size_t>(j - 1) ? k - static_cast<std::size_t>(j - 1) : 0;
      g[k] = (prefix[k + 1] - prefix[lo]) / static_cast<double>(j);
    }
    f.swap(g);
  }
  double cdf = 0;
  for (double v : f) cdf += v;
  return std::clamp(2 * cdf, 0.0, 1.0);
}

}  // namespace

Result<Correlation> Kendall(std::span<const double> x, std::span<const double> y, KendallMethod method) {
  if (auto e = CheckPair(x, y, "kendall", 2)) return *e;
  const std::size_t n = x.size();
  const std::vector<std::int64_t> rx = DenseRanks(x);
  const std::vector<std::int64_t> ry = DenseRanks(y);
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return rx[a] != rx[b] ? rx[a] < rx[b] : ry[a] < ry[b];
  });
  std::vector<std::int64_t> seq(n);
  std::int64_t joint = 0;  // pairs tied in both
  for (std::size_t i = 0, run = 1; i < n; ++i) {
    seq[i] = ry[order[i]];
    if (i > 0) {
      if (rx[order[i]] == rx[order[i - 1]] && ry[order[i]] == ry[order[i - 1]]) {
        ++run;
      } else {
        run = 1;
      }
      joint += static_cast<std::int64_t>(run) - 1;
    }
  }
  const std::int64_t dis = CountInversions(seq);
  const TieStats tx = CountTies(rx);
  const TieStats ty = CountTies(ry);
  const std::int64_t nn = static_cast<std::int64_t>(n);
  const std::int64_t tot = nn * (nn - 1) / 2;
  if (tx.pairs == tot || ty.pairs == tot) return Correlation{kNaN, kNaN};
  const std::int64_t con_minus_dis = tot - tx.pairs - ty.pairs + joint - 2 * dis;
  double tau = static_cast<double>(con_minus_dis) / std::sqrt(static_cast<double>(tot - tx.pairs)) /
               std::sqrt(static_cast<double>(tot - ty.pairs));
  tau = std::clamp(tau, -1.0, 1.0);
  const bool ties = tx.pairs != 0 || ty.pairs != 0;
  if (method == KendallMethod::kExact && ties) {
    return Error::Input("kendall: the exact method needs samples without ties");
  }
  if (method == KendallMethod::kAuto) {
    method = !ties && (n <= 33 || std::min(dis, tot - dis) <= 1) ? KendallMethod::kExact
                                                                  : KendallMethod::kAsymptotic;
  }
  double p;
  if (method == KendallMethod::kExact) {
    p = KendallExactP(nn, tot - dis);
  } else {
    const double nd = static_cast<double>(n);
    const double m = nd * (nd - 1);
    const double third = tx.v0 * ty.v0 / (9 * m * (nd - 2));  // 0/0 = NaN for n = 2, as scipy
    const double var = (m * (2 * nd + 5) - tx.v1 - ty.v1) / 18 +
                       2 * static_cast<double>(tx.pairs) * static_cast<double>(ty.pairs) / m + third;
    const double z = static_cast<double>(con_minus_dis) / std::sqrt(var);
    p = 2 * NormalSf(std::fabs(z));
  }
  return Correlation{tau, p};
}

// ---- Wilcoxon ----------------------------------------------------------------------------------------------

namespace {

// P(W+ = s), s = 0 .. n(n+1)/2, under H0 (no ties, no zeros).
std::vector<double> WilcoxonPmf(std::size_t n) {
  std::vector<double> c(1, 1.0);
  for (std::size_t k = 1; k <= n; ++k) {
    std::vector<double> next(k * (k + 1) / 2 + 1, 0.0);
    for (std::size_t s = 0; s < c.size(); ++s) {
      next[s] += 0.5 * c[s];
      next[s + k] += 0.5 * c[s];
    }
    c.swap(next);
  }
  return c;
}

Result<WilcoxonResult> WilcoxonImpl(std::vector<double> d, const WilcoxonOptions& o) {
  if (d.empty()) return WilcoxonResult{kNaN, kNaN, kNaN, false};
  bool exact = o.method == WilcoxonMethod::kExact ||
               (o.method == WilcoxonMethod::kAuto && d.size() <= 50);
  const std::size_t n_zero = static_cast<std::size_t>(std::count(d.begin(), d.end(), 0.0));
  if (n_zero > 0) exact = false;
  if (!exact) {
    if (n_zero == d.size()) {
      return Error::Input(
          "wilcoxon: every difference is zero (zero_method 'wilcox' and 'pratt' need a nonzero "
          "difference)");
    }
    if (o.zero_method == ZeroMethod::kWilcox) {
      d.erase(std::remove(d.begin(), d.end(), 0.0), d.end());
    }
  }
  const std::size_t count = d.size();
  std::vector<double> absd(count);
  for (std::size_t i = 0; i < count; ++i) absd[i] = std::fabs(d[i]);
  const std::vector<double> r = AverageRanks(absd);
  double r_plus = 0, r_minus = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (d[i] > 0) r_plus += r[i];
    if (d[i] < 0) r_minus += r[i];
  }
  const double T = std::min(r_plus, r_minus);
  WilcoxonResult res;
  res.statistic = T;
  res.exact = exact;
  if (!exact) {
    const double nc = static_cast<double>(count);
    double mn = nc * (nc + 1) * 0.25;
    double se = nc * (nc + 1) * (2 * nc + 1);
    // Tie groups among the ranks that count (the nonzero differences for pratt).
    std::vector<double> kept;
    kept.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      if (o.zero_method == ZeroMethod::kPratt && d[i] == 0) continue;
      kept.push_back(r[i]);
    }
    if (o.zero_method == ZeroMethod::kPratt) {
      const double nz = static_cast<double>(n_zero);
      mn -= nz * (nz + 1) * 0.25;
      se -= nz * (nz + 1) * (2 * nz + 1);
    }
    std::sort(kept.begin(), kept.end());
    for (std::size_t i = 0; i < kept.size();) {
      std::size_t j = i + 1;
      while (j < kept.size() && kept[j] == kept[i]) ++j;
      const double t = static_cast<double>(j - i);
      if (j - i > 1) se -= 0.5 * (t * (t * t - 1));
      i = j;
    }
    se = std::sqrt(se / 24);
    double corr = 0;
    if (o.correction) corr = 0.5 * (T > mn ? 1.0 : (T < mn ? -1.0 : 0.0));
    res.z = (T - mn - corr) / se;
    res.p = 2 * NormalSf(std::fabs(res.z));
  } else {
    res.z = kNaN;
    const std::vector<double> pmf = WilcoxonPmf(count);
    const std::size_t rp = static_cast<std::size_t>(r_plus);  // scipy 1.10: int(r_plus)
    if (rp == (pmf.size() - 1) / 2) {
      res.p = 1.0;
    } else {
      double p_less = 0, p_greater = 0;
      for (std::size_t s = 0; s <= rp; ++s) p_less += pmf[s];
      for (std::size_t s = rp; s < pmf.size(); ++s) p_greater += pmf[s];
      res.p = std::clamp(2 * std::min(p_less, p_greater), 0.0, 1.0);
    }
  }
  return res;
}

}  // namespace

Result<WilcoxonResult> Wilcoxon(std::span<const double> x, std::span<const double> y,
                                const WilcoxonOptions& options) {
  auto d = Differences(x, y, "wilcoxon");
  if (!d) return d.error();
  return WilcoxonImpl(std::move(*d), options);
}

Result<WilcoxonResult> Wilcoxon(std::span<const double> differences, const WilcoxonOptions& options) {
  if (auto e = CheckNoNaN(differences, "wilcoxon", "d")) return *e;
  return WilcoxonImpl(std::vector<double>(differences.begin(), differences.end()), options);
}

// ---- Williams' test ------------------------------------------------------------------------------------------

constexpr double kWilliamsR23Tolerance = 1e-12;

Result<WilliamsResult> Williams(double r12, double r13, double r23, double n) {
  const double rs[3] = {r12, r13, r23};
  const char* names[3] = {"r12", "r13", "r23"};
  for (int i = 0; i < 3; ++i) {
    if (!(rs[i] >= -1 && rs[i] <= 1)) {
      return Error::Input(fmt::format("williams: {} must be a correlation in [-1, 1] (got {})", names[i],
                                      std::isnan(rs[i]) ? std::string("NaN") : fmt::format("{}", rs[i])));
    }
  }
  if (!(n >= 4)) {
    return Error::Input(fmt::format("williams: needs n >= 4 observations (got {})",
                                    std::isnan(n) ? std::string("NaN") : fmt::format("{}", n)));
  }
  const double det = 1 - r12 * r12 - r13 * r13 - r23 * r23 + 2 * r12 * r13 * r23;
  const double rbar = (r12 + r13) / 2;
  const double denominator = 2 * (n - 1) / (n - 3) * det + rbar * rbar * std::pow(1 - r23, 3);
  WilliamsResult out;
  out.df = n - 3;
  // a and b perfectly correlated (up to rounding: a Spearman rho of identical rankings may come out as
  // 1 - 2^-52) make the statistic 0/0; rounding alone would otherwise decide between NaN and t = 0.
  if (!(denominator > 0) || 1 - r23 <= kWilliamsR23Tolerance) {
    out.t = out.p = std::numeric_limits<double>::quiet_NaN();
    return out;
  }
  out.t = (r12 - r13) * std::sqrt((n - 1) * (1 + r23) / denominator);
  out.p = std::min(1.0, 2 * StudentTSf(std::fabs(out.t), out.df));
  return out;
}

// ---- Cliff's delta --------------------------------------------------------------------------------------------

Result<double> CliffsDelta(std::span<const double> x, std::span<const double> y) {
  if (x.empty() || y.empty()) {
    return Error::Input(
        fmt::format("cliffs_delta: needs non-empty samples (got {} and {} values)", x.size(), y.size()));
  }
  if (auto e = CheckNoNaN(x, "cliffs_delta", "x")) return *e;
  if (auto e = CheckNoNaN(y, "cliffs_delta", "y")) return *e;
  std::vector<double> ys(y.begin(), y.end());
  std::sort(ys.begin(), ys.end());
  std::int64_t more = 0, less = 0;
  const auto m = static_cast<std::int64_t>(ys.size());
  for (double v : x) {
    more += std::lower_bound(ys.begin(), ys.end(), v) - ys.begin();       // y_j < x_i
    less += m - (std::upper_bound(ys.begin(), ys.end(), v) - ys.begin());  // y_j > x_i
  }
  return static_cast<double>(more - less) / (static_cast<double>(x.size()) * static_cast<double>(m));
}

// ---- Two-way ANOVA -----------------------------------------------------------------------------------------

namespace {

// Solves the symmetric positive definite system A x = b (n x n, row-major) by Cholesky; nullopt when a
// pivot is not positive relative to the diagonal (rank deficient).
std::optional<std::vector<double>> SolveSpd(std::vector<double> A, std::vector<double> b, int n) {
  double maxdiag = 0;
  for (int i = 0; i < n; ++i) maxdiag = std::max(maxdiag, A[i * n + i]);
  for (int j = 0; j < n; ++j) {
    double s = A[j * n + j];
    for (int k = 0; k < j; ++k) s -= A[j * n + k] * A[j * n + k];
    if (!(s > 1e-10 * maxdiag)) return std::nullopt;
    const double ljj = std::sqrt(s);
    A[j * n + j] = ljj;
    for (int i = j + 1; i < n; ++i) {
      double t = A[i * n + j];
      for (int k = 0; k < j; ++k) t -= A[i * n + k] * A[j * n + k];
      A[i * n + j] = t / ljj;
    }
  }
  for (int i = 0; i < n; ++i) {  // L z = b
    double t = b[i];
    for (int k = 0; k < i; ++k) t -= A[i * n + k] * b[k];
    b[i] = t / A[i * n + i];
  }
  for (int i = n - 1; i >= 0; --i) {  // L' x = z
    double t = b[i];
    for (int k = i + 1; k < n; ++k) t -= A[k * n + i] * b[k];
    b[i] = t / A[i * n + i];
  }
  return b;
}

std::vector<int> LevelIndex(std::span<const int> codes, int* levels) {
  std::vector<int> distinct(codes.begin(), codes.end());
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  *levels = static_cast<int>(distinct.size());
  std::vector<int> out(codes.size());
  for (std::size_t i = 0; i < codes.size(); ++i) {
    out[i] = static_cast<int>(std::lower_bound(distinct.begin(), distinct.end(), codes[i]) - distinct.begin());
  }
  return out;
}

}  // namespace

Result<std::vector<AnovaRow>> TwoWayAnova(std::span<const double> y, std::span<const int> a,
                                          std::span<const int> b) {
  constexpr std::string_view fn = "anova2";
  if (a.size() != y.size() || b.size() != y.size()) {
    return Error::Input(
        fmt::format("anova2: y, a and b must have the same length (got {}, {} and {})", y.size(), a.size(), b.size()));
  }
  if (auto e = CheckNoNaN(y, fn, "y")) return *e;
  int la = 0, lb = 0;
  const std::vector<int> ia = LevelIndex(a, &la);
  const std::vector<int> ib = LevelIndex(b, &lb);
  if (la < 2) return Error::Input(fmt::format("anova2: factor a needs at least 2 levels (got {})", la));
  if (lb < 2) return Error::Input(fmt::format("anova2: factor b needs at least 2 levels (got {})", lb));
  const std::size_t N = y.size();
  const int ncell = la * lb;
  std::vector<double> cn(ncell, 0), csum(ncell, 0), cmean(ncell, 0), cssw(ncell, 0);
  for (std::size_t i = 0; i < N; ++i) {
    const int c = ia[i] * lb + ib[i];
    cn[c] += 1;
    csum[c] += y[i];
  }
  int filled = 0;
  for (int c = 0; c < ncell; ++c) {
    if (cn[c] > 0) {
      cmean[c] = csum[c] / cn[c];
      ++filled;
    }
  }
  for (std::size_t i = 0; i < N; ++i) {
    const int c = ia[i] * lb + ib[i];
    cssw[c] += (y[i] - cmean[c]) * (y[i] - cmean[c]);
  }
  const double df_resid = static_cast<double>(N) - filled;
  if (df_resid <= 0) {
    return Error::Input(fmt::format("anova2: no residual degrees of freedom ({} observations in {} cells)", N, filled));
  }
  const double grand = MeanOf(y);
  double ss_total = 0;
  for (double v : y) ss_total += (v - grand) * (v - grand);
  double rss_full = 0;
  for (double s : cssw) rss_full += s;

  // Every model below is constant within a cell, so RSS(M) = RSS(full) + sum_c n_c (mean_c - fit_c)^2.
  auto rss_of = [&](const std::vector<double>& fit) {
    double s = rss_full;
    for (int c = 0; c < ncell; ++c) {
      if (cn[c] > 0) s += cn[c] * (cmean[c] - fit[c]) * (cmean[c] - fit[c]);
    }
    return s;
  };
  // One-factor models: the level means.
  std::vector<double> na(la, 0), sa(la, 0), nb(lb, 0), sb(lb, 0);
  for (int c = 0; c < ncell; ++c) {
    na[c / lb] += cn[c];
    sa[c / lb] += csum[c];
    nb[c % lb] += cn[c];
    sb[c % lb] += csum[c];
  }
  std::vector<double> fit_a(ncell), fit_b(ncell);
  for (int c = 0; c < ncell; ++c) {
    fit_a[c] = sa[c / lb] / na[c / lb];
    fit_b[c] = sb[c % lb] / nb[c % lb];
  }
  // Additive model mu + alpha_i + beta_j (alpha_0 = beta_0 = 0): weighted least squares on the cell means
  // (weights n_c), centred on the grand mean.
  const int k = 1 + (la - 1) + (lb - 1);
  std::vector<double> XtX(static_cast<std::size_t>(k) * k, 0), Xty(k, 0);
  std::vector<int> cols;
  for (int c = 0; c < ncell; ++c) {
    if (cn[c] == 0) continue;
    cols.assign(1, 0);
    if (c / lb > 0) cols.push_back(c / lb);
    if (c % lb > 0) cols.push_back(la - 1 + c % lb);
    for (int u : cols) {
      Xty[u] += cn[c] * (cmean[c] - grand);
      for (int v : cols) XtX[u * k + v] += cn[c];
    }
  }
  auto beta = SolveSpd(XtX, Xty, k);
  if (!beta) {
    return Error::Input("anova2: the design is disconnected (the additive model a + b cannot be estimated)");
  }
  std::vector<double> fit_ab(ncell);
  for (int c = 0; c < ncell; ++c) {
    double f = grand + (*beta)[0];
    if (c / lb > 0) f += (*beta)[c / lb];
    if (c % lb > 0) f += (*beta)[la - 1 + c % lb];
    fit_ab[c] = f;
  }
  const double rss_a = rss_of(fit_a);
  const double rss_b = rss_of(fit_b);
  const double rss_ab = rss_of(fit_ab);
  const double ms_resid = rss_full / df_resid;

  auto row = [&](std::string source, double ss, double df) {
    AnovaRow r;
    r.source = std::move(source);
    r.ss = std::max(ss, 0.0);
    r.df = df;
    r.ms = df > 0 ? r.ss / df : kNaN;
    r.f = df > 0 ? r.ms / ms_resid : kNaN;
    r.p = df > 0 ? FisherFSf(r.f, df, df_resid) : kNaN;
    r.eta2 = r.ss / ss_total;
    r.partial_eta2 = r.ss / (r.ss + rss_full);
    return r;
  };
  std::vector<AnovaRow> rows;
  rows.push_back(row("A", rss_b - rss_ab, la - 1));
  rows.push_back(row("B", rss_a - rss_ab, lb - 1));
  rows.push_back(row("A:B", rss_ab - rss_full, filled - (la + lb - 1)));
  AnovaRow res;
  res.source = "Residual";
  res.ss = rss_full;
  res.df = df_resid;
  res.ms = ms_resid;
  res.f = kNaN;
  res.p = kNaN;
  res.eta2 = rss_full / ss_total;
  res.partial_eta2 = kNaN;
  rows.push_back(res);
  return rows;
}

// ---- Rng ---------------------------------------------------------------------------------------------------

namespace {

std::uint64_t SplitMix64(std::uint64_t& state) {
  state += 0x9e3779b97f4a7c15ULL;
  std::uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

inline std::uint64_t Rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// Lemire's unbiased multiply-shift draw in [0, n) over a source of 32-bit values (see Rng::Below).
template <class Next32>
inline std::uint32_t LemireBelow(Next32&& next32, std::uint32_t n) {
  std::uint64_t m = static_cast<std::uint64_t>(next32()) * n;
  std::uint32_t low = static_cast<std::uint32_t>(m);
  if (low < n) [[unlikely]] {
    const std::uint32_t t = static_cast<std::uint32_t>(-n) % n;  // (2^32 - n) mod n
    while (low < t) {
      m = static_cast<std::uint64_t>(next32()) * n;
      low = static_cast<std::uint32_t>(m);
    }
  }
  return static_cast<std::uint32_t>(m >> 32);
}

}  // namespace

Rng::Rng(std::uint64_t seed) {
  std::uint64_t st = seed;
  for (auto& s : s_) s = SplitMix64(st);
}

std::uint64_t Rng::Next() {
  const std::uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

std::uint32_t Rng::Next32() {
  if (has32_) {
    has32_ = false;
    return spare32_;
  }
  const std::uint64_t v = Next();
  spare32_ = static_cast<std::uint32_t>(v >> 32);
  has32_ = true;
  return static_cast<std::uint32_t>(v);
}

std::uint32_t Rng::Below(std::uint32_t n) {
  return LemireBelow([this] { return Next32(); }, n);
}

double Rng::Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

double Rng::Normal() {
  if (has_normal_) {
    has_normal_ = false;
    return spare_normal_;
  }
  double u, v, s;
  do {
    u = 2 * Uniform() - 1;
    v = 2 * Uniform() - 1;
    s = u * u + v * v;
  } while (s >= 1 || s == 0);
  const double f = std::sqrt(-2 * std::log(s) / s);
  spare_normal_ = v * f;
  has_normal_ = true;
  return u * f;
}

// ---- Bootstrap and randomization ------------------------------------------------------------------------------

namespace {

// Rng::Below over a buffered copy of the Next32() stream (the same values in the same order: each
// Next() word as its low then high half), so the hot loop keeps no generator state in memory.
class BufferedBelow {
 public:
  explicit BufferedBelow(Rng& rng) : rng_(rng) {}
  std::uint32_t operator()(std::uint32_t n) {
    return LemireBelow([this] { return Next32(); }, n);
  }

 private:
  std::uint32_t Next32() {
    if (pos_ == kWords * 2) [[unlikely]] Refill();
    return buf_[pos_++];
  }
  void Refill() {
    for (std::size_t i = 0; i < kWords; ++i) {
      const std::uint64_t v = rng_.Next();
      buf_[2 * i] = static_cast<std::uint32_t>(v);
      buf_[2 * i + 1] = static_cast<std::uint32_t>(v >> 32);
    }
    pos_ = 0;
  }
  static constexpr std::size_t kWords = 256;
  Rng& rng_;
  std::uint32_t buf_[kWords * 2];
  std::size_t pos_ = kWords * 2;
};

Result<Interval> BootstrapImpl(std::span<const double> x, const BootstrapOptions& o, std::string_view fn,
                               const Checkpoint& checkpoint) {
  if (x.empty()) return Error::Input(fmt::format("{}: needs at least 1 observation (got 0)", fn));
  if (x.size() >= (std::size_t{1} << 32)) return Error::Limit(fmt::format("{}: too many observations", fn));
  if (o.n_resamples < 1) {
    return Error::Usage(fmt::format("{}: n_resamples must be >= 1 (got {})", fn, o.n_resamples));
  }
  if (!(o.confidence > 0 && o.confidence < 1)) {
    return Error::Usage(fmt::format("{}: confidence must be in (0, 1) (got {})", fn, o.confidence));
  }
  const auto n = static_cast<std::uint32_t>(x.size());
  Rng rng(o.seed);
  BufferedBelow below(rng);
  std::vector<double> means(static_cast<std::size_t>(o.n_resamples));
  const double* data = x.data();
  std::size_t done = 0;
  for (double& m : means) {
    if (checkpoint && (++done & 63) == 0) checkpoint(64.0 * n);
    // Four partial sums break the floating-point add dependency chain.
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    std::uint32_t k = 0;
    for (; k + 4 <= n; k += 4) {
      s0 += data[below(n)];
      s1 += data[below(n)];
      s2 += data[below(n)];
      s3 += data[below(n)];
    }
    for (; k < n; ++k) s0 += data[below(n)];
    m = ((s0 + s1) + (s2 + s3)) / static_cast<double>(n);
  }
  std::sort(means.begin(), means.end());
  return Interval{QuantileSorted(means, (1 - o.confidence) / 2), QuantileSorted(means, (1 + o.confidence) / 2)};
}

}  // namespace

Result<Interval> BootstrapMeanCI(std::span<const double> x, const BootstrapOptions& options,
                                 const Checkpoint& checkpoint) {
  if (auto e = CheckNoNaN(x, "bootstrap_ci", "x")) return *e;
  return BootstrapImpl(x, options, "bootstrap_ci", checkpoint);
}

Result<Interval> PairedBootstrapMeanCI(std::span<const double> x, std::span<const double> y,
                                       const BootstrapOptions& options, const Checkpoint& checkpoint) {
  auto d = Differences(x, y, "paired_bootstrap_ci");
  if (!d) return d.error();
  return BootstrapImpl(*d, options, "paired_bootstrap_ci", checkpoint);
}

Result<double> ApproximateRandomization(std::span<const double> x, std::span<const double> y,
                                        const RandomizationOptions& o, const Checkpoint& checkpoint) {
  constexpr std::string_view fn = "approx_randomization";
  auto dr = Differences(x, y, fn);
  if (!dr) return dr.error();
  const std::vector<double>& d = *dr;
  if (d.empty()) return Error::Input("approx_randomization: needs at least 1 pair (got 0)");
  if (o.n_resamples < 1) {
    return Error::Usage(fmt::format("approx_randomization: n_resamples must be >= 1 (got {})", o.n_resamples));
  }
  const std::size_t n = d.size();
  double obs = 0, abs_sum = 0;
  for (double v : d) {
    obs += v;
    abs_sum += std::fabs(v);
  }
  const double threshold = std::fabs(obs) - 1e-9 * abs_sum;
  std::vector<std::uint64_t> bits(n);
  for (std::size_t i = 0; i < n; ++i) bits[i] = std::bit_cast<std::uint64_t>(d[i]);
  Rng rng(o.seed);
  std::int64_t hits = 0;
  for (int r = 0; r < o.n_resamples; ++r) {
    if (checkpoint && (r & 63) == 63) checkpoint(64.0 * static_cast<double>(n));
    double acc[4] = {0, 0, 0, 0};
    for (std::size_t base = 0; base < n; base += 64) {
      const std::uint64_t w = rng.Next();
      const std::size_t len = std::min<std::size_t>(64, n - base);
      const std::uint64_t* b = bits.data() + base;
      // Flip the sign bit of d[base + j] when bit j of w is set; four partial sums.
      for (std::size_t j = 0; j < len; ++j) {
        acc[j & 3] += std::bit_cast<double>(b[j] ^ (((w >> j) & 1u) << 63));
      }
    }
    const double s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    if (std::fabs(s) >= threshold && ++hits == o.stop_after_hits) {
      return static_cast<double>(hits) / static_cast<double>(r + 1);
    }
  }
  return (1.0 + static_cast<double>(hits)) / (1.0 + o.n_resamples);
}

// ---- Holm ---------------------------------------------------------------------------------------------------------

Result<std::vector<double>> Holm(std::span<const double> p) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (!(p[i] >= 0 && p[i] <= 1)) return Error::Input(fmt::format("holm: p[{}] = {} is not in [0, 1]", i, p[i]));
  }
  const std::size_t m = p.size();
  std::vector<std::size_t> idx(m);
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return p[a] < p[b]; });
  std::vector<double> out(m);
  double running = 0;
  for (std::size_t j = 0; j < m; ++j) {
    running = std::max(running, static_cast<double>(m - j) * p[idx[j]]);
    out[idx[j]] = std::min(running, 1.0);
  }
  return out;
}

}  // namespace kplab::stats
