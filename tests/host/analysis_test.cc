// The analysis scripts: the script-only API (kp.runs, kp.write, kp.read, kp.include) on hand-made runs,
// and scripts/paper_analyses.sh end to end on the real systems in ../shared/data with the default
// embedding model (installed by scripts/setup.sh), every figure it writes opened in headless Chromium.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "chromium.h"
#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using kplab::test::Output;
using kplab::test::Slurp;

class Scripts : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kplab_scripts_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    env_ = "KPLAB_DB=" + (dir_ / "runs.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  Output Run(const std::string& args) { return kplab::test::RunKplab(dir_, env_, args); }
  fs::path Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return dir_ / name;
  }
  fs::path dir_;
  std::string env_;
};

TEST_F(Scripts, RunsWriteReadInclude) {
  ASSERT_EQ(Run("eval --dataset tests/data/semrp --predictions tests/data/semrp/predictions.txt --metrics exact "
                "--system sysA").code, 0);
  Write("helper.lua", "local M = {}\nfunction M.twice(x) return 2 * x end\nreturn M\n");
  const fs::path out = dir_ / "deep" / "er" / "out.txt";
  const fs::path script = Write("s.lua",
      "local H = kp.include('helper.lua')\n"
      "local runs = kp.runs.list()\n"
      "local r = kp.runs.get(runs[1].id, nil, {'all.p@5'})\n"
      "local col = r.scores['all.p@5']\n"
      "kp.write('" + out.string() + "', r.system .. ' ' .. #r.doc_ids .. ' ' .. #col .. ' ' .. H.twice(col[1]))\n"
      "print(kp.read('" + out.string() + "'))\n"
      "print(r.scores['all.r@5'] == nil, r.aggregates['all.p@5.macro'] ~= nil, r.dataset, r.profile)\n");
  Output o = Run("run --allow-write " + dir_.string() + " " + script.string());
  ASSERT_EQ(o.code, 0) << o.err;
  // Document 1 of tests/data/semrp: 5 predictions, one of them (machine translation) a reference: P@5 = 1/5.
  EXPECT_EQ(o.out, "sysA 7 7 0.4\ntrue\ttrue\tsemrp\tkplab\n");
  EXPECT_EQ(Slurp(out), "sysA 7 7 0.4");
  // Nothing half-written is left beside the file.
  int files = 0;
  for (const auto& e : fs::directory_iterator(out.parent_path())) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST_F(Scripts, ErrorsNameFileAndLine) {
  Write("bad.lua", "local M = {}\nM.x = nil + 1\nreturn M\n");
  const fs::path script = Write("s.lua", "local x = 1\nlocal B = kp.include('bad.lua')\n");
  Output o = Run("run --allow-write " + dir_.string() + " " + script.string());
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("bad.lua:2:"), std::string::npos) << o.err;
  const fs::path s2 = Write("s2.lua", "local r = kp.runs.get(99)\n");
  o = Run("run --allow-write " + dir_.string() + " " + s2.string());
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("s2.lua:1:"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("kp.runs.get"), std::string::npos) << o.err;
  const fs::path s3 = Write("s3.lua", "kp.runs.list('" + (dir_ / "nope.db").string() + "')\n");
  o = Run("run --allow-write " + dir_.string() + " " + s3.string());
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("no such run store"), std::string::npos) << o.err;
  // An analysis script with a bad option says what it expects.
  o = Run("run scripts/analysis/anova.lua --nope 1");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("unknown option --nope"), std::string::npos) << o.err;
}

