// The calibration and positional analysis scripts (scripts/analysis/calibration.lua, positional.lua)
// end to end through `kplab run`, their figures opened in headless Chromium (tests/host/chromium.h).
// calibration.lua runs on the fixture tests/data/calib/ (hand-computed values in tests/host/calib_test.cc);
// positional.lua runs on the real data in ../shared/data and must give exactly the counts of the
// independent Python reference tests/reference/positional_ref.py (skipped without the data); with
// --rule paper, the paper's Table 3 (seed 001) as printed; both rules on a dataset worked out by hand.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "../core/temp_dir.h"
#include "chromium.h"
#include "cli_harness.h"

namespace kplab::test {
namespace {

namespace fs = std::filesystem;
const std::string kCalibScriptFixture = std::string(KPLAB_TEST_DATA) + "/calib/";

// Opens each SVG in Chromium: the DOM must parse (no <parsererror>), keep the chart's title and plot
// area, and the screenshot must be far larger than that of a blank page of the same size.
void ExpectRenders(const fs::path& dir, const std::vector<std::string>& files, const std::string& title_part) {
  const std::string chromium = FindChromium();
  if (chromium.empty()) GTEST_FAIL() << kChromiumMissing;
  const fs::path blank = dir / "blank.svg";
  std::ofstream(blank) << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" height=\"400\" "
                          "viewBox=\"0 0 640 400\"><rect width=\"640\" height=\"400\" fill=\"#ffffff\"/></svg>\n";
  auto screenshot = [&](const fs::path& svg) {
    const fs::path png = dir / (svg.stem().string() + ".png");
    const std::string cmd = "timeout 60 " + chromium +
                            " --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run --user-data-dir=" +
                            (dir / "profile").string() + " --window-size=640,400 --screenshot=" + png.string() +
                            " file://" + svg.string() + " 2>>" + (dir / "chromium.log").string();
    EXPECT_EQ(std::system(cmd.c_str()), 0) << Slurp(dir / "chromium.log");
    return Slurp(png);
  };
  const std::string blank_png = screenshot(blank);
  ASSERT_GT(blank_png.size(), 0u);
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    const fs::path svg = dir / f;
    ASSERT_TRUE(fs::exists(svg));
    const fs::path dom = dir / (f + ".dom");
    const std::string cmd = DumpDomCommand(chromium, dir / "profile", svg) + " >" + dom.string() + " 2>>" +
                            (dir / "chromium.log").string();
    ASSERT_EQ(std::system(cmd.c_str()), 0) << Slurp(dir / "chromium.log");
    const std::string d = Slurp(dom);
    EXPECT_EQ(d.find("parsererror"), std::string::npos) << d.substr(0, 1000);
    EXPECT_EQ(d.rfind("<svg", 0), 0u) << d.substr(0, 200);
    EXPECT_NE(d.find("class=\"plot\""), std::string::npos);
    EXPECT_NE(d.find(title_part), std::string::npos) << d.substr(0, 1000);
    EXPECT_GT(screenshot(svg).size(), 4 * blank_png.size());
  }
}

TEST(CalibScripts, CalibrationReportOnFixture) {
  TempDir dir;
  const Output o = RunKplab(dir.path(), "",
                            "run --allow-write " + dir.path() + " scripts/analysis/calibration.lua --dataset " +
                                kCalibScriptFixture + "dataset.jsonl --predictions " + kCalibScriptFixture +
                                "tokens.jsonl --system fixture --out " + dir.path());
  ASSERT_EQ(o.code, 0) << o.err;
  const std::string md = Slurp(fs::path(dir.path()) / "calibration.md");
  // Rows: n, accuracy, mean confidence, median KPP, mean KPP, ECE (4 decimals); values from the hand
  // calculation in tests/host/calib_test.cc. Median KPP of all six: the mean of the 3rd and 4th smallest
  // KPP-s, 1/0.65 = 1.5385 and 1/0.55 = 1.8182 -> 1.6783; present: (1/0.75 + 1/0.55)/2 = 1.5758.
  EXPECT_NE(md.find("| all | 6 | 0.6667 | 0.6207 | 1.6783 | 1.7847 | 0.4126 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| present | 4 | 0.7500 | 0.6811 | 1.5758 | 1.5781 | 0.4439 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| absent | 2 | 0.5000 | 0.5000 | 2.1978 | 2.1978 | 0.3500 |"), std::string::npos) << md;
  // Token positions: first tokens 0.625, 0.95, 0.35, 0.5, 0.65, 0.75 -> mean 0.6375; second 0.8, 0.95,
  // 0.35, 0.9, 0.65, 0.75 -> 0.7333; third (two keyphrases): 0.605, 0.5 -> 0.5525.
  EXPECT_NE(md.find("| 1 | 6 | 0.6375 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2 | 6 | 0.7333 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 3 | 2 | 0.5525 |"), std::string::npos) << md;
  // By word (--positions words): a word's probability is the product of its subwords'. First words:
  // geothermal 0.625 * 0.8 = 0.5, heat 0.95, solar 0.35, keyphrase 0.5 * 0.9 = 0.45, neural 0.65, deep
  // 0.75 -> 3.65 / 6 = 0.6083; second words: 0.605, 0.95, 0.35, 0.5, 0.65, 0.75 -> 3.805 / 6 = 0.6342.
  const Output w = RunKplab(dir.path(), "",
                            "run --allow-write " + dir.path() + " scripts/analysis/calibration.lua --dataset " +
                                kCalibScriptFixture + "dataset.jsonl --predictions " + kCalibScriptFixture +
                                "tokens.jsonl --positions words");
  ASSERT_EQ(w.code, 0) << w.err;
  EXPECT_NE(w.out.find("| 1 | 6 | 0.6083 |"), std::string::npos) << w.out;
  EXPECT_NE(w.out.find("| 2 | 6 | 0.6342 |"), std::string::npos) << w.out;
  ExpectRenders(dir.path(), {"reliability.svg", "kpp_hist.svg", "token_position.svg"}, "fixture");
  const std::string rel = Slurp(fs::path(dir.path()) / "reliability.svg");
  EXPECT_NE(rel.find("class=\"diagonal\""), std::string::npos);
  EXPECT_NE(Slurp(fs::path(dir.path()) / "kpp_hist.svg").find("class=\"median\""), std::string::npos);
}

TEST(CalibScripts, CalibrationNeedsTokenProbabilities) {
  TempDir dir;
  const std::string lines = dir / "p.txt";
  std::ofstream(lines) << "geothermal energy\nneural network\n";
  const Output o = RunKplab(dir.path(), "",
                            "run --allow-write " + dir.path() + " scripts/analysis/calibration.lua --dataset " +
                                kCalibScriptFixture + "dataset.jsonl --predictions " + lines);
  EXPECT_NE(o.code, 0);
  EXPECT_NE(o.err.find("2 documents have predictions without token probabilities"), std::string::npos) << o.err;
}

// The next-step statistics in the report: MCE, Brier and AURC of the six keyphrases are numpy's values in
// tests/data/calib/stats_reference.txt (case fixture6: 0.75, 0.2148027836582477, 0.26944444444444443;
// with three equal-mass bins, fixture6_3: ECE 0.27927639182912384, MCE 0.4), rounded to 4 decimals.
TEST(CalibScripts, CalibrationReportNextSteps) {
  TempDir dir;
  const std::string run = "run --allow-write " + dir.path() + " scripts/analysis/calibration.lua --dataset " +
                          kCalibScriptFixture + "dataset.jsonl --predictions " + kCalibScriptFixture +
                          "tokens.jsonl --system fixture";
  const Output o = RunKplab(dir.path(), "", run + " --out " + dir.path());
  ASSERT_EQ(o.code, 0) << o.err;
  const std::string md = Slurp(fs::path(dir.path()) / "calibration.md");
  EXPECT_NE(md.find("| all | 6 | 0.6667 | 0.6207 | 1.6783 | 1.7847 | 0.4126 | 0.7500 | 0.2148 | 0.2694 |"),
            std::string::npos) << md;
  EXPECT_NE(md.find("0 duplicates, 0 with an invalid token"), std::string::npos) << md;
  // Risk at 50% coverage: the 3 most confident (0.95 r, 0.75 w, 0.65 r) -> 1/3; at 100%: 2/6.
  EXPECT_NE(md.find("| 50% | 0.3333 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 100% | 0.3333 |"), std::string::npos) << md;
  // Sequence perplexity over 20 tokens: d1's 10 and d2's 10 (its <pad> is padding).
  EXPECT_NE(md.find("over 20 tokens (micro)"), std::string::npos) << md;
  ExpectRenders(dir.path(), {"risk_coverage.svg"}, "fixture");

  const Output m = RunKplab(dir.path(), "", run + " --binning mass --bins 3");
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_NE(m.out.find("| all | 6 | 0.6667 | 0.6207 | 1.6783 | 1.7847 | 0.2793 | 0.4000 | 0.2148 | 0.2694 |"),
            std::string::npos) << m.out;
  EXPECT_NE(m.out.find("3 equal-mass confidence bins"), std::string::npos) << m.out;

  const Output bad = RunKplab(dir.path(), "", run + " --binning quantile");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("--binning must be 'width' (equal-width bins) or 'mass' (equal-mass bins) (got 'quantile')"),
            std::string::npos) << bad.err;
  const Output zero = RunKplab(dir.path(), "", run + " --bins 0");
  EXPECT_NE(zero.code, 0);
  EXPECT_NE(zero.err.find("--bins must be a positive integer (got '0')"), std::string::npos) << zero.err;
  // Probabilities outside [0, 1] (a log-probability above 0) stop the import at the file and line.
  const std::string p = dir / "p.jsonl";
  std::ofstream(p) << R"({"id": "d1", "tokens": ["a"], "logprobs": [-0.1]})" << "\n"
                   << R"({"id": "d2", "tokens": ["a"], "logprobs": [0.7]})" << "\n";
  const Output above = RunKplab(dir.path(), "",
                                "run --allow-read " + dir.path() + " scripts/analysis/calibration.lua --dataset " +
                                    kCalibScriptFixture + "dataset.jsonl --predictions " + p);
  EXPECT_NE(above.code, 0);
  EXPECT_NE(above.err.find(p + ":2: field \"logprobs\"[0] is 0.7 (expected a natural-log probability"),
            std::string::npos) << above.err;
}

