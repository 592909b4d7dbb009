// kp.stats through the Lua sandbox: scripts call the bindings on the fixture data of
// tests/data/stats/ (numbers from scipy / numpy / statsmodels / R psych, see tests/reference/gen_stats.py)
// and the results are compared with those values; argument errors are checked as exact messages.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <lua.hpp>

#include "../core/stats_fixture.h"
#include "bindings.h"
#include "sandbox.h"

namespace kplab::host {
namespace {

using kplab::stats::test::CaseNamed;
using kplab::stats::test::CasesOf;
using kplab::stats::test::FixtureCase;
using kplab::stats::test::LoadFixture;

const std::vector<FixtureCase>& Ref() {
  static const std::vector<FixtureCase> cases = LoadFixture("reference.txt");
  return cases;
}

std::string Num(double v) {
  if (std::isnan(v)) return "(0/0)";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string List(const std::vector<double>& v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + Num(v[i]);
  return s + "}";
}

// Rows of a row-major p-column matrix as a Lua list of lists.
std::string Rows(const std::vector<double>& v, int cols) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); i += cols) {
    s += (i ? "," : "") + List(std::vector<double>(v.begin() + i, v.begin() + i + cols));
  }
  return s + "}";
}

class StatsLua : public ::testing::Test {
 protected:
  StatsLua() { vm_.Install(&InstallStats); }

  // Runs `src` as chunk "stats.lua" and returns its results as numbers (nil -> NaN marker absent).
  std::vector<double> Numbers(const std::string& src) {
    lua_State* L = vm_.state();
    const int top = lua_gettop(L);
    vm_.PushSandboxEnv("stats");
    std::optional<ScriptError> err = vm_.RunChunk(src, "stats.lua", LUA_MULTRET);
    EXPECT_FALSE(err) << (err ? err->message : "");
    std::vector<double> out;
    if (err) return out;
    for (int i = top + 1; i <= lua_gettop(L); ++i) {
      EXPECT_EQ(lua_type(L, i), LUA_TNUMBER) << "result " << i - top << " of: " << src.substr(0, 200);
      out.push_back(lua_tonumber(L, i));
    }
    lua_settop(L, top);
    return out;
  }

  // The error message of running `src` ("(no error)" if it ran).
  std::string ErrorOf(const std::string& src) {
    lua_State* L = vm_.state();
    const int top = lua_gettop(L);
    vm_.PushSandboxEnv("stats");
    std::optional<ScriptError> err = vm_.RunChunk(src, "stats.lua", 0);
    lua_settop(L, top);
    return err ? err->message : "(no error)";
  }

  LuaVm vm_;
};

::testing::AssertionResult Close(double a, double e, double rel, double abs = 0) {
  if (std::isnan(e) ? std::isnan(a) : std::fabs(a - e) <= abs + rel * std::fabs(e)) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "got " << Num(a) << ", expected " << Num(e);
}

TEST_F(StatsLua, RegisteredInAllModules) {
  LuaVm vm;
  for (const ModuleInstaller& m : AllModules()) vm.Install(m);
  vm.PushSandboxEnv("stats");
  std::optional<ScriptError> err = vm.RunChunk("return kp.stats.mean({1, 2, 6})", "stats.lua", 1);
  ASSERT_FALSE(err) << err->message;
  EXPECT_EQ(lua_tonumber(vm.state(), -1), 3.0);
}