TEST_F(Scripts, IdenticalMetricsAreMergedInHeatMaps) {
  // C.merge_identical on hand-made columns: a, b and d agree on every document (NaN equals NaN), c
  // differs in its second value, e is shorter.
  fs::copy_file(fs::path(KPLAB_SOURCE_DIR) / "scripts/analysis/common.lua", dir_ / "common.lua");
  const fs::path unit = Write("merge.lua",
      "local C = kp.include('common.lua')\n"
      "local nan = 0 / 0\n"
      "local labels, first, of = C.merge_identical({'a', 'b', 'c', 'd', 'e'},\n"
      "  {{1, 2, nan}, {1, 2, nan}, {1, 3, nan}, {1, 2, nan}, {1, 2}})\n"
      "print(table.concat(labels, '|'), table.concat(first, ','), table.concat(of, ','))\n");
  Output o = Run("run " + unit.string());
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "a = b = d|c|e\t1,3,5\t1,1,2,1,3\n");

  // factor_analysis.lua on a plugin whose columns a and b are equal on every document: one row and one
  // column "all.a = all.b" in the correlation heat map, and the report says so.
  fs::create_directories(dir_ / "plugins");
  Write("plugins/twins.lua",
        "-- kplab-api: 2\n"
        "return kp.metric { name = 'twins', version = '1', subsets = {'all'}, columns = {'a', 'b', 'c', 'd'},\n"
        "  score = function(preds, refs, doc, p, ctx, out)\n"
        "    out.a, out.b, out.c, out.d = #preds, #preds, #refs, (#preds * 3 + #refs) % 5\n"
        "  end }\n");
  for (const char* data : {"--dataset tests/data/semrp --predictions tests/data/semrp/predictions.txt",
                           "--dataset examples/tiny --predictions examples/tiny/predictions.txt"}) {
    o = Run(std::string("eval ") + data + " --metrics twins --plugins " + (dir_ / "plugins").string());
    ASSERT_EQ(o.code, 0) << o.err;
  }
  const fs::path out = dir_ / "report";
  fs::create_directories(out);
  o = Run("run --allow-write " + out.string() + " scripts/analysis/factor_analysis.lua --out " + out.string() +
          " --metrics all.a,all.b,all.c,all.d --factors 1");
  ASSERT_EQ(o.code, 0) << o.err << o.out;
  const std::string md = Slurp(out / "factor_analysis.md");
  EXPECT_NE(md.find("12 documents with every metric defined; 3 metrics. Identical on every document, merged: "
                    "all.a = all.b.\n"),
            std::string::npos)
      << md;
  const std::string svg = Slurp(out / "metric_correlations.svg");
  // Row label and column label: the merged name twice, never the two names on their own.
  const std::string merged = ">all.a = all.b</text>";
  std::size_t n = 0;
  for (auto at = svg.find(merged); at != std::string::npos; at = svg.find(merged, at + 1)) ++n;
  EXPECT_EQ(n, 2u) << svg;
  EXPECT_EQ(svg.find(">all.a</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">all.b</text>"), std::string::npos);
  EXPECT_NE(svg.find(">all.c</text>"), std::string::npos);
}

// C.rho_change (k_ablation.lua's Fig. 2: per-system Spearman at two k values, the paired change with
// Wilcoxon and Cliff's delta) against scipy/numpy values generated by tests/reference/gen_rho_change.py
// (tests/data/stats/rho_change.lua): eight systems with ties, one whose metric column is constant (its
// rho is NaN and it is left out, counted), and a case where every change is zero (no Wilcoxon test).
// Fig. 2's p is exact unless a system's change is zero; then it is scipy's normal approximation, and
// the entry says so (the report marks it "approx."). Four systems, one whose rho is 1 at both k.
TEST_F(Scripts, RhoChangeSaysWhenItsPIsTheApproximation) {
  fs::copy_file(fs::path(KPLAB_SOURCE_DIR) / "scripts/analysis/common.lua", dir_ / "common.lua");
  const fs::path script = Write("approx.lua",
      "local C = kp.include('common.lua')\n"
      "local m = {1, 2, 3, 4, 5}\n"
      "local function g(label, a) return {label = label, a = a, b = {1, 2, 3, 4, 5}, metrics = {m = m}} end\n"
      "local groups = {g('s1', {1, 2, 3, 4, 5}), g('s2', {1, 2, 3, 5, 4}), g('s3', {2, 1, 3, 5, 4}),\n"
      "                g('s4', {1, 3, 2, 4, 5})}\n"
      "local e = C.rho_change(groups, {'m'})[1]\n"
      "print(e.n, e.approx, e.mean_change)\n"
      "local f = C.rho_change({groups[2], groups[3], groups[4]}, {'m'})[1]\n"
      "print(f.n, f.approx, f.p)\n");
  Output o = Run("run " + script.string());
  ASSERT_EQ(o.code, 0) << o.err;
  // rho at k=1: 1, 0.9, 0.8, 0.9; at k=3 all 1: changes 0, 0.1, 0.2, 0.1 (mean 0.1). Without s1 the
  // three positive changes give the exact two-sided p = 2/2^3 = 0.25.
  EXPECT_EQ(o.out, "4\ttrue\t0.1\n3\tfalse\t0.25\n");
}

TEST_F(Scripts, RhoChangeMatchesScipy) {
  fs::copy_file(fs::path(KPLAB_SOURCE_DIR) / "scripts/analysis/common.lua", dir_ / "common.lua");
  fs::copy_file(fs::path(KPLAB_SOURCE_DIR) / "tests/data/stats/rho_change.lua", dir_ / "rho_change.lua");
  const fs::path script = Write("check.lua",
      "local C = kp.include('common.lua')\n"
      "local F = kp.include('rho_change.lua')\n"
      "local function near(x, y) return (x ~= x and y ~= y) or math.abs(x - y) <= 1e-9 * math.max(1, math.abs(y)) end\n"
      "local bad = 0\n"
      "local function check(what, got, want)\n"
      "  if not near(got, want) then bad = bad + 1 print(what, got, want) end\n"
      "end\n"
      "for _, name in ipairs({'mixed', 'unchanged'}) do\n"
      "  local case = F[name]\n"
      "  local got = C.rho_change(case.groups, case.metrics)\n"
      "  for i, want in ipairs(case.expected) do\n"
      "    local e = got[i]\n"
      "    local where = name .. ' ' .. want.metric .. ' '\n"
      "    if e.metric ~= want.metric then print(where .. 'metric', e.metric) bad = bad + 1 end\n"
      "    for _, key in ipairs({'n', 'dropped', 'mean_a', 'mean_b', 'mean_change', 'w', 'p', 'delta'}) do\n"
      "      check(where .. key, e[key], want[key])\n"
      "    end\n"
      "    for j, r in ipairs(want.rho) do\n"
      "      check(where .. r.label .. ' a', e.rho[j].a, r.a)\n"
      "      check(where .. r.label .. ' b', e.rho[j].b, r.b)\n"
      "    end\n"
      "    if want.w ~= want.w then print(where .. 'note', e.note) end\n"
      "  end\n"
      "end\n"
      "print('mismatches', bad)\n");
  Output o = Run("run " + script.string());
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "unchanged sem note\tno Wilcoxon test: every change is zero\nmismatches\t0\n");
}

