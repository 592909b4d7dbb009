// A plugin's params and ctx.profile are strict and read-only: a misspelt parameter or profile knob is
// an error at the plugin's line (it used to read nil and change a number with exit 0), writing is an
// error, pairs() still iterates.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;

class StrictTables : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_strict_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "pl");
  }
  void TearDown() override { fs::remove_all(dir_); }
  kplab::test::Output Eval(const std::string& body) {
    std::ofstream(dir_ / "pl" / "probe.lua") << "-- kplab-api: 1\n"
                                               "return kp.metric { name = \"probe\", version = \"1\",\n"
                                               "  params = { threshold = 0.5, k = 3 },\n"
                                               "  score = function(doc, p, ctx, out)\n"
                                            << body << "\n    return out\n  end }\n";
    return kplab::test::RunKplab(dir_, "KPLAB_DB=" + (dir_ / "db").string(),
                                 "eval --dataset examples/tiny --predictions examples/tiny/predictions.txt "
                                 "--no-store --output csv --metrics probe --plugins " + (dir_ / "pl").string());
  }
  fs::path dir_;
};

TEST_F(StrictTables, MisspeltParameterIsAnErrorAtItsLine) {
  auto o = Eval("    out['all.x'] = p.thershold");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("pl/probe.lua:5: unknown parameter 'thershold' (expected one of: k, threshold)"),
            std::string::npos)
      << o.err;
}

TEST_F(StrictTables, MisspeltProfileKnobIsAnErrorAtItsLine) {
  auto o = Eval("    out['all.x'] = ctx.profile.pk_denomintor == 'k' and 1 or 0");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("pl/probe.lua:5: unknown profile knob 'pk_denomintor' (expected one of: "),
            std::string::npos)
      << o.err;
}

TEST_F(StrictTables, ParamsAndProfileAreReadOnlyButIterable) {
  auto w = Eval("    p.k = 4");
  EXPECT_EQ(w.code, 3);
  EXPECT_NE(w.err.find("pl/probe.lua:5: attempt to modify read-only table 'params' (field 'k')"), std::string::npos)
      << w.err;
  // Two parameters; the kplab profile has a name and 27 knobs (one_word_preds the latest).
  auto it = Eval("    local n, m = 0, 0\n    for _ in pairs(p) do n = n + 1 end\n"
                 "    for _ in pairs(ctx.profile) do m = m + 1 end\n    out['all.n'], out['all.m'] = n, m\n"
                 "    out['all.k'] = p.k");
  ASSERT_EQ(it.code, 0) << it.err;
  EXPECT_NE(it.out.find("all.n,2\n"), std::string::npos) << it.out;
  EXPECT_NE(it.out.find("all.m,28\n"), std::string::npos) << it.out;
  EXPECT_NE(it.out.find("all.k,3\n"), std::string::npos) << it.out;
}

}  // namespace
