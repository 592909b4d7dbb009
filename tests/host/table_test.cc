// kplab runs table: rendering (escaping, bold best, seeds as mean ± sd (n), percentages) and its clear
// errors. The numbers themselves are checked against an independent Python reference in
// tests/reference/table_ref.py (ctest runs_table_reference). Hand values: examples/tiny has P@5 macro
// 0.48 (hits 3, 3, 2, 2, 2 in the top 5 of five documents).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "cli_harness.h"
#include "table.h"

namespace {

namespace fs = std::filesystem;

class RunsTable : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_table_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  kplab::test::Output Run(const std::string& args) {
    return kplab::test::RunKplab(dir_, "KPLAB_DB=" + (dir_ / "db").string(), args);
  }
  void Eval(const std::string& system, const std::string& extra = "") {
    auto o = Run("eval --dataset examples/tiny --predictions examples/tiny/predictions.txt --output csv --system '" +
                 system + "' " + extra);
    ASSERT_EQ(o.code, 0) << o.err;
  }
  fs::path dir_;
};

TEST_F(RunsTable, SeedsGroupAndEveryFormatEscapes) {
  Eval("a_b&c", "--seed 1");
  Eval("a_b&c", "--seed 2");  // identical outputs: sd 0 over two seeds
  Eval("base|x");
  auto md = Run("runs table --metrics all.p@5.macro --output markdown");
  ASSERT_EQ(md.code, 0) << md.err;
  EXPECT_EQ(md.out,
            "| system | tiny P@5 |\n|---|---:|\n| a\\_b&c | **48.0 ± 0.0 (2)** |\n"
            "| base\\|x | **48.0** |\n\nValues in %. Systems with several seeds: mean ± sample standard deviation "
            "(number of seeds). The best value of each column is in bold.\n");
  auto tex = Run("runs table --metrics all.p@5.macro --output latex --decimals 2");
  EXPECT_NE(tex.out.find("a\\_b\\&c & \\textbf{48.00 $\\pm$ 0.00\\,$_{2}$} \\\\\n"), std::string::npos) << tex.out;
  EXPECT_NE(tex.out.find("\\toprule"), std::string::npos);
  EXPECT_NE(tex.out.find("System & \\multicolumn{1}{c}{P@5} \\\\\n"), std::string::npos) << tex.out;
  EXPECT_NE(tex.out.find("{\\footnotesize\\raggedright Values in \\%."), std::string::npos) << tex.out;
  auto frac = Run("runs table --metrics all.p@5.macro --fraction --decimals 3 --output csv");
  EXPECT_EQ(frac.out, "system,dataset,metric,group,label,mean,sd,n,best,p,p_holm,significant\n"
                      "a_b&c,tiny,all.p@5.macro,,P@5,0.48,0,2,1,,,\nbase|x,tiny,all.p@5.macro,,P@5,0.48,0,1,1,,,\n");
  // Against a baseline with identical per-document values: tested, p = 1, not significant.
  auto json = Run("runs table --metrics all.p@5.macro --baseline 'base|x' --output json --resamples 200");
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_NE(json.out.find("\"system\": \"base|x\""), std::string::npos);
  EXPECT_NE(json.out.find("\"diff\": 0, \"n_docs\": 5, \"p\": 1, \"p_holm\": 1, \"significant\": false"),
            std::string::npos)
      << json.out;
}

TEST_F(RunsTable, ClearErrors) {
  Eval("s");
  auto none = Run("runs table");
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.err.find("runs table needs --metrics"), std::string::npos) << none.err;
  auto pattern = Run("runs table --metrics 'all.nothing*'");
  EXPECT_EQ(pattern.code, 1);
  EXPECT_EQ(pattern.err, "kplab: --metrics pattern 'all.nothing*' matches no aggregate of the selected runs\n");
  auto base = Run("runs table --metrics all.p@5.macro --baseline nobody");
  EXPECT_EQ(base.code, 1);
  EXPECT_EQ(base.err, "kplab: baseline system 'nobody' has no selected run (systems: s)\n");
  auto filter = Run("runs table --metrics all.p@5.macro --system 'x*'");
  EXPECT_EQ(filter.err, "kplab: no stored run matches (expected runs with status ok)\n");
  auto missing = Run("runs table --metrics all.p@5.macro --runs 1,9");
  EXPECT_EQ(missing.err, "kplab: run 9 not found\n");
  auto output = Run("runs table --metrics all.p@5.macro --output tsv");
  EXPECT_EQ(output.code, 1);
  EXPECT_NE(output.err.find("--output must be one of table, markdown, latex, csv, json"), std::string::npos)
      << output.err;
}

