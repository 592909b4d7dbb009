// kp.stats: the statistics of kplab/stats.h for scripts. Samples are Lua sequences of numbers (read
// with rawlen/rawgeti: 1..#t); results are numbers or fresh tables. Errors are Lua errors
// "kp.stats.<function>: <what is wrong>" naming the argument, with 1-based element indices:
//   kp.stats.mean(x)                     kp.stats.median(x)
//   kp.stats.fsum(x)                     Python's math.fsum: the correctly rounded sum
//   kp.stats.quantile(x, q | {q...})     numpy.quantile 'linear'; a list in, a list out
//   kp.stats.var(x [, ddof=1])           kp.stats.sd(x [, ddof=1])
//   kp.stats.pearson(x, y)    -> r, p    kp.stats.spearman(x, y) -> rho, p
//   kp.stats.kendall(x, y [, "auto"|"exact"|"asymptotic"]) -> tau_b, p
//   kp.stats.wilcoxon(x, y|nil, {zero_method="wilcox"|"pratt", correction=false,
//                                method="auto"|"exact"|"approx"}) -> statistic, p [, z]
//                                        (z only when the normal approximation was used)
//   kp.stats.cliffs_delta(x, y)
//   kp.stats.anova2(y, a, b) -> { {source="A", ss=, df=, ms=, f=, p=, eta2=, partial_eta2=}, B, A:B,
//                                  Residual }   (a, b: lists of integer codes or of strings)
//   kp.stats.bootstrap_ci(x, {n=10000, confidence=0.95, seed=0}) -> low, high
//   kp.stats.paired_bootstrap_ci(x, y, {...}) -> low, high      (of mean(x - y))
//   kp.stats.approx_randomization(x, y, {n=10000, seed=0}) -> p
//   kp.stats.holm(ps) -> adjusted list
//   kp.stats.williams(r12, r13, r23, n) -> t, p, df   (Williams' test, two dependent correlations)
//   kp.stats.draw_indices(n, count, {seed=0}) -> count integers in 1..n (Rng(seed).Below(n) + 1)
//   kp.stats.factor_analysis(rows, {factors=1, method="minres"|"pa", rotate="varimax"|"none"})
//       -> {loadings={{...}, ...}, communalities=, uniquenesses=, ss_loadings=, proportion=}
//   kp.stats.parallel_analysis(rows, {iter=100, seed=0})
//       -> {factors=, factors_p95=, observed=, random_mean=, random_p95=}
// NaN results (a constant input to a correlation, the Residual row's F) are returned as NaN numbers.
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "bindings.h"
#include "kplab/stats.h"
#include "lua_util.h"