TEST_F(StatsLua, Descriptive) {
  const FixtureCase c = CaseNamed(Ref(), "descriptive", "even_ties");
  const std::string x = List(c.nums("x"));
  std::vector<double> r = Numbers("local x = " + x +
                                  "\nreturn kp.stats.mean(x), kp.stats.median(x), kp.stats.var(x), "
                                  "kp.stats.sd(x), kp.stats.var(x, 0), kp.stats.sd(x, 0), "
                                  "kp.stats.quantile(x, 0.1)");
  ASSERT_EQ(r.size(), 7u);
  EXPECT_TRUE(Close(r[0], c.num("mean"), 1e-15));
  EXPECT_TRUE(Close(r[1], c.num("median"), 1e-15));
  EXPECT_TRUE(Close(r[2], c.num("var1"), 1e-13));
  EXPECT_TRUE(Close(r[3], c.num("sd1"), 1e-13));
  EXPECT_TRUE(Close(r[4], c.num("var0"), 1e-13));
  EXPECT_TRUE(Close(r[5], c.num("sd0"), 1e-13));
  EXPECT_TRUE(Close(r[6], c.nums("quantile")[1], 1e-15));
  const std::vector<double> want = c.nums("quantile");
  r = Numbers("return table.unpack(kp.stats.quantile(" + x + ", " + List(c.nums("q")) + "))");
  ASSERT_EQ(r.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(Close(r[i], want[i], 1e-15)) << i;
}

// kp.stats.fsum from Lua: math.fsum's value for ten 0.1s (Python prints 1.0; a left-to-right sum gives
// 0.9999999999999999), and the hostile arguments each refused with the function's name, or read raw.
TEST_F(StatsLua, FsumIsMathFsumAndRefusesBadArguments) {
  const std::vector<double> r = Numbers(
      "local t = {} for i = 1, 10 do t[i] = 0.1 end return kp.stats.fsum(t), "
      "kp.stats.fsum({}), kp.stats.fsum(setmetatable({}, {__len = function() "
      "return 1e9 end}))");
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], 1.0);
  EXPECT_EQ(r[1], 0.0);
  EXPECT_EQ(r[2], 0.0);  // a lying __len is not asked: samples are read with rawlen
  EXPECT_NE(ErrorOf("kp.stats.fsum({1, 'x'})").find("kp.stats.fsum: x[2] must be a number (got string)"),
            std::string::npos);
  EXPECT_NE(ErrorOf("kp.stats.fsum({1, 0/0})").find("kp.stats.fsum: x[2] is NaN"), std::string::npos);
  EXPECT_NE(ErrorOf("kp.stats.fsum({math.huge, -math.huge})").find("kp.stats.fsum: x holds both +inf and -inf"),
            std::string::npos);
  EXPECT_NE(ErrorOf("kp.stats.fsum(nil)").find("argument 'x' must be a table of numbers (got nil)"), std::string::npos);
}

TEST_F(StatsLua, CorrelationsMatchScipy) {
  for (const FixtureCase& c : CasesOf(Ref(), "corr")) {
    if (!c.has("spearman_r")) continue;
    SCOPED_TRACE(c.name);
    const std::string args = "(" + List(c.nums("x")) + ", " + List(c.nums("y")) + ")";
    const std::vector<double> r = Numbers("local a, b = kp.stats.pearson" + args +
                                          "\nlocal c, d = kp.stats.spearman" + args +
                                          "\nlocal e, f = kp.stats.kendall" + args +
                                          "\nreturn a, b, c, d, e, f");
    ASSERT_EQ(r.size(), 6u);
    EXPECT_TRUE(Close(r[0], c.num("pearson_r"), 1e-12, 1e-15));
    EXPECT_TRUE(Close(r[1], c.num("pearson_p"), 1e-9));
    EXPECT_TRUE(Close(r[2], c.num("spearman_r"), 1e-12, 1e-15));
    if (c.name != "perfect") {
      EXPECT_TRUE(Close(r[3], c.num("spearman_p"), 1e-9));  // see stats_test.cc
    }
    EXPECT_TRUE(Close(r[4], c.num("kendall_r"), 1e-12, 1e-15));
    EXPECT_TRUE(Close(r[5], c.num("kendall_p"), 1e-9));
    if (c.has("kendall_exact_p")) {
      const std::vector<double> e = Numbers("return kp.stats.kendall" + args.substr(0, args.size() - 1) +
                                            ", 'exact')");
      EXPECT_TRUE(Close(e[1], c.num("kendall_exact_p"), 1e-9));
    }
  }
}

