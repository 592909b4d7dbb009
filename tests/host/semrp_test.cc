// The semantic metric plugins (plugins/semrp.lua, semantic.lua, diversity.lua) end to end, on
// tests/data/semrp: seven documents, each with the references
//   NN = neural networks, MT = machine translation, DL = deep learning   (pairwise cosine 0.5)
// and phrase vectors built by tests/reference/gen_semrp_vectors.py so that the cosines of each
// prediction with (NN, MT, DL) are exactly the ones below. The first two rows are the SemR-p paper's
// Table 1 (seed 002); the others are chosen by hand.
//   AI systems            .68 .61 .72        neural models        .90 .10 .30
//   neural computation    .76 .60 .66        quantum chemistry   -.20 -.10 -.30
//   language modelling    .30 .50 .40        machine translations .50 .95 .50 (stems like MT)
//   translation quality   .20 .80 .30
// Two predictions meet only in the references' span, so cos(p, q) = 2 (g_p.g_q - sum(g_p) sum(g_q) / 4)
// (G^-1 = 2 (I - J/4) for the references' Gram matrix G with 1 on the diagonal and 0.5 elsewhere).
// Every expected value is worked out in the comment beside it; vectors are float32, hence 1e-6.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using kplab::test::Output;
using Scores = std::map<std::string, std::map<std::string, double>>;  // doc id -> metric -> value

constexpr double kSemrpTol = 1e-6;

class SemanticPlugins : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kplab_semrp_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const char* m : {"lower", "cased", "stems"}) {
      Output o = Run(std::string("model import ") + m + " tests/data/semrp/" + m + ".tsv --backend precomputed");
      ASSERT_EQ(o.code, 0) << o.err;
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  Output Run(const std::string& args) {
    return kplab::test::RunKplab(dir_, "KPLAB_DB=" + (dir_ / "runs.db").string() +
                                           " KPLAB_MODELS=" + (dir_ / "models").string(),
                                 args);
  }

  // Evaluates tests/data/semrp and returns every document's scores (from `runs export`).
  Scores Eval(const std::string& metrics, const std::string& profile, const std::string& model,
              const std::string& extra = "") {
    Output o = Run("eval --dataset tests/data/semrp --predictions tests/data/semrp/predictions.txt --metrics " +
                   metrics + " --profile " + profile + " --model " + model + " --output json " + extra);
    EXPECT_EQ(o.code, 0) << o.err;
    const auto at = o.out.find("\"run_id\": ");
    EXPECT_NE(at, std::string::npos) << o.out;
    const std::string id = o.out.substr(at + 10, o.out.find_first_of(",}", at) - at - 10);
    o = Run("runs export " + id + " --output tsv");
    EXPECT_EQ(o.code, 0) << o.err;
    std::istringstream in(o.out);
    std::string line;
    std::getline(in, line);
    std::vector<std::string> header = Split(line);
    Scores s;
    while (std::getline(in, line)) {
      const std::vector<std::string> row = Split(line);
      for (std::size_t i = 1; i < row.size() && i < header.size(); ++i) {
        if (!row[i].empty()) s[row[0]][header[i]] = std::stod(row[i]);
      }
    }
    return s;
  }