namespace kplab::host {

namespace {

namespace st = kplab::stats;

[[noreturn]] void Fail(lua_State* L, const char* fn, const std::string& what) {
  luaL_error(L, "kp.stats.%s: %s", fn, what.c_str());
  std::abort();  // unreachable: luaL_error does not return
}

using Opt = OptionReader<&Fail>;

// Raises a core Error under the Lua name: "pearson: x and y ..." -> "kp.stats.pearson: x and y ...".
[[noreturn]] void FailCore(lua_State* L, const char* fn, const Error& e) {
  const std::string& m = e.message;
  const std::size_t colon = m.find(": ");
  Fail(L, fn, colon == std::string::npos ? m : m.substr(colon + 2));
}

template <class T>
T Unwrap(lua_State* L, const char* fn, Result<T> r) {
  if (!r.ok()) FailCore(L, fn, r.error());
  return std::move(r).value();
}

const char* TypeName(lua_State* L, int idx) { return luaL_typename(L, idx); }

// A Lua sequence of numbers at stack index `arg` (no NaN).
std::vector<double> CheckNumbers(lua_State* L, int arg, const char* fn, const char* name) {
  if (lua_type(L, arg) != LUA_TTABLE) {
    Fail(L, fn, std::string("argument '") + name + "' must be a table of numbers (got " + TypeName(L, arg) +
                    ")");
  }
  const lua_Unsigned n = lua_rawlen(L, arg);
  std::vector<double> out;
  out.reserve(n);
  for (lua_Unsigned i = 1; i <= n; ++i) {
    lua_rawgeti(L, arg, static_cast<lua_Integer>(i));
    if (lua_type(L, -1) != LUA_TNUMBER) {
      const std::string got = TypeName(L, -1);
      lua_pop(L, 1);
      Fail(L, fn, std::string(name) + "[" + std::to_string(i) + "] must be a number (got " + got + ")");
    }
    const double v = lua_tonumber(L, -1);
    lua_pop(L, 1);
    if (std::isnan(v)) Fail(L, fn, std::string(name) + "[" + std::to_string(i) + "] is NaN");
    out.push_back(v);
  }
  return out;
}

void PushNumbers(lua_State* L, const std::vector<double>& v) {
  lua_createtable(L, static_cast<int>(v.size()), 0);
  for (std::size_t i = 0; i < v.size(); ++i) {
    lua_pushnumber(L, v[i]);
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
}

// An options table at `arg` (nil or absent = no options). Unknown keys are errors listing `allowed`.
void CheckOptions(lua_State* L, int arg, const char* fn, std::initializer_list<const char*> allowed) {
  if (lua_isnoneornil(L, arg)) return;
  if (lua_type(L, arg) != LUA_TTABLE) {
    Fail(L, fn, std::string("options must be a table (got ") + TypeName(L, arg) + ")");
  }
  lua_pushnil(L);
  while (lua_next(L, arg) != 0) {
    bool known = false;
    if (lua_type(L, -2) == LUA_TSTRING) {
      const std::string_view key = lua_tostring(L, -2);
      for (const char* a : allowed) known = known || key == a;
    }
    if (!known) {
      std::string list;
      for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      const std::string key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : luaL_typename(L, -2);
      lua_pop(L, 2);
      Fail(L, fn, "unknown option '" + key + "' (expected " + list + ")");
    }
    lua_pop(L, 1);
  }
}

int OptCount(lua_State* L, int arg, const char* fn, const char* key, int def) {
  const lua_Integer v = Opt::Integer(L, arg, fn, key, def);
  if (v < 1 || v > 1000000000) {
    Fail(L, fn, std::string("option '") + key + "' must be between 1 and 1000000000 (got " +
                    std::to_string(v) + ")");
  }
  return static_cast<int>(v);
}

// options[key] as one of `choices` (index into it), or `def` when absent.
int OptChoice(lua_State* L, int arg, const char* fn, const char* key, std::initializer_list<const char*> choices,
              int def) {
  const int t = Opt::Get(L, arg, key);
  if (t == LUA_TNIL) {
    lua_pop(L, 1);
    return def;
  }
  std::string list;
  for (const char* c : choices) list += (list.empty() ? "'" : ", '") + std::string(c) + "'";
  if (t != LUA_TSTRING) {
    const std::string got = TypeName(L, -1);
    lua_pop(L, 1);
    Fail(L, fn, std::string("option '") + key + "' must be one of " + list + " (got " + got + ")");
  }
  const std::string v = lua_tostring(L, -1);
  lua_pop(L, 1);
  int i = 0;
  for (const char* c : choices) {
    if (v == c) return i;
    ++i;
  }
  Fail(L, fn, std::string("option '") + key + "' must be one of " + list + " (got '" + v + "')");
}

// A data matrix given as a list of rows (tables of numbers of equal length).
st::DenseMatrix CheckRows(lua_State* L, int arg, const char* fn) {
  if (lua_type(L, arg) != LUA_TTABLE) {
    Fail(L, fn, std::string("argument 'rows' must be a table of rows (got ") + TypeName(L, arg) + ")");
  }
  const lua_Unsigned n = lua_rawlen(L, arg);
  st::DenseMatrix m;
  for (lua_Unsigned r = 1; r <= n; ++r) {
    lua_rawgeti(L, arg, static_cast<lua_Integer>(r));
    const std::string name = "rows[" + std::to_string(r) + "]";
    std::vector<double> row = CheckNumbers(L, lua_gettop(L), fn, name.c_str());
    lua_pop(L, 1);
    if (r == 1) {
      m.cols = static_cast<int>(row.size());
    } else if (static_cast<int>(row.size()) != m.cols) {
      Fail(L, fn, name + " has " + std::to_string(row.size()) + " values (expected " + std::to_string(m.cols) +
                      ", as rows[1])");
    }
    m.v.insert(m.v.end(), row.begin(), row.end());
    ++m.rows;
  }
  return m;
}

// No constant column (1-based in the message): the correlation matrix needs every variable to vary.
void CheckColumnsVary(lua_State* L, const st::DenseMatrix& m, const char* fn) {
  if (m.rows < 2) Fail(L, fn, "needs at least 2 rows (got " + std::to_string(m.rows) + ")");
  for (int j = 0; j < m.cols; ++j) {
    bool varies = false;
    for (int i = 1; i < m.rows && !varies; ++i) varies = m.at(i, j) != m.at(0, j);
    if (!varies) Fail(L, fn, "column " + std::to_string(j + 1) + " of 'rows' is constant");
  }
}

// Factor levels: a list of integers (used as codes) or of strings (coded by first appearance).
std::vector<int> CheckLevels(lua_State* L, int arg, const char* fn, const char* name) {
  if (lua_type(L, arg) != LUA_TTABLE) {
    Fail(L, fn, std::string("argument '") + name + "' must be a table of integers or strings (got " +
                    TypeName(L, arg) + ")");
  }
  const lua_Unsigned n = lua_rawlen(L, arg);
  std::vector<int> out;
  out.reserve(n);
  std::map<std::string, int> codes;
  int kind = 0;  // 1 integers, 2 strings
  for (lua_Unsigned i = 1; i <= n; ++i) {
    const int t = lua_rawgeti(L, arg, static_cast<lua_Integer>(i));
    const std::string where = std::string(name) + "[" + std::to_string(i) + "]";
    int isint = 0;
    const lua_Integer v = t == LUA_TNUMBER ? lua_tointegerx(L, -1, &isint) : 0;
    const int this_kind = t == LUA_TSTRING ? 2 : (t == LUA_TNUMBER && isint && v >= -2147483647 && v <= 2147483647 ? 1 : 0);
    if (this_kind == 0) {
      const std::string got = t == LUA_TNUMBER ? "a non-integer number" : TypeName(L, -1);
      lua_pop(L, 1);
      Fail(L, fn, where + " must be an integer or a string (got " + got + ")");
    }
    if (kind != 0 && this_kind != kind) {
      lua_pop(L, 1);
      Fail(L, fn, where + ": levels must be all integers or all strings");
    }
    kind = this_kind;
    if (kind == 1) {
      out.push_back(static_cast<int>(v));
    } else {
      std::size_t len = 0;
      const char* s = lua_tolstring(L, -1, &len);
      auto [it, inserted] = codes.emplace(std::string(s, len), static_cast<int>(codes.size()));
      out.push_back(it->second);
    }
    lua_pop(L, 1);
  }
  return out;
}

// Every value in [0, 1], reported with its 1-based index.
void CheckProbabilities(lua_State* L, const std::vector<double>& v, const char* fn, const char* name) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!(v[i] >= 0 && v[i] <= 1)) {
      Fail(L, fn, fmt::format("{}[{}] = {} is not in [0, 1]", name, i + 1, v[i]));
    }
  }
}

