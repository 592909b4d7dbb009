// `kplab runs compare`: the paired part, on two runs whose per-document differences are known by
// construction. Seven documents (tests/data/semrp); run A predicts nothing right, run B puts one
// reference among 5 predictions in every document, so P@5 rises by exactly 1/5 = 0.2 per document.
//   - the mean paired difference is 0.2, and every bootstrap resample of 7 equal differences has mean
//     0.2: the CI is [0.2, 0.2];
//   - approximate randomization flips signs: |mean| reaches 0.2 only when all 7 signs agree, so the
//     exact p is 2 / 2^7 = 0.015625; 1000 random flips estimate it (1 + hits) / 1001 with standard error
//     sqrt(p (1 - p) / 1000) = 0.004, so it lies in [0.003, 0.035] except with negligible probability
//     (the seed is fixed anyway, so the test is deterministic).
//   - micro averages (sums of hits over sums of denominators) are not means of a column: no test here,
//     since these runs were stored without --ci (tests/host/ci_test.cc tests them re-aggregated).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using kplab::test::Output;

TEST(RunsCompare, PairedDifferenceCiAndRandomizationP) {
  const fs::path dir = fs::temp_directory_path() / ("kplab_compare_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream a(dir / "a.txt"), b(dir / "b.txt");
  for (int i = 0; i < 7; ++i) {
    a << "quantum chemistry;sea shells\n";
    b << "quantum chemistry;deep learning\n";
  }
  a.close();
  b.close();
  const std::string env = "KPLAB_DB=" + (dir / "runs.db").string();
  for (const char* f : {"a.txt", "b.txt"}) {
    Output o = kplab::test::RunKplab(dir, env, "eval --dataset tests/data/semrp --metrics exact --predictions " +
                                                   (dir / f).string());
    ASSERT_EQ(o.code, 0) << o.err;
  }
  Output o = kplab::test::RunKplab(dir, env, "runs compare 1 2 --output csv");
  ASSERT_EQ(o.code, 0) << o.err;
  // metric,run1,run2,diff,n,ci_low,ci_high,p,p_holm,same_as,test
  auto line_of = [&](const std::string& metric) {
    const auto at = o.out.find("\n" + metric + ",");
    return at == std::string::npos ? std::string() : o.out.substr(at + 1, o.out.find('\n', at + 1) - at - 1);
  };
  const std::string macro = line_of("all.p@5.macro");
  ASSERT_FALSE(macro.empty()) << o.out;
  double ra, rb, diff, ci_low, ci_high, p, p_holm;
  int n;
  ASSERT_EQ(std::sscanf(macro.c_str(), "all.p@5.macro,%lf,%lf,%lf,%d,%lf,%lf,%lf,%lf", &ra, &rb, &diff, &n, &ci_low,
                        &ci_high, &p, &p_holm),
            8)
      << macro;
  EXPECT_DOUBLE_EQ(ra, 0);
  EXPECT_NEAR(rb, 0.2, 1e-12);
  EXPECT_EQ(n, 7);
  EXPECT_NEAR(ci_low, 0.2, 1e-12);
  EXPECT_NEAR(ci_high, 0.2, 1e-12);
  EXPECT_GE(p, 0.003);
  EXPECT_LE(p, 0.035);
  EXPECT_GE(p_holm, p);
  // The micro average is tested too, without --ci (every stored run keeps its slots): 0 / 35 and 7 / 35
  // hits over the predictions, B - A = 0.2; every document is alike, so the bootstrap CI is [0.2, 0.2]
  // and a swap of k documents gives |d| = 0.2 |7 - 2k| / 7, which reaches 0.2 for k = 0 or 7 only:
  // p = 2 / 2^7 = 1/64 in the limit.
  const std::string micro = line_of("all.p@5.micro");
  ASSERT_EQ(std::sscanf(micro.c_str(), "all.p@5.micro,%lf,%lf,%lf,%d,%lf,%lf,%lf,%lf", &ra, &rb, &diff, &n, &ci_low,
                        &ci_high, &p, &p_holm),
            8)
      << micro;
  EXPECT_DOUBLE_EQ(ra, 0);
  EXPECT_NEAR(rb, 0.2, 1e-12);
  EXPECT_EQ(n, 7);
  EXPECT_NEAR(ci_low, 0.2, 1e-12);
  EXPECT_NEAR(ci_high, 0.2, 1e-12);
  EXPECT_GE(p, 0.003);
  EXPECT_LE(p, 0.035);
  EXPECT_TRUE(micro.ends_with(",resampled")) << micro;
  // A run compared with itself: no difference, p = 1 (every flip ties).
  o = kplab::test::RunKplab(dir, env, "runs compare 1 1 --output csv");
  ASSERT_EQ(o.code, 0) << o.err;
  const auto self = o.out.find("\nall.p@5.macro,0,0,0,7,0,0,1,1,,per_document\n");
  EXPECT_NE(self, std::string::npos) << o.out;
  fs::remove_all(dir);
}

}  // namespace