// Re-ranking by confidence on the fixture (confidences in tests/host/calib_test.cc's header):
//   d1 refs geothermal energy, heat pump, climate change; predicted geothermal energy (0.55 r),
//      heat pump (0.95 r), solar power (0.35 w) -> re-ranked heat pump, geothermal energy, solar power;
//   d2 refs keyphrase generation, neural network, sequence to sequence; predicted keyphrase generation
//      (0.474 r), neural network (0.65 r), deep learning (0.75 w) -> deep learning, neural network,
//      keyphrase generation.
// F1@1 before: both documents P 1, R 1/3 -> 0.5 each; after: d1 0.5, d2 0 -> macro 0.25; micro after:
//   P 1/2, R 1/6 -> 0.25. F1@2 before: P 1, R 2/3 -> 0.8 both; after d2 P 1/2, R 1/3 -> 0.4: macro 0.6.
// F1@5 and F1@M do not change (three predictions): F1@5 = 2 (2/5)(2/3) / (2/5 + 2/3) = 0.5, which is
//   also what `exact` reports as all.f1@5.macro_doc.
TEST(CalibScripts, RerankByConfidence) {
  TempDir dir;
  const Output o = RunKplab(dir.path(), "",
                            "run --allow-write " + dir.path() + " scripts/analysis/rerank.lua --dataset " +
                                kCalibScriptFixture + "dataset.jsonl --predictions " + kCalibScriptFixture +
                                "tokens.jsonl --ks 1,2,5,M --out " + dir.path());
  ASSERT_EQ(o.code, 0) << o.err;
  const std::string md = Slurp(fs::path(dir.path()) / "rerank.md");
  EXPECT_NE(md.find("2 of 2 documents change order"), std::string::npos) << md;
  EXPECT_NE(md.find("| F1@1 | 0.5000 | 0.2500 | -0.2500 | 0.5000 | 0.2500 | -0.2500 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| F1@2 | 0.8000 | 0.6000 | -0.2000 | 0.8000 | "), std::string::npos) << md;
  EXPECT_NE(md.find("| F1@5 | 0.5000 | 0.5000 | 0.0000 | 0.5000 | 0.5000 | 0.0000 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| F1@M | 0.6667 | 0.6667 | 0.0000 | 0.6667 | 0.6667 | 0.0000 |"), std::string::npos) << md;
  const Output e = RunKplab(dir.path(), "",
                            "eval --dataset " + kCalibScriptFixture + "dataset.jsonl --predictions " +
                                kCalibScriptFixture + "tokens.jsonl --metrics exact --no-store --output json");
  ASSERT_EQ(e.code, 0) << e.err;
  std::smatch f1;
  ASSERT_TRUE(std::regex_search(e.out, f1, std::regex(R"("all\.f1@5\.macro_doc":\s*([0-9.eE+-]+))"))) << e.out;
  EXPECT_NEAR(std::stod(f1[1]), 0.5, 1e-12);

  const Output bad = RunKplab(dir.path(), "",
                              "run scripts/analysis/rerank.lua --dataset " + kCalibScriptFixture +
                                  "dataset.jsonl --predictions " + kCalibScriptFixture + "tokens.jsonl --ks 0,M");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("--ks: '0' is not a cut-off (expected integers >= 1 or M, e.g. 5,10,M)"), std::string::npos)
      << bad.err;
  const std::string lines = dir / "p.txt";
  std::ofstream(lines) << "geothermal energy\nneural network\n";
  const Output plain = RunKplab(dir.path(), "",
                                "run --allow-read " + dir.path() + " scripts/analysis/rerank.lua --dataset " +
                                    kCalibScriptFixture + "dataset.jsonl --predictions " + lines);
  EXPECT_NE(plain.code, 0);
  EXPECT_NE(plain.err.find("2 documents have predictions without token probabilities"), std::string::npos) << plain.err;
}

