// Statistics for comparing evaluation runs: descriptive statistics, correlations, paired tests,
// effect sizes, two-way ANOVA, bootstrap confidence intervals, approximate randomization, Holm's
// correction, and exploratory factor analysis. Each routine names the reference implementation whose
// numbers it reproduces (scipy 1.10, numpy 1.24, statsmodels, R psych); tests/core/stats_test.cc
// checks them against values those produced (tests/reference/gen_stats.py, gen_stats_fa.R).
//
// Conventions shared by every function:
// - Samples are std::span<const double>. A NaN in an input is an Error naming the function, the
//   argument and the 0-based index: "pearson: y[3] is NaN". Infinities are accepted (results follow
//   IEEE arithmetic).
// - Paired inputs of different lengths and samples that are too small are Errors with the counts:
//   "pearson: x and y must have the same length (got 5 and 4)", "variance: needs more than ddof = 1
//   observations (got 1)".
// - Where scipy returns NaN for an undefined statistic (a constant input to a correlation), so do we;
//   each function says when.
// - Randomized routines take a seed and are deterministic given it, on every platform: they use Rng
//   (below), whose stream is specified exactly so that other languages can reproduce it.
//
// Threads: the statistics are pure functions, safe from several threads at once; an Rng is one stream: one
// per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "kplab/result.h"
#include "kplab/sim.h"

