// Rank arithmetic and matching rules, checked against values worked out by hand.
#include "kplab/match.h"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>

namespace kplab {
namespace {

TEST(Match, HitsPrecisionSumDcg) {
  const std::vector<std::uint8_t> f = {1, 0, 1, 1, 0};
  EXPECT_EQ(HitsAt(f, 0), 0);
  EXPECT_EQ(HitsAt(f, 3), 2);
  EXPECT_EQ(HitsAt(f, 99), 3);
  // Hits at ranks 1, 3, 4: P@1 = 1, P@3 = 2/3, P@4 = 3/4.
  EXPECT_DOUBLE_EQ(PrecisionSumAt(f, 5), 1 + 2.0 / 3 + 3.0 / 4);
  EXPECT_DOUBLE_EQ(PrecisionSumAt(f, 3), 1 + 2.0 / 3);
  // DCG@5 = 1/log2(2) + 1/log2(4) + 1/log2(5).
  EXPECT_DOUBLE_EQ(DcgAt(f, 5), 1 + 0.5 + 1 / std::log2(5.0));
  EXPECT_DOUBLE_EQ(IdealDcgAt(3, 5), 1 + 1 / std::log2(3.0) + 0.5);
  EXPECT_DOUBLE_EQ(IdealDcgAt(3, 2), 1 + 1 / std::log2(3.0));
  EXPECT_EQ(FirstHit(f), 1);
  EXPECT_EQ(FirstHit(std::vector<std::uint8_t>{0, 0, 1}), 3);
  EXPECT_EQ(FirstHit(std::vector<std::uint8_t>{0, 0}), 0);
}

TEST(Match, AlphaNdcgByHand) {
  // Two predictions, two references; prediction 1 covers both, prediction 2 covers reference 1.
  // alpha = 0.5. Ranking (1, 2): gains 2 and 0.5 -> DCG = 2 + 0.5/log2(3). Greedy ideal picks the same.
  const std::vector<std::uint8_t> cover = {1, 1, 1, 0};
  EXPECT_DOUBLE_EQ(AlphaNdcgAt(cover, 2, 2, 2, 0.5), 1.0);
  // Ranking (2, 1): gains 1, then ref1 again (0.5) + ref2 (1) = 1.5 -> DCG = 1 + 1.5/log2(3);
  // ideal as above: 2 + 0.5/log2(3).
  const std::vector<std::uint8_t> swapped = {1, 0, 1, 1};
  EXPECT_DOUBLE_EQ(AlphaNdcgAt(swapped, 2, 2, 2, 0.5),
                   (1 + 1.5 / std::log2(3.0)) / (2 + 0.5 / std::log2(3.0)));
  // At k = 1: DCG = 1, ideal = 2.
  EXPECT_DOUBLE_EQ(AlphaNdcgAt(swapped, 2, 2, 1, 0.5), 0.5);
  EXPECT_DOUBLE_EQ(AlphaNdcgAt(swapped, 2, 0, 2, 0.5), 0.0);
}

std::deque<Phrase> g_phrases;

Keyphrase Make(Lexicon& lex, std::initializer_list<const char*> stems) {
  Phrase& p = g_phrases.emplace_back();
  std::string key;
  for (const char* s : stems) {
    p.stems.push_back(lex.Intern(s));
    p.tokens.push_back(p.stems.back());
    key += (key.empty() ? "" : " ") + std::string(s);
  }
  p.key = lex.Intern(key);
  p.dedup_key = p.key;
  p.blank = key.empty();
  p.surface = key;
  Keyphrase k;
  k.phrase = &p;
  return k;
}

TEST(Match, ExactSubstringAndZeschGurevych) {
  Lexicon lex;
  const Keyphrase neural = Make(lex, {"neural", "network"});
  const Keyphrase deep = Make(lex, {"deep", "neural", "network"});
  const Keyphrase net = Make(lex, {"network"});
  const Keyphrase work = Make(lex, {"work"});
  const Keyphrase empty = Make(lex, {});
  const Keyphrase* refs[] = {&neural};
  const Keyphrase* preds[] = {&neural, &deep, &net, &work, &empty};
  EXPECT_EQ(ExactMatch(preds, refs), (std::vector<std::uint8_t>{1, 0, 0, 0, 0}));
  // Characters: "work" is a substring of "neural network" (KPEval's approximate matching), and so is
  // the empty string (Python: '' in s).
  EXPECT_EQ(SubstringMatch(lex, preds, refs), (std::vector<std::uint8_t>{1, 1, 1, 1, 1}));
  // Words: "deep neural network" INCLUDES the reference, "network" is PARTOF it, "work" is no word of it.
  EXPECT_EQ(ZeschGurevychMatch(preds, refs), (std::vector<std::uint8_t>{1, 1, 1, 0, 0}));
}

TEST(Match, AlternativeKeysMatch) {
  Lexicon lex;
  Keyphrase ref = Make(lex, {"qualiti", "of", "servic"});
  const Keyphrase alt = Make(lex, {"servic", "qualiti"});
  ref.alt_keys.push_back(alt.key());
  const Keyphrase* refs[] = {&ref};
  const Keyphrase* preds[] = {&alt};
  EXPECT_EQ(ExactMatch(preds, refs), (std::vector<std::uint8_t>{1}));
}

}  // namespace
}  // namespace kplab
