// Homogeneity end to end: kp.homog from scripts, the homogeneity plugins (needs = {"pairs"}) on
// tests/data/homog/pairs, the reformulation filters against an independent Python peer, and the study
// script (fixture reformulations; KP20k on ../shared/data).
//
// tests/data/homog/pairs (Meng-2017 format) has six documents; gold (G) and predictions (P):
//   d1 G {neural network, deep learning, image classification, transfer learning}
//      P  neural networks; convolutional network; image classification
//   d2 G {neural network, deep learning, image classification, data augmentation}
//      P  neural network; image classifiers; transfer learning
//   d3 G {query expansion, web search}     P query expansion; search
//   d4 G {query expansion, web search}     P query expansion; search engine
//   d5 G {query expansion, information retrieval}   P retrieval
//   d6 G {neural network, deep learning}   P deep learning; neural network
// Gold Jaccard: (d1,d2) 3/5, (d1,d6) 2/4, (d2,d6) 2/4 (exact ties at theta 0.5), (d3,d4) 1 (identical,
// left out unless keep_identical), (d3,d5) = (d4,d5) = 1/3.
// Porter stems (nltk, /usr/bin/python3): networks -> network, convolutional -> convolut, image -> imag,
// classification -> classif, classifiers -> classifi, learning -> learn. So the predicted stem keys
// are d1 {neural network, convolut network, imag classif}, d2 {neural network, imag classifi,
// transfer learn}, d6 {deep learn, neural network}; their words d1 {neural, network, convolut, imag,
// classif} (5), d2 {neural, network, imag, classifi, transfer, learn} (6), d6 {deep, learn, neural,
// network} (4).
//   Hooper  (1,2) 1/(3+3-1) = 1/5   (1,6) 1/(3+2-1) = 1/4   (2,6) 1/4      mean 0.7/3
//   Rodgers (1,2) 3/(5+6-3) = 3/8   (1,6) 2/(5+4-2) = 2/7   (2,6) 3/(6+4-3) = 3/7   mean (3/8+5/7)/3
// With keep_identical the pair (d3,d4) adds Hooper 1/(2+2-1) = 1/3 ({queri expans} shared; search vs
// search engin differ) and Rodgers 3/4 ({queri, expans, search} of {.., engin}).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using kplab::test::Output;

class Homog : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_homog_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Output Run(const std::string& args) {
    return kplab::test::RunKplab(dir_, "KPLAB_DB=" + (dir_ / "runs.db").string() +
                                           " KPLAB_MODELS=" + (dir_ / "models").string(),
                                 args);
  }
  Output Script(const std::string& body) {
    const fs::path f = dir_ / "s.lua";
    std::ofstream(f) << body;
    return Run("run " + f.string());
  }
  // `kplab eval` of the pairs fixture; returns the JSON output.
  std::string Eval(const std::string& metrics, const std::string& extra = "") {
    Output o = Run("eval --dataset tests/data/homog/pairs --predictions tests/data/homog/pairs/predictions.txt "
                   "--metrics " + metrics + " --no-store --output json " + extra);
    EXPECT_EQ(o.code, 0) << o.err;
    return o.out;
  }
  static double Agg(const std::string& json, const std::string& name) {
    const auto at = json.find("\"" + name + "\": ");
    if (at == std::string::npos) return std::nan("");
    return std::strtod(json.c_str() + at + name.size() + 4, nullptr);
  }

  fs::path dir_;
};