// ---- functions ---------------------------------------------------------------------------------------------

int Mean(lua_State* L) {
  lua_pushnumber(L, Unwrap(L, "mean", st::Mean(CheckNumbers(L, 1, "mean", "x"))));
  return 1;
}

int FSum(lua_State* L) {
  lua_pushnumber(L, Unwrap(L, "fsum", st::FSum(CheckNumbers(L, 1, "fsum", "x"))));
  return 1;
}

int Median(lua_State* L) {
  lua_pushnumber(L, Unwrap(L, "median", st::Median(CheckNumbers(L, 1, "median", "x"))));
  return 1;
}

int Quantile(lua_State* L) {
  const std::vector<double> x = CheckNumbers(L, 1, "quantile", "x");
  if (lua_type(L, 2) == LUA_TTABLE) {
    const std::vector<double> qs = CheckNumbers(L, 2, "quantile", "q");
    CheckProbabilities(L, qs, "quantile", "q");
    PushNumbers(L, Unwrap(L, "quantile", st::Quantiles(x, qs)));
    return 1;
  }
  if (lua_type(L, 2) != LUA_TNUMBER) {
    Fail(L, "quantile", std::string("argument 'q' must be a number or a table of numbers (got ") +
                            TypeName(L, 2) + ")");
  }
  lua_pushnumber(L, Unwrap(L, "quantile", st::Quantile(x, lua_tonumber(L, 2))));
  return 1;
}