// factor_analysis.lua: a Heywood case is an error, and nothing of the report is written. The crafted
// columns x, y, z of the seven documents of tests/data/semrp have the sample correlations
// r_xy = r_xz = 0.8, r_yz = 0.5 (to 4 decimals); one factor fits three variables exactly only with
// loadings l_x l_y = .8, l_x l_z = .8, l_y l_z = .5, so l_x^2 = .8 * .8 / .5 = 1.28 > 1: no proper
// solution exists. Minres keeps each uniqueness >= 0.005 (psych's bound), so psi_x stops there and the
// leading eigenpair of R - diag(psi) gives x the communality 1.0503 (numpy, the same iteration:
// psi = (0.005, 0.4472, 0.4475), l^2 = (1.0503, 0.5528, 0.5525)).
TEST_F(Scripts, FactorAnalysisHeywoodCaseFailsLoudly) {
  fs::create_directories(dir_ / "plugins");
  Write("plugins/crafted.lua",
        "-- kplab-api: 2\n"
        "local rows = { ['1'] = {1.891, 0.553, 2.402}, ['2'] = {0.441, 0.495, 0.931}, ['3'] = {-0.366, -0.127, -0.329},\n"
        "  ['4'] = {2.604, 2.951, 1.629}, ['5'] = {0.601, 0.511, -0.213}, ['6'] = {0.54, 1.168, 0.953},\n"
        "  ['7'] = {1.289, 1.45, 1.627} }\n"
        "return kp.metric { name = 'crafted', version = '1', subsets = {'all'}, columns = {'x', 'y', 'z'},\n"
        "  score = function(preds, refs, doc, p, ctx, out)\n"
        "    local r = rows[doc.id]\n"
        "    out.x, out.y, out.z = r[1], r[2], r[3]\n"
        "  end }\n");
  Output o = Run("eval --dataset tests/data/semrp --predictions tests/data/semrp/predictions.txt --metrics crafted "
                 "--plugins " + (dir_ / "plugins").string());
  ASSERT_EQ(o.code, 0) << o.err;
  const fs::path out = dir_ / "report";
  fs::create_directories(out);
  o = Run("run --allow-write " + out.string() + " scripts/analysis/factor_analysis.lua --out " + out.string() +
          " --metrics all.x,all.y,all.z --factors 1");
  EXPECT_EQ(o.code, 3) << o.out;
  EXPECT_NE(o.err.find("Heywood case: all.x (communality 1.0503, uniqueness -0.0503) with 1 factor(s) (minres): "
                       "the solution is improper, no loadings are reported. Drop near-duplicate metrics "
                       "(--metrics) or choose fewer factors (--factors)."),
            std::string::npos)
      << o.err;
  EXPECT_TRUE(fs::is_empty(out)) << "a failed analysis leaves no partial report";
  // Two of the three variables have no Heywood case: the same script reports them.
  o = Run("run --allow-write " + out.string() + " scripts/analysis/factor_analysis.lua --out " + out.string() +
          " --metrics all.x,all.y --factors 1");
  EXPECT_EQ(o.code, 0) << o.err;
  // One metric is no factor analysis: said so (it read "--factors must be between 1 and 0").
  const fs::path one = dir_ / "one";
  fs::create_directories(one);
  o = Run("run --allow-write " + one.string() + " scripts/analysis/factor_analysis.lua --out " + one.string() +
          " --metrics all.x");
  EXPECT_EQ(o.code, 3) << o.out;
  EXPECT_NE(o.err.find("factor analysis needs at least two non-constant, distinct metrics (got 1: all.x; choose "
                       "them with --metrics)"),
            std::string::npos) << o.err;
  EXPECT_TRUE(fs::is_empty(one));
}