TEST_F(Homog, LuaCpWorkedExampleAndErrors) {
  // The paper's example (section 3.1): 2 of 3 keyphrases, 6 of 7 words with the size of one list as
  // denominator; the Jaccard (union) form gives 2/4 and 6/8. Stemming makes "networks" = "network".
  Output o = Script(R"(
local a = {"natural language processing", "homogeneity evaluation", "keyphrase generation"}
local b = {"natural language processing", "homogeneity evaluation", "text generation"}
print(string.format("%.17g %.17g", kp.homog.cp(a, b, {denominator = "max"})))
print(string.format("%.17g %.17g", kp.homog.cp(a, b)))
print(string.format("%.17g %.17g", kp.homog.cp({"Neural Networks"}, {"neural network"})))
print(string.format("%.17g %.17g", kp.homog.cp({"Neural Networks"}, {"neural network"}, {stem = false})))
print(string.format("%.17g", kp.homog.wer("a cat sat on mat", "the cat sat on the mat")))
print(string.format("%.17g", kp.homog.rouge1("a cat sat on mat", "the cat sat on the mat")))
)");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out,
            "0.66666666666666663 0.8571428571428571\n"  // 2/3, 6/7
            "0.5 0.75\n"                                 // 2/4, 6/8
            "1 1\n"
            "0 0.33333333333333331\n"  // {neural, networks} vs {neural, network}: 1 of 3 words
            "0.33333333333333331\n"  // 2/6
            "0.66666666666666663\n");  // 4/6

  o = Script(R"(
local pairs, st = kp.homog.mine_pairs({{"x", "y", "z"}, {"x", "y", "w"}, {"q"}, {"x", "y", "z", "w"}}, {theta = 0.5})
local out = {}
for _, p in ipairs(pairs) do out[#out + 1] = p.a .. "-" .. p.b .. ":" .. p.shared .. "/" .. p.union end
print(table.concat(out, " "), st.sets, st.pairs)
kp.homog.cp({"a"}, {"b"}, {denominator = "dice"})
)");
  // {x,y,z}-{x,y,w}: 2/4; {x,y,z}-{x,y,z,w}: 3/4; {x,y,w}-{x,y,z,w}: 3/4; {q} shares nothing.
  EXPECT_EQ(o.out, "1-2:2/4 1-4:3/4 2-4:3/4\t4\t3\n");
  EXPECT_NE(o.err.find("s.lua:6: kp.homog.cp: option 'denominator' is 'dice' (expected union, max or mean)"),
            std::string::npos)
      << o.err;
  o = Script("kp.homog.mine_pairs({{'a'}}, {theta = 0})\n");
  EXPECT_NE(o.err.find("s.lua:1: kp.homog.mine_pairs: pair mining: theta must be in (0, 1] (got 0)"),
            std::string::npos)
      << o.err;
}

// kp.homog.mine_pairs's partition = {p, n} (1-based p). The strings are numbered by byte order (q w x
// y z) and have document frequencies q 1, w 2, x 3, y 3, z 2, so the token order (df, then id) is
// q w z x y, ranks 0..4. The pairs' rarest shared tokens: 1-2 {x, y} -> x, rank 3; 1-4 {x, y, z} -> z,
// rank 2; 2-4 {x, y, w} -> w, rank 1. Rank r belongs to 0-based partition r mod n, Lua's p = r mod n + 1:
// n = 2: rank 3 -> p 2, rank 2 -> p 1, rank 1 -> p 2; n = 3: rank 3 -> p 1, rank 2 -> p 3, rank 1 -> p 2.
TEST_F(Homog, MinePairsPartitionsByHand) {
  Output o = Script(R"(
local sets = {{"x", "y", "z"}, {"x", "y", "w"}, {"q"}, {"x", "y", "z", "w"}}
for _, n in ipairs({1, 2, 3}) do
  for p = 1, n do
    local pairs = kp.homog.mine_pairs(sets, {theta = 0.5, partition = {p, n}})
    local out = {}
    for _, q in ipairs(pairs) do out[#out + 1] = q.a .. "-" .. q.b end
    print(p .. "/" .. n, table.concat(out, " "))
  end
end
)");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out,
            "1/1\t1-2 1-4 2-4\n"
            "1/2\t1-4\n2/2\t1-2 2-4\n"
            "1/3\t1-2\n2/3\t2-4\n3/3\t1-4\n");
  const std::string must = "option 'partition' must be {p, n}: integers with 1 <= p <= n <= 4294967295 (got ";
  struct Case {
    const char* partition;
    std::string message;
  };
  const Case cases[] = {
      {"{0, 2}", must + "{0, 2})"},
      {"{3, 2}", must + "{3, 2})"},
      {"{1, 0}", must + "{1, 0})"},
      {"{-1, 2}", must + "{-1, 2})"},
      {"{1, 4294967296}", must + "{1, 4294967296})"},
      {"{1}", must + "1 element)"},
      {"{1, 2, 3}", must + "3 elements)"},
      {"{1.5, 2}", must + "a non-integer number at [1])"},
      {"{1, '2'}", must + "string at [2])"},
      {"3", must + "number)"},
  };
  for (const Case& c : cases) {
    o = Script(std::string("kp.homog.mine_pairs({{'a'}}, {partition = ") + c.partition + "})\n");
    EXPECT_EQ(o.code, 3) << c.partition;
    EXPECT_NE(o.err.find(std::string("s.lua:1: kp.homog.mine_pairs: ") + c.message), std::string::npos)
        << c.partition << "\n"
        << o.err;
  }
  o = Script("kp.homog.mine_pairs({{'a'}}, {method = 'naive', partition = {1, 2}})\n");
  EXPECT_NE(o.err.find("s.lua:1: kp.homog.mine_pairs: option 'partition' divides the join (expected method = "
                       "\"join\" with a partition)"),
            std::string::npos)
      << o.err;
  // {1, 1} is the whole join, naive or not.
  o = Script("print(#kp.homog.mine_pairs({{'a'}, {'a'}}, {method = 'naive', partition = {1, 1}}))\n");
  EXPECT_EQ(o.out, "1\n") << o.err;
}