TEST(CalibScripts, PositionalMatchesPythonReferenceOnSharedData) {
  const std::string data = KPLAB_SHARED_DATA;
  if (!fs::exists(data + "/kpg_testsets_meng2017/inspec")) GTEST_SKIP() << "no " << data;
  TempDir dir;
  const Output o = RunKplab(dir.path(), "", "run --allow-write " + dir.path() + " --allow-read " + data + " scripts/analysis/positional.lua --data " + data + " --out " + dir.path());
  ASSERT_EQ(o.code, 0) << o.err;
  const std::string ref = dir / "ref.tsv";
  const std::string cmd = "/usr/bin/python3 " + std::string(KPLAB_SOURCE_DIR) +
                          "/tests/reference/positional_ref.py " + data +
                          " catSeqTG-2RF1 seed1234.txt 5 inspec krapivin semeval kp20k >" + ref + " 2>" + (dir / "py.err");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << Slurp(dir / "py.err");
  const std::string ours = Slurp(fs::path(dir.path()) / "positional.tsv");
  EXPECT_EQ(ours, Slurp(ref));
  EXPECT_EQ(std::count(ours.begin(), ours.end(), '\n'), 1 + 4 * 5);  // header + 4 datasets x 5 sections
  EXPECT_NE(o.out.find("| inspec | 500 |"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("| kp20k | 1000 |"), std::string::npos) << o.out;
  ExpectRenders(dir.path(), {"positional_counts.svg", "positional_accuracy.svg"}, "position");
}

// The paper's Table 3 (seed 001, §5.5), as printed, from --rule paper on the shared Meng-2017 files.
TEST(CalibScripts, PositionalPaperRuleGivesThePapersTable3) {
  const std::string data = KPLAB_SHARED_DATA;
  if (!fs::exists(data + "/kpg_testsets_meng2017/inspec")) GTEST_SKIP() << "no " << data;
  TempDir dir;
  const Output o = RunKplab(dir.path(), "", "run --allow-write " + dir.path() + " --allow-read " + data +
                                                " scripts/analysis/positional.lua --rule paper --system '' --data " +
                                                data + " --datasets inspec,semeval,krapivin --out " + dir.path());
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(Slurp(fs::path(dir.path()) / "positional.tsv"),
            "dataset\tsection\tgold_present\tpredicted\n"
            "inspec\t1\t1326\t0\ninspec\t2\t845\t0\ninspec\t3\t686\t0\ninspec\t4\t602\t0\ninspec\t5\t173\t0\n"
            "semeval\t1\t346\t0\nsemeval\t2\t126\t0\nsemeval\t3\t103\t0\nsemeval\t4\t54\t0\nsemeval\t5\t20\t0\n"
            "krapivin\t1\t706\t0\nkrapivin\t2\t206\t0\nkrapivin\t3\t182\t0\nkrapivin\t4\t159\t0\nkrapivin\t5\t59\t0\n");
  EXPECT_NE(o.out.find("| inspec | 500 | 1326 | 845 | 686 | 602 | 173 | 3632 |"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("Rule `paper`"), std::string::npos) << o.out;
}

// A two-document Meng-2017 dataset "tiny" under DIR/kpg_testsets_meng2017/tiny, with predictions of a
// system "sys" in DIR/predictions/sys/tiny/p.txt.
void WriteTinyPositional(const fs::path& root, const std::string& context, const std::string& keys,
                         const std::string& preds) {
  const fs::path ds = root / "kpg_testsets_meng2017" / "tiny";
  fs::create_directories(ds);
  fs::create_directories(root / "predictions" / "sys" / "tiny");
  std::ofstream(ds / "word_tiny_testing_context.txt", std::ios::binary) << context;
  std::ofstream(ds / "word_tiny_testing_allkeywords.txt", std::ios::binary) << keys;
  std::ofstream(root / "predictions" / "sys" / "tiny" / "p.txt", std::ios::binary) << preds;
}

TEST(CalibScripts, PositionalBothRulesByHand) {
  // Document 1: "learning networks . <eos> deep networks are learning machines", 61 characters.
  //   nltk stems: learn network . <eos> deep network are learn machin -> the stemmed line
  //   "learn network . <eos> deep network are learn machin" (51 characters), words starting at 0, 6, 14,
  //   16, 22, 27, 35, 39, 45. kplab's text drops <eos>: "learning networks . deep networks are
  //   learning machines" (55), words starting at 0, 9, 18, 20, 25, 34, 38, 47.
  //   Gold "machines;deep networks;networks;networks;net;xyz":
  //     piece          paper: stemmed offset, floor(i / 61 * 5) | kplab: offset, offset * 5 // 55
  //     machines       45 -> 3.69 -> section 4                | 47 -> 4.27 -> section 5
  //     deep networks  22 -> 1.80 -> section 2                | 20 -> 1.82 -> section 2
  //     networks       6 -> 0.49 -> section 1                 | 9 -> 0.82 -> section 1
  //     networks again counted again: section 1               | deduplicated
  //     net            inside "network" at 6: section 1       | not a whole stem: absent
  //     xyz            not found                              | absent
  //   Predictions "networks;machine;deep network" = stem keys {network, machin, deep network}: every
  //   piece but net is predicted.
  // Document 2: "Graph Cuts <eos> we study graph cuts", 36 characters; stemmed "graph cut <eos> we studi
  //   graph cut" (lower-cased by the stemmer); kplab's text "graph cuts we study graph cuts" (30).
  //   Gold "graph cuts;Study": graph cut at 0 -> section 1 (both rules); studi at 19 -> 19 / 36 * 5 =
  //   2.64 -> section 3 | study at 14 -> 70 // 30 = 2 -> section 3. Prediction "graph cuts": predicted.
  // Per section (count, predicted): paper 1 (4, 3), 2 (1, 1), 3 (1, 0), 4 (1, 1), 5 (0, 0);
  //                                 kplab 1 (2, 2), 2 (1, 1), 3 (1, 0), 4 (0, 0), 5 (1, 1).
  TempDir dir;
  const fs::path root = fs::path(dir.path()) / "data";
  WriteTinyPositional(root,
                      "learning networks . <eos> deep networks are learning machines\n"
                      "Graph Cuts <eos> we study graph cuts\n",
                      "machines;deep networks;networks;networks;net;xyz\ngraph cuts;Study\n",
                      "networks;machine;deep network\ngraph cuts\n");
  const std::string base = "run --allow-write " + dir.path() + " scripts/analysis/positional.lua --data " +
                           root.string() + " --datasets tiny --system sys --file p.txt --out " + dir.path();
  Output o = RunKplab(dir.path(), "", base + " --rule paper");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(Slurp(fs::path(dir.path()) / "positional.tsv"),
            "dataset\tsection\tgold_present\tpredicted\n"
            "tiny\t1\t4\t3\ntiny\t2\t1\t1\ntiny\t3\t1\t0\ntiny\t4\t1\t1\ntiny\t5\t0\t0\n");
  EXPECT_NE(o.out.find("| tiny | 2 | 4 | 1 | 1 | 1 | 0 | 7 |"), std::string::npos) << o.out;
  o = RunKplab(dir.path(), "", base);  // the default rule
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(Slurp(fs::path(dir.path()) / "positional.tsv"),
            "dataset\tsection\tgold_present\tpredicted\n"
            "tiny\t1\t2\t2\ntiny\t2\t1\t1\ntiny\t3\t1\t0\ntiny\t4\t0\t0\ntiny\t5\t1\t1\n");
  EXPECT_NE(o.out.find("Rule `kplab`"), std::string::npos) << o.out;
}

TEST(CalibScripts, PositionalRuleAndFileErrors) {
  TempDir dir;
  const fs::path root = fs::path(dir.path()) / "data";
  const std::string base = "run --allow-write " + dir.path() + " scripts/analysis/positional.lua --data " +
                           root.string() + " --datasets tiny --system ''";
  WriteTinyPositional(root, "a b . <eos> c d\n", "c d\n", "c d\n");
  Output o = RunKplab(dir.path(), "", base + " --rule Paper");
  EXPECT_EQ(o.code, 3);  // a script's error
  EXPECT_NE(o.err.find("--rule must be 'kplab' or 'paper' (got 'Paper')"), std::string::npos) << o.err;
  o = RunKplab(dir.path(), "", base + " --rule");
  EXPECT_NE(o.code, 0);
  EXPECT_NE(o.err.find("option --rule needs a value"), std::string::npos) << o.err;
  // One gold line for two documents: both files named, nothing written.
  const std::string ctx = (root / "kpg_testsets_meng2017/tiny/word_tiny_testing_context.txt").string();
  const std::string kws = (root / "kpg_testsets_meng2017/tiny/word_tiny_testing_allkeywords.txt").string();
  WriteTinyPositional(root, "a b . <eos> c d\ne f <eos> g\n", "c d\n", "");
  o = RunKplab(dir.path(), "", base + " --rule paper --out " + dir.path());
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find(ctx + " has 2 lines but " + kws + " has 1 (expected one gold line per document)"),
            std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(fs::path(dir.path()) / "positional.tsv"));
  // A line that is not UTF-8 is named by file and line.
  WriteTinyPositional(root, "a b . <eos> c d\ne \xff f <eos> g\n", "c d\ng\n", "");
  o = RunKplab(dir.path(), "", base + " --rule paper");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find(ctx + ":2: invalid UTF-8 (expected UTF-8 text)"), std::string::npos) << o.err;
  // A missing context file.
  fs::remove(ctx);
  o = RunKplab(dir.path(), "", base + " --rule paper");
  EXPECT_NE(o.code, 0);
  EXPECT_NE(o.err.find(ctx), std::string::npos) << o.err;
  // The default rule without any source text is an error too, not an empty table (it wrote one).
  o = RunKplab(dir.path(), "", base + " --out " + dir.path());
  EXPECT_EQ(o.code, 3) << o.out;
  EXPECT_NE(o.err.find(root.string() + "/kpg_testsets_meng2017/tiny: no document has source text (expected the "
                       "dataset's *_context.txt beside its keywords, or kp20k's test_src.txt)"),
            std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(fs::path(dir.path()) / "positional.tsv"));
}

}  // namespace
}  // namespace kplab::test