int Ddof(lua_State* L, const char* fn) {
  if (lua_isnoneornil(L, 2)) return 1;
  int isint = 0;
  const lua_Integer d = lua_tointegerx(L, 2, &isint);
  if (!isint || d < 0 || d > 1000000) Fail(L, fn, "argument 'ddof' must be a non-negative integer");
  return static_cast<int>(d);
}

int Var(lua_State* L) {
  const std::vector<double> x = CheckNumbers(L, 1, "var", "x");
  lua_pushnumber(L, Unwrap(L, "var", st::Variance(x, Ddof(L, "var"))));
  return 1;
}

int Sd(lua_State* L) {
  const std::vector<double> x = CheckNumbers(L, 1, "sd", "x");
  lua_pushnumber(L, Unwrap(L, "sd", st::StdDev(x, Ddof(L, "sd"))));
  return 1;
}

int PushCorrelation(lua_State* L, const st::Correlation& c) {
  lua_pushnumber(L, c.r);
  lua_pushnumber(L, c.p);
  return 2;
}

int Pearson(lua_State* L) {
  const std::vector<double> x = CheckNumbers(L, 1, "pearson", "x");
  const std::vector<double> y = CheckNumbers(L, 2, "pearson", "y");
  return PushCorrelation(L, Unwrap(L, "pearson", st::Pearson(x, y)));
}

int Spearman(lua_State* L) {
  const std::vector<double> x = CheckNumbers(L, 1, "spearman", "x");
  const std::vector<double> y = CheckNumbers(L, 2, "spearman", "y");
  return PushCorrelation(L, Unwrap(L, "spearman", st::Spearman(x, y)));
}

int Kendall(lua_State* L) {
  const std::vector<double> x = CheckNumbers(L, 1, "kendall", "x");
  const std::vector<double> y = CheckNumbers(L, 2, "kendall", "y");
  st::KendallMethod method = st::KendallMethod::kAuto;
  if (!lua_isnoneornil(L, 3)) {
    const char* m = lua_type(L, 3) == LUA_TSTRING ? lua_tostring(L, 3) : "";
    const std::string_view v = m;
    if (v == "auto") {
      method = st::KendallMethod::kAuto;
    } else if (v == "exact") {
      method = st::KendallMethod::kExact;
    } else if (v == "asymptotic") {
      method = st::KendallMethod::kAsymptotic;
    } else {
      Fail(L, "kendall", "argument 'method' must be 'auto', 'exact' or 'asymptotic'");
    }
  }
  if (method == st::KendallMethod::kExact) {
    // The exact distribution is built over up to n(n-1)/4 inversion counts, n times (auto uses it only
    // where that is small).
    const double n = static_cast<double>(x.size()), counts = n * (n - 1) / 4 + 1;
    ChargeNative(L, n * counts);
    ReserveNative(L, 3 * counts * sizeof(double), "kp.stats.kendall's exact distribution");
  }
  return PushCorrelation(L, Unwrap(L, "kendall", st::Kendall(x, y, method)));
}

int Wilcoxon(lua_State* L) {
  const char* fn = "wilcoxon";
  const std::vector<double> x = CheckNumbers(L, 1, fn, "x");
  const bool paired = !lua_isnoneornil(L, 2);
  const std::vector<double> y = paired ? CheckNumbers(L, 2, fn, "y") : std::vector<double>();
  CheckOptions(L, 3, fn, {"zero_method", "correction", "method"});
  st::WilcoxonOptions o;
  o.zero_method = OptChoice(L, 3, fn, "zero_method", {"wilcox", "pratt"}, 0) == 0 ? st::ZeroMethod::kWilcox
                                                                                  : st::ZeroMethod::kPratt;
  o.correction = Opt::Bool(L, 3, fn, "correction", false);
  const int m = OptChoice(L, 3, fn, "method", {"auto", "exact", "approx"}, 0);
  o.method = m == 0 ? st::WilcoxonMethod::kAuto : (m == 1 ? st::WilcoxonMethod::kExact : st::WilcoxonMethod::kApprox);
  if (o.method == st::WilcoxonMethod::kExact) {
    // The exact distribution has n(n+1)/2 + 1 sums, built up n times (auto uses it up to n = 50).
    const double n = static_cast<double>(x.size()), sums = n * (n + 1) / 2 + 1;
    ChargeNative(L, n * sums);
    ReserveNative(L, 2 * sums * sizeof(double), "kp.stats.wilcoxon's exact distribution");
  }
  const st::WilcoxonResult r = Unwrap(L, fn, paired ? st::Wilcoxon(x, y, o) : st::Wilcoxon(x, o));
  lua_pushnumber(L, r.statistic);
  lua_pushnumber(L, r.p);
  if (r.exact || std::isnan(r.z)) return 2;
  lua_pushnumber(L, r.z);
  return 3;
}

