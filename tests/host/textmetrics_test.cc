// The text-overlap plugins (plugins/rouge.lua, meteor.lua and diversity.lua's Self-BLEU and self edit
// distance) end to end on tests/data/textmetrics, and kp.textmetrics through the sandbox: hand
// calculations under both profiles, and hostile inputs (bad arguments, invalid UTF-8, huge phrases,
// 10,000 predictions, no WordNet). The peers' own numbers on the real data: tests/conformance
// (KpevalTextPeers).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <lua.hpp>

#include "bindings.h"
#include "cli_harness.h"
#include "sandbox.h"

namespace kplab::host {
namespace {

namespace fs = std::filesystem;
using kplab::test::Output;
using TextScores = std::map<std::string, std::map<std::string, double>>;  // doc id -> column -> value

class TextPlugins : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_textmetrics_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Output Run(const std::string& args, const std::string& env = "") {
    return kplab::test::RunKplab(dir_, "KPLAB_DB=" + (dir_ / "runs.db").string() + " " + env, args);
  }

  // Evaluates a dataset and returns every document's scores (from `runs export`).
  TextScores Eval(const std::string& profile, const std::string& extra = "",
                  const std::string& dataset = "tests/data/textmetrics",
                  const std::string& predictions = "tests/data/textmetrics/predictions.txt") {
    Output o = Run("eval --dataset " + dataset + " --predictions " + predictions +
                   " --metrics rouge,meteor,diversity --param diversity.embeddings=false --profile " + profile +
                   " --output json " + extra);
    EXPECT_EQ(o.code, 0) << o.err;
    const auto at = o.out.find("\"run_id\": ");
    if (at == std::string::npos) {
      ADD_FAILURE() << o.out;
      return {};
    }
    const std::string id = o.out.substr(at + 10, o.out.find_first_of(",}", at) - at - 10);
    o = Run("runs export " + id + " --output tsv");
    EXPECT_EQ(o.code, 0) << o.err;
    std::istringstream in(o.out);
    std::string line;
    std::getline(in, line);
    const std::vector<std::string> header = Split(line);
    TextScores s;
    while (std::getline(in, line)) {
      const std::vector<std::string> row = Split(line);
      for (std::size_t i = 1; i < row.size() && i < header.size(); ++i) {
        if (!row[i].empty()) s[row[0]][header[i]] = std::stod(row[i]);
      }
    }
    return s;
  }

  static std::vector<std::string> Split(const std::string& line) {
    std::vector<std::string> parts(1);
    for (char c : line) {
      if (c == '\t') {
        parts.emplace_back();
      } else {
        parts.back() += c;
      }
    }
    return parts;
  }