// The union over 7 partitions of KP20k's gold (normalized strings, theta 0.5) is the single result:
// every pair once, with the same shared and union counts.
TEST_F(Homog, MinePairsPartitionUnionOnKp20k) {
  if (!fs::exists("../shared/data/kpg_testsets_meng2017/kp20k") &&
      !fs::exists(std::string(KPLAB_SOURCE_DIR) + "/../shared/data/kpg_testsets_meng2017/kp20k")) {
    GTEST_SKIP() << "no ../shared/data";
  }
  const fs::path f = dir_ / "union.lua";
  std::ofstream(f) << R"(
local gold = kp.load{dataset = "../shared/data/kpg_testsets_meng2017/kp20k"}
local whole = kp.homog.mine_pairs(gold, {theta = 0.5, stem = false})
local got, n = {}, 0
for p = 1, 7 do
  for _, q in ipairs(kp.homog.mine_pairs(gold, {theta = 0.5, stem = false, partition = {p, 7}})) do
    local key = q.a .. "-" .. q.b
    assert(got[key] == nil, "pair " .. key .. " in two partitions")
    got[key] = q.shared .. "/" .. q.union
    n = n + 1
  end
end
for _, q in ipairs(whole) do assert(got[q.a .. "-" .. q.b] == q.shared .. "/" .. q.union, q.a .. "-" .. q.b) end
print(#whole, n)
)";
  // 20,000 documents: more than the default 1e8 instructions of a call.
  Output o = Run("run --allow-read ../shared/data --instruction-limit 0 --time-limit 0 " + f.string());
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "549\t549\n");
}

TEST_F(Homog, SystemStatsPrmuByHand) {
  // Predictions against their own document's text (stems; one section each, "title . <eos> body"):
  //   d1 neural networks P; convolutional network M (network in the text, convolut not); image classification P
  //   d2 neural network P (text: neural networks); image classifiers M (imag yes, classifi no: the text
  //      has classification -> classif); transfer learning U (neither word in d2)
  //   d3 query expansion P, search P      d4 query expansion P, search engine M (engin absent)
  //   d5 retrieval P                      d6 deep learning P, neural network P
  // All: 13 predictions, P 9, R 0, M 3, U 1, absent 4. Documents 1 and 2: 6, P 3, M 2, U 1, absent 3.
  Output o = Script(R"(
local c = kp.load{dataset = "tests/data/homog/pairs", predictions = "tests/data/homog/pairs/predictions.txt"}
for _, docs in ipairs({false, {1, 2}}) do
  local s = kp.homog.system_stats(c, docs or nil)
  local n = s.prmu_counts
  print(s.docs, s.docs_with_text, s.preds, s.absent, n.P, n.R, n.M, n.U, string.format("%.17g %.17g", s.absent_share, s.prmu.P))
end
)");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "6\t6\t13\t4\t9\t0\t3\t1\t0.30769230769230771 0.69230769230769229\n"  // 4/13, 9/13
                   "2\t2\t6\t3\t3\t0\t2\t1\t0.5 0.5\n");
}