int CliffsDelta(lua_State* L) {
  const std::vector<double> x = CheckNumbers(L, 1, "cliffs_delta", "x");
  const std::vector<double> y = CheckNumbers(L, 2, "cliffs_delta", "y");
  lua_pushnumber(L, Unwrap(L, "cliffs_delta", st::CliffsDelta(x, y)));
  return 1;
}

int Anova2(lua_State* L) {
  const char* fn = "anova2";
  const std::vector<double> y = CheckNumbers(L, 1, fn, "y");
  const std::vector<int> a = CheckLevels(L, 2, fn, "a");
  const std::vector<int> b = CheckLevels(L, 3, fn, "b");
  {
    // Cells of every pair of levels, and the additive model's normal equations (la + lb - 1 unknowns).
    const double la = static_cast<double>(std::set<int>(a.begin(), a.end()).size());
    const double lb = static_cast<double>(std::set<int>(b.begin(), b.end()).size());
    if (la * lb > 2147483647.0) {
      Fail(L, fn, fmt::format("{} x {} cells of levels (expected at most 2147483647)", la, lb));
    }
    const double k = la + lb - 1;
    ChargeNative(L, 8 * la * lb + k * k * k / 3);
    ReserveNative(L, (7 * la * lb + k * k) * sizeof(double), "kp.stats.anova2's cells");
  }
  const std::vector<st::AnovaRow> rows = Unwrap(L, fn, st::TwoWayAnova(y, a, b));
  lua_createtable(L, static_cast<int>(rows.size()), 0);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const st::AnovaRow& r = rows[i];
    lua_createtable(L, 0, 8);
    SetString(L, "source", r.source);
    SetNumber(L, "ss", r.ss);
    SetNumber(L, "df", r.df);
    SetNumber(L, "ms", r.ms);
    SetNumber(L, "f", r.f);
    SetNumber(L, "p", r.p);
    SetNumber(L, "eta2", r.eta2);
    SetNumber(L, "partial_eta2", r.partial_eta2);
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 1;
}

st::BootstrapOptions BootOptions(lua_State* L, int arg, const char* fn) {
  CheckOptions(L, arg, fn, {"n", "confidence", "seed"});
  st::BootstrapOptions o;
  o.n_resamples = OptCount(L, arg, fn, "n", 10000);
  o.confidence = Opt::Number(L, arg, fn, "confidence", 0.95);
  o.seed = static_cast<std::uint64_t>(Opt::Integer(L, arg, fn, "seed", 0));
  return o;
}

// Resampling runs natively, out of the count hook's sight: its work (one step per value drawn) and its
// buffer (one mean per resample) are charged to the script's limits before it starts (sandbox.h).
void ChargeResampling(lua_State* L, double resamples, std::size_t values, const char* buffer) {
  ChargeNative(L, resamples * static_cast<double>(values + 1));
  if (buffer != nullptr) ReserveNative(L, resamples * sizeof(double), buffer);
}

// Inside the loops: Ctrl-C and the deadlines (their work was charged before they started).
st::Checkpoint Checkpoint(lua_State* L) {
  return [L](double steps) { CheckNative(L, steps); };
}

int BootstrapCi(lua_State* L) {
  const std::vector<double> x = CheckNumbers(L, 1, "bootstrap_ci", "x");
  const st::BootstrapOptions o = BootOptions(L, 2, "bootstrap_ci");
  ChargeResampling(L, o.n_resamples, x.size(), "kp.stats.bootstrap_ci's resamples");
  const st::Interval ci = Unwrap(L, "bootstrap_ci", st::BootstrapMeanCI(x, o, Checkpoint(L)));
  lua_pushnumber(L, ci.low);
  lua_pushnumber(L, ci.high);
  return 2;
}

