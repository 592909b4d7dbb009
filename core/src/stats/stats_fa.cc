// kplab::stats: the symmetric eigen-solver, correlation matrices, exploratory factor analysis (minres,
// principal axis), varimax and Horn's parallel analysis. See kplab/stats.h.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "kplab/stats.h"
#include "stats_internal.h"

namespace kplab::stats {

namespace {

// Householder reduction of the symmetric matrix in V (n x n, row-major, lower triangle used) to
// tridiagonal form: on return d holds the diagonal, e the sub-diagonal (e[0] = 0) and V the orthogonal
// transformation (EISPACK tred2).
void Tridiagonalize(std::vector<double>& V, std::vector<double>& d, std::vector<double>& e, int n) {
  auto at = [&](int i, int j) -> double& { return V[static_cast<std::size_t>(i) * n + j]; };
  for (int j = 0; j < n; ++j) d[j] = at(n - 1, j);
  for (int i = n - 1; i > 0; --i) {
    double scale = 0, h = 0;
    for (int k = 0; k < i; ++k) scale += std::fabs(d[k]);
    if (scale == 0) {
      e[i] = d[i - 1];
      for (int j = 0; j < i; ++j) {
        d[j] = at(i - 1, j);
        at(i, j) = 0;
        at(j, i) = 0;
      }
    } else {
      for (int k = 0; k < i; ++k) {
        d[k] /= scale;
        h += d[k] * d[k];
      }
      double f = d[i - 1];
      double g = std::sqrt(h);
      if (f > 0) g = -g;
      e[i] = scale * g;
      h -= f * g;
      d[i - 1] = f - g;
      for (int j = 0; j < i; ++j) e[j] = 0;
      for (int j = 0; j < i; ++j) {
        f = d[j];
        at(j, i) = f;
        g = e[j] + at(j, j) * f;
        for (int k = j + 1; k <= i - 1; ++k) {
          g += at(k, j) * d[k];
          e[k] += at(k, j) * f;
        }
        e[j] = g;
      }
      f = 0;
      for (int j = 0; j < i; ++j) {
        e[j] /= h;
        f += e[j] * d[j];
      }
      const double hh = f / (h + h);
      for (int j = 0; j < i; ++j) e[j] -= hh * d[j];
      for (int j = 0; j < i; ++j) {
        f = d[j];
        g = e[j];
        for (int k = j; k <= i - 1; ++k) at(k, j) -= (f * e[k] + g * d[k]);
        d[j] = at(i - 1, j);
        at(i, j) = 0;
      }
    }
    d[i] = h;
  }
  // Accumulate the transformations.
  for (int i = 0; i < n - 1; ++i) {
    at(n - 1, i) = at(i, i);
    at(i, i) = 1;
    const double h = d[i + 1];
    if (h != 0) {
      for (int k = 0; k <= i; ++k) d[k] = at(k, i + 1) / h;
      for (int j = 0; j <= i; ++j) {
        double g = 0;
        for (int k = 0; k <= i; ++k) g += at(k, i + 1) * at(k, j);
        for (int k = 0; k <= i; ++k) at(k, j) -= g * d[k];
      }
    }
    for (int k = 0; k <= i; ++k) at(k, i + 1) = 0;
  }
  for (int j = 0; j < n; ++j) {
    d[j] = at(n - 1, j);
    at(n - 1, j) = 0;
  }
  at(n - 1, n - 1) = 1;
  e[0] = 0;
}

// Implicit QL iterations on the tridiagonal (d, e) accumulating into V (EISPACK tql2). False when an
// eigenvalue needs more than 30 iterations.
bool TridiagonalQL(std::vector<double>& V, std::vector<double>& d, std::vector<double>& e, int n) {
  auto at = [&](int i, int j) -> double& { return V[static_cast<std::size_t>(i) * n + j]; };
  for (int i = 1; i < n; ++i) e[i - 1] = e[i];
  e[n - 1] = 0;
  double f = 0, tst1 = 0;
  const double eps = std::numeric_limits<double>::epsilon();
  for (int l = 0; l < n; ++l) {
    tst1 = std::max(tst1, std::fabs(d[l]) + std::fabs(e[l]));
    int m = l;
    while (m < n) {
      if (std::fabs(e[m]) <= eps * tst1) break;
      ++m;
    }
    if (m == n) m = n - 1;
    if (m > l) {
      int iter = 0;
      do {
        if (++iter > 30) return false;
        double g = d[l];
        double p = (d[l + 1] - g) / (2 * e[l]);
        double r = std::hypot(p, 1.0);
        if (p < 0) r = -r;
        d[l] = e[l] / (p + r);
        d[l + 1] = e[l] * (p + r);
        const double dl1 = d[l + 1];
        double h = g - d[l];
        for (int i = l + 2; i < n; ++i) d[i] -= h;
        f += h;
        p = d[m];
        double c = 1, c2 = 1, c3 = 1, s = 0, s2 = 0;
        const double el1 = e[l + 1];
        for (int i = m - 1; i >= l; --i) {
          c3 = c2;
          c2 = c;
          s2 = s;
          g = c * e[i];
          h = c * p;
          r = std::hypot(p, e[i]);
          e[i + 1] = s * r;
          s = e[i] / r;
          c = p / r;
          p = c * d[i] - s * g;
          d[i + 1] = h + s * (c * g + s * d[i]);
          for (int k = 0; k < n; ++k) {
            h = at(k, i + 1);
            at(k, i + 1) = s * at(k, i) + c * h;
            at(k, i) = c * at(k, i) - s * h;
          }
        }
        p = -s * s2 * c3 * el1 * e[l] / dl1;
        e[l] = s * p;
        d[l] = c * p;
      } while (std::fabs(e[l]) > eps * tst1);
    }
    d[l] += f;
    e[l] = 0;
  }
  return true;
}

DenseMatrix Multiply(const DenseMatrix& a, const DenseMatrix& b) {
  DenseMatrix c(a.rows, b.cols);
  for (int i = 0; i < a.rows; ++i) {
    for (int k = 0; k < a.cols; ++k) {
      const double v = a.at(i, k);
      if (v == 0) continue;
      for (int j = 0; j < b.cols; ++j) c.at(i, j) += v * b.at(k, j);
    }
  }
  return c;
}

DenseMatrix Transpose(const DenseMatrix& a) {
  DenseMatrix t(a.cols, a.rows);
  for (int i = 0; i < a.rows; ++i) {
    for (int j = 0; j < a.cols; ++j) t.at(j, i) = a.at(i, j);
  }
  return t;
}

// Eigen-decomposition that cannot fail on the inputs used here (finite symmetric); aborts to an
// empty result otherwise, which callers turn into an Error.
Result<SymmetricEigen> Eig(const DenseMatrix& a, std::string_view fn) {
  auto r = EigenSymmetric(a);
  if (!r) return Error(r.error().kind, fmt::format("{}: {}", fn, r.error().message));
  return r;
}

// Leading q eigenpairs of s as loadings: vectors scaled by sqrt(max(value, 0)).
DenseMatrix LeadingLoadings(const SymmetricEigen& eig, int q) {
  const int p = eig.vectors.rows;
  DenseMatrix l(p, q);
  for (int k = 0; k < q; ++k) {
    const double s = std::sqrt(std::max(eig.values[k], 0.0));
    for (int i = 0; i < p; ++i) l.at(i, k) = eig.vectors.at(i, k) * s;
  }
  return l;
}

std::vector<double> RowSumsOfSquares(const DenseMatrix& l) {
  std::vector<double> h(l.rows, 0.0);
  for (int i = 0; i < l.rows; ++i) {
    for (int k = 0; k < l.cols; ++k) h[i] += l.at(i, k) * l.at(i, k);
  }
  return h;
}

// Multiplies each column by the sign of its sum (a zero sum keeps +).
void SignColumns(DenseMatrix& l) {
  for (int k = 0; k < l.cols; ++k) {
    double s = 0;
    for (int i = 0; i < l.rows; ++i) s += l.at(i, k);
    if (s < 0) {
      for (int i = 0; i < l.rows; ++i) l.at(i, k) = -l.at(i, k);
    }
  }
}

// Squared multiple correlations 1 - 1 / diag(pinv(R)) (psych::smc), capped at 1. The pseudo-inverse
// drops eigenvalues below sqrt(eps) times the largest (psych::Pinv).
Result<std::vector<double>> Smc(const DenseMatrix& r) {
  auto eig = Eig(r, "factor_analysis");
  if (!eig) return eig.error();
  const int p = r.rows;
  const double tol = std::sqrt(std::numeric_limits<double>::epsilon()) * std::max(eig->values[0], 0.0);
  std::vector<double> smc(p);
  for (int i = 0; i < p; ++i) {
    double inv_ii = 0;
    for (int k = 0; k < p; ++k) {
      if (eig->values[k] > tol) inv_ii += eig->vectors.at(i, k) * eig->vectors.at(i, k) / eig->values[k];
    }
    smc[i] = std::min(1 - 1 / inv_ii, 1.0);
  }
  return smc;
}

}  // namespace

Result<SymmetricEigen> EigenSymmetric(const DenseMatrix& a) {
  if (a.rows != a.cols) {
    return Error::Usage(fmt::format("eigen: the matrix must be square (got {} x {})", a.rows, a.cols));
  }
  const int n = a.rows;
  SymmetricEigen out;
  if (n == 0) return out;
  std::vector<double> V(static_cast<std::size_t>(n) * n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      const double v = i >= j ? a.at(i, j) : a.at(j, i);
      if (std::isnan(v)) return Error::Input(fmt::format("eigen: element ({}, {}) is NaN", i, j));
      V[static_cast<std::size_t>(i) * n + j] = v;
    }
  }
  std::vector<double> d(n), e(n);
  Tridiagonalize(V, d, e, n);
  if (!TridiagonalQL(V, d, e, n)) return Error::Input("eigen: the QL iterations did not converge");
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return d[x] > d[y]; });
  out.values.resize(n);
  out.vectors = DenseMatrix(n, n);
  for (int k = 0; k < n; ++k) {
    out.values[k] = d[order[k]];
    for (int i = 0; i < n; ++i) out.vectors.at(i, k) = V[static_cast<std::size_t>(i) * n + order[k]];
  }
  return out;
}

