#include "kplab/sim.h"
#include "sim/dot_internal.h"
#include "util/cpu.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#define KPLAB_DOT_AVX2 1
#endif

namespace kplab {

namespace sim_internal {

// Dot product of two float32 vectors in double. Each float * float product is exact in double; four
// accumulators break the add dependency chain (the sum order is fixed, so results are reproducible).
double DotPortable(const float* x, const float* y, int n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int k = 0;
  for (; k + 4 <= n; k += 4) {
    s0 += static_cast<double>(x[k]) * y[k];
    s1 += static_cast<double>(x[k + 1]) * y[k + 1];
    s2 += static_cast<double>(x[k + 2]) * y[k + 2];
    s3 += static_cast<double>(x[k + 3]) * y[k + 3];
  }
  for (; k < n; ++k) s0 += static_cast<double>(x[k]) * y[k];
  return (s0 + s1) + (s2 + s3);
}

#ifdef KPLAB_DOT_AVX2
namespace {
// No "fma" in the target: a fused multiply-add would give the same bits anyway (the product is exact),
// but plain mul + add is what the portable loop does.
__attribute__((target("avx2"))) double DotAvx2Kernel(const float* x, const float* y, int n) {
  __m256d acc = _mm256_setzero_pd();
  int k = 0;
  for (; k + 4 <= n; k += 4) {
    const __m256d a = _mm256_cvtps_pd(_mm_loadu_ps(x + k));
    const __m256d b = _mm256_cvtps_pd(_mm_loadu_ps(y + k));
    acc = _mm256_add_pd(acc, _mm256_mul_pd(a, b));
  }
  double s[4];
  _mm256_storeu_pd(s, acc);
  for (; k < n; ++k) s[0] += static_cast<double>(x[k]) * y[k];
  return (s[0] + s[1]) + (s[2] + s[3]);
}
}  // namespace
#endif

bool DotAvx2(const float* x, const float* y, int n, double* out) {
#ifdef KPLAB_DOT_AVX2
  if (!kCpuHasAvx2) return false;
  *out = DotAvx2Kernel(x, y, n);
  return true;
#else
  (void)x;
  (void)y;
  (void)n;
  (void)out;
  return false;
#endif
}

double Dot(const float* x, const float* y, int n) {
#ifdef KPLAB_DOT_AVX2
  if (kCpuHasAvx2) return DotAvx2Kernel(x, y, n);
#endif
  return DotPortable(x, y, n);
}

}  // namespace sim_internal

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

using sim_internal::Dot;

// Euclidean norms of n rows; 0 for rows without a vector, which CosineMatrix then maps to cosine 0.
std::vector<double> Norms(const float* x, const std::uint8_t* has, int n, int dims) {
  std::vector<double> norms(n, 0.0);
  for (int i = 0; i < n; ++i) {
    if (has != nullptr && has[i] == 0) continue;
    const float* row = x + static_cast<std::size_t>(i) * dims;
    norms[i] = std::sqrt(Dot(row, row, dims));
  }
  return norms;
}

// Maximum and first argmax of get(0..n-1), numpy-style: a NaN wins at once.
template <class Get>
std::pair<double, int> MaxOf(int n, Get get) {
  if (n <= 0) return {kNaN, -1};
  double best = get(0);
  int index = 0;
  if (std::isnan(best)) return {best, 0};
  for (int k = 1; k < n; ++k) {
    const double x = get(k);
    if (std::isnan(x)) return {x, k};
    if (x > best) {
      best = x;
      index = k;
    }
  }
  return {best, index};
}

// Scratch for the assignment solver, reused across calls on the same thread (no allocation once warm).
struct LsapScratch {
  std::vector<double> cost;  // n_rows x n_cols costs to minimize (n_rows <= n_cols)
  std::vector<double> u, v;  // dual variables of rows and columns
  std::vector<double> dist;  // shortest reduced-cost path length to each column in this round
  std::vector<int> path;     // row preceding each column on its shortest path
  std::vector<int> col4row, row4col;
  std::vector<int> remaining;  // columns not yet settled in this round
  std::vector<std::uint8_t> row_seen, col_seen;
};

// Minimum-cost assignment of every one of nr rows to distinct columns of the nr x nc (nr <= nc) cost
// matrix s.cost, by successive shortest augmenting paths (Crouse 2016, §IV.B, as in scipy). Fills
// s.col4row. Returns false only if a reduced cost overflowed (finite input within ~1e308 of overflow).
bool SolveMinCost(int nr, int nc, LsapScratch& s) {
  s.u.assign(nr, 0.0);
  s.v.assign(nc, 0.0);
  s.dist.resize(nc);
  s.path.assign(nc, -1);
  s.col4row.assign(nr, -1);
  s.row4col.assign(nc, -1);
  s.remaining.resize(nc);
  s.row_seen.resize(nr);
  s.col_seen.resize(nc);
  const double* cost = s.cost.data();

  for (int cur = 0; cur < nr; ++cur) {
    // Dijkstra over reduced costs from the free row cur to the nearest free column (the sink).
    // Columns are scanned from the last down so that a constant matrix yields the identity (scipy).
    for (int k = 0; k < nc; ++k) s.remaining[k] = nc - 1 - k;
    int n_remaining = nc;
    std::fill(s.row_seen.begin(), s.row_seen.end(), 0);
    std::fill(s.col_seen.begin(), s.col_seen.end(), 0);
    std::fill(s.dist.begin(), s.dist.end(), kInf);
    double min_val = 0;
    int i = cur;
    int sink = -1;
    while (sink < 0) {
      s.row_seen[i] = 1;
      const double* ci = cost + static_cast<std::size_t>(i) * nc;
      double lowest = kInf;
      int best = -1;
      for (int k = 0; k < n_remaining; ++k) {
        const int j = s.remaining[k];
        const double r = min_val + ci[j] - s.u[i] - s.v[j];
        if (r < s.dist[j]) {
          s.path[j] = i;
          s.dist[j] = r;
        }
        // On equal distance prefer a free column: it ends the search (matters for integer matrices).
        if (s.dist[j] < lowest || (s.dist[j] == lowest && s.row4col[j] < 0)) {
          lowest = s.dist[j];
          best = k;
        }
      }
      if (!(lowest < kInf)) return false;
      min_val = lowest;
      const int j = s.remaining[best];
      s.col_seen[j] = 1;
      s.remaining[best] = s.remaining[--n_remaining];
      if (s.row4col[j] < 0) {
        sink = j;
      } else {
        i = s.row4col[j];
      }
    }

    // Update the duals so reduced costs stay non-negative and are 0 along the matched edges.
    s.u[cur] += min_val;
    for (int r = 0; r < nr; ++r) {
      if (s.row_seen[r] && r != cur) s.u[r] += min_val - s.dist[s.col4row[r]];
    }
    for (int c = 0; c < nc; ++c) {
      if (s.col_seen[c]) s.v[c] -= min_val - s.dist[c];
    }

    // Flip the matching along the path sink <- ... <- cur.
    int j = sink;
    while (true) {
      const int r = s.path[j];
      s.row4col[j] = r;
      std::swap(s.col4row[r], j);
      if (r == cur) break;
    }
  }
  return true;
}

thread_local LsapScratch t_lsap;
thread_local std::vector<double> t_topk;

}  // namespace