int PairedBootstrapCi(lua_State* L) {
  const char* fn = "paired_bootstrap_ci";
  const std::vector<double> x = CheckNumbers(L, 1, fn, "x");
  const std::vector<double> y = CheckNumbers(L, 2, fn, "y");
  const st::BootstrapOptions o = BootOptions(L, 3, fn);
  ChargeResampling(L, o.n_resamples, x.size(), "kp.stats.paired_bootstrap_ci's resamples");
  const st::Interval ci = Unwrap(L, fn, st::PairedBootstrapMeanCI(x, y, o, Checkpoint(L)));
  lua_pushnumber(L, ci.low);
  lua_pushnumber(L, ci.high);
  return 2;
}

int ApproxRandomization(lua_State* L) {
  const char* fn = "approx_randomization";
  const std::vector<double> x = CheckNumbers(L, 1, fn, "x");
  const std::vector<double> y = CheckNumbers(L, 2, fn, "y");
  CheckOptions(L, 3, fn, {"n", "seed"});
  st::RandomizationOptions o;
  o.n_resamples = OptCount(L, 3, fn, "n", 10000);
  o.seed = static_cast<std::uint64_t>(Opt::Integer(L, 3, fn, "seed", 0));
  ChargeResampling(L, o.n_resamples, x.size(), nullptr);
  lua_pushnumber(L, Unwrap(L, fn, st::ApproximateRandomization(x, y, o, Checkpoint(L))));
  return 1;
}

int Holm(lua_State* L) {
  const std::vector<double> ps = CheckNumbers(L, 1, "holm", "ps");
  CheckProbabilities(L, ps, "holm", "ps");
  PushNumbers(L, Unwrap(L, "holm", st::Holm(ps)));
  return 1;
}

int FactorAnalysis(lua_State* L) {
  const char* fn = "factor_analysis";
  const st::DenseMatrix data = CheckRows(L, 1, fn);
  CheckOptions(L, 2, fn, {"factors", "method", "rotate"});
  st::FactorOptions o;
  o.factors = OptCount(L, 2, fn, "factors", 1);
  o.method = OptChoice(L, 2, fn, "method", {"minres", "pa"}, 0) == 0 ? st::FactorMethod::kMinres
                                                                     : st::FactorMethod::kPrincipalAxis;
  o.rotation = OptChoice(L, 2, fn, "rotate", {"varimax", "none"}, 0) == 0 ? st::Rotation::kVarimax
                                                                          : st::Rotation::kNone;
  CheckColumnsVary(L, data, fn);
  // Correlation matrix and iterated eigen-decompositions: ~rows*cols^2 + 100*cols^3 steps.
  const double rows = data.rows, cols = data.cols;
  ChargeNative(L, rows * cols * cols + 100 * cols * cols * cols);
  const st::FactorResult r = Unwrap(L, fn, st::FactorAnalysis(data, o));
  lua_createtable(L, 0, 5);
  lua_createtable(L, r.loadings.rows, 0);
  for (int i = 0; i < r.loadings.rows; ++i) {
    lua_createtable(L, r.loadings.cols, 0);
    for (int k = 0; k < r.loadings.cols; ++k) {
      lua_pushnumber(L, r.loadings.at(i, k));
      lua_rawseti(L, -2, k + 1);
    }
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "loadings");
  PushNumbers(L, r.communalities);
  lua_setfield(L, -2, "communalities");
  PushNumbers(L, r.uniquenesses);
  lua_setfield(L, -2, "uniquenesses");
  PushNumbers(L, r.ss_loadings);
  lua_setfield(L, -2, "ss_loadings");
  PushNumbers(L, r.proportion);
  lua_setfield(L, -2, "proportion");
  return 1;
}