TEST_F(StatsLua, WilcoxonMatchesScipy) {
  const FixtureCase z = CaseNamed(Ref(), "wilcoxon", "zeros");
  std::vector<double> r = Numbers("return kp.stats.wilcoxon(" + List(z.nums("x")) +
                                  ", nil, {zero_method = 'pratt', correction = true, method = 'approx'})");
  std::vector<double> want = z.nums("pratt_1_approx");
  ASSERT_EQ(r.size(), 3u);
  EXPECT_TRUE(Close(r[0], want[0], 1e-14));
  EXPECT_TRUE(Close(r[1], want[1], 1e-9));
  EXPECT_TRUE(Close(r[2], want[2], 1e-12));
  const FixtureCase e = CaseNamed(Ref(), "wilcoxon", "exact_n9");
  r = Numbers("return kp.stats.wilcoxon(" + List(e.nums("x")) + ", " + List(e.nums("y")) + ")");
  want = e.nums("wilcox_0_auto");
  ASSERT_EQ(r.size(), 2u);  // exact: no z
  EXPECT_TRUE(Close(r[0], want[0], 1e-14));
  EXPECT_TRUE(Close(r[1], want[1], 1e-12));
}

TEST_F(StatsLua, CliffsDeltaAndHolm) {
  const FixtureCase c = CaseNamed(Ref(), "cliffs", "ties");
  std::vector<double> r =
      Numbers("return kp.stats.cliffs_delta(" + List(c.nums("x")) + ", " + List(c.nums("y")) + ")");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(Close(r[0], c.num("delta"), 1e-14));
  const FixtureCase h = CaseNamed(Ref(), "holm", "mixed");
  r = Numbers("return table.unpack(kp.stats.holm(" + List(h.nums("p")) + "))");
  const std::vector<double> want = h.nums("adjusted");
  ASSERT_EQ(r.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(Close(r[i], want[i], 1e-15)) << i;
}

TEST_F(StatsLua, Anova2WithStringLevels) {
  const FixtureCase c = CaseNamed(Ref(), "anova", "unbalanced_3x2");
  std::string a = "{", b = "{";
  for (int v : c.ints("a")) a += std::string(a.size() > 1 ? "," : "") + "'level" + std::to_string(v) + "'";
  for (int v : c.ints("b")) b += std::string(b.size() > 1 ? "," : "") + (v ? "'treated'" : "'control'");
  a += "}";
  b += "}";
  const std::vector<double> r = Numbers(
      "local rows = kp.stats.anova2(" + List(c.nums("y")) + ", " + a + ", " + b + ")\n"
      "assert(#rows == 4 and rows[1].source == 'A' and rows[2].source == 'B' and rows[3].source == 'A:B'\n"
      "       and rows[4].source == 'Residual')\n"
      "local out = {}\n"
      "for i = 1, 3 do local x = rows[i]\n"
      "  for _, v in ipairs({x.ss, x.df, x.f, x.p, x.ms, x.eta2, x.partial_eta2}) do out[#out + 1] = v end\n"
      "end\n"
      "out[#out + 1] = rows[4].ss; out[#out + 1] = rows[4].df\n"
      "return table.unpack(out)");
  ASSERT_EQ(r.size(), 23u);
  const double total = c.num("ss_total");
  const double resid = c.nums("Residual")[0];
  const char* keys[] = {"A", "B", "AB"};
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(keys[i]);
    const std::vector<double> w = c.nums(keys[i]);  // sum_sq, df, F, PR(>F)
    EXPECT_TRUE(Close(r[7 * i + 0], w[0], 1e-9));
    EXPECT_EQ(r[7 * i + 1], w[1]);
    EXPECT_TRUE(Close(r[7 * i + 2], w[2], 1e-9));
    EXPECT_TRUE(Close(r[7 * i + 3], w[3], 1e-8));
    EXPECT_TRUE(Close(r[7 * i + 4], w[0] / w[1], 1e-9));
    EXPECT_TRUE(Close(r[7 * i + 5], w[0] / total, 1e-9));
    EXPECT_TRUE(Close(r[7 * i + 6], w[0] / (w[0] + resid), 1e-9));
  }
  EXPECT_TRUE(Close(r[21], resid, 1e-9));
  EXPECT_EQ(r[22], c.nums("Residual")[1]);
}

