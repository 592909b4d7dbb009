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
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <string>

#include "../core/temp_dir.h"
#include "cli_harness.h"

namespace kplab::test {
namespace {

const std::string kFixture = std::string(KPLAB_TEST_DATA) + "/calib/";

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
    return RunKplab(dir_.path(), "", "eval --dataset " + kFixture + "dataset.jsonl --predictions " + kFixture +
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
  const Output o = RunKplab(dir_.path(), "", "eval --dataset " + kFixture + "dataset.jsonl --predictions " + lines +
                                                 " --metrics calibration --no-store");
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
  const Output o = RunKplab(dir_.path(), "", "eval --dataset " + kFixture + "dataset.jsonl --predictions " + bad +
                                                 " --metrics calibration --no-store");
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
)lua";
  const Output o = RunKplab(dir_.path(), "", "run " + script + " " + kFixture);
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
}

}  // namespace
}  // namespace kplab::test