  fs::path dir_;
};

constexpr double kTextTol = 1e-12;

// pltrdy/rouge's F: 2 * ((P * R) / (P + R + 1e-8)).
double PltrdyF(double p, double r) { return 2.0 * ((p * r) / (p + r + 1e-8)); }
double F1(double p, double r) { return p + r > 0 ? 2 * p * r / (p + r) : 0; }
// nltk 3.8 single_meteor_score with KPEval's alpha 0.9, beta 3, gamma 0.5.
double Meteor(double m, double chunks, double hyp, double ref) {
  const double p = m / hyp, r = m / ref;
  return (1 - 0.5 * std::pow(chunks / m, 3.0)) * (p * r / (0.9 * p + (1 - 0.9) * r));
}

// Document 1 under kplab. Predictions after dedup: neural network (present), deep learning models,
// translation systems (absent); references: neural networks, deep learning (present), machine
// translation (absent). Units are the keyphrases' tokens (surfaces).
TEST_F(TextPlugins, KplabRougeCountsInsideKeyphrases) {
  TextScores s = Eval("kplab");
  const auto& d = s["1"];
  // all, ROUGE-1: hyp tokens neural network deep learning models translation systems (7), ref neural
  // networks deep learning machine translation (6); shared: neural, deep, learning, translation.
  EXPECT_NEAR(d.at("all.rouge1_p"), 4.0 / 7, kTextTol);
  EXPECT_NEAR(d.at("all.rouge1_r"), 4.0 / 6, kTextTol);
  EXPECT_NEAR(d.at("all.rouge1_f1"), 8.0 / 13, kTextTol);
  // ROUGE-2: hyp bigrams (neural network) (deep learning) (learning models) (translation systems),
  // ref (neural networks) (deep learning) (machine translation): 1 shared -> 1/4, 1/3, F1 2/7.
  EXPECT_NEAR(d.at("all.rouge2_p"), 1.0 / 4, kTextTol);
  EXPECT_NEAR(d.at("all.rouge2_r"), 1.0 / 3, kTextTol);
  EXPECT_NEAR(d.at("all.rouge2_f1"), 2.0 / 7, kTextTol);
  // ROUGE-L: per reference keyphrase the union of its LCS positions: {neural}, {deep, learning},
  // {translation} -> 4 hits.
  EXPECT_NEAR(d.at("all.rougel_p"), 4.0 / 7, kTextTol);
  EXPECT_NEAR(d.at("all.rougel_r"), 4.0 / 6, kTextTol);
  // present: [neural network] vs [neural networks] [deep learning]: 1 of 2 tokens, 1 of 4; no bigram.
  EXPECT_NEAR(d.at("present.rouge1_p"), 0.5, kTextTol);
  EXPECT_NEAR(d.at("present.rouge1_r"), 0.25, kTextTol);
  EXPECT_NEAR(d.at("present.rouge1_f1"), F1(0.5, 0.25), kTextTol);
  EXPECT_EQ(d.at("present.rouge2_f1"), 0);
  // absent: [deep learning models] [translation systems] vs [machine translation]: translation.
  EXPECT_NEAR(d.at("absent.rouge1_p"), 1.0 / 5, kTextTol);
  EXPECT_NEAR(d.at("absent.rouge1_r"), 1.0 / 2, kTextTol);
  EXPECT_NEAR(d.at("absent.rougel_f1"), F1(0.2, 0.5), kTextTol);
  // Document 4 has no prediction: zeros. Document 5: the reference "graphs" repeats "graph" and is
  // dropped; present [tree] vs [tree] -> 1.
  EXPECT_EQ(s["4"].at("all.rouge1_p"), 0);
  EXPECT_EQ(s["4"].at("all.rouge1_f1"), 0);
  EXPECT_EQ(s["5"].at("present.rouge1_f1"), 1);
  EXPECT_EQ(s["5"].at("present.rougel_f1"), 1);
}

// The same documents as KPEval reads them: its strings, pltrdy/rouge's counting.
TEST_F(TextPlugins, KpevalRougeJoinsKeyphrasesAndMisalignsRepeatedReferences) {
  TextScores s = Eval("kpeval");
  const auto& d = s["1"];
  // all: "neural network, deep learning models, translation systems" vs "neural networks, deep
  // learning, machine translation" -> words (7 and 6 distinct) neural "network," deep learning "models,"
  // translation systems / neural "networks," deep "learning," machine translation: shared neural, deep,
  // translation (the comma keeps learning from matching).
  EXPECT_NEAR(d.at("all.rouge1_p"), 3.0 / 7, kTextTol);
  EXPECT_NEAR(d.at("all.rouge1_r"), 3.0 / 6, kTextTol);
  EXPECT_NEAR(d.at("all.rouge1_f1"), PltrdyF(3.0 / 7, 0.5), kTextTol);
  EXPECT_EQ(d.at("all.rouge2_p"), 0);  // every bigram of either side crosses a comma or differs
  EXPECT_NEAR(d.at("all.rougel_p"), 3.0 / 7, kTextTol);
  // present: joined by ' ': "neural network" vs "neural networks deep learning": {neural}.
  EXPECT_NEAR(d.at("present.rouge1_p"), 0.5, kTextTol);
  EXPECT_NEAR(d.at("present.rouge1_r"), 0.25, kTextTol);
  EXPECT_NEAR(d.at("present.rouge1_f1"), PltrdyF(0.5, 0.25), kTextTol);
  // Document 5: references graph; graphs; tree with unique flags [absent, present]: KPEval zips the
  // line's first two references with them, so "graphs" is taken as present and "tree" is lost.
  // present: "tree" vs "graphs" -> 0; absent: "graph" vs "graph" -> 1; all: "tree, graph" vs
  // "graphs, graph" -> words {tree,, graph} and {graphs,, graph}: 1 of 2 each.
  EXPECT_EQ(s["5"].at("present.rouge1_p"), 0);
  EXPECT_NEAR(s["5"].at("absent.rouge1_f1"), PltrdyF(1, 1), kTextTol);
  EXPECT_EQ(s["5"].at("absent.rouge2_p"), 0);  // one word: no bigram on either side -> 0 (pltrdy)
  EXPECT_NEAR(s["5"].at("all.rouge1_p"), 0.5, kTextTol);
  EXPECT_NEAR(s["5"].at("all.rouge1_f1"), PltrdyF(0.5, 0.5), kTextTol);
  // Document 4: the empty line is one empty keyphrase: blank -> KPEval pushes zeros.
  EXPECT_EQ(s["4"].at("all.rouge1_p"), 0);
  EXPECT_EQ(s["4"].at("present.rougel_f1"), 0);
}

TEST_F(TextPlugins, MeteorUnderBothProfiles) {
  TextScores k = Eval("kplab"), e = Eval("kpeval");
  // kplab, document 1, all: hyp neural network deep learning models translation systems, ref neural
  // networks deep learning machine translation. Exact (hyp from its end): translation, learning,
  // deep, neural; stems: network(s); models, systems and machin are left (no WordNet lemma "machin").
  // Matches (0,0) (1,1) (2,2) (3,3) (5,5): 2 chunks of 5, P = 5/7, R = 5/6.
  EXPECT_NEAR(k["1"].at("all.meteor"), Meteor(5, 2, 7, 6), kTextTol);
  EXPECT_NEAR(k["1"].at("all.meteor"), 0.968 * 50 / 61, kTextTol);
  // kpeval, document 1, all: "neural network, deep learn model, translat system" against KPEval's
  // reference, the present predictions then the absent references: "neural network, machin
  // translat" -> 9 and 5 words with the commas; exact: translat, ",", network, neural; chunks
  // (0,0)(1,1) | (6,2) | (7,4) -> 3 of 4.
  EXPECT_NEAR(e["1"].at("all.meteor"), Meteor(4, 3, 9, 5), kTextTol);
  // present: "neural network" vs "neural network, deep learn": 2 matches in one chunk, P 1, R 2/5.
  EXPECT_NEAR(e["1"].at("present.meteor"), Meteor(2, 1, 2, 5), kTextTol);
  // Document 5, all: kpeval compares "tree, graph" with itself (present prediction tree + absent
  // reference graph): 3 matches, 1 chunk; kplab compares [tree graph] with [graph tree]: 2 chunks of 2.
  EXPECT_NEAR(e["5"].at("all.meteor"), Meteor(3, 1, 3, 3), kTextTol);
  EXPECT_NEAR(k["5"].at("all.meteor"), Meteor(2, 2, 2, 2), kTextTol);
  EXPECT_EQ(k["4"].at("all.meteor"), 0);  // no prediction
  EXPECT_EQ(e["4"].at("all.meteor"), 0);  // one empty keyphrase: no word
}

TEST_F(TextPlugins, SelfBleuAndSelfEditDistance) {
  TextScores k = Eval("kplab"), e = Eval("kpeval");
  // Document 1 as generated: neural network, deep learn model, translat system, neural network (the
  // repeat). Each copy of "neural network" finds its twin: unigrams 2/2, bigram 1/1, no trigram
  // (0.1/1 smoothed), closest reference length 2 -> BP 1: 0.1^(1/3). The other two share no word.
  const double twin = std::exp(std::log(0.1) / 3);
  EXPECT_NEAR(k["1"].at("all.self_bleu"), 2 * twin / 4, kTextTol);
  EXPECT_NEAR(e["1"].at("all.self_bleu"), 2 * twin / 4, kTextTol);
  // Document 2: abc, abd, xyz. Indel: abc/abd LCS 2 -> 1 - 2/6 = 2/3; with xyz 0. Per item: 1/3, 1/3,
  // 0 -> mean 2/9. kplab reports the distance 1 - 2/9; kpeval fuzz.ratio's 0-100 similarity.
  EXPECT_NEAR(k["2"].at("all.self_edit_distance"), 7.0 / 9, kTextTol);
  EXPECT_NEAR(e["2"].at("all.self_edit_distance"), 200.0 / 9, 1e-9);
  EXPECT_EQ(k["2"].at("all.self_bleu"), 0);
  // Document 3 (one prediction) and 4 (none under kplab, one empty under kpeval): nothing to compare.
  EXPECT_EQ(k["3"].count("all.self_bleu"), 0u);
  EXPECT_EQ(k["4"].count("all.self_edit_distance"), 0u);
  EXPECT_EQ(e["3"].at("all.self_bleu"), 0);
  EXPECT_EQ(e["4"].at("all.self_edit_distance"), 0);
  // Document 5: tree / graph share "r": 1 - 7/9 = 2/9 each way.
  EXPECT_NEAR(e["5"].at("all.self_edit_distance"), 200.0 / 9, 1e-9);
}

// nltk's sentence_bleu adds the weighted log precisions with math.fsum; a plain left-to-right sum differs
// from it in the last bits for these pairs (found by trying 162 random pairs of phrases over six
// one-letter words against the plain sum). Each document holds two phrases, each scored against the
// other; the document's value is their mean. The peer's numbers, printed by nltk 3.8 (Debian python3-nltk)
// with /usr/bin/python3:
//   from nltk.translate.bleu_score import sentence_bleu, SmoothingFunction
//   m1 = SmoothingFunction().method1
//   for a, b in [("b f g d h g", "g c b h"), ("f g g f g", "g d f d c g"), ("g c b h c d h", "d d g h g f")]:
//       a, b = a.split(), b.split()
//       x = sentence_bleu([b], a, weights=(1/3,) * 3, smoothing_function=m1)
//       y = sentence_bleu([a], b, weights=(1/3,) * 3, smoothing_function=m1)
//       print(repr(x), repr(y), repr((x + y) / 2))
// -> 0.06299605249474365 0.06533653469264109 0.06416629359369236
//    0.06498270293573523 0.06299605249474365 0.06398937771523944
//    0.05227579585747104 0.05332500717705027 0.052800401517260655
// (the plain sum gave ...239, ...945 and ...066 for the means). Compared bit for bit.
TEST_F(TextPlugins, SelfBleuSumsLikeNltk) {
  std::ofstream(dir_ / "bleu_context.txt") << "one . <eos> b c d .\ntwo . <eos> f g .\nthree . <eos> g h .\n";
  std::ofstream(dir_ / "bleu_allkeywords.txt") << "b\nf\ng\n";
  std::ofstream(dir_ / "predictions.txt") << "b f g d h g;g c b h\nf g g f g;g d f d c g\ng c b h c d h;d d g h g f\n";
  TextScores s = Eval("kplab", "", dir_.string(), (dir_ / "predictions.txt").string());
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s["1"].at("all.self_bleu"), 0.06416629359369236);
  EXPECT_EQ(s["2"].at("all.self_bleu"), 0.06398937771523944);
  EXPECT_EQ(s["3"].at("all.self_bleu"), 0.052800401517260655);
}