TEST_F(StatsLua, ResamplingReplaysTheFixtureStreams) {
  const FixtureCase b = CaseNamed(Ref(), "bootstrap", "mean_c95");
  std::vector<double> r = Numbers("return kp.stats.bootstrap_ci(" + List(b.nums("x")) + ", {n = " +
                                  b.str("n_resamples") + ", confidence = " + b.str("confidence") +
                                  ", seed = " + b.str("seed") + "})");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(Close(r[0], b.num("low"), 1e-12));
  EXPECT_TRUE(Close(r[1], b.num("high"), 1e-12));
  const FixtureCase pb = CaseNamed(Ref(), "bootstrap_paired", "paired");
  r = Numbers("return kp.stats.paired_bootstrap_ci(" + List(pb.nums("x")) + ", " + List(pb.nums("y")) +
              ", {n = " + pb.str("n_resamples") + ", seed = " + pb.str("seed") + "})");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(Close(r[0], pb.num("low"), 1e-12, 1e-15));
  EXPECT_TRUE(Close(r[1], pb.num("high"), 1e-12, 1e-15));
  const FixtureCase ar = CaseNamed(Ref(), "ar", "n100");
  r = Numbers("return kp.stats.approx_randomization(" + List(ar.nums("x")) + ", " + List(ar.nums("y")) +
              ", {n = " + ar.str("n_resamples") + ", seed = " + ar.str("seed") + "})");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_DOUBLE_EQ(r[0], ar.num("p"));
}