TEST_F(Homog, CorpusArgumentsAreChecked) {
  // A Corpus argument is recognised by its userdata type (bindings.h TestCorpus): a Document, a table
  // or a number in its place is named in the error; an empty corpus is a corpus without documents.
  const std::string load =
      "local c = kp.load{dataset = 'tests/data/homog/pairs', predictions = "
      "'tests/data/homog/pairs/predictions.txt'}\n";
  Output o = Script(load + "kp.homog.system_stats(c:doc(1))\n");
  EXPECT_NE(o.err.find("s.lua:2: kp.homog.system_stats: expected a Corpus (got userdata)"), std::string::npos)
      << o.err;
  o = Script(load + "kp.homog.genericity({}, {})\n");
  EXPECT_NE(o.err.find("s.lua:2: kp.homog.genericity: expected a Corpus (got table)"), std::string::npos) << o.err;
  o = Script(load + "kp.homog.mine_pairs(42)\n");
  EXPECT_NE(o.err.find("s.lua:2: kp.homog.mine_pairs: expected a Corpus (got number)"), std::string::npos) << o.err;
  // The corpus itself works, and the first document's pairs are found through it (d1-d2 3/5, d1-d6 2/4).
  o = Script(load + "local p = kp.homog.mine_pairs(c, {theta = 0.5})\n"
                    "print(#p, p[1].a .. '-' .. p[1].b, p[1].shared .. '/' .. p[1].union)\n");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out.substr(0, o.out.find('\t')), "4") << o.out;  // (1,2) (1,6) (2,6) (3,4)
  EXPECT_NE(o.out.find("1-2\t3/5"), std::string::npos) << o.out;
}

TEST_F(Homog, PluginHooperRodgersOnFixture) {
  const std::string json = Eval("homogeneity");
  EXPECT_NEAR(Agg(json, "all.cp_hooper"), 0.7 / 3, 1e-12) << json;
  EXPECT_NEAR(Agg(json, "all.cp_rodgers"), (3.0 / 8 + 5.0 / 7) / 3, 1e-12) << json;
  EXPECT_EQ(Agg(json, "all.cp_pairs"), 3) << json;
  // With the identical pair (d3, d4): four pairs.
  const std::string all = Eval("homogeneity", "--param homogeneity.keep_identical=true");
  EXPECT_NEAR(Agg(all, "all.cp_hooper"), (0.7 + 1.0 / 3) / 4, 1e-12) << all;
  EXPECT_NEAR(Agg(all, "all.cp_rodgers"), (3.0 / 8 + 5.0 / 7 + 3.0 / 4) / 4, 1e-12) << all;
  // theta = 0.6: only (d1, d2) is left.
  const std::string hi = Eval("homogeneity", "--param homogeneity.theta=0.6");
  EXPECT_NEAR(Agg(hi, "all.cp_hooper"), 0.2, 1e-12) << hi;
  EXPECT_EQ(Agg(hi, "all.cp_pairs"), 1) << hi;
  // A bad theta is the plugin's error, naming its file.
  Output o = Run("eval --dataset tests/data/homog/pairs --predictions tests/data/homog/pairs/predictions.txt "
                 "--metrics homogeneity --no-store --param homogeneity.theta=0");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("homogeneity.lua: pair mining: theta must be in (0, 1] (got 0)"), std::string::npos) << o.err;
}

