// The calibration plugin and kp.calib through the real CLI, on the fixture tests/data/calib/ (made for
// these tests). Its six predicted keyphrases, with the probabilities of their tokens (delimiters and end
// tokens excluded), whether they match a reference, and whether they are present in the source:
//   d1 geothermal energy  0.625 0.8 0.605  (product 0.3025, 2 words)  conf = 0.55         right  present
//   d1 heat pump          0.95 0.95                                   conf = 0.95         right  present
//   d1 solar power        0.35 0.35                                   conf = 0.35         wrong  absent
//   d2 keyphrase generation 0.5 0.9 0.5 (product 0.225, 2 words)     conf = sqrt(0.225)  right  present
//   d2 neural network     0.65 0.65                                   conf = 0.65         right  absent
//   d2 deep learning      0.75 0.75                                   conf = 0.75         wrong  present
// With KPP-s (per word) confidence = product^(1/2). Ten bins, each keyphrase alone in its bin, so
// ECE = mean over keyphrases of |correct - conf|:
//   all:     (0.45 + 0.05 + 0.35 + (1 - sqrt(0.225)) + 0.35 + 0.75) / 6
//   present: (0.45 + 0.05 + (1 - sqrt(0.225)) + 0.75) / 4
//   absent:  (0.35 + 0.35) / 2 = 0.35
// MCE = the largest |correct - conf|: all and present 0.75 (deep learning), absent 0.35.
// Brier = mean of (conf - correct)^2 over the same six (or four, two) keyphrases.
// Whole-sequence perplexity (Eq. 1) over every token, delimiters and end tokens included, d2's <pad>
// (declared "padding") left out: d1 p = 0.625 0.8 0.605 0.99 0.95 0.95 0.9 0.35 0.35 0.97 (10 tokens),
// d2 p = 0.5 0.9 0.5 0.98 0.65 0.65 0.9 0.75 0.75 0.96 (10 tokens); ppl = exp(-sum ln p / 10).
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <fstream>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "../core/temp_dir.h"
#include "cli_harness.h"