namespace kplab::stats {

// ---- Descriptive ------------------------------------------------------------------------------------

// Arithmetic mean (pairwise summation). Needs at least 1 value.
Result<double> Mean(std::span<const double> x);

// The correctly rounded sum of x, as Python's math.fsum (Shewchuk's exact partials, then round half to
// even across the partials): it depends on the values only, not on their order. 0 for no values; an
// infinite value gives that infinity. Errors: a NaN; +inf and -inf together; a finite sum that overflows
// on the way (Python's "intermediate overflow in fsum").
Result<double> FSum(std::span<const double> x);

// Quantile q in [0, 1] as numpy.quantile(x, q) with the default method 'linear' (Hyndman & Fan type 7):
// with s the sorted sample and h = (n - 1) q, s[floor h] + (h - floor h) (s[floor h + 1] - s[floor h]),
// interpolated as numpy does (from the upper neighbour when the fraction is >= 0.5). Needs 1 value.
Result<double> Quantile(std::span<const double> x, double q);
// Several quantiles of one sample (sorted once). Every q must be in [0, 1].
Result<std::vector<double>> Quantiles(std::span<const double> x, std::span<const double> qs);
// The same quantile of an ascending, non-empty, NaN-free sample, without checks (for callers that
// sort once, e.g. box plots).
double QuantileSorted(std::span<const double> sorted, double q);
// Quantile(x, 0.5); numpy.median.
Result<double> Median(std::span<const double> x);

// Sum of squared deviations from the mean / (n - ddof), as numpy.var(x, ddof=ddof) (two-pass).
// Needs n > ddof >= 0.
Result<double> Variance(std::span<const double> x, int ddof = 1);
// sqrt(Variance(x, ddof)); numpy.std(x, ddof=ddof).
Result<double> StdDev(std::span<const double> x, int ddof = 1);

// Average ranks (1-based; ties get the mean of the ranks they span), as scipy.stats.rankdata.
std::vector<double> AverageRanks(std::span<const double> x);

// ---- Correlation --------------------------------------------------------------------------------------

// A correlation coefficient and its two-sided p-value. Both are NaN when an input is constant (all
// values equal), as scipy returns them.
struct Correlation {
  double r = 0;
  double p = 0;
};

// Pearson's r with the p-value of scipy.stats.pearsonr (exact under bivariate normality: |r| against
// Beta(n/2 - 1, n/2 - 1) on [-1, 1]). Needs n >= 2; for n = 2, r = +-1 and p = 1 as scipy.
Result<Correlation> Pearson(std::span<const double> x, std::span<const double> y);

// Spearman's rho (Pearson's r of the average ranks) with the p-value of scipy.stats.spearmanr
// (Student's t with n - 2 degrees of freedom: t = rho sqrt((n - 2) / ((1 + rho)(1 - rho))); |rho| = 1
// gives p = 0). Needs n >= 3 (scipy returns a NaN p-value for n = 2). O(n log n).
Result<Correlation> Spearman(std::span<const double> x, std::span<const double> y);

// Kendall's tau-b with the p-value of scipy.stats.kendalltau (scipy 1.10). Concordant minus discordant
// pairs are counted in O(n log n) (Knight's algorithm: sort by (x, y), count the inversions of y by
// merge sort). Methods:
//  - kAuto (scipy's default): kExact when neither sample has ties and (n <= 33 or
//    min(discordant, concordant) <= 1), else kAsymptotic;
//  - kExact: the permutation distribution of the number of inversions (Kendall 1970), doubled for the
//    two-sided p; an Error if a sample has ties;
//  - kAsymptotic: normal approximation of concordant - discordant with the tie-corrected variance.
// Needs n >= 2.
enum class KendallMethod { kAuto, kExact, kAsymptotic };
Result<Correlation> Kendall(std::span<const double> x, std::span<const double> y,
                            KendallMethod method = KendallMethod::kAuto);

// Williams' test (Williams 1959; his T2 as given by Steiger 1980) for the difference between two dependent
// correlations that share one variable: r12 = corr(h, a), r13 = corr(h, b), r23 = corr(a, b), all from
// the same n observations (h a human score, a and b two metrics). With |R| = 1 - r12^2 - r13^2 - r23^2
// + 2 r12 r13 r23 and rbar = (r12 + r13) / 2,
//   t = (r12 - r13) sqrt((n - 1)(1 + r23) / (2 (n - 1) / (n - 3) |R| + rbar^2 (1 - r23)^3)),
// Student's t with n - 3 degrees of freedom; p = 2 P(T > |t|). It assumes Pearson correlations of
// (approximately) normal variables; applied to ranks (Spearman) it is the usual approximation. When a and
// b are perfectly correlated (r23 >= 1 - 1e-12, or a denominator <= 0) the statistic is 0 / 0: t and p
// are NaN.
// Errors: n < 4, a correlation that is NaN or outside [-1, 1].
struct WilliamsResult {
  double t = 0;
  double df = 0;
  double p = 0;  // two-sided
};
Result<WilliamsResult> Williams(double r12, double r13, double r23, double n);

// ---- Wilcoxon signed-rank test ----------------------------------------------------------------------

enum class ZeroMethod {
  kWilcox,  // drop zero differences before ranking (scipy's default)
  kPratt,   // rank zeros with the others, then drop their ranks
};
enum class WilcoxonMethod { kAuto, kExact, kApprox };

struct WilcoxonOptions {
  ZeroMethod zero_method = ZeroMethod::kWilcox;
  bool correction = false;  // continuity correction (+-0.5 towards the mean) in the normal approximation
  WilcoxonMethod method = WilcoxonMethod::kAuto;
};

struct WilcoxonResult {
  double statistic = 0;  // min(W+, W-), the smaller of the rank sums of positive and negative differences
  double p = 0;          // two-sided
  double z = 0;          // the normal deviate when the approximation was used, else NaN
  bool exact = false;    // the exact null distribution was used
};

// Two-sided Wilcoxon signed-rank test of the differences d = x - y (or of the given differences),
// exactly as scipy.stats.wilcoxon in scipy 1.10:
//  - kAuto uses the exact distribution when n <= 50 (n counts zero differences), else the normal
//    approximation; kExact uses it for any n. Either switches to the approximation if there is a zero
//    difference. NOTE (scipy 1.10): ties among nonzero |d| do NOT switch to the approximation; the exact
//    p-value is then taken at floor(W+) (the statistic itself keeps its half ranks).
//  - The approximation: mean n(n+1)/4 and variance n(n+1)(2n+1)/24 minus sum(t^3 - t)/48 over tie groups;
//    for kPratt, n counts the zeros and the zeros' share n0(n0+1)/4, n0(n0+1)(2n0+1)/24 is removed, and
//    the tie groups are those of the nonzero |d|. With `correction`, z = (T - mean - 0.5 sign(T - mean))
//    / sd. p = 2 P(Z > |z|).
// Errors: every difference zero (scipy raises for the approximation, which zeros force). An empty input
// gives NaN statistic and p.
Result<WilcoxonResult> Wilcoxon(std::span<const double> x, std::span<const double> y,
                                const WilcoxonOptions& options = {});
Result<WilcoxonResult> Wilcoxon(std::span<const double> differences, const WilcoxonOptions& options = {});

// ---- Effect size ----------------------------------------------------------------------------------------

// Cliff's delta: (#{(i, j): x_i > y_j} - #{(i, j): x_i < y_j}) / (n m), in O((n + m) log(n + m)).
// Needs both samples non-empty.
Result<double> CliffsDelta(std::span<const double> x, std::span<const double> y);

// ---- Two-way ANOVA ----------------------------------------------------------------------------------------

struct AnovaRow {
  std::string source;  // "A", "B", "A:B", "Residual"
  double ss = 0;       // sum of squares
  double df = 0;
  double ms = 0;       // ss / df
  double f = 0;        // ms / ms_residual (NaN in the Residual row)
  double p = 0;        // P(F(df, df_residual) > f) (NaN in the Residual row)
  double eta2 = 0;     // ss / ss_total (ss_total = sum of squared deviations from the grand mean)
  double partial_eta2 = 0;  // ss / (ss + ss_residual) (NaN in the Residual row)
};

// Two-way ANOVA with interaction, Type II sums of squares, as statsmodels
// anova_lm(ols('y ~ C(a) * C(b)', data), typ=2): SS(A) = RSS(B) - RSS(A + B), SS(B) = RSS(A) - RSS(A + B),
// SS(A:B) = RSS(A + B) - RSS(A * B), Residual = RSS(A * B), where RSS(M) is the residual sum of squares
// of the least-squares fit of model M. Factor levels are arbitrary integer codes (a level is a distinct
// value). Unbalanced designs are fine; df(A:B) = (number of non-empty cells) - (levels(A) + levels(B) -
// 1), which is (la - 1)(lb - 1) when every cell is filled. Type II sums do not add up to SS_total for
// unbalanced data, so the eta^2 of the rows do not add up to 1 either. Returns the rows A, B, A:B,
// Residual. Errors: lengths differ, a factor with fewer than 2 levels, no residual degrees of freedom
// (every cell has one observation), a disconnected design (the additive model is not estimable).
Result<std::vector<AnovaRow>> TwoWayAnova(std::span<const double> y, std::span<const int> a,
                                          std::span<const int> b);

// ---- Random numbers -----------------------------------------------------------------------------------------

// xoshiro256** 1.0 (Blackman & Vigna) seeded by four successive outputs of splitmix64 started at `seed`
// (splitmix64: state += 0x9e3779b97f4a7c15; z = state; z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
// z = (z ^ (z >> 27)) * 0x94d049bb133111eb; return z ^ (z >> 31)). The routines below draw from it
// as they document, so that tests/reference/gen_stats.py can replay the same draws.
class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t Next();  // the next 64-bit output
  // The next 32 bits: each 64-bit output is used as two 32-bit values, low half first.
  std::uint32_t Next32();
  // Uniform integer in [0, n), n >= 1, by Lemire's multiply-shift with rejection (unbiased) on Next32():
  // m = x * n (64-bit); if low32(m) < n, t = (2^32 - n) mod n and x is redrawn while low32(m) < t;
  // the result is m >> 32.
  std::uint32_t Below(std::uint32_t n);
  // Uniform double in [0, 1): (Next() >> 11) * 2^-53.
  double Uniform();
  // Standard normal deviate (Marsaglia's polar method on 2 Uniform() - 1; the second deviate of each
  // pair is kept for the next call).
  double Normal();