// top_k caps each document's predictions (after the profile's dedup) before the CP. Pairs kept by
// default: (1,2), (1,6), (2,6); left out: (3,4), identical gold.
//   top_k = 1: d1 {neural network}, d2 {neural network}, d6 {deep learn}; d3 = d4 = {queri expans}.
//     Hooper and Rodgers: (1,2) 1, (1,6) 0, (2,6) 0 -> 1/3 each; with keep_identical (3,4) adds 1: 2/4.
//   top_k = 2: d1 {neural network, convolut network}, d2 {neural network, imag classifi}, d6 {deep learn,
//     neural network}. Hooper: every pair shares 1 of 3 -> 1/3. Rodgers: words d1 {neural, network,
//     convolut}, d2 {neural, network, imag, classifi}, d6 {deep, learn, neural, network}: (1,2) 2/5,
//     (1,6) 2/5, (2,6) 2/6 -> (2/5 + 2/5 + 1/3)/3 = 17/45.
//   top_k = 10 (more than any list) and "all": the uncapped values, 0.7/3 and (3/8 + 5/7)/3.
// all.cp_identical_pairs counts (3,4) whether it is kept or not: 1.
TEST_F(Homog, PluginTopKAndIdenticalPairsByHand) {
  std::string json = Eval("homogeneity", "--param homogeneity.top_k=1");
  EXPECT_NEAR(Agg(json, "all.cp_hooper"), 1.0 / 3, 1e-12) << json;
  EXPECT_NEAR(Agg(json, "all.cp_rodgers"), 1.0 / 3, 1e-12) << json;
  EXPECT_EQ(Agg(json, "all.cp_pairs"), 3) << json;
  EXPECT_EQ(Agg(json, "all.cp_identical_pairs"), 1) << json;
  json = Eval("homogeneity", "--param homogeneity.top_k=1 --param homogeneity.keep_identical=true");
  EXPECT_NEAR(Agg(json, "all.cp_hooper"), 0.5, 1e-12) << json;
  EXPECT_EQ(Agg(json, "all.cp_pairs"), 4) << json;
  EXPECT_EQ(Agg(json, "all.cp_identical_pairs"), 1) << json;
  // With --ci the pairs are resampled and the identical-gold count, a count of the run rather than of
  // its pairs, keeps its value with no interval (it once failed the run: "do not add up").
  {
    Output o = Run("eval --dataset tests/data/homog/pairs --predictions tests/data/homog/pairs/predictions.txt "
                   "--metrics homogeneity --no-store --ci --output csv --param homogeneity.top_k=1");
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_NE(o.out.find("\nall.cp_identical_pairs,1,,\n"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("\nall.cp_pairs,3,3,3\n"), std::string::npos) << o.out;
  }
  json = Eval("homogeneity", "--param homogeneity.top_k=2");
  EXPECT_NEAR(Agg(json, "all.cp_hooper"), 1.0 / 3, 1e-12) << json;
  EXPECT_NEAR(Agg(json, "all.cp_rodgers"), 17.0 / 45, 1e-12) << json;
  for (const char* k : {"10", "all"}) {
    json = Eval("homogeneity", std::string("--param homogeneity.top_k=") + k);
    EXPECT_NEAR(Agg(json, "all.cp_hooper"), 0.7 / 3, 1e-12) << json;
    EXPECT_NEAR(Agg(json, "all.cp_rodgers"), (3.0 / 8 + 5.0 / 7) / 3, 1e-12) << json;
  }
  // Hostile values fail the run before any document is scored, with the value named.
  for (const char* bad : {"0", "-1", "five", "1.5", "", " 2"}) {
    SCOPED_TRACE(bad);
    Output o = Run(std::string("eval --dataset tests/data/homog/pairs --predictions tests/data/homog/pairs/predictions.txt "
                               "--metrics homogeneity --no-store --param 'homogeneity.top_k=") + bad + "'");
    EXPECT_EQ(o.code, 3);
    EXPECT_NE(o.err.find(std::string("plugins/homogeneity.lua:39: parameter 'top_k' must be 'all' or an integer >= 1 (got '") + bad + "')"),
              std::string::npos) << o.err;
  }
}

TEST_F(Homog, SystemStatsTopKByHand) {
  // First two predictions of each document (PRMU as in SystemStatsPrmuByHand): d1 P M, d2 P M, d3 P P,
  // d4 P M, d5 P (it has one), d6 P P: 11 predictions, P 8, M 3, absent 3. First one: 6, all P.
  Output o = Script(R"(
local c = kp.load{dataset = "tests/data/homog/pairs", predictions = "tests/data/homog/pairs/predictions.txt"}
for _, k in ipairs({2, 1}) do
  local s = kp.homog.system_stats(c, nil, {top_k = k})
  local n = s.prmu_counts
  print(s.docs, s.preds, s.absent, n.P, n.R, n.M, n.U)
end
local s = kp.homog.system_stats(c, {1, 2}, {})  -- no top_k: every prediction
print(s.preds, s.absent)
)");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "6\t11\t3\t8\t0\t3\t0\n6\t6\t0\t6\t0\t0\t0\n6\t3\n");
  const std::string load =
      "local c = kp.load{dataset = 'tests/data/homog/pairs', predictions = "
      "'tests/data/homog/pairs/predictions.txt'}\n";
  o = Script(load + "kp.homog.system_stats(c, nil, {top_k = 0})\n");
  EXPECT_NE(o.err.find("s.lua:2: kp.homog.system_stats: option 'top_k' must be an integer >= 1 (got 0)"),
            std::string::npos) << o.err;
  o = Script(load + "kp.homog.system_stats(c, nil, {top_k = -3})\n");
  EXPECT_NE(o.err.find("option 'top_k' must be an integer >= 1 (got -3)"), std::string::npos) << o.err;
  o = Script(load + "kp.homog.system_stats(c, nil, {top_k = 1.5})\n");
  EXPECT_NE(o.err.find("kp.homog.system_stats: option 'top_k' must be an integer (got a non-integer number)"),
            std::string::npos) << o.err;
  o = Script(load + "kp.homog.system_stats(c, nil, {top_k = '5'})\n");
  EXPECT_NE(o.err.find("option 'top_k' must be an integer (got string)"), std::string::npos) << o.err;
  o = Script(load + "kp.homog.system_stats(c, nil, {topk = 5})\n");
  EXPECT_NE(o.err.find("kp.homog.system_stats: unknown option 'topk' (expected one of: top_k)"), std::string::npos)
      << o.err;
}

TEST_F(Homog, StudyScriptTopKAndIdenticalCounts) {
  // The pairs fixture as a dataset: 4 pairs mined at 0.5, (3,4) identical; kept (1,2), (1,6), (2,6) over
  // documents 1, 2, 6. Capped to 1 (values in PluginTopKAndIdenticalPairsByHand): Hooper = Rodgers =
  // 33.3 %; the first predictions of documents 1, 2, 6 are all present (P): % Gen. 0.0 over 3
  // predictions, and over every document's first prediction 0.0. Capped to 2 (by name): 33.3 / 37.8.
  const std::string base = "run scripts/analysis/homogeneity.lua --dataset tests/data/homog/pairs "
                           "--system fx=tests/data/homog/pairs/predictions.txt";
  Output o = Run(base + " --top-k 1");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("3 pairs from 3 unique documents"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("4 pairs found; 1 pairs with identical gold sets left out"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("| fx | 33.3 | 33.3 |"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("| fx | 1 | 3 | 0.0 | 3 | 100.0 | 0.0 | 0.0 | 0.0 | 0.0 | 6 |"), std::string::npos) << o.out;
  o = Run(base + " --top-k 1 --top-k fx=2");  // the system's own cap wins
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("| fx | 33.3 | 37.8 |"), std::string::npos) << o.out;
  // Uncapped: 0.7/3 = 23.3 %, (3/8 + 5/7)/3 = 36.3 %; documents 1, 2, 6 have 8 predictions, 3 absent.
  o = Run(base + " --keep-identical");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("4 pairs found; 1 pairs with identical gold sets kept"), std::string::npos) << o.out;
  o = Run(base);
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("| fx | 23.3 | 36.3 |"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("| fx | all | 3 | 37.5 | 8 |"), std::string::npos) << o.out;
  for (const char* bad : {"0", "-1", "five", "fx=0", "2.5", "fx="}) {
    SCOPED_TRACE(bad);
    o = Run(base + " --top-k '" + bad + "'");
    EXPECT_EQ(o.code, 3);  // a script's error
    EXPECT_NE(o.err.find(std::string("--top-k expects K or NAME=K with K an integer >= 1 (got '") + bad + "')"),
              std::string::npos) << o.err;
  }
  o = Run(base + " --top-k other=5");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("--top-k other=5: no --system or --reform-system is named 'other'"), std::string::npos) << o.err;
}