  static std::vector<std::string> Split(const std::string& line) {
    std::vector<std::string> parts;
    std::string cur;
    for (char c : line) {
      if (c == '\t') {
        parts.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    parts.push_back(cur);
    return parts;
  }

  fs::path dir_;
};

TEST_F(SemanticPlugins, PaperTable1WorkedExample) {
  Scores s = Eval("semrp", "kplab", "lower", "--param semrp.ks=1,2,3");
  // Doc 1: predictions (MT, AI systems, neural computation, ...), R = 3, k = 3:
  //   MT exact -> 1; AI (.72 + .68 + .61) / 3 = .67; NC (.76 + .66 + .60) / 3 = .673333
  //   SemR-p = (1 + .67 + .673333) / 3 = .781111 (the paper rounds to 0.78).
  EXPECT_NEAR(s["1"]["all.semrp"], (1 + 2.01 / 3 + 2.02 / 3) / 3, kSemrpTol);
  EXPECT_NEAR(s["1"]["all.semrp"], 0.78, 0.005);
  EXPECT_NEAR(s["1"]["all.semrp_k3"], (1 + 2.01 / 3 + 2.02 / 3) / 3, kSemrpTol);
  EXPECT_NEAR(s["1"]["all.semrp_k1"], (1 + .72 + .76) / 3, kSemrpTol);  // best cosine each
  EXPECT_NEAR(s["1"]["all.semrp_k2"], (1 + (.72 + .68) / 2 + (.76 + .66) / 2) / 3, kSemrpTol);
  // Adaptive k: ceil(0.5 * 3) = 2; density: mean reference cosine d = .5, k = floor(1 + .5 * 2 + .5) = 2.
  EXPECT_NEAR(s["1"]["all.semrp_ak"], (1 + .70 + .71) / 3, kSemrpTol);
  EXPECT_NEAR(s["1"]["all.semrp_dk"], (1 + .70 + .71) / 3, kSemrpTol);
  // Div: weights MT row (NN .5, MT 1, DL .5), AI (.68 .61 .72), NC (.76 .60 .66); the best one-to-one
  // assignment is MT-MT 1 + AI-DL .72 + NC-NN .76 = 2.48 (of the 6 permutations; next MT-MT + AI-NN
  // + NC-DL = 2.34).
  EXPECT_NEAR(s["1"]["all.semrp_div"], 2.48 / 3, kSemrpTol);
  // Nothing in doc 1 is present in its text: the present subset has R = 0 -> 0.
  EXPECT_EQ(s["1"]["present.semrp"], 0);
}

TEST_F(SemanticPlugins, DivStopsTwoPredictionsSharingOneReference) {
  Scores s = Eval("semrp", "kplab", "lower", "--param semrp.ks=1");
  // Doc 2: (neural computation, neural models); both are closest to NN (.76, .90).
  //   SemR-p k=1: (.76 + .90) / 3 = .553333 — both take credit for NN.
  //   Div: NM-NN .90 + NC-DL .66 = 1.56 beats NC-NN .76 + NM-DL .30 = 1.06 -> 1.56 / 3 = .52.
  EXPECT_NEAR(s["2"]["all.semrp_k1"], (.76 + .90) / 3, kSemrpTol);
  EXPECT_NEAR(s["2"]["all.semrp_div"], 1.56 / 3, kSemrpTol);
  EXPECT_LT(s["2"]["all.semrp_div"], s["2"]["all.semrp_k1"]);
  // Doc 4 (kplab dedups to AI, NC): k=1 (.72 + .76) / 3; Div AI-DL .72 + NC-NN .76 (no conflict).
  EXPECT_NEAR(s["4"]["all.semrp_div"], (.72 + .76) / 3, kSemrpTol);
}

TEST_F(SemanticPlugins, NegativeCosinesKeptOrClamped) {
  // Doc 6: quantum chemistry (-.2, -.1, -.3): (-.6 / 3) / 3.
  Scores s = Eval("semrp", "kplab", "lower");
  EXPECT_NEAR(s["6"]["all.semrp"], -0.2 / 3, kSemrpTol);
  s = Eval("semrp", "kplab", "lower", "--param semrp.clamp=true");
  EXPECT_EQ(s["6"]["all.semrp"], 0);
  EXPECT_NEAR(s["1"]["all.semrp"], (1 + 2.01 / 3 + 2.02 / 3) / 3, kSemrpTol);  // positive ones unchanged
}

TEST_F(SemanticPlugins, StandaloneProfile) {
  // The cased table has only original-case strings: the run works only if they are what is embedded.
  Scores s = Eval("semrp", "semrp-standalone", "cased");
  EXPECT_NEAR(s["1"]["all.semrp"], (1 + 2.01 / 3 + 2.02 / 3) / 3, kSemrpTol);
  // Doc 3: one prediction, R = 3: divided by min(1, 3) = 1 -> .67 (kplab: .67 / 3).
  EXPECT_NEAR(s["3"]["all.semrp"], 2.01 / 3, kSemrpTol);
  // Doc 4: (AI, AI, NC) not deduped: (.67 + .67 + .673333) / 3.
  EXPECT_NEAR(s["4"]["all.semrp"], (2.01 / 3 * 2 + 2.02 / 3) / 3, kSemrpTol);
  Scores k = Eval("semrp", "kplab", "lower");
  EXPECT_NEAR(k["3"]["all.semrp"], 2.01 / 9, kSemrpTol);
  EXPECT_NEAR(k["4"]["all.semrp"], (2.01 / 3 + 2.02 / 3) / 3, kSemrpTol);  // dedup: AI, NC; / R
  // A lower-case-only table fails under the standalone profile ("AI systems" is not in it).
  Output o = Run("eval --dataset tests/data/semrp --predictions tests/data/semrp/predictions.txt --metrics semrp "
                 "--profile semrp-standalone --model lower --no-store");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("not in the precomputed table"), std::string::npos) << o.err;
}

// semrp.dedup decides repeats before the top-R cut whatever the profile; "profile" (the default) keeps
// every existing number. Doc 4 is (AI systems, AI systems, neural computation), R = 3, k = 3:
// AI -> (.72 + .68 + .61) / 3 = .67, NC -> (.76 + .66 + .60) / 3 = .673333.
TEST_F(SemanticPlugins, DedupKnobGivesDivideByRWithoutDedup) {
  // kplab, dedup=false: top 3 = AI, AI, NC; / R = 3 -> (.67 + .67 + .673333) / 3 (the authors' count
  // of repeats with the paper's denominator).
  Scores off = Eval("semrp", "kplab", "lower", "--param semrp.dedup=false --param semrp.ks=1");
  EXPECT_NEAR(off["4"]["all.semrp"], (2.01 / 3 * 2 + 2.02 / 3) / 3, kSemrpTol);
  EXPECT_NEAR(off["4"]["all.semrp_k1"], (.72 * 2 + .76) / 3, kSemrpTol);
  // Div: rows AI (.68 .61 .72) twice and NC (.76 .60 .66); of the six one-to-one assignments the best
  // is AI-DL .72 + AI-MT .61 + NC-NN .76 = 2.09 (next: AI-NN .68 + AI-DL .72 + NC-MT .60 = 2.00).
  EXPECT_NEAR(off["4"]["all.semrp_div"], 2.09 / 3, kSemrpTol);
  // Nothing of doc 4 is in its text: the absent subset holds all three, the present subset none.
  EXPECT_NEAR(off["4"]["absent.semrp"], (2.01 / 3 * 2 + 2.02 / 3) / 3, kSemrpTol);
  EXPECT_EQ(off["4"]["present.semrp"], 0);
  // Documents without repeats are unchanged (doc 1: the paper's Table 1).
  EXPECT_NEAR(off["1"]["all.semrp"], (1 + 2.01 / 3 + 2.02 / 3) / 3, kSemrpTol);
  // kplab, dedup=true and the default: AI, NC; / 3.
  for (const char* extra : {"--param semrp.dedup=true", "--param semrp.dedup=profile", ""}) {
    Scores on = Eval("semrp", "kplab", "lower", extra);
    EXPECT_NEAR(on["4"]["all.semrp"], (2.01 / 3 + 2.02 / 3) / 3, kSemrpTol) << extra;
  }
  // semrp-standalone keeps repeats by itself; dedup=true drops the second AI: AI, NC / min(2, 3) = 2.
  Scores sa = Eval("semrp", "semrp-standalone", "cased", "--param semrp.dedup=true");
  EXPECT_NEAR(sa["4"]["all.semrp"], (2.01 / 3 + 2.02 / 3) / 2, kSemrpTol);
  Scores sf = Eval("semrp", "semrp-standalone", "cased", "--param semrp.dedup=false");
  EXPECT_NEAR(sf["4"]["all.semrp"], (2.01 / 3 * 2 + 2.02 / 3) / 3, kSemrpTol);
}

TEST_F(SemanticPlugins, DedupKnobRejectsOtherValues) {
  for (const char* bad : {"yes", "1", "False"}) {
    Output o = Run(std::string("eval --dataset tests/data/semrp --predictions tests/data/semrp/predictions.txt "
                               "--metrics semrp --model lower --no-store --param semrp.dedup=") + bad);
    EXPECT_EQ(o.code, 1) << bad;  // a usage error, as every bad --param value
    EXPECT_EQ(o.err, std::string("kplab: plugin 'semrp': parameter 'dedup' must be one of: profile, true, false (got '") +
                         bad + "')\n");
    EXPECT_EQ(o.out, "") << bad;
  }
}

TEST_F(SemanticPlugins, KpevalForkProfileEmbedsStemsPresentFirst) {
  // The stems table has only stemmed strings: the run works only if stems are embedded.
  Scores s = Eval("semrp", "kpeval", "stems");
  // Doc 5: (AI, LM, TQ, NC) with only NC present in the text. k = 3 means:
  //   AI .67, LM (.3+.5+.4)/3 = .4, TQ (.2+.8+.3)/3 = .433333, NC .673333.
  //   kpeval (present first): NC, AI, LM -> (.673333 + .67 + .4) / 3
  //   kplab (model order):    AI, LM, TQ -> (.67 + .4 + .433333) / 3
  EXPECT_NEAR(s["5"]["all.semrp"], (2.02 / 3 + 2.01 / 3 + 0.4) / 3, kSemrpTol);
  Scores k = Eval("semrp", "kplab", "lower");
  EXPECT_NEAR(k["5"]["all.semrp"], (2.01 / 3 + 0.4 + 1.3 / 3) / 3, kSemrpTol);
  // A surface-only table cannot serve the fork's stems.
  Output o = Run("eval --dataset tests/data/semrp --predictions tests/data/semrp/predictions.txt --metrics semrp "
                 "--profile kpeval --model lower --no-store");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("not in the precomputed table"), std::string::npos) << o.err;
}

