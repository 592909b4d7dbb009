// Small things a new user hits on the first day, end to end through the kplab executable, each with its
// exact message: "did you mean" for names, reading commands that refuse a store that does not exist (and
// create nothing), paths named on `kplab run`'s command line and after the REPL's :load readable by that
// script, no run id for a run not stored, counts printed as integers, `runs table` text ending with a
// newline.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using kplab::test::Output;

class FirstDay : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_firstday_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = (dir_ / "runs.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  Output Run(const std::string& args, const std::string& input = "") {
    return kplab::test::RunKplab(dir_, "KPLAB_DB=" + db_, args, input);
  }
  std::string Write(const std::string& rel, const std::string& text) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel, std::ios::binary) << text;
    return (dir_ / rel).string();
  }
  fs::path dir_;
  std::string db_;
};

constexpr const char* kFirstDayTiny = "eval --dataset examples/tiny --predictions examples/tiny/predictions.txt";

TEST_F(FirstDay, DidYouMeanForProfilesMetricsAndOptions) {
  Output p = Run(std::string(kFirstDayTiny) + " --no-store --profile kenchn");
  EXPECT_EQ(p.code, 1);
  EXPECT_EQ(p.err,
            "kplab: unknown profile 'kenchn' (did you mean 'kenchan'? expected one of: kplab, kpeval, kenchan, "
            "exhird, semrp-standalone, kenchan+one2set)\n");
  Output m = Run(std::string(kFirstDayTiny) + " --no-store --metrics exakt");
  EXPECT_EQ(m.code, 1);
  EXPECT_EQ(m.err.rfind("kplab: unknown metric 'exakt' (did you mean 'exact'? expected one of: ", 0), 0u) << m.err;
  Output o = Run(std::string(kFirstDayTiny) + " --no-store --refs-stemed");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "kplab: unknown option --refs-stemed (did you mean --refs-stemmed?) (see 'kplab help')\n");
  // Nothing near: no guess.
  Output far = Run(std::string(kFirstDayTiny) + " --no-store --profile zzzzzz");
  EXPECT_EQ(far.err,
            "kplab: unknown profile 'zzzzzz' (expected one of: kplab, kpeval, kenchan, exhird, "
            "semrp-standalone, kenchan+one2set)\n");
}

// A typo in --db (or $KPLAB_DB) used to create an empty store and say "no stored run matches".
TEST_F(FirstDay, ReadCommandsRefuseAStoreThatDoesNotExist) {
  const std::string missing = (dir_ / "kplab-typo.db").string();
  const std::string msg = "kplab: " + missing +
                          ": no such run store (expected a kplab database written by `kplab eval`; check --db or "
                          "$KPLAB_DB)\n";
  for (const std::string& cmd : std::vector<std::string>{
           "runs list", "runs show 1", "runs table --metrics all.f1@5.macro_hm", "runs compare 1 2", "runs export 1",
           "runs docs 1 --sort all.f1@5", "report 1 -o " + (dir_ / "r.html").string()}) {
    Output o = Run(cmd + " --db " + missing);
    EXPECT_EQ(o.code, 4) << cmd;
    EXPECT_EQ(o.err, msg) << cmd;
    EXPECT_FALSE(fs::exists(missing)) << cmd;
  }
  // Through $KPLAB_DB too.
  Output env = kplab::test::RunKplab(dir_, "KPLAB_DB=" + missing, "runs list");
  EXPECT_EQ(env.err, msg);
  EXPECT_FALSE(fs::exists(missing));
}

TEST_F(FirstDay, NoStorePrintsNoRunId) {
  Output t = Run(std::string(kFirstDayTiny) + " --no-store --metrics exact");
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_EQ(t.out.rfind("not stored  dataset tiny (5 docs)  system examples  profile kplab\n", 0), 0u) << t.out;
  Output j = Run(std::string(kFirstDayTiny) + " --no-store --metrics exact --output json");
  EXPECT_EQ(j.out.rfind("{\"run_id\": null, ", 0), 0u) << j.out;
  Output stored = Run(std::string(kFirstDayTiny) + " --metrics exact");
  EXPECT_EQ(stored.out.rfind("run 1  dataset tiny", 0), 0u) << stored.out;
}

// Homogeneity's pair counts over examples/tiny (no two gold sets reach the default similarity: 0 pairs)
// print as integers, "0", not "0.0000".
TEST_F(FirstDay, PairCountsPrintAsIntegers) {
  Output o = Run(std::string(kFirstDayTiny) + " --no-store --metrics homogeneity");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("\ncp_pairs "), std::string::npos) << o.out;
  const auto at = o.out.find("\ncp_pairs ");
  const std::string line = o.out.substr(at + 1, o.out.find('\n', at + 1) - at - 1);
  EXPECT_EQ(line.find('.'), std::string::npos) << line;
  EXPECT_EQ(line, "cp_pairs                   0         -         -");
}

TEST_F(FirstDay, RunsTableTextEndsWithANewlineAndSuggestsAggregates) {
  ASSERT_EQ(Run(std::string(kFirstDayTiny) + " --metrics exact").code, 0);
  ASSERT_EQ(Run(std::string(kFirstDayTiny) + " --metrics exact --system other").code, 0);
  // A misspelt aggregate as a user would type it (all.f1@5.macro_hm without its tail).
  Output typo = Run("runs table --metrics all.f1@5.macro");
  EXPECT_NE(typo.code, 0);
  EXPECT_NE(typo.err.find("; no stored run has the aggregate 'all.f1@5.macro': did you mean 'all.f1@5.macro_hm'?\n"),
            std::string::npos)
      << typo.err;
  for (const char* format : {"table", "markdown", "latex", "csv", "json"}) {
    for (const char* baseline : {"", " --baseline examples"}) {
      Output o = Run(std::string("runs table --metrics all.f1@5.macro_hm --output ") + format + baseline);
      ASSERT_EQ(o.code, 0) << o.err;
      ASSERT_FALSE(o.out.empty());
      EXPECT_EQ(o.out.back(), '\n') << format << baseline;
    }
  }
}

// kplab run from the checkout (the harness's working directory) with a script and a data file in
// another directory: the path named on the command line is readable, one not named is not.
TEST_F(FirstDay, PathsNamedOnTheCommandLineAreReadable) {
  const std::string data = Write("elsewhere/data.txt", "hello\n");
  const std::string other = Write("elsewhere2/secret.txt", "secret\n");
  // Both named: both readable.
  const std::string both =
      Write("s/both.lua", "print(#assert(kp.read(arg[1])), #assert(kp.read(arg[2]:match('=(.*)'))))\n");
  Output b = Run("run " + both + " " + data + " --secret=" + other);
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(b.out, "6\t7\n");
  // Not named: refused as before.
  const std::string unnamed = Write("s/unnamed.lua", "print(kp.read('" + other + "'))\n");
  Output u = Run("run " + unnamed + " " + data);
  EXPECT_EQ(u.code, 3);
  EXPECT_NE(u.err.find("unnamed.lua:1: kp.read: " + other + ": outside the directories scripts may read"),
            std::string::npos)
      << u.err;
  // The REPL's :load: the dataset typed is readable.
  Write("m/x_context.txt", "neural networks . <eos> we study neural networks\n");
  Write("m/x_allkeywords.txt", "neural networks\n");
  Output r = Run("repl", ":load " + (dir_ / "m").string() + "\n#m\n");
  EXPECT_EQ(r.err.find("outside"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("1"), std::string::npos) << r.out;
}

}  // namespace