Result<DenseMatrix> CorrelationMatrix(const DenseMatrix& data) {
  const int n = data.rows;
  const int p = data.cols;
  if (n < 2) return Error::Input(fmt::format("correlation: needs at least 2 observations (got {})", n));
  if (static_cast<std::size_t>(n) * p != data.v.size()) return Error::Internal("correlation: malformed matrix");
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < p; ++j) {
      if (std::isnan(data.at(i, j))) return Error::Input(fmt::format("correlation: data[{}][{}] is NaN", i, j));
    }
  }
  // Centred columns scaled to unit norm; R = Z'Z.
  DenseMatrix z(n, p);
  std::vector<double> col(n);
  for (int j = 0; j < p; ++j) {
    for (int i = 0; i < n; ++i) col[i] = data.at(i, j);
    const double m = internal::PairwiseSum(col.data(), col.size()) / n;
    double ss = 0;
    for (int i = 0; i < n; ++i) {
      z.at(i, j) = col[i] - m;
      ss += z.at(i, j) * z.at(i, j);
    }
    if (!(ss > 0)) return Error::Input(fmt::format("correlation: column {} is constant", j));
    const double norm = std::sqrt(ss);
    for (int i = 0; i < n; ++i) z.at(i, j) /= norm;
  }
  DenseMatrix r(p, p);
  for (int a = 0; a < p; ++a) {
    r.at(a, a) = 1;
    for (int b = 0; b < a; ++b) {
      double s = 0;
      for (int i = 0; i < n; ++i) s += z.at(i, a) * z.at(i, b);
      s = std::clamp(s, -1.0, 1.0);
      r.at(a, b) = s;
      r.at(b, a) = s;
    }
  }
  return r;
}