// anova.lua --pool-k: the columns all.semrp_k<j> pooled as one response (the paper's N = 48,000). A
// plugin writes k1 = #predictions and k2 = #references; two systems on two data sets of 7 and 5
// documents: N = 2 systems x 12 documents x 2 k = 48, residual df = 48 - 4 cells = 44.
TEST_F(Scripts, AnovaPoolsKValues) {
  fs::create_directories(dir_ / "plugins");
  Write("plugins/fakek.lua",
        "-- kplab-api: 2\n"
        "return kp.metric { name = 'fakek', version = '1', subsets = {'all'}, columns = {'semrp_k1', 'semrp_k2'},\n"
        "  score = function(preds, refs, doc, p, ctx, out)\n"
        "    out.semrp_k1, out.semrp_k2 = #preds, #refs\n"
        "  end }\n");
  for (const char* sys : {"A", "B"}) {
    for (const char* data : {"--dataset tests/data/semrp --predictions tests/data/semrp/predictions.txt",
                             "--dataset examples/tiny --predictions examples/tiny/predictions.txt"}) {
      Output o = Run(std::string("eval ") + data + " --metrics fakek --system " + sys + " --plugins " +
                     (dir_ / "plugins").string());
      ASSERT_EQ(o.code, 0) << o.err;
    }
  }
  Output o = Run("run scripts/analysis/anova.lua --pool-k 1,2");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("# Two-way ANOVA of all.semrp_k1, all.semrp_k2 pooled: system x dataset"), std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("N = 48 document scores, 2 systems, 2 datasets. Pooled over k = 1,2: each document counts "
                       "2 times"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("| Residual | "), std::string::npos) << o.out;
  EXPECT_NE(o.out.substr(o.out.find("| Residual | ")).find(" | 44 | "), std::string::npos) << o.out;
  // Without pooling: 24 scores of all.semrp_k1.
  o = Run("run scripts/analysis/anova.lua --metric all.semrp_k1");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("N = 24 document scores"), std::string::npos) << o.out;
  // A k that was not scored, and the two options together, are errors.
  o = Run("run scripts/analysis/anova.lua --pool-k 1,3");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("has no column all.semrp_k3 (evaluate with --param semrp.ks=1,3)"), std::string::npos) << o.err;
  o = Run("run scripts/analysis/anova.lua --pool-k 1,2 --metric all.semrp_k1");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("--pool-k and --metric exclude each other"), std::string::npos) << o.err;
  // Hostile lists: a repeated k (each document would count twice), one k, a non-number named by its
  // own option (it used to say --runs).
  for (const auto& [arg, want] : std::vector<std::pair<std::string, std::string>>{
           {"1,1", "--pool-k: k = 1 is given twice (each document would count twice)"},
           {"2", "--pool-k needs at least two k values to pool (got '2')"},
           {"x", "--pool-k: 'x' is not a k value or a range like 1-3"}}) {
    o = Run("run scripts/analysis/anova.lua --pool-k " + arg);
    EXPECT_EQ(o.code, 3) << arg;
    EXPECT_NE(o.err.find(want), std::string::npos) << o.err;
  }
}