 private:
  std::uint64_t s_[4];
  std::uint32_t spare32_ = 0;
  bool has32_ = false;
  double spare_normal_ = 0;
  bool has_normal_ = false;
};

// ---- Bootstrap and randomization ----------------------------------------------------------------------------

// Called now and then by the long resampling loops below with the amount of work (values drawn) done
// since the last call; it may throw to cancel (the Lua host checks its deadline and Ctrl-C there). It
// does not change the results.
using Checkpoint = std::function<void(double)>;

struct BootstrapOptions {
  int n_resamples = 10000;
  double confidence = 0.95;  // in (0, 1)
  std::uint64_t seed = 0;
};

struct Interval {
  double low = 0;
  double high = 0;
};

// Percentile bootstrap confidence interval for the mean of x. Resample r = 0 .. n_resamples - 1 draws
// n indices i_k = rng.Below(n), k = 0 .. n - 1, in order, from one Rng(seed), and takes the mean of
// x[i_k]; the interval is Quantile(means, (1 - confidence) / 2) and Quantile(means, (1 + confidence) / 2)
// (numpy.percentile 'linear'). Needs n >= 1 (n < 2^32).
Result<Interval> BootstrapMeanCI(std::span<const double> x, const BootstrapOptions& options = {},
                                 const Checkpoint& checkpoint = {});