// tests/data/homog/vectors.tsv (10 dimensions, unit vectors on axes e1..e10):
//   neural network(s) = e1; convolutional network = .85 e1 + sqrt(1 - .85^2) e2; image classification = e3;
//   image classifiers = .9 e3 + sqrt(.19) e4; transfer learning = e5; deep learning = .5 e5 + sqrt(.75) e6;
//   data augmentation e7, query expansion e8, web search = search = e9, information retrieval = retrieval = e10.
// Cosines >= .8 between predictions of different documents: convolutional network ~ neural network (.85),
// image classification ~ image classifiers (.9); deep learning ~ transfer learning is .5.
class HomogEmbed : public Homog {
 protected:
  void SetUp() override {
    Homog::SetUp();
    Output o = Run("model import homog tests/data/homog/vectors.tsv --backend precomputed");
    ASSERT_EQ(o.code, 0) << o.err;
  }
};

TEST_F(HomogEmbed, SemanticSoftHooper) {
  // tau = .8: (1,2) matches nn-nn and ic-icf (conv-nn conflicts with nn-nn): m = 2, 2/(3+3-2) = 1/2;
  // (1,6): only one neural network in d6: m = 1, 1/4; (2,6): m = 1, 1/4. Mean (1/2 + 1/4 + 1/4)/3 = 1/3.
  std::string json = Eval("homogeneity_sem", "--model homog");
  EXPECT_NEAR(Agg(json, "all.semcp_hooper"), 1.0 / 3, 1e-9) << json;
  EXPECT_EQ(Agg(json, "all.semcp_pairs"), 3) << json;
  // tau above any cosine: exact stem-key matches only, which is Hooper's CP (0.7 / 3).
  json = Eval("homogeneity_sem", "--model homog --param homogeneity_sem.tau=2");
  EXPECT_NEAR(Agg(json, "all.semcp_hooper"), 0.7 / 3, 1e-12) << json;
}