// --join: the runs of one system and dataset as one run, columns side by side (the paper's baselines
// under one profile, SemR-p under another); a column in two of them is an error naming both runs.
TEST_F(Scripts, JoinPutsRunsOfOneSystemSideBySide) {
  const std::string data = "eval --dataset tests/data/semrp --predictions tests/data/semrp/predictions.txt ";
  ASSERT_EQ(Run(data + "--metrics exact --system sysA").code, 0);
  ASSERT_EQ(Run(data + "--metrics rprec --system sysA --profile kpeval").code, 0);
  ASSERT_EQ(Run(data + "--metrics exact --system sysB").code, 0);
  fs::copy_file(fs::path(KPLAB_SOURCE_DIR) / "scripts/analysis/common.lua", dir_ / "common.lua");
  const fs::path script = Write("j.lua",
      "local C = kp.include('common.lua')\n"
      "local o = C.parse_args(arg, { metrics = '' }, 'j.lua')\n"
      "local want = o.metrics ~= '' and { o.metrics } or nil\n"
      "for _, r in ipairs(C.load_runs(o, want)) do\n"
      "  print(r.id, r.profile_label or r.profile, r.profile, r.scores['all.p@5'] ~= nil, r.scores['all.rprec_substr'] ~= nil)\n"
      "end\n"
      "print(C.runs_table(C.load_runs(o, want)))\n");
  Output o = Run("run " + script.string() + " --join");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out,
            "1+2\tkplab (1) + kpeval (2)\tkplab\ttrue\ttrue\n"
            "3\tkplab (3)\tkplab\ttrue\tfalse\n"
            "| run | system | dataset | profile | documents |\n|---|---:|---:|---:|---:|\n"
            "| 1+2 | sysA | semrp | kplab (1) + kpeval (2) | 7 |\n| 3 | sysB | semrp | kplab (3) | 7 |\n\n");
  // --runs 2 alone still brings in run 1 (same system and dataset).
  o = Run("run " + script.string() + " --join --runs 2");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out.substr(0, o.out.find('\n')), "1+2\tkplab (1) + kpeval (2)\tkplab\ttrue\ttrue");
  // Without --join: three runs.
  o = Run("run " + script.string());
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out.substr(0, o.out.find("| run |")), "1\tkplab\tkplab\ttrue\tfalse\n2\tkpeval\tkpeval\tfalse\ttrue\n"
                                                    "3\tkplab\tkplab\ttrue\tfalse\n");
  ASSERT_EQ(Run(data + "--metrics exact --system sysB").code, 0);
  o = Run("run " + script.string() + " --join --metrics all.p@5");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("--join: column all.p@5 is in runs 3 and 4 (sysB on semrp); score each metric in one run"),
            std::string::npos)
      << o.err;
}