TEST_F(SemanticPlugins, KpevalSemanticMatchingAndItsSemRBug) {
  // Doc 7: predictions (machine translations, AI systems); "machine translations" stems like MT.
  //   SemP = (1 [exact] + .72 [AI's best]) / 2 = .86 under both profiles.
  //   SemR kplab: NN max(.5, .68) = .68; MT exact -> 1; DL max(.5, .72) = .72 -> 2.4 / 3 = .8
  //   SemR kpeval: MT gets its best cosine, .95 (the bug) -> (.68 + .95 + .72) / 3 = .783333
  Scores k = Eval("semantic", "kplab", "lower");
  EXPECT_NEAR(k["7"]["all.semp"], 0.86, kSemrpTol);
  EXPECT_NEAR(k["7"]["all.semr"], 0.8, kSemrpTol);
  EXPECT_NEAR(k["7"]["all.semf1"], 2 * .86 * .8 / (.86 + .8), kSemrpTol);
  Scores e = Eval("semantic", "kpeval", "lower");
  EXPECT_NEAR(e["7"]["all.semp"], 0.86, kSemrpTol);
  EXPECT_NEAR(e["7"]["all.semr"], 2.35 / 3, kSemrpTol);
  EXPECT_NEAR(e["7"]["all.semf1"], 2 * .86 * (2.35 / 3) / (.86 + 2.35 / 3), kSemrpTol);
  // Doc 1 (5 predictions): SemP = (1 + .72 + .76 + .5 + .8) / 5 = .756;
  // SemR kplab: NN best .76 (NC), MT 1, DL best .72 (AI) -> 2.48 / 3. KPEval: MT's best cosine is 1
  // anyway (the same phrase), so the bug does not show here.
  EXPECT_NEAR(k["1"]["all.semp"], 3.78 / 5, kSemrpTol);
  EXPECT_NEAR(k["1"]["all.semr"], 2.48 / 3, kSemrpTol);
  EXPECT_NEAR(e["1"]["all.semr"], 2.48 / 3, kSemrpTol);
  // Doc 6: the only prediction has negative cosines: SemP 0 (not above the threshold 0), SemF1 0.
  EXPECT_EQ(k["6"]["all.semp"], 0);
  EXPECT_EQ(k["6"]["all.semf1"], 0);
}