TEST_F(TextPlugins, MeteorWithoutWordNetSaysWhatToInstall) {
  const std::string env = "KPLAB_WORDNET=" + (dir_ / "nowhere").string();
  Output o =
      Run("eval --dataset tests/data/textmetrics --predictions tests/data/textmetrics/predictions.txt "
          "--metrics meteor",
          env);
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.err.find("plugin 'meteor': WordNet not found: " + (dir_ / "nowhere" / "index.noun").string()),
            std::string::npos)
      << o.err;
  EXPECT_NE(o.err.find("scripts/setup.sh --extra wordnet"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("--param meteor.synonyms=false"), std::string::npos) << o.err;
  // Without the synonym stage it runs; this fixture has no synonym match, so the numbers are the same.
  TextScores s = Eval("kplab", "--param meteor.synonyms=false");
  EXPECT_NEAR(s["1"].at("all.meteor"), 0.968 * 50 / 61, kTextTol);
}

TEST_F(TextPlugins, TenThousandPredictionsAndAHugePhrase) {
  // One document with 10,000 distinct predictions and a 2,000-word keyphrase.
  fs::create_directories(dir_ / "big");
  {
    std::ofstream ctx(dir_ / "big" / "big_context.txt");
    ctx << "a title . <eos> some body text with words .\n";
    std::ofstream kw(dir_ / "big" / "big_allkeywords.txt");
    kw << "word 17;some body\n";
    std::ofstream pr(dir_ / "big" / "predictions.txt");
    for (int i = 0; i < 10000; ++i) pr << (i ? ";" : "") << "word " << i;
    pr << ";";
    for (int i = 0; i < 2000; ++i) pr << (i ? " " : "") << "w" << i % 50;
    pr << "\n";
  }
  const std::string data =
      "--dataset " + (dir_ / "big").string() + " --predictions " + (dir_ / "big" / "predictions.txt").string();
  // ROUGE and METEOR are linear or (units x units) in the sizes: they finish under the default limits.
  TextScores s;
  {
    Output o = Run("eval " + data + " --metrics rouge,meteor --output json");
    ASSERT_EQ(o.code, 0) << o.err;
  }
  // Self edit distance compares every pair: 50 million pairs exceed the default instruction budget of a
  // call, a clean kill naming the plugin...
  Output o = Run("eval " + data + " --metrics diversity --param diversity.embeddings=false");
  EXPECT_EQ(o.code, 3) << o.err;
  EXPECT_NE(o.err.find("instruction budget of 100000000 exceeded"), std::string::npos) << o.err;
  // ... and with the limits lifted it is computed.
  s = Eval("kplab", "--instruction-limit 0 --time-limit 0 --run-instruction-limit 0", (dir_ / "big").string(),
           (dir_ / "big" / "predictions.txt").string());
  ASSERT_EQ(s.size(), 1u);
  const double d = s.begin()->second.at("all.self_edit_distance");
  EXPECT_GT(d, 0);
  EXPECT_LT(d, 1);
  EXPECT_GE(s.begin()->second.at("all.self_bleu"), 0);
}