Result<DenseMatrix> Varimax(const DenseMatrix& loadings, double eps) {
  const int p = loadings.rows;
  const int f = loadings.cols;
  if (f < 2) return loadings;
  DenseMatrix x = loadings;
  std::vector<double> sc(p);
  for (int i = 0; i < p; ++i) {
    double s = 0;
    for (int k = 0; k < f; ++k) s += x.at(i, k) * x.at(i, k);
    sc[i] = s > 0 ? std::sqrt(s) : 1.0;
    for (int k = 0; k < f; ++k) x.at(i, k) /= sc[i];
  }
  const DenseMatrix xt = Transpose(x);
  DenseMatrix tt(f, f);
  for (int k = 0; k < f; ++k) tt.at(k, k) = 1;
  double d = 0;
  for (int iter = 0; iter < 1000; ++iter) {
    const DenseMatrix z = Multiply(x, tt);
    std::vector<double> colsq(f, 0.0);
    for (int i = 0; i < p; ++i) {
      for (int k = 0; k < f; ++k) colsq[k] += z.at(i, k) * z.at(i, k);
    }
    DenseMatrix w(p, f);
    for (int i = 0; i < p; ++i) {
      for (int k = 0; k < f; ++k) {
        const double v = z.at(i, k);
        w.at(i, k) = v * v * v - v * colsq[k] / p;
      }
    }
    const DenseMatrix b = Multiply(xt, w);
    // Polar factor U V' of B = U D V' from B'B = V D^2 V'.
    auto eig = Eig(Multiply(Transpose(b), b), "varimax");
    if (!eig) return eig.error();
    double dsum = 0;
    DenseMatrix vdinv(f, f);  // V D^-1
    for (int k = 0; k < f; ++k) {
      const double s = std::sqrt(std::max(eig->values[k], 0.0));
      dsum += s;
      const double inv = s > 0 ? 1 / s : 0;
      for (int i = 0; i < f; ++i) vdinv.at(i, k) = eig->vectors.at(i, k) * inv;
    }
    tt = Multiply(Multiply(b, vdinv), Transpose(eig->vectors));
    const double dpast = d;
    d = dsum;
    if (d < dpast * (1 + eps)) break;
  }
  DenseMatrix z = Multiply(x, tt);
  for (int i = 0; i < p; ++i) {
    for (int k = 0; k < f; ++k) z.at(i, k) *= sc[i];
  }
  return z;
}