Matrix Transposed(const Matrix& m) {
  Matrix t(m.cols, m.rows);
  for (int r = 0; r < m.rows; ++r) {
    for (int c = 0; c < m.cols; ++c) t.at(c, r) = m.at(r, c);
  }
  return t;
}

std::vector<double> RowNorms(const float* x, const std::uint8_t* has, int n, int dims) {
  return Norms(x, has, n, dims);
}

double CosineOf(const float* a, double norm_a, const float* b, double norm_b, int dims) {
  if (norm_a == 0 || norm_b == 0) return 0.0;
  const double c = Dot(a, b, dims) / (norm_a * norm_b);
  return std::clamp(c, -1.0, 1.0);  // rounding can leave |c| a few ulps above 1; NaN stays
}

Matrix CosineMatrix(const float* a, const std::uint8_t* a_has, int na, const float* b,
                    const std::uint8_t* b_has, int nb, int dims) {
  Matrix m(na, nb, 0.0);
  if (na == 0 || nb == 0) return m;
  const std::vector<double> norm_a = Norms(a, a_has, na, dims);
  const std::vector<double> norm_b = Norms(b, b_has, nb, dims);
  for (int i = 0; i < na; ++i) {
    const float* ai = a + static_cast<std::size_t>(i) * dims;
    for (int j = 0; j < nb; ++j) m.at(i, j) = CosineOf(ai, norm_a[i], b + static_cast<std::size_t>(j) * dims, norm_b[j], dims);
  }
  return m;
}