TEST_F(HomogEmbed, VocabularyNormalised) {
  // Nearest gold keyphrase of each prediction (HNSW over the 8 gold phrases; exact at this size):
  //   d1: neural networks -> neural network, convolutional network -> neural network (.85),
  //       image classification -> itself                 => {neural network, image classification}
  //   d2: neural network, image classifiers -> image classification (.9), transfer learning
  //                                                      => {nn, ic, transfer learning}
  //   d6: deep learning, neural network                  => {deep learning, nn}
  // Hooper: (1,2) 2/3, (1,6) 1/3, (2,6) 1/4 -> mean 1.25/3.
  // Rodgers (stems): d1 {neural, network, imag, classif}, d2 {.. + transfer, learn}, d6 {deep, learn,
  // neural, network}: (1,2) 4/6, (1,6) 2/6, (2,6) 3/7 -> mean (1 + 3/7)/3.
  const std::string json = Eval("homogeneity_vocab", "--model homog");
  EXPECT_NEAR(Agg(json, "all.vcp_hooper"), 1.25 / 3, 1e-12) << json;
  EXPECT_NEAR(Agg(json, "all.vcp_rodgers"), (1 + 3.0 / 7) / 3, 1e-12) << json;
  EXPECT_EQ(Agg(json, "all.vcp_pairs"), 3) << json;
}

TEST_F(Homog, ReformulationsAgainstPythonPeer) {
  // /usr/bin/python3 tests/data/homog/peer_reformulations.py tests/data/homog/reformulations.jsonl:
  //   r1 25 26 3 0 0.440000000000 0.720000000000 keep
  //   r2 22 22 4 0 0.318181818182 0.772727272727 keep
  //   r3 20 21 3 2 0.700000000000 0.450000000000 drop
  //   r4 17 34 2 0 1.294117647059 0.941176470588 drop
  //   r5 21 21 4 0 0.333333333333 0.714285714286 keep
  //   r6 20 21 3 0 0.250000000000 0.900000000000 keep
  Output o = Script(R"(
local set = kp.homog.reformulations(assert(kp.read("tests/data/homog/reformulations.jsonl")), "r.jsonl")
for _, p in ipairs(set.pairs) do
  print(p.id, p.words_original, p.words_reformulation, p.lost, string.format("%.12f %.12f", p.wer, p.rouge1),
        p.keep and "keep" or "drop")
end
print(#set.original, #set.reformulation)
)");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out,
            "r1\t25\t26\t0\t0.440000000000 0.720000000000\tkeep\n"
            "r2\t22\t22\t0\t0.318181818182 0.772727272727\tkeep\n"
            "r3\t20\t21\t2\t0.700000000000 0.450000000000\tdrop\n"
            "r4\t17\t34\t0\t1.294117647059 0.941176470588\tdrop\n"
            "r5\t21\t21\t0\t0.333333333333 0.714285714286\tkeep\n"
            "r6\t20\t21\t0\t0.250000000000 0.900000000000\tkeep\n"
            "6\t6\n");
  // Bad input names the file and line.
  o = Script("kp.homog.reformulations('{\"original\": \"a\"}\\n', 'bad.jsonl')\n");
  EXPECT_NE(o.err.find("bad.jsonl:1: missing field \"reformulation\""), std::string::npos) << o.err;
}

