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
PhraseArena g_arena;  // the phrases' surfaces and ids

Keyphrase Make(Lexicon& lex, std::initializer_list<const char*> stems) {
  Phrase& p = g_phrases.emplace_back();
  std::string key;
  std::vector<TokenId> ids;
  for (const char* s : stems) {
    ids.push_back(lex.Intern(s));
    key += (key.empty() ? "" : " ") + std::string(s);
  }
  // Tokens and stems alike: the ids twice, back to back (Phrase::set_ids).
  const std::span<TokenId> stored = g_arena.Ids(2 * ids.size());
  std::copy(ids.begin(), ids.end(), stored.begin());
  std::copy(ids.begin(), ids.end(), stored.begin() + static_cast<std::ptrdiff_t>(ids.size()));
  p.set_ids(stored);
  p.key = lex.Intern(key);
  p.set_blank(key.empty());
  p.set_surface(g_arena.Copy(key));
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
  const TokenId alt_key = alt.key();
  KeyphraseExtra extra;
  extra.alt_keys = std::span<const TokenId>(&alt_key, 1);
  ref.set_extra(&extra);
  const Keyphrase* refs[] = {&ref};
  const Keyphrase* preds[] = {&alt};
  EXPECT_EQ(ExactMatch(preds, refs), (std::vector<std::uint8_t>{1}));
}

// kplab's alpha-NDCG (word pool) by hand, with few references (the bit-mask path, at most 64) and with
// 70 (the general path): references t1..tN; predictions t1, t1, t2 (a repeat), alpha 0.5.
//   gains in order: 1, (1 - 0.5)^1 = 0.5, 1 -> DCG@1 = 1, DCG@3 = 1 + 0.5/log2(3) + 1/log2(4)
//   ideal: three distinct references first -> IDCG@1 = 1, IDCG@3 = 1 + 1/log2(3) + 1/log2(4)
// A prediction outside the references ("zzz") covers nothing and adds a zero gain at its rank.
TEST(Match, AlphaNdcgWordPoolByHandFewAndManyReferences) {
  for (int n_refs : {5, 70}) {
    Lexicon lex;
    std::vector<Keyphrase> refs_kp;
    refs_kp.reserve(static_cast<std::size_t>(n_refs));
    std::vector<std::string> names;
    for (int i = 1; i <= n_refs; ++i) names.push_back("t" + std::to_string(i));
    for (const std::string& n : names) refs_kp.push_back(Make(lex, {n.c_str()}));
    std::vector<const Keyphrase*> refs;
    for (const Keyphrase& k : refs_kp) refs.push_back(&k);
    const Keyphrase t1 = Make(lex, {"t1"}), t2 = Make(lex, {"t2"}), zzz = Make(lex, {"zzz"});
    const Keyphrase* preds[] = {&t1, &t1, &t2};
    const std::size_t ks[] = {1, 3};
    const std::vector<double> got = AlphaNdcgWordPool(preds, refs, ks, 0.5);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_DOUBLE_EQ(got[0], 1.0) << n_refs;
    EXPECT_DOUBLE_EQ(got[1], (1 + 0.5 / std::log2(3.0) + 0.5) / (1 + 1 / std::log2(3.0) + 0.5)) << n_refs;
    const Keyphrase* with_miss[] = {&zzz, &t1, &t2};
    const std::vector<double> miss = AlphaNdcgWordPool(with_miss, refs, ks, 0.5);
    EXPECT_DOUBLE_EQ(miss[0], 0.0) << n_refs;
    EXPECT_DOUBLE_EQ(miss[1], (1 / std::log2(3.0) + 0.5) / (1 + 1 / std::log2(3.0) + 0.5)) << n_refs;
  }
}

}  // namespace
}  // namespace kplab