TEST_F(TextPlugins, SetupInstallsWordNetAsAnExtra) {
  // The tests' package list installs wordnet-base, so the extra finds it installed and says so.
  auto sh = [&](const std::string& args) {
    const std::string cmd = std::string("cd ") + KPLAB_SOURCE_DIR + " && bash scripts/setup.sh " + args + " >" +
                            (dir_ / "out").string() + " 2>&1";
    const int status = std::system(cmd.c_str());
    return std::pair{WIFEXITED(status) ? WEXITSTATUS(status) : -1, kplab::test::Slurp(dir_ / "out")};
  };
  auto [code, out] = sh("--extra wordnet");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("extra 'wordnet' installed"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists("/usr/share/wordnet/index.noun"));
  std::tie(code, out) = sh("--extra wordnets");
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find("unknown extra 'wordnets' (expected: dask, torch or wordnet)"), std::string::npos) << out;
}

// ---- kp.textmetrics through the sandbox -------------------------------------------------------------

class TextMetricsLua : public ::testing::Test {
 protected:
  explicit TextMetricsLua(Limits limits = {}) : vm_(limits) { vm_.Install(&InstallTextMetrics); }

  // Runs src as chunk "tm.lua"; its results as strings ("(error) message" on failure).
  std::string Eval(const std::string& src) {
    lua_State* L = vm_.state();
    const int top = lua_gettop(L);
    vm_.PushSandboxEnv("tm");
    std::optional<ScriptError> err = vm_.RunChunk(src, "tm.lua", LUA_MULTRET);
    if (err) return "(error) " + err->message;
    std::string out;
    for (int i = top + 1; i <= lua_gettop(L); ++i) {
      out += (i > top + 1 ? " " : "") + std::string(luaL_tolstring(L, i, nullptr));
      lua_pop(L, 1);
    }
    lua_settop(L, top);
    return out;
  }