// The same for the mean of the paired differences x - y (documents resampled with replacement).
Result<Interval> PairedBootstrapMeanCI(std::span<const double> x, std::span<const double> y,
                                       const BootstrapOptions& options = {}, const Checkpoint& checkpoint = {});

struct RandomizationOptions {
  int n_resamples = 10000;
  std::uint64_t seed = 0;
  // Sequential Monte Carlo (Besag & Clifford 1991): stop as soon as `stop_after_hits` resamples have
  // reached the observed statistic, at resample L, and return p = stop_after_hits / L; a difference
  // that is clearly not significant then costs a few hundred resamples instead of n_resamples. 0 = off.
  int stop_after_hits = 0;
};

// Paired approximate randomization test (two-sided) of mean(x - y) = 0 by sign flips of the paired
// differences d = x - y. The statistic is s = sum_i sign_i d_i (the mean times n). Resample r draws
// ceil(n / 64) words w_0, w_1, ... = rng.Next() from one Rng(seed); d_i is negated when bit (i mod 64)
// of w_(i div 64) is 1. p = (1 + #{r: |s_r| >= |s_obs| - tol}) / (1 + n_resamples), with
// tol = 1e-9 * sum |d_i| absorbing rounding (flips that reach |s_obs| exactly in real arithmetic
// count). Needs n >= 1.
Result<double> ApproximateRandomization(std::span<const double> x, std::span<const double> y,
                                        const RandomizationOptions& options = {},
                                        const Checkpoint& checkpoint = {});

// ---- Multiple comparisons --------------------------------------------------------------------------------------

// Holm's step-down adjusted p-values, as statsmodels multipletests(p, method='holm')[1]: with p sorted
// ascending, adj_(i) = min(1, max_{j <= i} (m - j) p_(j)) (0-based j), returned in input order. Every p
// must be in [0, 1]. An empty list gives an empty list.
Result<std::vector<double>> Holm(std::span<const double> p);

// ---- Linear algebra and factor analysis --------------------------------------------------------------------------

// A dense row-major matrix: the Matrix of sim.h (rows, cols, v, at(r, c)).
using DenseMatrix = ::kplab::Matrix;

struct SymmetricEigen {
  std::vector<double> values;  // descending
  DenseMatrix vectors;         // column k is the unit eigenvector of values[k]
};

// Eigen-decomposition of a symmetric n x n matrix (only the lower triangle is read): Householder
// reduction to tridiagonal form, then implicit shifted QL iterations (the EISPACK tred2 / tql2 scheme).
// Eigenvector signs are arbitrary. Errors: not square, NaN, or no convergence (30 iterations per
// eigenvalue).
Result<SymmetricEigen> EigenSymmetric(const DenseMatrix& a);

// Pearson correlation matrix of the columns of an n x p data matrix (rows = observations). Errors: n < 2,
// NaN, a constant column (named by its 0-based index).
Result<DenseMatrix> CorrelationMatrix(const DenseMatrix& data);

enum class FactorMethod {
  // Minimum residual (psych's default): the uniquenesses psi, bounded to [0.005, 1] as psych's L-BFGS-B
  // bounds, minimize the squared off-diagonal residuals of R fitted by the f leading eigenpairs of
  // R - diag(psi). At the optimum the diagonal residual vanishes (psi = 1 - rowSums(L^2)), so we solve
  // that fixed point from psi = 1 - SMC, to a change below 1e-12 (psych stops its optimizer earlier: its
  // loadings agree with ours to about 1e-5).
  kMinres,
  // Iterated principal axis as psych::fa(fm = "pa"): squared multiple correlations (1 - 1/diag(R^-1),
  // pseudo-inverse as psych::Pinv) as initial communalities; each iteration takes the loadings of R with
  // the communalities on its diagonal and replaces them by the row sums of squared loadings; it stops when
  // the summed communality changed by <= 0.001, or after 50 iterations (psych's min.err and max.iter).
  kPrincipalAxis,
};
enum class Rotation { kNone, kVarimax };

