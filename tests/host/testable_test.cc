// One rule for what `runs compare` and `runs table` test (host/engine/testable.h), worked by hand on three
// documents, and compare testing macro_hm and micro of runs stored without --ci.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_harness.h"
#include "testable.h"

namespace {

using kplab::RunRecord;
using kplab::ScoreColumns;
using kplab::SlotColumn;
using kplab::host::FormValue;
using kplab::host::PairedFormTest;
using kplab::host::PlanTest;
using kplab::host::RunEvidence;
using kplab::host::TestPlan;

// Run A: P@5 = (0.2, 0.4, 0), R@5 = (0.5, 0.5, 0); hits@5 = (2, 1, 0), pden@5 = (5, 5, 0) (the third
// document has no prediction), rden@5 = (4, 2, 3).
//   P@5.macro = 0.6 / 3 = 0.2; R@5.macro = 1 / 3; F1@5.macro_hm = 2 (0.2)(1/3) / (0.2 + 1/3) = 1/4.
//   P@5.micro = 3 / 10; R@5.micro = 3 / 9 = 1/3; F1@5.micro = 2 (3/10)(1/3) / (3/10 + 1/3) = 6/19.
struct Fixture {
  RunRecord record;
  ScoreColumns scores;
  std::vector<SlotColumn> slots;
  Fixture() {
    record.id = 1;
    record.doc_ids = {"d1", "d2", "d3"};
    scores.metrics = {"all.p@5", "all.r@5"};
    scores.columns = {{0.2, 0.4, 0.0}, {0.5, 0.5, 0.0}};
    slots = {SlotColumn{0, "all", 4, "hits@5", true, {2, 1, 0}}, SlotColumn{0, "all", 5, "pden@5", true, {5, 5, 0}},
             SlotColumn{0, "all", 6, "rden@5", true, {4, 2, 3}}};
  }
  RunEvidence Run(double stored, bool with_slots = true) {
    static const std::vector<SlotColumn> none;
    return RunEvidence{1, stored, &record, &scores, with_slots ? &slots : &none};
  }
};

TEST(TestPlanRule, MeansFormsAndReasons) {
  Fixture f;
  TestPlan mean = PlanTest("all.p@5.macro", {f.Run(0.2)});
  EXPECT_EQ(mean.kind, TestPlan::Kind::kDocumentMean);
  EXPECT_EQ(mean.inputs, std::vector<std::string>{"all.p@5"});
  TestPlan hm = PlanTest("all.f1@5.macro_hm", {f.Run(0.25), f.Run(0.25, false)});
  EXPECT_EQ(hm.kind, TestPlan::Kind::kReaggregate);  // from the public P and R columns: no slots needed
  EXPECT_EQ(hm.form, TestPlan::Form::kHarmonicOfMeans);
  EXPECT_EQ(hm.inputs, (std::vector<std::string>{"all.p@5", "all.r@5"}));
  TestPlan micro = PlanTest("all.f1@5.micro", {f.Run(6.0 / 19)});
  EXPECT_EQ(micro.form, TestPlan::Form::kF1OfRatios);
  EXPECT_EQ(micro.inputs, (std::vector<std::string>{"all.hits@5", "all.pden@5", "all.rden@5"}));
  EXPECT_EQ(PlanTest("all.p@5.micro", {f.Run(0.3)}).form, TestPlan::Form::kRatioOfSums);
  EXPECT_EQ(PlanTest("all.r@5.micro", {f.Run(1.0 / 3)}).inputs, (std::vector<std::string>{"all.hits@5", "all.rden@5"}));
  // Hostile: a stored value the form does not give (a plugin meaning something else by the name) is
  // never tested by the form: by its plugin when the slots are there, else not at all, with the reason.
  TestPlan other = PlanTest("all.f1@5.macro_hm", {f.Run(0.25), f.Run(0.26)});
  EXPECT_EQ(other.form, TestPlan::Form::kPlugin);
  TestPlan bare = PlanTest("all.f1@5.micro", {f.Run(6.0 / 19), f.Run(6.0 / 19, false)});
  EXPECT_EQ(bare.kind, TestPlan::Kind::kNone);
  EXPECT_NE(bare.reason.find("run 1 stored no slots to resample"), std::string::npos) << bare.reason;
  // A hidden slot is not a per-document column: "all.hits@5" as an aggregate is not its mean.
  EXPECT_NE(PlanTest("all.hits@5", {f.Run(1.0)}).kind, TestPlan::Kind::kDocumentMean);
  // The mean must be the stored value in every run.
  EXPECT_NE(PlanTest("all.p@5.macro", {f.Run(0.2), f.Run(0.3)}).kind, TestPlan::Kind::kDocumentMean);
}

TEST(TestPlanRule, FormValuesByHand) {
  EXPECT_DOUBLE_EQ(FormValue(TestPlan::Form::kHarmonicOfMeans, {{0.2, 0.4, 0.0}, {0.5, 0.5, 0.0}}), 0.25);
  EXPECT_DOUBLE_EQ(FormValue(TestPlan::Form::kRatioOfSums, {{2, 1, 0}, {5, 5, 0}}), 0.3);
  EXPECT_DOUBLE_EQ(FormValue(TestPlan::Form::kF1OfRatios, {{2, 1, 0}, {5, 5, 0}, {4, 2, 3}}), 6.0 / 19);
  EXPECT_DOUBLE_EQ(FormValue(TestPlan::Form::kRatioOfSums, {{0, 0}, {0, 0}}), 0.0);  // c:ratio's default 0
}

// Run B: P@5 = (0.4, 0.4, 0.2), R@5 = (1.0, 0.5, 0.25): macro P = 1/3, R = 7/12, F1 = 2 (1/3)(7/12) /
// (1/3 + 7/12) = 14/33. B - A = 14/33 - 1/4 = 23/132.
// The exact randomization distribution: document 2 is the same in both runs, so only the swaps of
// documents 1 and 3 matter (each pattern twice in 8):
//   none:   +23/132;
//   doc 1:  A = (B1, A2, A3): P 4/15, R 1/2 -> 8/23; B = (A1, B2, B3): P 4/15, R 5/12 -> 40/123;
//           d = 40/123 - 8/23 = -0.0226 (|d| < 23/132);
//   doc 3:  the mirror image, d = +0.0226;
//   both:   d = -23/132 (|d| = |d_obs|: counts).
// So p = 4/8 = 1/2; with 20,000 resamples p is 1/2 within 4 standard errors (0.0142).
TEST(TestPlanRule, PairedRandomizationByHand) {
  const std::vector<std::vector<double>> a = {{0.2, 0.4, 0.0}, {0.5, 0.5, 0.0}};
  const std::vector<std::vector<double>> b = {{0.4, 0.4, 0.2}, {1.0, 0.5, 0.25}};
  auto res = PairedFormTest(TestPlan::Form::kHarmonicOfMeans, a, b, 20000, 7, 0);
  EXPECT_NEAR(res.observed, 23.0 / 132, 1e-15);
  EXPECT_EQ(res.drawn, 20000);
  EXPECT_NEAR(res.p, 0.5, 4 * std::sqrt(0.25 / 20000));
  // Identical runs: every resample reaches |d_obs| = 0, p = 1; Besag-Clifford stops after 50.
  auto same = PairedFormTest(TestPlan::Form::kHarmonicOfMeans, a, a, 20000, 7, 50);
  EXPECT_EQ(same.observed, 0.0);
  EXPECT_EQ(same.drawn, 50);
  EXPECT_EQ(same.p, 1.0);
}

namespace fs = std::filesystem;

// `runs compare` of two runs stored without --ci tests macro_hm and micro (re-aggregated over the shared
// documents), and the table tests the same columns by the same rule.
TEST(TestPlanRule, CompareAndTableTestMacroHmAndMicroWithoutCi) {
  const fs::path dir = fs::temp_directory_path() / ("kplab_testable_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = "KPLAB_DB=" + (dir / "db").string();
  for (const char* s : {"a", "b"}) {
    auto o = kplab::test::RunKplab(dir, db,
                                   std::string("eval --dataset examples/tiny --predictions "
                                               "examples/tiny/predictions.txt --metrics exact --output csv --system ") +
                                       s);
    ASSERT_EQ(o.code, 0) << o.err;
  }
  auto cmp =
      kplab::test::RunKplab(dir, db, "runs compare 1 2 --metrics 'all.f1@5.macro_hm,all.f1@5.micro' --output json");
  ASSERT_EQ(cmp.code, 0) << cmp.err;
  for (const char* m : {"all.f1@5.macro_hm", "all.f1@5.micro"}) {
    const auto at = cmp.out.find(std::string("\"metric\": \"") + m + "\"");
    ASSERT_NE(at, std::string::npos) << cmp.out;
    const std::string row = cmp.out.substr(at, cmp.out.find('}', at) - at);
    EXPECT_NE(row.find("\"test\": \"resampled\""), std::string::npos) << row;
    EXPECT_NE(row.find("\"p\": 1"), std::string::npos) << row;
  }
  EXPECT_EQ(cmp.out.find("untested"), std::string::npos) << cmp.out;
  auto table = kplab::test::RunKplab(dir, db,
                                     "runs table --metrics all.f1@5.macro_hm,all.f1@5.micro --baseline a "
                                     "--output json --resamples 200");
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("\"diff\": 0, \"n_docs\": 5, \"p\": 1, \"p_holm\": 1, \"significant\": false}, "
                           "{\"mean\""),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("\"family\": 2"), std::string::npos) << table.out;
  fs::remove_all(dir);
}

}  // namespace