  LuaVm vm_;
};

TEST_F(TextMetricsLua, RegisteredInAllModulesAndCountsAsTheCoreDoes) {
  bool found = false;
  for (const auto& m : AllModules()) {
    found = found ||
            (m.target<void (*)(lua_State*)>() != nullptr && *m.target<void (*)(lua_State*)>() == &InstallTextMetrics);
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(Eval("return kp.textmetrics.rouge_n('neural network, deep learning', 'deep learning, neural network', 1, "
                 "'pltrdy')"),
            "2 4 4");
  EXPECT_EQ(Eval("return kp.textmetrics.rouge_n({'neural network', 'deep learning'}, 'deep learning', 2)"), "1 2 1");
  EXPECT_EQ(Eval("return kp.textmetrics.rouge_l({'a b'}, {'a b', 'a c'})"), "2 2 4");
  EXPECT_EQ(Eval("local a = kp.textmetrics.meteor('the cats sat on the mat', 'on the mat the cat sat', "
                 "{synonyms = false}) return a.matches, a.chunks, a.exact, a.stem"),
            "6 5 5 1");
  EXPECT_EQ(Eval("local c = kp.textmetrics.self_bleu({'a b c', 'a b d', 'e'}, 3) "
                 "return c[1].num[1], c[1].num[2], c[1].num[3], c[1].den[1], c[1].hyp_len, c[1].ref_len, #c"),
            "2 1 0 3 3 3 3");
  EXPECT_EQ(Eval("local s = kp.textmetrics.self_indel({'ab', 'ab', ''}) return s[1], s[2], s[3], "
                 "#kp.textmetrics.self_indel({'x'})"),
            "0.5 0.5 0.0 0");
  EXPECT_EQ(Eval("return kp.textmetrics.wordnet()"), "true");
}

TEST_F(TextMetricsLua, BadArgumentsAreErrorsAtTheCallersLine) {
  EXPECT_EQ(Eval("return kp.textmetrics.rouge_n('a', 'b', 0)"),
            "(error) tm.lua:1: kp.textmetrics.rouge_n: n must be an integer from 1 to 100 (got 0)");
  EXPECT_EQ(Eval("return kp.textmetrics.rouge_n('a', 'b', 1, 'rouge155')"),
            "(error) tm.lua:1: kp.textmetrics.rouge_n: style must be 'lin' or 'pltrdy' (got 'rouge155')");
  EXPECT_EQ(Eval("return kp.textmetrics.rouge_l({'a'}, 'b', 'pltrdy')"),
            "(error) tm.lua:1: kp.textmetrics.rouge_l: argument #1 must be a string with style 'pltrdy' (got table)");
  EXPECT_EQ(Eval("return kp.textmetrics.rouge_l(42, 'b')"),
            "(error) tm.lua:1: kp.textmetrics.rouge_l: argument #1 must be a KeyphraseList, an array of strings or a "
            "string (got number)");
  EXPECT_EQ(Eval("return kp.textmetrics.self_bleu({'a', 7}, 3)"),
            "(error) tm.lua:1: kp.textmetrics.self_bleu: argument #1[2] must be a string (got number)");
  EXPECT_EQ(Eval("return kp.textmetrics.self_bleu({'a'}, 3, 'chars')"),
            "(error) tm.lua:1: kp.textmetrics.self_bleu: split must be 'words' or 'whitespace' (got 'chars')");
  EXPECT_EQ(Eval("return kp.textmetrics.meteor('a', 'b', {synonym = false})"),
            "(error) tm.lua:1: kp.textmetrics.meteor: unknown option 'synonym' (expected: synonyms)");
  EXPECT_EQ(Eval("return kp.textmetrics.meteor('a', 'b', {synonyms = 'no'})"),
            "(error) tm.lua:1: kp.textmetrics.meteor: option 'synonyms' must be a boolean");
}

TEST_F(TextMetricsLua, InvalidUtf8IsRefused) {
  EXPECT_EQ(Eval("return kp.textmetrics.rouge_n('a\\xff', 'b', 1)"),
            "(error) tm.lua:1: kp.textmetrics.rouge_n: argument #1 is not valid UTF-8");
  EXPECT_EQ(Eval("return kp.textmetrics.self_indel({'ok', '\\xc3'})"),
            "(error) tm.lua:1: kp.textmetrics.self_indel: argument #1[2] is not valid UTF-8");
  EXPECT_EQ(Eval("return kp.textmetrics.meteor({'a'}, {'\\xed\\xa0\\x80'}, {synonyms = false})"),
            "(error) tm.lua:1: kp.textmetrics.meteor: argument #2[1] is not valid UTF-8");
}

TEST_F(TextMetricsLua, HugeInputsAreChargedBeforeTheyRun) {
  // Two 40,000-word sentences: ROUGE-L's table would be 1.6e9 cells, charged before it is filled.
  const std::string big = "local s = string.rep('w ', 40000) ";
  EXPECT_EQ(Eval(big + "return kp.textmetrics.rouge_l(s, s, 'pltrdy')"),
            "(error) tm.lua:1: instruction budget of 100000000 exceeded");
  EXPECT_EQ(Eval("local s = kp.textmetrics.self_indel({'a', 'b'}) return s[1], s[2]"), "0.0 0.0");  // still usable
}

class TextMetricsLuaNoBudget : public TextMetricsLua {
 protected:
  static Limits Unlimited() {
    Limits l;
    l.instructions = 0;
    l.seconds = 0;
    return l;
  }
  TextMetricsLuaNoBudget() : TextMetricsLua(Unlimited()) {}
};

TEST_F(TextMetricsLuaNoBudget, TablesBeyondTheMemoryCapAreRefusedBeforeTheyAreMade) {
  EXPECT_EQ(Eval("local s = string.rep('w ', 40000) return kp.textmetrics.rouge_l(s, s, 'pltrdy')"),
            "(error) tm.lua:1: memory limit of 256 MiB exceeded (kp.textmetrics.rouge_l needs 6106 MiB)");
}

}  // namespace
}  // namespace kplab::host