namespace kplab::test {
namespace {

const std::string kCalibFixture = std::string(KPLAB_TEST_DATA) + "/calib/";

double Aggregate(const std::string& json, const std::string& name) {
  std::smatch m;
  const std::regex re("\"" + std::regex_replace(name, std::regex(R"([.@])"), R"(\$&)") + R"(\":\s*(-?[0-9.eE+-]+|null))");
  if (!std::regex_search(json, m, re)) {
    ADD_FAILURE() << name << " not in " << json.substr(0, 400);
    return NAN;
  }
  return m[1] == "null" ? NAN : std::stod(m[1]);
}

class CalibCli : public ::testing::Test {
 protected:
  Output Eval(const std::string& extra, const std::string& metrics = "calibration") {
    return RunKplab(dir_.path(), "",
                    "eval --dataset " + kCalibFixture + "dataset.jsonl --predictions " + kCalibFixture +
                        "tokens.jsonl --metrics " + metrics + " --no-store --output json " + extra);
  }
  TempDir dir_;
};

TEST_F(CalibCli, EceAndKppMatchTheHandCalculation) {
  const Output o = Eval("");
  ASSERT_EQ(o.code, 0) << o.err;
  const double s = std::sqrt(0.225);
  EXPECT_NEAR(Aggregate(o.out, "all.ece"), (0.45 + 0.05 + 0.35 + (1 - s) + 0.35 + 0.75) / 6, 1e-12);
  EXPECT_NEAR(Aggregate(o.out, "present.ece"), (0.45 + 0.05 + (1 - s) + 0.75) / 4, 1e-12);
  EXPECT_NEAR(Aggregate(o.out, "absent.ece"), 0.35, 1e-12);
  EXPECT_NEAR(Aggregate(o.out, "all.accuracy.micro"), 4.0 / 6, 1e-12);
  EXPECT_NEAR(Aggregate(o.out, "all.confidence.micro"), (0.55 + 0.95 + 0.35 + s + 0.65 + 0.75) / 6, 1e-12);
  EXPECT_NEAR(Aggregate(o.out, "all.kpp.micro"),
              (1 / 0.55 + 1 / 0.95 + 1 / 0.35 + 1 / s + 1 / 0.65 + 1 / 0.75) / 6, 1e-12);
  // Per-document means, then their mean: d1 (1/0.55 + 1/0.95 + 1/0.35)/3, d2 (1/s + 1/0.65 + 1/0.75)/3.
  EXPECT_NEAR(Aggregate(o.out, "all.kpp.macro"),
              ((1 / 0.55 + 1 / 0.95 + 1 / 0.35) / 3 + (1 / s + 1 / 0.65 + 1 / 0.75) / 3) / 2, 1e-12);
  // Bin (0.4, 0.5] holds keyphrase generation only; (0.3, 0.4] solar power only; (0.8, 0.9] nothing.
  EXPECT_EQ(Aggregate(o.out, "all.ece_bin@5.count"), 1);
  EXPECT_NEAR(Aggregate(o.out, "all.ece_bin@5.confidence"), s, 1e-12);
  EXPECT_EQ(Aggregate(o.out, "all.ece_bin@5.accuracy"), 1);
  EXPECT_EQ(Aggregate(o.out, "absent.ece_bin@4.accuracy"), 0);
  EXPECT_EQ(Aggregate(o.out, "all.ece_bin@9.count"), 0);
  EXPECT_EQ(o.out.find("all.ece_bin@9.accuracy"), std::string::npos);  // empty bin: no accuracy
}

double SumLog(std::initializer_list<double> ps) {
  double s = 0;
  for (double p : ps) s += std::log(p);
  return s;
}

TEST_F(CalibCli, MceBrierSequencePerplexityByHand) {
  const Output o = Eval("");
  ASSERT_EQ(o.code, 0) << o.err;
  const double s = std::sqrt(0.225);
  EXPECT_NEAR(Aggregate(o.out, "all.mce"), 0.75, 1e-12);
  EXPECT_NEAR(Aggregate(o.out, "present.mce"), 0.75, 1e-12);
  EXPECT_NEAR(Aggregate(o.out, "absent.mce"), 0.35, 1e-12);
  const double sq = 0.45 * 0.45 + 0.05 * 0.05 + 0.35 * 0.35 + (1 - s) * (1 - s) + 0.35 * 0.35 + 0.75 * 0.75;
  EXPECT_NEAR(Aggregate(o.out, "all.brier"), sq / 6, 1e-12);
  EXPECT_NEAR(Aggregate(o.out, "absent.brier"), (0.35 * 0.35 + 0.35 * 0.35) / 2, 1e-12);
  const double lp1 = SumLog({0.625, 0.8, 0.605, 0.99, 0.95, 0.95, 0.9, 0.35, 0.35, 0.97});
  const double lp2 = SumLog({0.5, 0.9, 0.5, 0.98, 0.65, 0.65, 0.9, 0.75, 0.75, 0.96});
  EXPECT_NEAR(Aggregate(o.out, "all.seq_ppl.macro"), (std::exp(-lp1 / 10) + std::exp(-lp2 / 10)) / 2, 1e-12);
  EXPECT_NEAR(Aggregate(o.out, "all.seq_ppl.micro"), std::exp(-(lp1 + lp2) / 20), 1e-12);
  EXPECT_EQ(Aggregate(o.out, "all.excluded_dups.total"), 0);
  EXPECT_EQ(Aggregate(o.out, "all.excluded_invalid.total"), 0);
  // The sequence is not the keyphrases: the run's KPP and ECE are those of EceAndKppMatchTheHandCalculation.
  EXPECT_NEAR(Aggregate(o.out, "all.ece"), (0.45 + 0.05 + 0.35 + (1 - s) + 0.35 + 0.75) / 6, 1e-12);
}

// tests/data/calib/excluded.jsonl: d1 repeats "heat pump" twice (once as "Heat Pumps") and has
// "<unk> energy"; the run reports 2 duplicates and 1 invalid prediction, and scores the one kept
// keyphrase of d1 (heat pump, 0.95 0.95: right) and d2's neural network (0.65 0.65: right).
TEST_F(CalibCli, ReportsExcludedPredictions) {
  const Output o = RunKplab(dir_.path(), "",
                            "eval --dataset " + kCalibFixture + "dataset.jsonl --predictions " + kCalibFixture +
                                "excluded.jsonl --metrics calibration --no-store --output json");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(Aggregate(o.out, "all.excluded_dups.total"), 2);
  EXPECT_EQ(Aggregate(o.out, "all.excluded_invalid.total"), 1);
  // Counted per document in subset all only: present/absent have no total rather than a false 0.
  EXPECT_EQ(o.out.find("present.excluded_dups"), std::string::npos) << o.out;
  EXPECT_NEAR(Aggregate(o.out, "all.confidence.micro"), (0.95 + 0.65) / 2, 1e-12);
  EXPECT_NEAR(Aggregate(o.out, "all.brier"), (0.05 * 0.05 + 0.35 * 0.35) / 2, 1e-12);
  // d1's sequence: all 12 tokens, the dropped keyphrases' included.
  const double lp1 = SumLog({0.95, 0.95, 0.9, 0.5, 0.5, 0.9, 0.4, 0.8, 0.9, 0.2, 0.25, 0.96});
  const double lp2 = SumLog({0.65, 0.65, 0.96});
  EXPECT_NEAR(Aggregate(o.out, "all.seq_ppl.micro"), std::exp(-(lp1 + lp2) / 15), 1e-12);
}

// Hostile input to the plugin: no bins, and a probability missing from a line (null where a
// log-probability belongs) or above 1 (a log-probability above 0): each stops the run naming what.
TEST_F(CalibCli, HostileBinsAndProbabilities) {
  const Output zero = Eval("--param calibration.bins=0");
  EXPECT_EQ(zero.code, 1);
  EXPECT_NE(zero.err.find("plugin 'calibration': parameter 'bins' must be an integer from 1 to 10000 (got 0)"),
            std::string::npos) << zero.err;
  const std::string bad = dir_ / "bad.jsonl";
  for (const auto& [lp, what] : std::vector<std::pair<std::string, std::string>>{
           {"null", "is null (expected a log-probability (a number <= 0))"},
           {"0.25", "is 0.25 (expected a natural-log probability: finite and <= 0"}}) {
    std::ofstream(bad) << R"({"id": "d1", "tokens": ["a"], "logprobs": [-0.1]})" << "\n"
                       << R"({"id": "d2", "tokens": ["a", "b"], "logprobs": [-0.1, )" << lp << "]}\n";
    const Output o = RunKplab(
        dir_.path(), "",
        "eval --dataset " + kCalibFixture + "dataset.jsonl --predictions " + bad + " --metrics calibration --no-store");
    EXPECT_EQ(o.code, 2);
    EXPECT_NE(o.err.find(bad + ":2: field \"logprobs\"[1] " + what), std::string::npos) << o.err;
  }
}

// KPP per token (Eq. 2): the three-token keyphrases take the cube root instead of the square root.
TEST_F(CalibCli, KppPerToken) {
  const Output o = Eval("--param calibration.kpp=tokens");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NEAR(Aggregate(o.out, "all.kpp.micro"),
              (std::pow(0.3025, -1.0 / 3) + 1 / 0.95 + 1 / 0.35 + std::pow(0.225, -1.0 / 3) + 1 / 0.65 + 1 / 0.75) / 6,
              1e-12);
}

// One bin: ECE = |accuracy - mean confidence| over all keyphrases.
TEST_F(CalibCli, OneBin) {
  const Output o = Eval("--param calibration.bins=1");
  ASSERT_EQ(o.code, 0) << o.err;
  const double s = std::sqrt(0.225);
  EXPECT_NEAR(Aggregate(o.out, "all.ece"), std::fabs(4.0 / 6 - (0.55 + 0.95 + 0.35 + s + 0.65 + 0.75) / 6), 1e-12);
}

TEST_F(CalibCli, ExplicitFormatAndExactMetricsStillWork) {
  const Output o = Eval("--predictions-format tokens", "exact,calibration");
  ASSERT_EQ(o.code, 0) << o.err;
  // 4 of 6 predictions match; 6 references in all.
  EXPECT_NEAR(Aggregate(o.out, "all.p@M.micro"), 4.0 / 6, 1e-12);
  EXPECT_NEAR(Aggregate(o.out, "all.r@M.micro"), 4.0 / 6, 1e-12);
}

TEST_F(CalibCli, PlainPredictionsAreAScriptError) {
  const std::string lines = dir_ / "p.txt";
  std::ofstream(lines) << "geothermal energy;heat pump\nneural network\n";
  const Output o = RunKplab(
      dir_.path(), "",
      "eval --dataset " + kCalibFixture + "dataset.jsonl --predictions " + lines + " --metrics calibration --no-store");
  EXPECT_EQ(o.code, 3) << o.err;
  EXPECT_NE(o.err.find("document 'd1' has predictions without token probabilities (expected a predictions file in "
                       "the \"tokens\" format, docs/calibration.md)"),
            std::string::npos)
      << o.err;
}

TEST_F(CalibCli, BadTokensFileNamesFileAndLine) {
  const std::string bad = dir_ / "bad.jsonl";
  std::ofstream(bad) << R"({"id": "d1", "tokens": ["a"], "logprobs": [-0.1]})" << "\n"
                     << R"({"id": "d2", "tokens": ["a", "b"], "logprobs": [-0.1]})" << "\n";
  const Output o = RunKplab(
      dir_.path(), "",
      "eval --dataset " + kCalibFixture + "dataset.jsonl --predictions " + bad + " --metrics calibration --no-store");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find(bad + ":2: 2 tokens and 1 log-probabilities (expected one log-probability per token)"),
            std::string::npos)
      << o.err;
}

// kp.calib from a script, on values worked out by hand (the paper's geothermal example; the ECE example
// of tests/core/calib_test.cc; the fixture's positions: "geothermal energy" starts at character 45 of
// 96 in d1, see tests/core/calib_test.cc).
TEST_F(CalibCli, LuaApi) {
  const std::string script = dir_ / "s.lua";
  std::ofstream(script) << R"lua(
local c = kp.calib
print(string.format("%.12f %.12f %.12f", c.kpp({math.log(0.5)}), c.kpp({math.log(0.625), math.log(0.8)}),
  c.kpp({math.log(0.625), math.log(0.8)}, 1)))
local r = c.reliability({0.15, 0.18, 0.55, 0.58, 0.52, 0.95}, {false, true, true, false, true, true}, 10)
print(string.format("%.12f %d %d %.3f", r.ece, r.n, r.bins[6].count, r.bins[2].confidence))
print(c.bin(0.1, 10), c.bin(0.10001, 10), c.bin(1, 10))
local corpus = kp.load{dataset = arg[1] .. "dataset.jsonl", predictions = arg[1] .. "tokens.jsonl"}
local d1 = corpus:doc(1)
local pos, sec = c.positions(d1.refs, 5)
print(pos[1], sec[1], sec[2], sec[3])
local k = c.kpps(d1.preds)
print(string.format("%.12f %d", k[1], c.count_probs(d1.preds)))
local tp = c.token_probs(d1.preds)
print(string.format("%.3f %.3f %.3f", tp[1][1], tp[1][2], tp[1][3]))
print(#d1.preds[1].logprobs, d1.preds[1].words)
print(pcall(c.kpps, 42))
-- MCE, Brier, equal-mass bins and AURC by hand (tests/core/calib_test.cc, HandComputedMceBrierAurc).
local conf, ok = {0.9, 0.8, 0.3, 0.2}, {true, false, true, false}
local w, m = c.reliability(conf, ok, 2), c.reliability(conf, ok, 3, "mass")
print(string.format("R %.12f %.12f %s %.12f %.12f %s %d", w.ece, w.mce, w.binning, m.ece, m.mce, m.binning, m.bins[3].count))
local rc = c.risk_coverage(conf, ok)
print(string.format("C %.12f %.12f %.12f %d %d", c.brier(conf, ok), rc.aurc, rc.risk[3], rc.order[1], #rc.coverage))
print("S", #c.sequence_logprobs(d1.preds), c.excluded(d1.preds))
print("E1", pcall(c.reliability, conf, ok, 0))
print("E2", pcall(c.reliability, conf, ok, 2, "quantile"))
print("E3", pcall(c.brier, {0.5, 1.5}, {1, 0}))
print("E4", pcall(c.brier, {0.5}, {1, 0}))
print("E5", pcall(c.risk_coverage, {0.5, "x"}, {1, 0}))
print("E6", pcall(c.brier, {0.5, 0/0}, {1, 0}))
)lua";
  const Output o = RunKplab(dir_.path(), "", "run " + script + " " + kCalibFixture);
  ASSERT_EQ(o.code, 0) << o.err;
  const std::string expected =
      "2.000000000000 1.414213562373 2.000000000000\n"
      "0.178333333333 6 3 0.165\n"
      "1\t2\t10\n"
      "0.46875\t3\t1\tfalse\n"
      "1.818181818182 3\n"   // 1/0.55
      "0.625 0.800 0.605\n"
      "3\t2\n";
  EXPECT_EQ(o.out.substr(0, expected.size()), expected) << o.out;
  EXPECT_NE(o.out.find("false\t"), std::string::npos);
  EXPECT_NE(o.out.find("kp.calib.kpps: argument 1 is number (expected a KeyphraseList, e.g. doc.preds)"),
            std::string::npos)
      << o.out;
  const std::vector<std::string> lines = {
      "R 0.300000000000 0.350000000000 width 0.400000000000 0.700000000000 mass 2\n",
      "C 0.295000000000 0.333333333333 0.333333333333 1 4\n",
      "S\t10\t0\t0\n",
      "E1\tfalse\tkp.calib.reliability: bins must be in 1..100000 (got 0)\n",
      "E2\tfalse\tkp.calib.reliability: unknown binning 'quantile' (expected 'width' for equal-width bins or "
      "'mass' for equal-mass bins)\n",
      "E3\tfalse\tkp.calib.brier: confidence 2 is 1.5 (expected a probability in [0, 1])\n",
      "E4\tfalse\tkp.calib.brier: 1 confidences and 2 correctness flags (expected one of each per keyphrase)\n",
      "E5\tfalse\tkp.calib.risk_coverage: confidence[2] is string (expected a number)\n",
      "E6\tfalse\tkp.calib.brier: confidence 2 is nan (expected a finite number >= 0)\n",
  };
  for (const std::string& line : lines) EXPECT_NE(o.out.find(line), std::string::npos) << line << "in\n" << o.out;
}

// A script that passes kp.calib a bad value and does not catch the error fails naming its file and line.
TEST_F(CalibCli, ScriptErrorNamesFileAndLine) {
  const std::string script = dir_ / "bad.lua";
  std::ofstream(script) << "local x = 1\nlocal b = kp.calib.brier({1.5}, {true})\n";
  const Output o = RunKplab(dir_.path(), "", "run " + script);
  EXPECT_NE(o.code, 0);
  EXPECT_NE(o.err.find("bad.lua:2: kp.calib.brier: confidence 1 is 1.5 (expected a probability in [0, 1])"),
            std::string::npos)
      << o.err;
}

}  // namespace
}  // namespace kplab::test