TEST_F(Homog, StudyScriptReformulationTable) {
  // Fixture system (tests/data/homog/reform_pred_*.txt) on the four kept pairs r1, r2, r5, r6:
  //   r1 identical lists: Hooper 1, Rodgers 1
  //   r2 {imag segment, graph cut} vs {graph cut, medic imag}: 1/3; words {imag, segment, graph, cut} vs
  //      {graph, cut, medic, imag}: 3/5
  //   r5 {neural machin translat, attent} vs {machin translat, attent mechan}: 0; words 3/5
  //   r6 {parallel sort, graphic processor, gpu} vs {parallel sort, multicor processor}: 1/4; words 3/6
  // Means: Hooper (1 + 1/3 + 0 + 1/4)/4 = 39.6 %, Rodgers (1 + .6 + .6 + .5)/4 = 67.5 %. "gpu" is the one
  // absent prediction of 17: 5.9 %. scipy.stats.pearsonr([1, 1/3, 0, .25], [.72, 17/22, 15/21, .9]) =
  // -0.2469 (p .75), spearmanr = 0.2 (p .8).
  Output o = Run("run scripts/analysis/homogeneity.lua --reformulations tests/data/homog/reformulations.jsonl "
                 "--reform-system fixture=tests/data/homog/reform_pred_original.txt,"
                 "tests/data/homog/reform_pred_reformulation.txt");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("4 of 6 pairs pass the filters"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("| r3 | paraphrase | 20 | 21 | 70.0 | 45.0 | 2 present keyphrase(s) lost |"), std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("| Model | CP Hooper | CP Rodgers | % Gen. | Cor. ROUGE (Pearson) | Spearman |"),
            std::string::npos);
  EXPECT_NE(o.out.find("| fixture | 39.6 | 67.5 | 5.9 | -0.25 | 0.20 | all |"), std::string::npos) << o.out;
  // Capped to the first prediction: r1 {fuzzi cluster} both: 1, 1; r2 {imag segment} vs {graph cut}: 0,
  // 0; r5 {neural machin translat} vs {machin translat}: 0, words 2/3; r6 {parallel sort} both: 1, 1.
  // Hooper 2/4 = 50.0 %, Rodgers (1 + 0 + 2/3 + 1)/4 = 66.7 %; the 8 first predictions are all present.
  o = Run("run scripts/analysis/homogeneity.lua --reformulations tests/data/homog/reformulations.jsonl "
          "--reform-system fixture=tests/data/homog/reform_pred_original.txt,"
          "tests/data/homog/reform_pred_reformulation.txt --top-k fixture=1");
  ASSERT_EQ(o.code, 0) << o.err;
  const auto row = o.out.find("| fixture | 50.0 | 66.7 | 0.0 | ");
  ASSERT_NE(row, std::string::npos) << o.out;
  EXPECT_EQ(o.out.substr(o.out.find('\n', row) - 5, 5), "| 1 |") << o.out;
}

TEST_F(Homog, StudyOnKp20kSharedData) {
  const fs::path data = KPLAB_SHARED_DATA;
  if (!fs::exists(data / "kpg_testsets_meng2017/kp20k") || !fs::exists(data / "predictions")) {
    GTEST_SKIP() << "no ../shared/data";
  }
  const std::string cmd = std::string("cd ") + KPLAB_SOURCE_DIR + " && KPLAB=" + KPLAB_BINARY +
                          " KPLAB_SHARED_DATA=" + data.string() + " bash scripts/homogeneity_study.sh >" +
                          (dir_ / "out").string() + " 2>" + (dir_ / "err").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << kplab::test::Slurp(dir_ / "err");
  const std::string out = kplab::test::Slurp(dir_ / "out");
  // The independent peer (/usr/bin/python3 tests/data/homog/peer_pairs.py
  // ../shared/data/kpg_testsets_meng2017/kp20k/word_kp20k_testing_allkeywords.txt 0.5) prints
  //   found 549 identical 407 kept 142 docs 225 shared 218
  // (the paper, section 3.3.2: 145 pairs from 225 unique documents; its normalization is not published).
  EXPECT_NE(out.find("142 pairs from 225 unique documents"), std::string::npos) << out;
  EXPECT_NE(out.find("549 pairs found; 407 pairs with identical gold sets left out"), std::string::npos) << out;
  EXPECT_NE(out.find("| Model | CP Hooper | CP Rodgers |"), std::string::npos) << out;
  for (const char* seed : {"seed1234", "seed5678", "seed9527"}) {
    EXPECT_NE(out.find(std::string("| catSeqTG-2RF1 (") + seed + ") | "), std::string::npos) << out;
  }
  EXPECT_NE(out.find("| shared by a pair | 218 |"), std::string::npos) << out;
  // Without the drop: all 549 pairs, over 996 documents, the 407 identical ones named as kept.
  const std::string keep = std::string("cd ") + KPLAB_SOURCE_DIR + " && KPLAB=" + KPLAB_BINARY +
                           " KPLAB_SHARED_DATA=" + data.string() + " bash scripts/homogeneity_study.sh --keep-identical >" +
                           (dir_ / "out2").string() + " 2>" + (dir_ / "err2").string();
  ASSERT_EQ(std::system(keep.c_str()), 0) << kplab::test::Slurp(dir_ / "err2");
  const std::string all = kplab::test::Slurp(dir_ / "out2");
  EXPECT_NE(all.find("549 pairs from 996 unique documents"), std::string::npos) << all;
  EXPECT_NE(all.find("549 pairs found; 407 pairs with identical gold sets kept"), std::string::npos) << all;
}

}  // namespace