TEST_F(StatsLua, FactorAnalysisMatchesPsych) {
  static const std::vector<FixtureCase> fa = LoadFixture("fa_reference.txt");
  const FixtureCase c = CaseNamed(fa, "fa", "fa2_2_pa_varimax");
  // fa2.csv as rows.
  std::FILE* f = std::fopen((std::string(KPLAB_TEST_DATA) + "/stats/fa2.csv").c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::vector<double> data;
  for (double v; std::fscanf(f, "%lf,", &v) == 1;) data.push_back(v);
  std::fclose(f);
  const std::string rows = Rows(data, 8);
  std::vector<double> r = Numbers("local fa = kp.stats.factor_analysis(" + rows +
                                  ", {factors = 2, method = 'pa', rotate = 'varimax'})\n"
                                  "local out = {}\n"
                                  "for i = 1, 8 do for k = 1, 2 do out[#out + 1] = fa.loadings[i][k] end end\n"
                                  "for i = 1, 8 do out[#out + 1] = fa.communalities[i] end\n"
                                  "for i = 1, 8 do out[#out + 1] = fa.uniquenesses[i] end\n"
                                  "for k = 1, 2 do out[#out + 1] = fa.ss_loadings[k] end\n"
                                  "for k = 1, 2 do out[#out + 1] = fa.proportion[k] end\n"
                                  "return table.unpack(out)");
  std::vector<double> want = c.nums("loadings");
  for (const char* k : {"communalities", "uniquenesses", "ss_loadings", "proportion"}) {
    const std::vector<double> v = c.nums(k);
    want.insert(want.end(), v.begin(), v.end());
  }
  ASSERT_EQ(r.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(r[i], want[i], 1e-10) << i;

  const std::vector<double> eig = CaseNamed(Ref(), "corr_eigen", "fa2").nums("values");
  r = Numbers("local pa = kp.stats.parallel_analysis(" + rows +
              ", {iter = 30, seed = 4})\n"
              "assert(#pa.observed == 8 and #pa.random_mean == 8 and #pa.random_p95 == 8)\n"
              "return pa.factors, pa.factors_p95, table.unpack(pa.observed)");
  ASSERT_EQ(r.size(), 10u);
  EXPECT_EQ(r[0], 2);
  EXPECT_EQ(r[1], 2);
  for (int k = 0; k < 8; ++k) EXPECT_NEAR(r[2 + k], eig[k], 1e-12) << k;
}

TEST_F(StatsLua, ArgumentErrors) {
  EXPECT_EQ(ErrorOf("kp.stats.mean('x')"),
            "stats.lua:1: kp.stats.mean: argument 'x' must be a table of numbers (got string)");
  EXPECT_EQ(ErrorOf("kp.stats.mean({1, 0/0})"), "stats.lua:1: kp.stats.mean: x[2] is NaN");
  EXPECT_EQ(ErrorOf("kp.stats.median({1, 'a'})"), "stats.lua:1: kp.stats.median: x[2] must be a number (got string)");
  EXPECT_EQ(ErrorOf("kp.stats.mean({})"), "stats.lua:1: kp.stats.mean: needs at least 1 value (got 0)");
  EXPECT_EQ(ErrorOf("kp.stats.pearson({1, 2, 3}, {1, 2})"),
            "stats.lua:1: kp.stats.pearson: x and y must have the same length (got 3 and 2)");
  EXPECT_EQ(ErrorOf("kp.stats.var({1})"), "stats.lua:1: kp.stats.var: needs more than ddof = 1 observations (got 1)");
  EXPECT_EQ(ErrorOf("kp.stats.quantile({1, 2}, 2)"), "stats.lua:1: kp.stats.quantile: q = 2 is not in [0, 1]");
  EXPECT_EQ(ErrorOf("kp.stats.kendall({1, 2}, {2, 1}, 'fast')"),
            "stats.lua:1: kp.stats.kendall: argument 'method' must be 'auto', 'exact' or 'asymptotic'");
  EXPECT_EQ(ErrorOf("kp.stats.wilcoxon({1, 2}, nil, {zero_method = 'zsplit'})"),
            "stats.lua:1: kp.stats.wilcoxon: option 'zero_method' must be one of 'wilcox', 'pratt' (got 'zsplit')");
  EXPECT_EQ(ErrorOf("kp.stats.wilcoxon({0, 0})"),
            "stats.lua:1: kp.stats.wilcoxon: every difference is zero (zero_method 'wilcox' and 'pratt' need a "
            "nonzero difference)");
  EXPECT_EQ(ErrorOf("kp.stats.bootstrap_ci({1, 2}, {sed = 3})"),
            "stats.lua:1: kp.stats.bootstrap_ci: unknown option 'sed' (expected n, confidence, seed)");
  EXPECT_EQ(ErrorOf("kp.stats.bootstrap_ci({1, 2}, {n = 1.5})"),
            "stats.lua:1: kp.stats.bootstrap_ci: option 'n' must be an integer (got a non-integer number)");
  EXPECT_EQ(ErrorOf("kp.stats.approx_randomization({1, 2}, {1, 2}, {n = 0})"),
            "stats.lua:1: kp.stats.approx_randomization: option 'n' must be between 1 and 1000000000 (got 0)");
  EXPECT_EQ(ErrorOf("kp.stats.anova2({1, 2, 3, 4}, {1, 1, 2, 'x'}, {1, 2, 1, 2})"),
            "stats.lua:1: kp.stats.anova2: a[4]: levels must be all integers or all strings");
  EXPECT_EQ(ErrorOf("kp.stats.anova2({1, 2, 3, 4}, {1, 1, 2, 2.5}, {1, 2, 1, 2})"),
            "stats.lua:1: kp.stats.anova2: a[4] must be an integer or a string (got a non-integer number)");
  EXPECT_EQ(ErrorOf("kp.stats.factor_analysis({{1, 2, 3}, {2, 1}})"),
            "stats.lua:1: kp.stats.factor_analysis: rows[2] has 2 values (expected 3, as rows[1])");
  EXPECT_EQ(ErrorOf("kp.stats.factor_analysis({{1, 2, 3}, {2, 1, 5}, {0, 3, 1}}, {factors = 3})"),
            "stats.lua:1: kp.stats.factor_analysis: factors must be between 1 and 2 for 3 variables (got 3)");
  EXPECT_EQ(ErrorOf("kp.stats.factor_analysis({{1, 2, 3}}, {method = 'ml'})"),
            "stats.lua:1: kp.stats.factor_analysis: option 'method' must be one of 'minres', 'pa' (got 'ml')");
  EXPECT_EQ(ErrorOf("kp.stats.holm({0.1, 2})"), "stats.lua:1: kp.stats.holm: ps[2] = 2 is not in [0, 1]");
  EXPECT_EQ(ErrorOf("kp.stats.quantile({1, 2}, {0.5, -1})"),
            "stats.lua:1: kp.stats.quantile: q[2] = -1 is not in [0, 1]");
  EXPECT_EQ(ErrorOf("kp.stats.parallel_analysis({{1, 2, 3}, {1, 1, 5}, {1, 3, 1}})"),
            "stats.lua:1: kp.stats.parallel_analysis: column 1 of 'rows' is constant");
  EXPECT_EQ(ErrorOf("kp.stats.mean = nil"), "stats.lua:1: attempt to modify read-only table 'kp.stats'");
}

}  // namespace
}  // namespace kplab::host
