// kplab runs table: rendering (escaping, bold best, seeds as mean ± sd (n), percentages) and its clear
// errors. The numbers themselves are checked against an independent Python reference in
// tests/reference/table_ref.py (ctest runs_table_reference). Hand values: examples/tiny has P@5 macro
// 0.48 (hits 3, 3, 2, 2, 2 in the top 5 of five documents).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "cli_harness.h"

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
            "| system | tiny all.p@5.macro (%) |\n|---|---:|\n| a\\_b&c | **48.0 ± 0.0 (2)** |\n"
            "| base\\|x | **48.0** |\n");
  auto tex = Run("runs table --metrics all.p@5.macro --output latex --decimals 2");
  EXPECT_NE(tex.out.find("a\\_b\\&c & \\textbf{48.00 $\\pm$ 0.00\\,$_{2}$} \\\\\n"), std::string::npos) << tex.out;
  EXPECT_NE(tex.out.find("\\toprule"), std::string::npos);
  EXPECT_NE(tex.out.find("all.p@5.macro (\\%)"), std::string::npos) << tex.out;
  auto frac = Run("runs table --metrics all.p@5.macro --fraction --decimals 3 --output csv");
  EXPECT_EQ(frac.out, "system,dataset,metric,mean,sd,n,best,p,p_holm,significant\n"
                      "a_b&c,tiny,all.p@5.macro,0.48,0,2,1,,,\nbase|x,tiny,all.p@5.macro,0.48,0,1,1,,,\n");
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
  EXPECT_NE(csv.out.find("\n\"x, \"\"y\"\" <z>\",tiny,all.p@5.macro,"), std::string::npos) << csv.out;
  auto tex = Run("runs table --metrics all.p@5.macro --output latex --baseline 'x, \"y\" <z>'");
  EXPECT_NE(tex.out.find("x, \"y\" \\textless{}z\\textgreater{}"), std::string::npos) << tex.out;
  auto md = Run("runs table --metrics all.p@5.macro --output markdown");
  EXPECT_NE(md.out.find("| x, \"y\" &lt;z&gt; |"), std::string::npos) << md.out;
}

}  // namespace
