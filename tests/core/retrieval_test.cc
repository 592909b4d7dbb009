// kplab/retrieval.h: KPEval's BM25 tokenizer, rank_bm25's BM25Okapi, placements.
#include "kplab/retrieval.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace kplab::retrieval {
namespace {

std::vector<std::string> Tok(std::string_view s) {
  std::vector<std::string> out;
  KpevalTokens(s, out);
  return out;
}

TEST(RetrievalTokens, LowerSplitStripPunctuationDropStopWords) {
  // text.lower().split(), token.strip(string.punctuation), then len > 0 and not a stop word.
  EXPECT_EQ(Tok("The Graph-Based  (RANKING), of <digit> nodes!"),
            (std::vector<std::string>{"graph-based", "ranking", "digit", "nodes"}));
  // Punctuation inside a token stays; a token of punctuation only disappears ("//" of KPEval's join).
  EXPECT_EQ(Tok("kp1 // kp2 a//b ... 'quoted'"), (std::vector<std::string>{"kp1", "kp2", "a//b", "quoted"}));
  // Python's lower() and split(): Unicode upper case, and Unicode whitespace (U+2003, U+001C) splits.
  // (Checked against KPEval's __bm25_tokenizer itself, as every expectation of this test.)
  EXPECT_EQ(Tok("\xC3\x89T\xC3\x89\xE2\x80\x83" "Caf\xC3\xA9\x1C" "X"),
            (std::vector<std::string>{"\xC3\xA9t\xC3\xA9", "caf\xC3\xA9", "x"}));
  // Non-ASCII punctuation is not string.punctuation: an em dash is a token of its own.
  EXPECT_EQ(Tok("a \xE2\x80\x94 b"), (std::vector<std::string>{"\xE2\x80\x94", "b"}));
  // "system" is one of scikit-learn's stop words ("a" too).
  EXPECT_EQ(Tok("operating system"), (std::vector<std::string>{"operating"}));
  EXPECT_TRUE(Tok("").empty());
  EXPECT_TRUE(Tok("  \t\n ").empty());
}

TEST(RetrievalTokens, StopWordsAreScikitLearns) {
  // tests/data/utility/sklearn_stop_words.txt: Debian python3-sklearn 1.2.1's list, printed by
  //   /usr/bin/python3 -c "from sklearn.feature_extraction import _stop_words as s;
  //                        print('\n'.join(sorted(s.ENGLISH_STOP_WORDS)))"
  std::ifstream in(std::string(KPLAB_SOURCE_DIR) + "/tests/data/utility/sklearn_stop_words.txt");
  ASSERT_TRUE(in.good());
  std::vector<std::string> expected;
  for (std::string line; std::getline(in, line);) expected.push_back(line);
  std::sort(expected.begin(), expected.end());
  ASSERT_EQ(expected.size(), 318u);
  const auto& ours = SklearnEnglishStopWords();
  ASSERT_EQ(ours.size(), expected.size());
  for (std::size_t i = 0; i < ours.size(); ++i) EXPECT_EQ(ours[i], expected[i]) << i;
  for (const auto& w : expected) EXPECT_TRUE(IsSklearnStopWord(w)) << w;
  EXPECT_FALSE(IsSklearnStopWord("graph"));
  EXPECT_FALSE(IsSklearnStopWord("System"));  // lower-casing is the tokenizer's job
}

// Three documents worked out by hand (and printed by rank_bm25 0.2.2 itself, the values in comments):
//   d0 = graph neural network            (length 3)
//   d1 = graph algorithm                 (length 2)
//   d2 = neural network network training (length 4)
// N = 3, avgdl = 9 / 3 = 3. df: graph, neural, network 2; algorithm, training 1.
// idf = ln(N - df + 0.5) - ln(df + 0.5): df 2 -> ln(1.5) - ln(2.5) = -0.5108256237659907,
// df 1 -> ln(2.5) - ln(1.5) = 0.5108256237659907. Mean idf over the 5 terms = (3 x -0.51.. + 2 x 0.51..)
// / 5 = -0.10216512475319814, so the "floor" eps = 0.25 x mean = -0.025541281188299535 replaces the
// three negative idfs (a negative floor: rank_bm25's rule as written).
// norm(d) = k1 (1 - b + b len / avgdl) = 1.5 (0.25 + 0.75 len / 3): d0 1.5, d1 1.125, d2 1.875.
// A term scores idf x tf (k1 + 1) / (tf + norm).
Bm25Index ThreeDocs() {
  auto ix = Bm25Index::Build({{"graph", "neural", "network"},
                              {"graph", "algorithm"},
                              {"neural", "network", "network", "training"}});
  EXPECT_TRUE(ix.ok());
  return *std::move(ix);
}

TEST(RetrievalBm25, HandComputedThreeDocuments) {
  const Bm25Index ix = ThreeDocs();
  EXPECT_EQ(ix.size(), 3u);
  EXPECT_EQ(ix.avgdl(), 3.0);
  const double neg = std::log(1.5) - std::log(2.5), pos = std::log(2.5) - std::log(1.5);
  EXPECT_DOUBLE_EQ(neg, -0.5108256237659907);
  EXPECT_EQ(ix.average_idf(), -0.10216512475319814);
  const double eps = 0.25 * ix.average_idf();
  EXPECT_EQ(eps, -0.025541281188299535);
  EXPECT_EQ(ix.Idf("graph"), eps);
  EXPECT_EQ(ix.Idf("training"), pos);
  EXPECT_EQ(ix.Idf("absent"), 0.0);

  std::vector<double> s;
  // neural network training: d0 = eps x 2.5/(1 + 1.5) x 2 terms = -0.05108256237659907; d1 = 0;
  // d2 = eps x 2.5/(1 + 1.875) + eps x 5/(2 + 1.875) + pos x 2.5/(1 + 1.875) = 0.38902989299429586.
  ix.Scores({"neural", "network", "training"}, s);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0], -0.05108256237659907);
  EXPECT_EQ(s[1], 0.0);
  EXPECT_EQ(s[2], 0.38902989299429586);
  EXPECT_EQ(s[2], ((0.0 + eps * (2.5 / (1 + 1.875))) + eps * (5.0 / (2 + 1.875))) + pos * (2.5 / (1 + 1.875)));
  // A repeated query term adds again: graph graph -> d0 2 x eps x 1 = -0.05108256237659907,
  // d1 2 x eps x 2.5/(1 + 1.125) = -0.060097132207763616.
  ix.Scores({"graph", "graph"}, s);
  EXPECT_EQ(s[0], -0.05108256237659907);
  EXPECT_EQ(s[1], -0.060097132207763616);
  EXPECT_EQ(s[2], 0.0);
  // algorithm training graph -> -0.025541281188299535, 0.5709227559737543, 0.44419619457912235.
  ix.Scores({"algorithm", "training", "graph"}, s);
  EXPECT_EQ(s[0], -0.025541281188299535);
  EXPECT_EQ(s[1], 0.5709227559737543);
  EXPECT_EQ(s[2], 0.44419619457912235);
  // Unknown and empty queries score every document 0.
  ix.Scores({"unknown"}, s);
  EXPECT_EQ(s, (std::vector<double>{0, 0, 0}));
  ix.Scores({}, s);
  EXPECT_EQ(s, (std::vector<double>{0, 0, 0}));
}