int ParallelAnalysis(lua_State* L) {
  const char* fn = "parallel_analysis";
  const st::DenseMatrix data = CheckRows(L, 1, fn);
  CheckOptions(L, 2, fn, {"iter", "seed"});
  st::ParallelOptions o;
  o.iterations = OptCount(L, 2, fn, "iter", 100);
  o.seed = static_cast<std::uint64_t>(Opt::Integer(L, 2, fn, "seed", 0));
  CheckColumnsVary(L, data, fn);
  // Each iteration draws a random data set and decomposes its correlation matrix.
  const double rows = data.rows, cols = data.cols;
  ChargeNative(L, (o.iterations + 1.0) * (rows * cols * cols + cols * cols * cols));
  ReserveNative(L, (o.iterations + 1.0) * (rows + cols) * cols * sizeof(double), "kp.stats.parallel_analysis");
  const st::ParallelResult r = Unwrap(L, fn, st::ParallelAnalysis(data, o, Checkpoint(L)));
  lua_createtable(L, 0, 5);
  lua_pushinteger(L, r.factors);
  lua_setfield(L, -2, "factors");
  lua_pushinteger(L, r.factors_p95);
  lua_setfield(L, -2, "factors_p95");
  PushNumbers(L, r.observed);
  lua_setfield(L, -2, "observed");
  PushNumbers(L, r.random_mean);
  lua_setfield(L, -2, "random_mean");
  PushNumbers(L, r.random_p95);
  lua_setfield(L, -2, "random_p95");
  return 1;
}

int Williams(lua_State* L) {
  const char* fn = "williams";
  double v[4];
  const char* names[4] = {"r12", "r13", "r23", "n"};
  for (int i = 0; i < 4; ++i) {
    if (lua_type(L, i + 1) != LUA_TNUMBER) {
      Fail(L, fn, std::string("argument '") + names[i] + "' must be a number (got " + TypeName(L, i + 1) + ")");
    }
    v[i] = lua_tonumber(L, i + 1);
  }
  const st::WilliamsResult r = Unwrap(L, fn, st::Williams(v[0], v[1], v[2], v[3]));
  lua_pushnumber(L, r.t);
  lua_pushnumber(L, r.p);
  lua_pushnumber(L, r.df);
  return 3;
}

// The draws of a bootstrap done in Lua (e.g. resampling documents as clusters), from the Rng of stats.h
// so that a reference implementation can replay them: Below(n) + 1, `count` times, in order.
int DrawIndices(lua_State* L) {
  const char* fn = "draw_indices";
  const lua_Integer n = luaL_checkinteger(L, 1);
  const lua_Integer count = luaL_checkinteger(L, 2);
  if (n < 1 || n > 0xFFFFFFFFLL) Fail(L, fn, "argument 'n' must be between 1 and 4294967295 (got " + std::to_string(n) + ")");
  if (count < 0 || count > 100000000) {
    Fail(L, fn, "argument 'count' must be between 0 and 100000000 (got " + std::to_string(count) + ")");
  }
  CheckOptions(L, 3, fn, {"seed"});
  const auto seed = static_cast<std::uint64_t>(Opt::Integer(L, 3, fn, "seed", 0));
  ChargeNative(L, static_cast<double>(count));
  ReserveNative(L, static_cast<double>(count) * 16, "kp.stats.draw_indices");
  st::Rng rng(seed);
  lua_createtable(L, static_cast<int>(count), 0);
  for (lua_Integer i = 1; i <= count; ++i) {
    lua_pushinteger(L, static_cast<lua_Integer>(rng.Below(static_cast<std::uint32_t>(n))) + 1);
    lua_rawseti(L, -2, i);
  }
  return 1;
}

const luaL_Reg kFunctions[] = {
    {"mean", Safe<Mean>},
    {"fsum", Safe<FSum>},
    {"median", Safe<Median>},
    {"quantile", Safe<Quantile>},
    {"var", Safe<Var>},
    {"sd", Safe<Sd>},
    {"pearson", Safe<Pearson>},
    {"spearman", Safe<Spearman>},
    {"kendall", Safe<Kendall>},
    {"wilcoxon", Safe<Wilcoxon>},
    {"cliffs_delta", Safe<CliffsDelta>},
    {"anova2", Safe<Anova2>},
    {"bootstrap_ci", Safe<BootstrapCi>},
    {"paired_bootstrap_ci", Safe<PairedBootstrapCi>},
    {"approx_randomization", Safe<ApproxRandomization>},
    {"holm", Safe<Holm>},
    {"williams", Safe<Williams>},
    {"draw_indices", Safe<DrawIndices>},
    {"factor_analysis", Safe<FactorAnalysis>},
    {"parallel_analysis", Safe<ParallelAnalysis>},
    {nullptr, nullptr},
};

}  // namespace

void InstallStats(lua_State* L) {
  // [kp]
  luaL_newlib(L, kFunctions);  // [kp, stats]
  lua_setfield(L, -2, "stats");
}

}  // namespace kplab::host