// Names reach LaTeX, CSV and Markdown: quoted and escaped there; a control character is refused when the
// run is made (a newline would end a LaTeX comment, where \input would then run).
TEST_F(RunsTable, HostileNamesAreEscapedOrRefused) {
  auto nl = Run("eval --dataset examples/tiny --predictions examples/tiny/predictions.txt --system \"$(printf 'a\\n\\\\input{x}')\"");
  EXPECT_EQ(nl.code, 1);
  EXPECT_NE(nl.err.find("control character U+000A at byte"), std::string::npos) << nl.err;
  Eval("x, \"y\" <z>");
  auto csv = Run("runs table --metrics all.p@5.macro --output csv");
  EXPECT_NE(csv.out.find("\n\"x, \"\"y\"\" <z>\",tiny,all.p@5.macro,,P@5,"), std::string::npos) << csv.out;
  // A label is the user's text: escaped like a name in every format.
  auto lab = Run("runs table --metrics all.p@5.macro --output latex --label 'all.p@5.macro=P_5 & {x}'");
  EXPECT_NE(lab.out.find("{P\\_5 \\& \\{x\\}}"), std::string::npos) << lab.out;
  auto labmd = Run("runs table --metrics all.p@5.macro --output markdown --label 'tiny=a|b'");
  EXPECT_NE(labmd.out.find("| system | a\\|b P@5 |"), std::string::npos) << labmd.out;
  auto tex = Run("runs table --metrics all.p@5.macro --output latex --baseline 'x, \"y\" <z>'");
  EXPECT_NE(tex.out.find("x, \"y\" \\textless{}z\\textgreater{}"), std::string::npos) << tex.out;
  auto md = Run("runs table --metrics all.p@5.macro --output markdown");
  EXPECT_NE(md.out.find("| x, \"y\" &lt;z&gt; |"), std::string::npos) << md.out;
}

// Labels papers print, worked out from the name <subset>.<measure>[@k][.<average>] (docs/tables.md).
TEST(TableLabels, FromTheMetricsStructure) {
  using kplab::host::ShortLabel;
  EXPECT_EQ(ShortLabel("all.f1@5.macro_hm"), "F1@5");
  EXPECT_EQ(ShortLabel("present.f1@M.macro_hm"), "F1@M");
  EXPECT_EQ(ShortLabel("absent.r@10.macro"), "R@10");
  EXPECT_EQ(ShortLabel("all.map@M"), "MAP@M");
  EXPECT_EQ(ShortLabel("all.semf1"), "SemF1");
  EXPECT_EQ(ShortLabel("all.alpha_ndcg@10"), "\xce\xb1-nDCG@10");
  EXPECT_EQ(ShortLabel("all.f1@5.micro"), "F1@5 (micro)");
  EXPECT_EQ(ShortLabel("all.f1@5.macro_doc"), "F1@5 (doc)");
  EXPECT_EQ(ShortLabel("all.unique_phrase_ratio"), "unique_phrase_ratio");  // no printed name: its own
  EXPECT_EQ(ShortLabel("all.ece_bin@3.count"), "ece_bin@3 (count)");
  EXPECT_EQ(ShortLabel("plain"), "plain");
}

