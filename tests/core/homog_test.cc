// Homogeneity primitives (kplab/homog.h): consistency of a pair, exact pair mining, genericity,
// WER / ROUGE-1 and the reformulation filters and importer. Expected values are the paper's worked
// example, hand calculations written out below, nltk's edit_distance, or the naive all-pairs loop.
#include "kplab/homog.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "kplab/corpus.h"
#include "kplab/io.h"
#include "kplab/profile.h"
#include "kplab/text.h"
#include "temp_dir.h"

namespace kplab::homog {
namespace {

std::vector<Words> Phrases(std::initializer_list<const char*> list) {
  std::vector<Words> out;
  for (const char* p : list) out.push_back(SplitWhitespace(p));
  return out;
}

// The paper (section 3.1): "natural language processing, homogeneity evaluation, keyphrase generation"
// vs "natural language processing, homogeneity evaluation, text generation": 2 keyphrases of 3 are
// shared, 6 distinct words of 7. Each list has 3 keyphrases and 7 distinct words (natural language
// processing homogeneity evaluation + keyphrase/text + generation), so "of 3" / "of 7" is the size of
// either list (max or mean denominator); the union has 4 keyphrases and 8 words.
TEST(HomogCp, PaperWorkedExample) {
  const auto a = Phrases({"natural language processing", "homogeneity evaluation", "keyphrase generation"});
  const auto b = Phrases({"natural language processing", "homogeneity evaluation", "text generation"});
  Cp mx = Consistency(a, b, Denominator::kMax);
  EXPECT_DOUBLE_EQ(mx.hooper, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(mx.rodgers, 6.0 / 7.0);
  Cp mean = Consistency(a, b, Denominator::kMean);  // 2*2/(3+3), 2*6/(7+7)
  EXPECT_DOUBLE_EQ(mean.hooper, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(mean.rodgers, 6.0 / 7.0);
  Cp uni = Consistency(a, b, Denominator::kUnion);  // 2/(3+3-2), 6/(7+7-6)
  EXPECT_DOUBLE_EQ(uni.hooper, 2.0 / 4.0);
  EXPECT_DOUBLE_EQ(uni.rodgers, 6.0 / 8.0);
}

TEST(HomogCp, HandComputedUnequalLists) {
  // A = {neural network, deep learning, learning}, B = {neural network, network, learning rate,
  // learning, optimization}. Keyphrases: shared {neural network, learning} = 2; |A| = 3, |B| = 5,
  // union 6 -> 2/6; max 5 -> 2/5; mean 4 -> 2/4.
  // Words: A = {neural, network, deep, learning} (4), B = {neural, network, learning, rate,
  // optimization} (5); shared {neural, network, learning} = 3; union 6 -> 3/6; max -> 3/5;
  // mean -> 6/9.
  const auto a = Phrases({"neural network", "deep learning", "learning"});
  const auto b = Phrases({"neural network", "network", "learning rate", "learning", "optimization"});
  Cp u = Consistency(a, b);
  EXPECT_DOUBLE_EQ(u.hooper, 2.0 / 6.0);
  EXPECT_DOUBLE_EQ(u.rodgers, 3.0 / 6.0);
  Cp m = Consistency(a, b, Denominator::kMax);
  EXPECT_DOUBLE_EQ(m.hooper, 2.0 / 5.0);
  EXPECT_DOUBLE_EQ(m.rodgers, 3.0 / 5.0);
  Cp d = Consistency(a, b, Denominator::kMean);
  EXPECT_DOUBLE_EQ(d.hooper, 2.0 / 4.0);
  EXPECT_DOUBLE_EQ(d.rodgers, 6.0 / 9.0);
}

TEST(HomogCp, DuplicatesEmptyAndWordOrder) {
  // Duplicates count once; "network neural" is another keyphrase than "neural network" (Hooper)
  // but the same words (Rodgers).
  const auto a = Phrases({"neural network", "neural network"});
  const auto b = Phrases({"network neural"});
  Cp c = Consistency(a, b);
  EXPECT_DOUBLE_EQ(c.hooper, 0.0);
  EXPECT_DOUBLE_EQ(c.rodgers, 1.0);
  // One side empty: 0; both empty: undefined.
  const std::vector<Words> none;
  EXPECT_DOUBLE_EQ(Consistency(a, none).hooper, 0.0);
  EXPECT_TRUE(std::isnan(Consistency(none, none).hooper));
  EXPECT_TRUE(std::isnan(Consistency(none, none).rodgers));
  const std::vector<std::uint32_t> x = {3, 1, 3}, y = {1, 2};
  EXPECT_DOUBLE_EQ(SetConsistency(std::span<const std::uint32_t>(x), std::span<const std::uint32_t>(y),
                                  Denominator::kUnion),
                   1.0 / 3.0);  // {1,3} vs {1,2}: 1 shared of 3
}

TEST(HomogCp, DenominatorNames) {
  Denominator d;
  EXPECT_TRUE(ParseDenominator("max", &d));
  EXPECT_EQ(d, Denominator::kMax);
  EXPECT_FALSE(ParseDenominator("jaccard", &d));
  EXPECT_STREQ(DenominatorName(Denominator::kUnion), "union");
}

// ---- Pair mining --------------------------------------------------------------------------------------

TEST(HomogMine, HandComputedPairs) {
  // d0 {1,2,3}, d1 {1,2,4}, d2 {1,5}, d3 {6}, d4 {} , d5 {1,2,3,4}.
  // J(d0,d1) = 2/4 = 0.5 (a tie at theta 0.5: kept); J(d0,d5) = 3/4; J(d1,d5) = 3/4;
  // J(d0,d2) = 1/4; J(d2,d5) = 1/5; J(d1,d2) = 1/4; d3 shares nothing; d4 is empty (never paired).
  const std::vector<std::vector<std::uint32_t>> sets = {{1, 2, 3}, {1, 2, 4}, {1, 5}, {6}, {}, {1, 2, 3, 4}};
  auto half = MinePairs(sets, 0.5);
  ASSERT_TRUE(half.ok()) << half.error().message;
  ASSERT_EQ(half->size(), 3u);
  EXPECT_EQ((*half)[0], (DocPair{0, 1, 2, 4, 0.5}));
  EXPECT_EQ((*half)[1], (DocPair{0, 5, 3, 4, 0.75}));
  EXPECT_EQ((*half)[2], (DocPair{1, 5, 3, 4, 0.75}));
  auto q = MinePairs(sets, 0.25);  // adds the two 1/4 pairs (d0,d2), (d1,d2); not (d2,d5) at 1/5
  ASSERT_TRUE(q.ok());
  ASSERT_EQ(q->size(), 5u);
  EXPECT_EQ((*q)[1], (DocPair{0, 2, 1, 4, 0.25}));
  EXPECT_EQ((*q)[3], (DocPair{1, 2, 1, 4, 0.25}));
  auto one = MinePairs(sets, 1.0);
  ASSERT_TRUE(one.ok());
  EXPECT_TRUE(one->empty());
  EXPECT_FALSE(MinePairs(sets, 0.0).ok());
  EXPECT_FALSE(MinePairs(sets, 1.5).ok());
  EXPECT_FALSE(MinePairsNaive(sets, std::nan("")).ok());
}

TEST(HomogMine, IdenticalSetsAtThetaOne) {
  const std::vector<std::vector<std::uint32_t>> sets = {{7, 8}, {8, 7, 7}, {7}, {7, 8, 9}, {9, 8, 7}};
  auto pairs = MinePairs(sets, 1.0);
  ASSERT_TRUE(pairs.ok());
  ASSERT_EQ(pairs->size(), 2u);  // {7,8} twice, {7,8,9} twice (duplicates in a set count once)
  EXPECT_EQ((*pairs)[0].a, 0u);
  EXPECT_EQ((*pairs)[0].b, 1u);
  EXPECT_EQ((*pairs)[1].a, 3u);
  EXPECT_EQ((*pairs)[1].b, 4u);
}

// Randomized: small vocabularies and sizes make many exact ties (J = 1/2, 1/3, 2/3, ...).
TEST(HomogMine, JoinEqualsNaiveRandomized) {
  std::mt19937 rng(12345);
  for (int round = 0; round < 200; ++round) {
    const int n = 1 + static_cast<int>(rng() % 60);
    const int vocab = 2 + static_cast<int>(rng() % 25);
    const int max_size = 1 + static_cast<int>(rng() % 8);
    std::vector<std::vector<std::uint32_t>> sets(n);
    for (auto& s : sets) {
      const int k = static_cast<int>(rng() % (max_size + 1));
      for (int i = 0; i < k; ++i) s.push_back(static_cast<std::uint32_t>(rng() % vocab));
    }
    // The same sets with sparse ids (far above the number of occurrences): the join's other id path.
    std::vector<std::vector<std::uint32_t>> sparse = sets;
    for (auto& s : sparse) {
      for (auto& t : s) t = t * 40000003u + 7u;
    }
    for (double theta : {0.1, 0.2, 0.25, 0.3, 1.0 / 3.0, 0.4, 0.5, 0.6, 2.0 / 3.0, 0.7, 0.75, 0.8, 0.9, 1.0}) {
      auto a = MinePairs(sets, theta);
      auto b = MinePairsNaive(sets, theta);
      ASSERT_TRUE(a.ok() && b.ok());
      ASSERT_EQ(*a, *b) << "round " << round << " theta " << theta;
      auto c = MinePairs(sparse, theta);
      ASSERT_TRUE(c.ok());
      ASSERT_EQ(*c, *b) << "sparse ids, round " << round << " theta " << theta;
    }
  }
}

std::vector<std::vector<std::uint32_t>> Kp20kGoldSets(const Corpus** keep = nullptr) {
  static std::optional<Corpus> corpus;
  if (!corpus) {
    auto ds = ImportDataset(std::string(KPLAB_SHARED_DATA) + "/kpg_testsets_meng2017/kp20k");
    if (!ds.ok()) return {};
    auto c = BuildCorpus(*ds, nullptr, *FindProfile("kplab"));
    if (!c.ok()) return {};
    corpus = std::move(*c);
  }
  if (keep) *keep = &*corpus;
  std::vector<std::vector<std::uint32_t>> sets;
  for (const auto& d : corpus->docs) {
    std::vector<std::uint32_t> s;
    for (const auto& r : d.refs) s.push_back(r.key());
    sets.push_back(std::move(s));
  }
  return sets;
}

// The exactness claim on the real data: all 20,000 KP20k gold sets, the join against the naive loop.
TEST(HomogMine, Kp20kJoinEqualsNaive) {
  if (!std::filesystem::exists(std::string(KPLAB_SHARED_DATA) + "/kpg_testsets_meng2017/kp20k")) {
    GTEST_SKIP() << "no ../shared/data";
  }
  const auto sets = Kp20kGoldSets();
  ASSERT_EQ(sets.size(), 20000u);
  // One naive pass at the lowest theta; the naive result at a higher theta is the subset that passes
  // the same predicate (PassesJaccard), so every theta is checked against the naive loop.
  MineStats ns;
  auto naive_low = MinePairsNaive(sets, 0.2, &ns);
  ASSERT_TRUE(naive_low.ok());
  for (double theta : {0.2, 0.3, 0.5, 2.0 / 3.0, 1.0}) {
    std::vector<DocPair> naive;
    for (const DocPair& p : *naive_low) {
      if (PassesJaccard(p.shared, p.uni, theta)) naive.push_back(p);
    }
    MineStats js;
    auto join = MinePairs(sets, theta, &js);
    ASSERT_TRUE(join.ok());
    EXPECT_EQ(*join, naive) << "theta " << theta;
    EXPECT_GT(join->size(), 0u);
    // The filters must prune: far fewer candidates than the 2e8 pairs the naive loop verifies.
    EXPECT_LT(js.candidates * 100, ns.candidates);
  }
}

// ---- Genericity -------------------------------------------------------------------------------------

TEST(HomogGenericity, HandComputed) {
  // Keyphrases A=1 (1 word), B=2 (2), C=3 (3), D=4 (1), E=5 (2), F=6 (1).
  // d0 {A,B,C}, d1 {A,B,D}, d2 {A,E}, d3 {F}. At theta 0.5 only (d0, d1) pairs (J = 2/4).
  // Collection: df A=3, B=2, C=D=E=F=1 -> mean df 9/6; words (1+2+3+1+2+1)/6 = 10/6.
  // Shared by the pair: {A, B} -> mean df (3+2)/2 = 2.5, words (1+2)/2 = 1.5; 2 documents.
  const std::vector<std::vector<std::uint32_t>> sets = {{1, 2, 3}, {1, 2, 4}, {1, 5}, {6}};
  auto pairs = MinePairs(sets, 0.5);
  ASSERT_TRUE(pairs.ok());
  ASSERT_EQ(pairs->size(), 1u);
  const std::size_t words[] = {0, 1, 2, 3, 1, 2, 1};
  GenericityReport g = ComputeGenericity(sets, *pairs, [&](std::uint32_t id) { return words[id]; });
  EXPECT_EQ(g.collection.distinct, 6u);
  EXPECT_DOUBLE_EQ(g.collection.mean_df, 9.0 / 6.0);
  EXPECT_DOUBLE_EQ(g.collection.mean_words, 10.0 / 6.0);
  EXPECT_EQ(g.shared.distinct, 2u);
  EXPECT_DOUBLE_EQ(g.shared.mean_df, 2.5);
  EXPECT_DOUBLE_EQ(g.shared.mean_words, 1.5);
  EXPECT_EQ(g.pair_docs, 2u);
  EXPECT_EQ(g.pairs, 1u);
}

// ---- WER, ROUGE-1, filters ---------------------------------------------------------------------------

TEST(HomogReform, WerAndRougeByHand) {
  // ref "the cat sat on the mat" (6 words), hyp "a cat sat on mat": substitute the->a, delete the
  // second "the" -> distance 2, WER 2/6. ROUGE-1 recall: ref counts the:2 cat sat on mat; the hyp has
  // no "the" -> overlap 4 of 6.
  const auto ref = SplitWhitespace("the cat sat on the mat");
  const auto hyp = SplitWhitespace("a cat sat on mat");
  EXPECT_DOUBLE_EQ(Wer(hyp, ref), 2.0 / 6.0);
  EXPECT_DOUBLE_EQ(Rouge1Recall(hyp, ref), 4.0 / 6.0);
  EXPECT_DOUBLE_EQ(Wer(ref, ref), 0.0);
  EXPECT_DOUBLE_EQ(Rouge1Recall(ref, ref), 1.0);
  const std::vector<std::string_view> none;
  EXPECT_DOUBLE_EQ(Wer(none, ref), 1.0);  // six deletions
  EXPECT_TRUE(std::isnan(Wer(hyp, none)));
  EXPECT_TRUE(std::isnan(Rouge1Recall(hyp, none)));
}

TEST(HomogReform, WerAgainstNltk) {
  // /usr/bin/python3: nltk.edit_distance(hyp.split(), ref.split()) == 10, len(ref) == 13; the clipped
  // unigram overlap (collections.Counter) is 10 (learning, for, source are lost).
  const auto ref = SplitWhitespace(
      "deep learning models for keyphrase generation predict absent keyphrases from the source text");
  const auto hyp = SplitWhitespace(
      "keyphrase generation with deep neural models can predict keyphrases absent from the text");
  EXPECT_DOUBLE_EQ(Wer(hyp, ref), 10.0 / 13.0);
  EXPECT_DOUBLE_EQ(Rouge1Recall(hyp, ref), 10.0 / 13.0);
}

TEST(HomogReform, Filters) {
  const bool all_ok[] = {true, true};
  const bool one_lost[] = {true, false};
  // 100 words: 90..110 pass (|d| <= 10), 89 and 111 do not.
  EXPECT_TRUE(FilterReformulation(all_ok, 100, 110).keep);
  EXPECT_TRUE(FilterReformulation(all_ok, 100, 90).keep);
  EXPECT_FALSE(FilterReformulation(all_ok, 100, 111).length_ok);
  EXPECT_FALSE(FilterReformulation(all_ok, 100, 89).keep);
  FilterVerdict v = FilterReformulation(one_lost, 100, 100);
  EXPECT_FALSE(v.keep);
  EXPECT_FALSE(v.keyphrases_ok);
  EXPECT_TRUE(v.length_ok);
  EXPECT_EQ(v.lost_keyphrases, 1u);
  // 30 words: 3 is exactly 10% (0.1 * 30 is 3.0000000000000004 in binary; 27 and 33 must pass).
  EXPECT_TRUE(FilterReformulation(all_ok, 30, 33).keep);
  EXPECT_TRUE(FilterReformulation(all_ok, 30, 27).keep);
  EXPECT_FALSE(FilterReformulation(all_ok, 30, 34).keep);
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(HomogReform, ImportFixture) {
  auto pairs = ImportReformulations(std::string(KPLAB_TEST_DATA) + "/homog/reformulations.jsonl");
  ASSERT_TRUE(pairs.ok()) << pairs.error().message;
  ASSERT_GE(pairs->size(), 4u);
  EXPECT_EQ((*pairs)[0].id, "r1");
  EXPECT_FALSE((*pairs)[0].keyphrases.empty());
}

TEST(HomogReform, ImportErrorsNameFileAndLine) {
  test::TempDir dir;
  const std::string f = dir / "r.jsonl";
  auto err = [&](const std::string& text) {
    WriteFile(f, text);
    auto r = ImportReformulations(f);
    return r.ok() ? std::string("OK") : r.error().message;
  };
  const std::string ok = R"({"id": "a", "original": "x y", "reformulation": "y x", "keyphrases": ["x"]})";
  EXPECT_EQ(err(ok + "\n{oops\n"), f + ":2: malformed JSON (a missing or extra comma, colon, brace, bracket or key) (expected one JSON object a line with \"original\", "
                                      "\"reformulation\" and \"keyphrases\")");
  EXPECT_EQ(err(ok + "\n\n" + R"({"original": "x", "keyphrases": []})"),
            f + ":3: missing field \"reformulation\" (expected one JSON object a line with \"original\", "
                "\"reformulation\" and \"keyphrases\")");
  EXPECT_EQ(err(R"({"original": "x", "reformulation": 3, "keyphrases": []})"),
            f + ":1: field \"reformulation\" is a number (expected a string)");
  EXPECT_EQ(err(R"({"original": "x", "reformulation": "y", "keyphrases": [1]})"),
            f + ":1: \"keyphrases\"[0] is a number (expected a string)");
  EXPECT_EQ(err(ok + "\n" + ok), f + ":2: duplicate id \"a\" (expected a unique id per pair)");
  EXPECT_EQ(err(R"({"original": "x", "reformulation": "y", "keyphrases": "a;b", "lang": "en"})"),
            f + ":1: unknown field \"lang\" (expected only id, original, reformulation, keyphrases, method)");
  EXPECT_EQ(err(""), f + ": no pairs (expected at least one line)");
  auto missing = ImportReformulations(dir / "nope.jsonl");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("no such file"), std::string::npos);
}

}  // namespace
}  // namespace kplab::homog