// k_ablation.lua's Fig. 2 options: --change names two scored k values, --baselines columns that every
// run has; by default the paper's baselines that are present, the others listed as left out.
TEST_F(Scripts, KAblationFig2OptionsAreChecked) {
  fs::create_directories(dir_ / "plugins");
  Write("plugins/fakek.lua",
        "-- kplab-api: 2\n"
        "return kp.metric { name = 'fakek', version = '1', subsets = {'all'},\n"
        "  columns = {'semrp_k1', 'semrp_k2', 'semrp_k3', 'f1@M'},\n"
        "  score = function(preds, refs, doc, p, ctx, out)\n"
        "    local n = #preds\n"
        "    out.semrp_k1, out.semrp_k2, out.semrp_k3, out['f1@M'] = n, n % 3, (n * 7) % 5, (n * 3) % 4\n"
        "  end }\n");
  for (const char* sys : {"A", "B"}) {
    ASSERT_EQ(Run(std::string("eval --dataset tests/data/semrp --predictions tests/data/semrp/predictions.txt ") +
                  "--metrics fakek --system " + sys + " --plugins " + (dir_ / "plugins").string()).code, 0);
  }
  Output o = Run("run scripts/analysis/k_ablation.lua");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("Baselines not in every run, left out: all.ndcg@M, all.ap@M, all.rprec_substr, all.semp, "
                       "all.semr, all.semf1.\n"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("| all.f1@M | 2 | "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("With 2 systems the smallest two-sided exact p is 0.500."), std::string::npos) << o.out;
  const std::pair<const char*, const char*> bad[] = {
      {"--change 1,4", "--change: k = 4 is not among --ks 1,2,3"},
      {"--change 2", "--change must name two different k values, e.g. 1,3 (got '2')"},
      {"--change 3,3", "--change must name two different k values, e.g. 1,3 (got '3,3')"},
      {"--baselines all.f1@M,all.nosuch", "--baselines: all.nosuch is not a column of every selected run"},
  };
  for (const auto& [args, message] : bad) {
    o = Run(std::string("run scripts/analysis/k_ablation.lua ") + args);
    EXPECT_EQ(o.code, 3) << args;
    EXPECT_NE(o.err.find(message), std::string::npos) << args << "\n" << o.err;
  }
}

TEST_F(Scripts, PaperAnalysesOnTheSharedSystems) {
  const std::string chromium = kplab::test::FindChromium();
  if (chromium.empty()) GTEST_FAIL() << kplab::test::kChromiumMissing;
  const fs::path report = dir_ / "report";
  // As examples/semrp-report is made: KPEval's baselines, SemR-p under kplab (two runs per system and
  // dataset, joined by the scripts).
  const std::string script = std::string("cd ") + KPLAB_SOURCE_DIR + " && KPLAB=" + KPLAB_BINARY +
                             " KPLAB_SHARED_DATA=" + KPLAB_SHARED_DATA + " bash scripts/paper_analyses.sh ";
  const std::string cmd = script + "--profile kpeval " + report.string() + " >" + (dir_ / "log").string() + " 2>&1";
  const int st = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
      << Slurp(dir_ / "log") << "\n(the default model is installed by scripts/setup.sh: kplab model install glove-6b-100d)";
  const std::string kab = Slurp(report / "k_ablation.md");
  for (const char* want : {"## semeval", "## inspec", "## krapivin", "| k = 3 |", "Wilcoxon", "Cliff's delta",
                           "rho (k=1)", "## Fig. 2: change of SemR-p's per-system correlation with the baselines",
                           "| all.rprec_substr | catSeq-RL | ", "With 7 systems the smallest two-sided exact p is 0.016.",
                           "(k_ablation_fig2.svg)"}) {
    EXPECT_NE(kab.find(want), std::string::npos) << want;
  }
  // 18 systems x datasets: catSeqTG-2RF1 x 3 seeds, catSeq, catSeq-RL on all three datasets; catSeq-GAN
  // on SemEval; catSeq-run2 on SemEval and Inspec; each as a kpeval run and a kplab run.
  EXPECT_NE(kab.find("| 35+36 | catSeq-RL | krapivin | kpeval (35) + kplab (36) | 400 |"), std::string::npos)
      << kab.substr(0, 2000);
  const std::string anova = Slurp(report / "anova.md");
  EXPECT_NE(anova.find("| system x dataset |"), std::string::npos);
  // 100 + 500 + 400 documents: 7 x 100 + 6 x 500 + 5 x 400 = 5,700 scores; pooled over three k, 17,100.
  EXPECT_NE(anova.find("N = 5700 document scores, 7 systems, 3 datasets.\n"), std::string::npos) << anova;
  const std::string pooled = Slurp(report / "anova_pooled_k.md");
  EXPECT_NE(pooled.find("N = 17100 document scores, 7 systems, 3 datasets. Pooled over k = 1,2,3"), std::string::npos)
      << pooled;
  EXPECT_NE(pooled.find("| Residual | "), std::string::npos);
  EXPECT_NE(pooled.substr(pooled.find("| Residual | ")).find(" | 17082 | "), std::string::npos) << pooled;
  EXPECT_NE(Slurp(report / "ranking_agreement.md").find("Spearman's rho between the system ranking"), std::string::npos);
  const std::string fa = Slurp(report / "factor_analysis.md");
  EXPECT_NE(fa.find("Loadings (minres extraction, varimax rotation"), std::string::npos);
  EXPECT_NE(fa.find("5700 documents with every metric defined; 6 metrics."), std::string::npos) << fa;
  EXPECT_NE(Slurp(report / "contrast_cases.md").find("- references:"), std::string::npos);
  const std::string readme = Slurp(report / "README.md");
  EXPECT_NE(readme.find("[factor_analysis](factor_analysis.md)"), std::string::npos);
  EXPECT_NE(readme.find("under `kpeval`, SemR-p under `kplab`"), std::string::npos) << readme;
  // An unknown profile is refused before anything is scored.
  const int bad = std::system((script + "--profile nosuch " + (dir_ / "bad").string() + " >" +
                               (dir_ / "badlog").string() + " 2>&1").c_str());
  EXPECT_TRUE(WIFEXITED(bad) && WEXITSTATUS(bad) == 1);
  EXPECT_NE(Slurp(dir_ / "badlog").find("paper_analyses.sh: unknown profile 'nosuch'"), std::string::npos)
      << Slurp(dir_ / "badlog");
  EXPECT_FALSE(fs::exists(dir_ / "bad"));
  // A store the caller names is never deleted: one that exists is refused, untouched, nothing written.
  std::ofstream(dir_ / "mine.db") << "my runs";
  const int mine = std::system((script + (dir_ / "out2").string() + " " + (dir_ / "mine.db").string() + " >" +
                                (dir_ / "minelog").string() + " 2>&1").c_str());
  EXPECT_TRUE(WIFEXITED(mine) && WEXITSTATUS(mine) == 1);
  EXPECT_NE(Slurp(dir_ / "minelog").find("paper_analyses.sh: " + (dir_ / "mine.db").string() +
                                         " exists (expected a new path: the runs are scored into a fresh store, "
                                         "and a store you give is never deleted)"),
            std::string::npos)
      << Slurp(dir_ / "minelog");
  EXPECT_EQ(Slurp(dir_ / "mine.db"), "my runs");
  EXPECT_FALSE(fs::exists(dir_ / "out2"));
  // Every figure parses and builds an SVG document in the browser.
  int n_svg = 0;
  for (const auto& e : fs::directory_iterator(report)) {
    if (e.path().extension() != ".svg") continue;
    ++n_svg;
    const fs::path dom = dir_ / (e.path().stem().string() + ".dom");
    const std::string c = kplab::test::DumpDomCommand(chromium, dir_ / "profile", e.path()) + " >" + dom.string() +
                          " 2>>" + (dir_ / "chromium.log").string();
    ASSERT_EQ(std::system(c.c_str()), 0) << Slurp(dir_ / "chromium.log");
    const std::string d = Slurp(dom);
    EXPECT_EQ(d.find("parsererror"), std::string::npos) << e.path();
    EXPECT_NE(d.find("<svg"), std::string::npos) << e.path();
    EXPECT_NE(d.find("<rect"), std::string::npos) << e.path();
  }
  // A box plot and a Spearman heat map per dataset, a ranking heat map per dataset, the metric
  // correlation heat map and the factor loadings, and Fig. 2.
  EXPECT_EQ(n_svg, 3 + 3 + 3 + 2 + 1);
}

}  // namespace