Result<FactorResult> FactorAnalysisFromCorrelation(const DenseMatrix& r, const FactorOptions& options) {
  const int p = r.rows;
  const int f = options.factors;
  if (r.rows != r.cols) {
    return Error::Usage(
        fmt::format("factor_analysis: the correlation matrix must be square (got {} x {})", r.rows, r.cols));
  }
  if (p < 2) return Error::Input(fmt::format("factor_analysis: needs at least 2 variables (got {})", p));
  if (f < 1 || f >= p) {
    return Error::Usage(
        fmt::format("factor_analysis: factors must be between 1 and {} for {} variables (got {})", p - 1, p, f));
  }
  auto smc = Smc(r);
  if (!smc) return smc.error();
  FactorResult out;
  DenseMatrix loadings;
  if (options.method == FactorMethod::kPrincipalAxis) {
    // psych::fa(fm = "pa"): SMCs on the diagonal; stop when the summed communality changes by <= 0.001,
    // or after 50 iterations. The loadings are those of the last eigen-decomposition.
    DenseMatrix m = r;
    double comm = 0;
    for (int i = 0; i < p; ++i) {
      m.at(i, i) = (*smc)[i];
      comm += (*smc)[i];
    }
    double err = comm;
    int iter = 1;
    while (err > 0.001) {
      auto eig = Eig(m, "factor_analysis");
      if (!eig) return eig.error();
      loadings = LeadingLoadings(*eig, f);
      const std::vector<double> h = RowSumsOfSquares(loadings);
      double comm1 = 0;
      for (int i = 0; i < p; ++i) {
        m.at(i, i) = h[i];
        comm1 += h[i];
      }
      err = std::fabs(comm - comm1);
      comm = comm1;
      out.iterations = iter;
      if (++iter > 50) break;
    }
  } else {
    // Minimum residual: the uniquenesses psi minimize the off-diagonal residuals of R - diag(psi) fitted
    // by f eigenpairs; at the optimum the diagonal residual vanishes, i.e. psi = 1 - rowSums(L^2) with L
    // from R - diag(psi) (the fixed point of iterated principal axis), with psi kept in [0.005, 1] as
    // psych's L-BFGS-B bounds. Iterated to max |change| < 1e-12.
    std::vector<double> psi(p);
    for (int i = 0; i < p; ++i) psi[i] = std::clamp(1 - (*smc)[i], 0.005, 1.0);
    DenseMatrix m = r;
    for (int iter = 1; iter <= 100000; ++iter) {
      for (int i = 0; i < p; ++i) m.at(i, i) = r.at(i, i) - psi[i];
      auto eig = Eig(m, "factor_analysis");
      if (!eig) return eig.error();
      const std::vector<double> h = RowSumsOfSquares(LeadingLoadings(*eig, f));
      double change = 0;
      for (int i = 0; i < p; ++i) {
        const double next = std::clamp(r.at(i, i) - h[i], 0.005, 1.0);
        change = std::max(change, std::fabs(next - psi[i]));
        psi[i] = next;
      }
      out.iterations = iter;
      if (change < 1e-12) break;
    }
    for (int i = 0; i < p; ++i) m.at(i, i) = r.at(i, i) - psi[i];
    auto eig = Eig(m, "factor_analysis");
    if (!eig) return eig.error();
    loadings = LeadingLoadings(*eig, f);
  }
  SignColumns(loadings);
  if (options.rotation == Rotation::kVarimax && f > 1) {
    auto rot = Varimax(loadings);
    if (!rot) return Error(rot.error().kind, fmt::format("factor_analysis: {}", rot.error().message));
    loadings = std::move(*rot);
  }
  SignColumns(loadings);
  std::vector<double> ss(f, 0.0);
  for (int k = 0; k < f; ++k) {
    for (int i = 0; i < p; ++i) ss[k] += loadings.at(i, k) * loadings.at(i, k);
  }
  std::vector<int> order(f);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return ss[a] > ss[b]; });
  out.loadings = DenseMatrix(p, f);
  for (int k = 0; k < f; ++k) {
    for (int i = 0; i < p; ++i) out.loadings.at(i, k) = loadings.at(i, order[k]);
    out.ss_loadings.push_back(ss[order[k]]);
    out.proportion.push_back(ss[order[k]] / p);
  }
  out.communalities = RowSumsOfSquares(out.loadings);
  for (double h : out.communalities) out.uniquenesses.push_back(1 - h);
  return out;
}