TEST(RetrievalBm25, PlacementsWithNegativeScoresAndTies) {
  const Bm25Index ix = ThreeDocs();
  std::vector<double> s;
  ix.Scores({"neural", "network", "training"}, s);  // -0.051, 0, 0.389
  Placement p = Place(s, 1);
  EXPECT_EQ(p.better, 1);
  EXPECT_EQ(p.ties, 0);
  p = Place(s, 0);
  EXPECT_EQ(p.better, 2);
  ix.Scores({"unknown"}, s);  // all 0: everything ties
  p = Place(s, 1);
  EXPECT_EQ(p.better, 0);
  EXPECT_EQ(p.ties, 2);
  EXPECT_EQ(p.ties_before, 1);
}

TEST(RetrievalBm25, EmptyCollectionsAreErrors) {
  auto none = Bm25Index::Build({});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message, "BM25 over an empty collection (expected at least one document)");
  auto blank = Bm25Index::Build({{}, {}});
  ASSERT_FALSE(blank.ok());
  EXPECT_NE(blank.error().message.find("without a single token"), std::string::npos);
  // One empty document among others is fine (length 0).
  auto some = Bm25Index::Build({{}, {"x"}, {"y"}});
  ASSERT_TRUE(some.ok());
  std::vector<double> s;
  some->Scores({"x"}, s);
  EXPECT_EQ(s[0], 0.0);
  EXPECT_GT(s[1], 0.0);  // idf ln(2.5) - ln(1.5)
}