// Subsets become column groups, datasets the top level (or the bottom one with --layout metrics); two
// columns that would share a label keep their ids; every option's misuse is a usage error.
TEST_F(RunsTable, GroupsLayoutAndOptionErrors) {
  Eval("s");
  auto text = Run("runs table --metrics all.f1@5.macro_hm,present.f1@M.macro_hm,absent.r@10.macro");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_EQ(text.out.substr(0, text.out.find("\ns ")),
            "                         tiny\n"
            "              Present  Absent\n"
            "system  F1@5     F1@M    R@10");
  auto same = Run("runs table --metrics all.f1@5.macro_hm,all.f1@5.macro_doc,all.p@5.macro,all.p@5.micro --output csv");
  EXPECT_NE(same.out.find(",all.f1@5.macro_hm,,F1@5,"), std::string::npos) << same.out;
  EXPECT_NE(same.out.find(",all.f1@5.macro_doc,,F1@5 (doc),"), std::string::npos) << same.out;
  EXPECT_NE(same.out.find(",all.p@5.micro,,P@5 (micro),"), std::string::npos) << same.out;
  auto md = Run("runs table --metrics present.f1@5.macro_hm,absent.f1@5.macro_hm --output markdown --layout metrics "
                "--label present=Pres.");
  EXPECT_NE(md.out.find("| system | Pres. F1@5 tiny | Absent F1@5 tiny |"), std::string::npos) << md.out;
  struct Bad {
    std::string args, err;
  } bad[] = {
      {"--label x", "kplab: --label 'x': expected NAME=TEXT (a metric, dataset or subset, and its printed name, e.g. "
                    "all.f1@5.macro_hm=F1@5) (see 'kplab help')\n"},
      {"--label =x", "kplab: --label '=x': expected NAME=TEXT (a metric, dataset or subset, and its printed name, e.g. "
                     "all.f1@5.macro_hm=F1@5) (see 'kplab help')\n"},
      {"--label tiny=", "kplab: --label 'tiny=': expected NAME=TEXT (a metric, dataset or subset, and its printed name, "
                        "e.g. all.f1@5.macro_hm=F1@5) (see 'kplab help')\n"},
      {"--label tiny=a --label tiny=b", "kplab: --label names 'tiny' twice (see 'kplab help')\n"},
      {"--label nope=x", "kplab: --label nope=...: 'nope' is no metric, dataset or subset of the table (expected one "
                         "of: all, all.p@5.macro, tiny)\n"},
      {"--layout rows", "kplab: --layout must be datasets (datasets over metrics) or metrics (metrics over datasets) "
                        "(got 'rows') (see 'kplab help')\n"},
      {"--output latex --float figure", "kplab: --float must be table, table* or none (got 'figure') (see 'kplab help')\n"},
      {"--fit", "kplab: --fit, --float and --caption shape LaTeX only (add --output latex) (see 'kplab help')\n"},
      {"--output latex --float none --caption x",
       "kplab: --caption needs a float (LaTeX allows \\caption only in one): drop --float none (see 'kplab help')\n"},
      {"--output markdown --float table*", "kplab: --fit, --float and --caption shape LaTeX only (add --output latex) (see 'kplab help')\n"},
  };
  for (const Bad& b : bad) {
    auto o = Run("runs table --metrics all.p@5.macro " + b.args);
    EXPECT_EQ(o.code, 1) << b.args;
    EXPECT_EQ(o.err, b.err) << b.args;
    EXPECT_EQ(o.out, "") << b.args;
  }
  // LaTeX shapes: a bare tabular, table*, a caption (escaped) and the --fit block that measures itself.
  auto none = Run("runs table --metrics all.p@5.macro --output latex --float none");
  EXPECT_EQ(none.out.find("\\begin{table"), std::string::npos) << none.out;
  auto wide = Run("runs table --metrics all.p@5.macro --output latex --float 'table*' --caption '50% of F1'");
  EXPECT_NE(wide.out.find("\\begin{table*}[t]\n\\centering\n\\caption{50\\% of F1}\n"), std::string::npos) << wide.out;
  EXPECT_NE(wide.out.find("\\end{table*}\n"), std::string::npos) << wide.out;
  auto fit = Run("runs table --metrics all.p@5.macro --output latex --fit");
  EXPECT_NE(fit.out.find("\\resizebox{\\linewidth}{!}"), std::string::npos) << fit.out;
  EXPECT_NE(fit.out.find("\\usepackage{graphicx}"), std::string::npos) << fit.out;
}

}  // namespace