Result<FactorResult> FactorAnalysis(const DenseMatrix& data, const FactorOptions& options) {
  auto r = CorrelationMatrix(data);
  if (!r) return Error(r.error().kind, "factor_analysis: " + r.error().message);
  return FactorAnalysisFromCorrelation(*r, options);
}

Result<ParallelResult> ParallelAnalysis(const DenseMatrix& data, const ParallelOptions& options,
                                        const Checkpoint& checkpoint) {
  if (options.iterations < 1) {
    return Error::Usage(fmt::format("parallel_analysis: iterations must be >= 1 (got {})", options.iterations));
  }
  auto r = CorrelationMatrix(data);
  if (!r) return Error(r.error().kind, "parallel_analysis: " + r.error().message);
  auto obs = Eig(*r, "parallel_analysis");
  if (!obs) return obs.error();
  const int n = data.rows;
  const int p = data.cols;
  ParallelResult out;
  out.observed = obs->values;
  std::vector<std::vector<double>> rand(p);
  Rng rng(options.seed);
  DenseMatrix noise(n, p);
  for (int it = 0; it < options.iterations; ++it) {
    if (checkpoint) checkpoint(static_cast<double>(noise.v.size()) * p);
    for (double& v : noise.v) v = rng.Normal();
    auto rr = CorrelationMatrix(noise);
    if (!rr) return Error(rr.error().kind, "parallel_analysis: " + rr.error().message);
    auto e = Eig(*rr, "parallel_analysis");
    if (!e) return e.error();
    for (int k = 0; k < p; ++k) rand[k].push_back(e->values[k]);
  }
  for (int k = 0; k < p; ++k) {
    std::sort(rand[k].begin(), rand[k].end());
    out.random_mean.push_back(internal::PairwiseSum(rand[k].data(), rand[k].size()) / options.iterations);
    out.random_p95.push_back(QuantileSorted(rand[k], 0.95));
  }
  while (out.factors < p && out.observed[out.factors] > out.random_mean[out.factors]) ++out.factors;
  while (out.factors_p95 < p && out.observed[out.factors_p95] > out.random_p95[out.factors_p95]) {
    ++out.factors_p95;
  }
  return out;
}

}  // namespace kplab::stats