// The sparse path (postings only, untouched documents at 0) gives the dense path's placements, on
// random collections with heavy ties and negative idfs.
TEST(RetrievalBm25, SparsePlacementsEqualDensePlacements) {
  std::mt19937 rng(7);
  for (int round = 0; round < 30; ++round) {
    const int n = 1 + static_cast<int>(rng() % 40), vocab = 1 + static_cast<int>(rng() % 6);
    std::vector<std::vector<std::string>> docs(static_cast<std::size_t>(n));
    for (auto& d : docs) {
      const int len = static_cast<int>(rng() % 5);
      for (int t = 0; t < len; ++t) d.push_back("t" + std::to_string(rng() % vocab));
    }
    docs[0].push_back("t0");
    auto ix = Bm25Index::Build(docs);
    ASSERT_TRUE(ix.ok());
    std::vector<double> dense, acc(ix->size(), 0.0);
    std::vector<std::uint32_t> touched;
    for (int q = 0; q < 10; ++q) {
      std::vector<std::string> query;
      for (int t = 0, len = static_cast<int>(rng() % 4); t < len; ++t) query.push_back("t" + std::to_string(rng() % (vocab + 1)));
      ix->Scores(query, dense);
      touched.clear();
      ix->ScoreSparse(query, acc, touched);
      for (std::size_t target = 0; target < ix->size(); ++target) {
        const Placement a = Place(dense, target), b = PlaceSparse(acc, touched, ix->size(), target);
        ASSERT_EQ(a.better, b.better) << round << " " << q << " " << target;
        ASSERT_EQ(a.ties, b.ties) << round << " " << q << " " << target;
        ASSERT_EQ(a.ties_before, b.ties_before) << round << " " << q << " " << target;
      }
      for (std::uint32_t d : touched) {
        EXPECT_EQ(acc[d], dense[d]);
        acc[d] = 0;
      }
    }
  }
}

TEST(RetrievalRank, TopNAndPlaceAmongKeepTheCandidatesOrder) {
  const std::vector<double> s{0.5, 0.9, 0.5, 0.1, 0.9};
  EXPECT_EQ(TopN(s, 3), (std::vector<std::size_t>{1, 4, 0}));
  EXPECT_EQ(TopN(s, 10), (std::vector<std::size_t>{1, 4, 0, 2, 3}));
  // Among candidates listed 4, 1, 2, 0: the target 1 ties with 4, which is listed before it.
  const Placement p = PlaceAmong(s, {4, 1, 2, 0}, 1);
  EXPECT_EQ(p.better, 0);
  EXPECT_EQ(p.ties, 1);
  EXPECT_EQ(p.ties_before, 1);
  const Placement q = PlaceAmong(s, {1, 4}, 1);
  EXPECT_EQ(q.ties_before, 0);
}

TEST(RetrievalRank, CosineScores) {
  const float q[] = {1, 0, 0};
  const float rows[] = {1, 0, 0, 0, 2, 0, -3, 0, 0, 0, 0, 0, 1, 1, 0};
  std::vector<double> out;
  CosineScores(q, rows, 5, 3, out);
  EXPECT_EQ(out[0], 1.0);
  EXPECT_EQ(out[1], 0.0);
  EXPECT_EQ(out[2], -1.0);
  EXPECT_EQ(out[3], 0.0);  // a zero row
  EXPECT_NEAR(out[4], std::sqrt(0.5), 1e-15);
}

// 100,000 documents and 1,000 queries finish (and do not scan every document per query).
TEST(RetrievalBm25, HundredThousandDocuments) {
  std::vector<std::vector<std::string>> docs(100000);
  for (std::size_t d = 0; d < docs.size(); ++d) {
    docs[d] = {"w" + std::to_string(d % 997), "v" + std::to_string(d % 101), "u" + std::to_string(d)};
  }
  auto ix = Bm25Index::Build(docs);
  ASSERT_TRUE(ix.ok());
  std::vector<double> acc(ix->size(), 0.0);
  std::vector<std::uint32_t> touched;
  for (int i = 0; i < 1000; ++i) {
    touched.clear();
    ix->ScoreSparse({"u" + std::to_string(i), "w" + std::to_string(i % 997)}, acc, touched);
    const Placement p = PlaceSparse(acc, touched, ix->size(), static_cast<std::size_t>(i));
    EXPECT_EQ(p.better, 0);  // its unique term puts it first
    for (std::uint32_t d : touched) acc[d] = 0;
  }
}

}  // namespace
}  // namespace kplab::retrieval