TEST_F(SemanticPlugins, DiversityCountsRepeats) {
  Scores s = Eval("diversity", "kplab", "lower");
  // Doc 4: (AI systems, AI systems, neural computation) as generated.
  //   unique phrases 2 / 3; stemmed tokens ai system ai system neural comput: 4 unique of 6.
  //   cos(AI, NC) = 2 (.68*.76 + .61*.60 + .72*.66 - 2.01*2.02/4) = 2 * .34295 = .6859
  //   self-similarity: pairs (AI,AI) 1, (AI,NC) .6859 twice -> (1 + 2 * .6859) / 3
  //   index: sqrt(2 * (1 + 2 * .6859^2)) (the off-diagonal entries, both triangles)
  const double c = 2 * (.68 * .76 + .61 * .60 + .72 * .66 - 2.01 * 2.02 / 4);
  EXPECT_NEAR(s["4"]["all.unique_phrase_ratio"], 2.0 / 3, kSemrpTol);
  EXPECT_NEAR(s["4"]["all.unique_token_ratio"], 4.0 / 6, kSemrpTol);
  EXPECT_NEAR(s["4"]["all.dup_token_ratio"], 2.0 / 6, kSemrpTol);
  EXPECT_NEAR(s["4"]["all.self_embed_sim"], (1 + 2 * c) / 3, kSemrpTol);
  EXPECT_NEAR(s["4"]["all.sem_diversity_index"], std::sqrt(2 * (1 + 2 * c * c)), kSemrpTol);
  // Doc 3: one phrase -> self-similarity 1 (KPEval's convention), index 0.
  EXPECT_EQ(s["3"]["all.self_embed_sim"], 1);
  EXPECT_EQ(s["3"]["all.sem_diversity_index"], 0);
}

TEST_F(SemanticPlugins, NeedsFollowTheProfile) {
  // semrp declares needs as a function of the profile: under kplab only surfaces are embedded, so a
  // surface-only table suffices (checked above); under kpeval only stems.
  Output o = Run("eval --dataset tests/data/semrp --predictions tests/data/semrp/predictions.txt --metrics semrp "
                 "--profile kpeval --model stems --no-store");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.err.find("phrases"), std::string::npos) << o.err;
}

}  // namespace
