// Lanes per metric by expected work (host/engine/lanes.h; docs/cli.md, `--threads`): the rule checked
// against hand calculations, and the lanes a run chooses seen from outside: in the numbers of a plugin
// that counts the documents of its lane (an API 1 counter, --verify-docs 0, whose mean is a known
// function of how the documents are split), and in KPLAB_TIMING's report for the native kernels.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>

#include "cli_harness.h"
#include "lanes.h"

namespace {

namespace fs = std::filesystem;
using kplab::host::LanesFor;
using kplab::host::MetricPlugin;
using kplab::test::Output;

MetricPlugin Plugin(int api, const std::string& kernel) {
  MetricPlugin p;
  p.api = api;
  p.kernel = kernel;
  return p;
}

// exact's kernel is measured at 210 ns a document, rank's at 645, a Lua plugin at 10 us; a kernel's lane
// must take over 2 ms of expected work, a Lua lane over 6 ms: lanes = floor(n x cost / (2 or 6 ms)), from
// 1 to the thread count.
TEST(LanesRule, FollowsTheExpectedWorkWithinTheThreadCount) {
  const MetricPlugin exact = Plugin(2, "exact"), rank = Plugin(2, "rank"), lua = Plugin(2, ""), api1 = Plugin(1, "");
  // exact: KP20k's 20,000 documents are 4.2 ms of work, two lanes; 19,048 are 4.00008 ms, two; 19,047
  // are 3.99987 ms, one; a million are 210 ms, 105 lanes' worth, so the thread count decides.
  EXPECT_EQ(LanesFor(exact, 20'000, 2), 2u);
  EXPECT_EQ(LanesFor(exact, 20'000, 8), 2u);
  EXPECT_EQ(LanesFor(exact, 19'048, 2), 2u);
  EXPECT_EQ(LanesFor(exact, 19'047, 2), 1u);
  EXPECT_EQ(LanesFor(exact, 1'000'000, 8), 8u);
  EXPECT_EQ(LanesFor(exact, 1'000'000, 64), 64u);
  EXPECT_EQ(LanesFor(exact, 1'000'000, 128), 105u);
  // rank: 20,000 documents are 12.9 ms, six lanes (of 2.15 ms each) on eight threads, two on two; 6,202
  // are 4.00029 ms, two; 6,201 are 3.99965 ms, one.
  EXPECT_EQ(LanesFor(rank, 20'000, 2), 2u);
  EXPECT_EQ(LanesFor(rank, 20'000, 8), 6u);
  EXPECT_EQ(LanesFor(rank, 6'202, 8), 2u);
  EXPECT_EQ(LanesFor(rank, 6'201, 8), 1u);
  // A plugin scored in Lua (API 1 or 2, or a kernel without a measured cost): Inspec's 500 documents
  // are 5 ms, one lane; 1,200 are 12 ms, two; 1,199 one; 20,000 are 200 ms, as many as there are threads.
  for (const MetricPlugin& p : {lua, api1, Plugin(2, "semrp")}) {
    EXPECT_EQ(LanesFor(p, 500, 8), 1u);
    EXPECT_EQ(LanesFor(p, 1'200, 8), 2u);
    EXPECT_EQ(LanesFor(p, 1'199, 8), 1u);
    EXPECT_EQ(LanesFor(p, 20'000, 2), 2u);
    EXPECT_EQ(LanesFor(p, 20'000, 8), 8u);
  }
  // The bounds: one thread is one lane however large the work; no documents, or no thread count, one lane.
  EXPECT_EQ(LanesFor(lua, 1'000'000, 1), 1u);
  EXPECT_EQ(LanesFor(exact, 1'000'000, 1), 1u);
  EXPECT_EQ(LanesFor(lua, 0, 8), 1u);
  EXPECT_EQ(LanesFor(lua, 1'000'000, 0), 1u);
}

TEST(LanesRule, SettingIsAutoOrMax) {
  bool by_cost = false;
  EXPECT_TRUE(kplab::host::ParseLanesSetting("", by_cost));
  EXPECT_TRUE(by_cost);
  by_cost = false;
  EXPECT_TRUE(kplab::host::ParseLanesSetting("auto", by_cost));
  EXPECT_TRUE(by_cost);
  EXPECT_TRUE(kplab::host::ParseLanesSetting("max", by_cost));
  EXPECT_FALSE(by_cost);
  for (const char* bad : {"MAX", "2", " max", "max ", "all", "0"}) {
    EXPECT_FALSE(kplab::host::ParseLanesSetting(bad, by_cost)) << bad;
  }
}

class Lanes : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_lanes_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "pl");
    std::ofstream(dir_ / "pl" / "counter.lua")
        << "-- kplab-api: 1\nlocal n = 0\nreturn kp.metric { name = \"counter\", version = \"1\",\n"
           "  score = function(doc, p, ctx) n = n + 1 return { [\"all.x\"] = n } end }\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A Meng-2017 dataset of n small documents and its predictions, in dir_/dN.
  std::string Data(int n) {
    const fs::path d = dir_ / ("d" + std::to_string(n));
    fs::create_directories(d);
    std::ofstream text(d / "gen_context.txt"), keys(d / "gen_allkeywords.txt"), preds(d / "preds.txt");
    for (int i = 0; i < n; ++i) {
      const std::string a = "topic" + std::to_string(i % 50), b = "field" + std::to_string(i % 7);
      text << "a note on " << a << " in " << b << " . <eos> we study " << a << " .\n";
      keys << a << ";" << b << " methods\n";
      preds << a << ";" << b << ";survey\n";
    }
    return "--dataset " + d.string() + " --predictions " + (d / "preds.txt").string();
  }
  Output Eval(const std::string& data, const std::string& args, const std::string& env = "") {
    return kplab::test::RunKplab(dir_, env, "eval " + data + " --no-store --output csv " + args);
  }
  fs::path dir_;
};

// The counter's value for a document is its place in its lane, so the mean over n documents on lanes of
// sizes s_1..s_L is sum(s_l (s_l + 1) / 2) / n.
TEST_F(Lanes, LuaMetricLanesShowInItsNumbers) {
  const std::string counter = "--metrics counter --plugins " + (dir_ / "pl").string() + " --verify-docs 0";
  // 1,199 documents are 11.99 ms of Lua: one lane, mean (1,199 + 1) / 2 = 600.
  Output o = Eval(Data(1'199), counter + " --threads 2");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "metric,value\nall.x,600\n");
  // 1,200 are 12 ms: two lanes of 600, mean 600 x 601 / 1,200 = 300.5; on one thread, 600.5.
  const std::string big = Data(1'200);
  o = Eval(big, counter + " --threads 2");
  EXPECT_EQ(o.out, "metric,value\nall.x,300.5\n") << o.err;
  o = Eval(big, counter + " --threads 8");
  EXPECT_EQ(o.out, "metric,value\nall.x,300.5\n") << o.err;  // two lanes' worth, not eight
  o = Eval(big, counter + " --threads 1");
  EXPECT_EQ(o.out, "metric,value\nall.x,600.5\n") << o.err;
  // KPLAB_LANES=max: every --threads lane, whatever the cost. Five documents on two lanes (2 and 3):
  // (1 + 2 + 1 + 2 + 3) / 5 = 1.8; on eight threads, one document a lane: 1.
  const std::string tiny = "--dataset examples/tiny --predictions examples/tiny/predictions.txt";
  o = Eval(tiny, counter + " --threads 2", "KPLAB_LANES=max");
  EXPECT_EQ(o.out, "metric,value\nall.x,1.8\n") << o.err;
  o = Eval(tiny, counter + " --threads 8", "KPLAB_LANES=max");
  EXPECT_EQ(o.out, "metric,value\nall.x,1\n") << o.err;
  o = Eval(tiny, counter + " --threads 2", "KPLAB_LANES=auto");
  EXPECT_EQ(o.out, "metric,value\nall.x,3\n") << o.err;
  // Anything else is refused before any work, naming the variable and what it takes.
  o = Eval(tiny, counter, "KPLAB_LANES=2");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(
      o.err,
      "kplab: KPLAB_LANES='2': expected auto (each metric on the lanes its work pays for) or max (every metric on "
      "all --threads lanes)\n");
}

// The lines of KPLAB_TIMING's report that say how many lanes each metric was scored on.
std::string LaneLines(const std::string& err) {
  std::string out;
  std::size_t at = 0;
  while ((at = err.find("[timing]   ", at)) != std::string::npos) {
    const std::size_t end = err.find('\n', at);
    const std::string line = err.substr(at, end - at);
    if (line.find(" scored on ") != std::string::npos) out += line.substr(11) + "\n";
    at = end;
  }
  return out;
}

// KPLAB_TIMING's phase lines: each names its phase, in the order an evaluation runs them, with the
// resident memory at its end and the peak so far. The peak is the kernel's high-water mark, so it never
// falls and is never below the resident size; a line that said otherwise would misplace memory.
TEST_F(Lanes, TimingLinesCarryAPeakThatNeverFalls) {
  Output o = Eval(Data(20'000), "--threads 2 --metrics exact", "KPLAB_TIMING=1");
  ASSERT_EQ(o.code, 0) << o.err;
  std::string phases;
  double last_peak = 0;
  std::size_t at = 0;
  while ((at = o.err.find("[timing] ", at)) != std::string::npos) {
    const std::size_t end = o.err.find('\n', at);
    const std::string line = o.err.substr(at, end - at);
    at = end;
    if (line.rfind("[timing]   ", 0) == 0) continue;  // a note, not a phase
    static const std::regex kPhase(
        R"(\[timing\] (\S.*?)\s+([\d.]+) ms\s+cpu\s+([\d.]+) ms\s+rss\s+([\d.]+) MB\s+peak\s+([\d.]+) MB)");
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, kPhase)) << line;
    const std::string name = m[1];
    const double rss = std::stod(m[4]), peak = std::stod(m[5]);
    phases += std::string(phases.empty() ? "" : ",") + name;
    EXPECT_GT(rss, 0) << line;
    EXPECT_LE(rss, peak) << line;
    EXPECT_GE(peak, last_peak) << line;
    last_peak = peak;
  }
  // A streamed run (design note 72): the plugins are set up before the documents are built and scored.
  EXPECT_EQ(phases, "lua setup,dataset,validate,run record,plugins set up,corpus,exact");
}

// The native kernels in a run that builds its corpus whole (one metric scored in Lua beside them, prmu:
// kernels alone are streamed, scored on the build's threads, design note 72): at KP20k's size exact's 4.2
// ms of work pays for two lanes, as do rank's and rprec's ~13 ms; at 19,047 documents exact's 3.99987 ms
// are one lane's. The numbers are the same bits at every thread count, and streamed.
TEST_F(Lanes, KernelLanesFollowTheirCost) {
  const std::string kp20k_size = Data(20'000), smaller = Data(19'047);
  struct Case {
    const std::string& data;
    std::string args, env, lanes;
  };
  auto each = [](const std::string& n) {
    return "exact scored on " + n + "\nrank scored on " + n + "\nrprec scored on " + n + "\nprmu scored on " + n + "\n";
  };
  const std::string all = "--metrics exact,rank,rprec,prmu";
  const Case cases[] = {
      {kp20k_size, "--threads 2 " + all, "", each("2 lanes")},
      {kp20k_size, "--threads 1 " + all, "", each("1 lane")},
      {kp20k_size, "--threads 4 " + all, "KPLAB_LANES=max", each("4 lanes")},
      {smaller, "--threads 2 --metrics exact,prmu", "", "exact scored on 1 lane\nprmu scored on 2 lanes\n"},
      {smaller, "--threads 2 --metrics exact,prmu", "KPLAB_LANES=max",
       "exact scored on 2 lanes\nprmu scored on 2 lanes\n"},
  };
  std::map<std::string, std::string> first_out;  // per dataset and metrics: every lane count's output
  for (const Case& c : cases) {
    const Output o = Eval(c.data, c.args, "KPLAB_TIMING=1 " + c.env);
    ASSERT_EQ(o.code, 0) << c.args << " " << c.env << ": " << o.err;
    EXPECT_EQ(LaneLines(o.err), c.lanes) << c.args << " " << c.env;
    const std::string key = c.data + c.args.substr(c.args.find("--metrics"));  // per dataset and metrics
    if (!first_out.contains(key)) first_out[key] = o.out;
    EXPECT_EQ(o.out, first_out[key]) << c.args << " " << c.env;
  }
}

}  // namespace