std::vector<double> RowMax(const Matrix& m) {
  std::vector<double> out(m.rows);
  for (int r = 0; r < m.rows; ++r) out[r] = MaxOf(m.cols, [&](int c) { return m.at(r, c); }).first;
  return out;
}

std::vector<int> RowArgmax(const Matrix& m) {
  std::vector<int> out(m.rows);
  for (int r = 0; r < m.rows; ++r) out[r] = MaxOf(m.cols, [&](int c) { return m.at(r, c); }).second;
  return out;
}

std::vector<double> ColMax(const Matrix& m) {
  std::vector<double> out(m.cols);
  for (int c = 0; c < m.cols; ++c) out[c] = MaxOf(m.rows, [&](int r) { return m.at(r, c); }).first;
  return out;
}

std::vector<int> ColArgmax(const Matrix& m) {
  std::vector<int> out(m.cols);
  for (int c = 0; c < m.cols; ++c) out[c] = MaxOf(m.rows, [&](int r) { return m.at(r, c); }).second;
  return out;
}

std::vector<int> RowTopK(const Matrix& m, int r, int k) {
  k = std::clamp(k, 0, m.cols);
  std::vector<int> idx(m.cols);
  std::iota(idx.begin(), idx.end(), 0);
  const std::span<const double> row = m.row(r);
  // NaN first, then larger values, then lower index: a strict total order, so the result is unique.
  auto before = [&](int x, int y) {
    const bool nx = std::isnan(row[x]), ny = std::isnan(row[y]);
    if (nx != ny) return nx;
    if (!nx && row[x] != row[y]) return row[x] > row[y];
    return x < y;
  };
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), before);
  idx.resize(k);
  return idx;
}

double RowTopKMean(const Matrix& m, int r, int k) {
  k = std::clamp(k, 0, m.cols);
  if (k == 0) return kNaN;
  const std::span<const double> row = m.row(r);
  std::vector<double>& vals = t_topk;
  vals.assign(row.begin(), row.end());
  for (double x : vals) {
    if (std::isnan(x)) return x;  // NaN ranks first, so it is always among the top k
  }
  // Sum largest first, a fixed order whatever k is.
  std::partial_sort(vals.begin(), vals.begin() + k, vals.end(), std::greater<double>());
  double sum = 0;
  for (int i = 0; i < k; ++i) sum += vals[i];
  return sum / k;
}

Result<Assignment> MaxWeightAssignment(const Matrix& m) {
  Assignment out;
  out.row_to_col.assign(m.rows, -1);
  if (m.rows == 0 || m.cols == 0) return out;
  for (int r = 0; r < m.rows; ++r) {
    for (int c = 0; c < m.cols; ++c) {
      if (!std::isfinite(m.at(r, c))) {
        return Error::Input(
            fmt::format("similarity matrix entry (row {}, column {}, counting from 0) is {}; the maximum-weight "
                        "assignment needs finite weights",
                        r, c, m.at(r, c)));
      }
    }
  }

  // Solve the minimization of -weight with rows <= columns: transpose a tall matrix.
  LsapScratch& s = t_lsap;
  const bool transpose = m.rows > m.cols;
  const int nr = transpose ? m.cols : m.rows;
  const int nc = transpose ? m.rows : m.cols;
  s.cost.resize(static_cast<std::size_t>(nr) * nc);
  for (int r = 0; r < m.rows; ++r) {
    for (int c = 0; c < m.cols; ++c) {
      const std::size_t k = transpose ? static_cast<std::size_t>(c) * nc + r
                                      : static_cast<std::size_t>(r) * nc + c;
      s.cost[k] = -m.at(r, c);
    }
  }
  if (!SolveMinCost(nr, nc, s)) {
    return Error::Input(
        "maximum-weight assignment: the similarity values are too large (reduced costs "
        "overflowed); scale the matrix down");
  }
  if (transpose) {
    for (int c = 0; c < nr; ++c) out.row_to_col[s.col4row[c]] = c;
  } else {
    for (int r = 0; r < nr; ++r) out.row_to_col[r] = s.col4row[r];
  }
  for (int r = 0; r < m.rows; ++r) {
    if (out.row_to_col[r] >= 0) out.total += m.at(r, out.row_to_col[r]);
  }
  return out;
}

}  // namespace kplab