struct FactorOptions {
  int factors = 1;
  FactorMethod method = FactorMethod::kMinres;
  Rotation rotation = Rotation::kVarimax;
};

struct FactorResult {
  DenseMatrix loadings;               // p x f
  std::vector<double> communalities;  // p: row sums of squared loadings
  std::vector<double> uniquenesses;   // p: 1 - communality
  std::vector<double> ss_loadings;    // f: column sums of squared loadings (variance explained)
  std::vector<double> proportion;     // f: ss_loadings / p
  int iterations = 0;                 // extraction iterations
};

// Exploratory factor analysis of the correlation matrix of `data` (n x p, rows = observations; the
// columns are standardised). Extraction by `method`; loadings are the leading f eigenvectors of the
// reduced correlation matrix (communalities on the diagonal) scaled by the square roots of their
// eigenvalues (negative eigenvalues count as 0). Rotation: varimax with Kaiser normalisation exactly as
// R's stats::varimax (eps = 1e-5, at most 1000 iterations; its convergence rule is relative, so we
// follow it rather than iterate further, to reproduce R). Then, as psych::fa: factors are ordered by
// decreasing ss_loadings and each column is multiplied by the sign of its sum (a zero sum keeps +).
// Errors: f < 1, f >= p, p < 2, the errors of CorrelationMatrix.
Result<FactorResult> FactorAnalysis(const DenseMatrix& data, const FactorOptions& options = {});
// The same from a correlation matrix (p x p, symmetric, unit diagonal).
Result<FactorResult> FactorAnalysisFromCorrelation(const DenseMatrix& correlation,
                                                   const FactorOptions& options = {});

// Varimax rotation (Kaiser-normalised) of a p x f loading matrix as R's stats::varimax(x, normalize =
// TRUE, eps = 1e-5): with x scaled to unit row norms and T = I, repeat at most 1000 times
// z = x T, B = x' (z^3 - z diag(colSums(z^2)) / p), T = U V' from the SVD B = U D V', d = sum(D), until
// d < d_previous (1 + eps). Returns the rotated loadings (rescaled), unordered and unsigned. f = 1
// returns x unchanged.
Result<DenseMatrix> Varimax(const DenseMatrix& loadings, double eps = 1e-5);

struct ParallelOptions {
  int iterations = 100;  // random data sets
  std::uint64_t seed = 0;
};

struct ParallelResult {
  int factors = 0;                   // leading observed eigenvalues above the random mean (Horn 1965)
  int factors_p95 = 0;               // leading observed eigenvalues above the random 95th percentile
                                     // (Glorfeld 1995)
  std::vector<double> observed;      // eigenvalues of the observed correlation matrix, descending
  std::vector<double> random_mean;   // mean of the k-th eigenvalue over the random data sets
  std::vector<double> random_p95;    // its 95th percentile (Quantile 0.95)
};

// Horn's parallel analysis, principal-components variant: the eigenvalues of the observed correlation
// matrix (unreduced, ones on the diagonal) against those of the correlation matrices of `iterations`
// n x p matrices of independent standard normal deviates (Rng(seed).Normal(), filled row by row, one
// generator for all iterations). `factors` counts the leading observed eigenvalues greater than the
// random mean, stopping at the first that is not; `factors_p95` does the same against the 95th
// percentile. The mean criterion is Horn's original; it over-extracts on pure noise about a quarter of
// the time (n = 300, p = 10: 0 factors 54%, 1 20%, 2 or more 26%, by simulation), the 95th percentile
// rarely (0 factors 94%, 1 6%). Errors: as CorrelationMatrix; iterations < 1.
Result<ParallelResult> ParallelAnalysis(const DenseMatrix& data, const ParallelOptions& options = {},
                                        const Checkpoint& checkpoint = {});

// ---- Distributions (exposed for tests and reuse) -------------------------------------------------------------------

// Regularized incomplete beta I_x(a, b), a, b > 0, x in [0, 1] (continued fraction).
double IncompleteBeta(double a, double b, double x);
// Upper tail P(T > t) of Student's t with df > 0 degrees of freedom.
double StudentTSf(double t, double df);
// Upper tail P(F > f) of Fisher's F(d1, d2).
double FisherFSf(double f, double d1, double d2);
// Upper tail P(Z > z) of the standard normal.
double NormalSf(double z);

}  // namespace kplab::stats
