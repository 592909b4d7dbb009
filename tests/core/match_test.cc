// Rank arithmetic and matching rules, checked against values worked out by hand.
#include "kplab/match.h"

#include <gtest/gtest.h>

#include <algorithm>
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

// RunningRankSums (the rank and exact kernels read their cut-offs from it): by hand on the list above,
// then at every k of random lists of 0 to 600 flags (past the 512 ranks kept as a table) the very
// doubles HitsAt, PrecisionSumAt and DcgAt give; with null psum and dcg only the hits are written.
TEST(Match, RunningRankSumsAreEachSumAtEveryCutoff) {
  const std::vector<std::uint8_t> f = {1, 0, 1, 1, 0};
  int hits[6];
  double psum[6], dcg[6];
  RunningRankSums(f, hits, psum, dcg);
  EXPECT_EQ(std::vector<int>(hits, hits + 6), (std::vector<int>{0, 1, 1, 2, 3, 3}));
  EXPECT_DOUBLE_EQ(psum[3], 1 + 2.0 / 3);
  EXPECT_DOUBLE_EQ(psum[5], 1 + 2.0 / 3 + 3.0 / 4);
  EXPECT_DOUBLE_EQ(dcg[2], 1);
  EXPECT_DOUBLE_EQ(dcg[5], 1 + 0.5 + 1 / std::log2(5.0));
  std::uint64_t state = 12345;
  for (std::size_t n : {0, 1, 2, 7, 64, 511, 512, 513, 600}) {
    std::vector<std::uint8_t> flags(n);
    for (auto& x : flags) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      x = (state >> 60) < 5;
    }
    std::vector<int> h(n + 1);
    std::vector<double> p(n + 1), d(n + 1);
    RunningRankSums(flags, h.data(), p.data(), d.data());
    for (std::size_t k = 0; k <= n; ++k) {
      ASSERT_EQ(h[k], HitsAt(flags, k)) << n << " " << k;
      ASSERT_EQ(p[k], PrecisionSumAt(flags, k)) << n << " " << k;  // equal doubles, not near ones
      ASSERT_EQ(d[k], DcgAt(flags, k)) << n << " " << k;
    }
    std::vector<int> only(n + 1, -1);
    RunningRankSums(flags, only.data(), nullptr, nullptr);
    EXPECT_EQ(only, h);
  }
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
  // Tokens and stems alike: the ids twice, back to back, then the surface (Phrase::set_block).
  const std::span<TokenId> stored = g_arena.PhraseBlock(2 * ids.size(), key);
  std::copy(ids.begin(), ids.end(), stored.begin());
  std::copy(ids.begin(), ids.end(), stored.begin() + static_cast<std::ptrdiff_t>(ids.size()));
  p.set_block(stored, key.size());
  p.key = lex.Intern(key);
  p.set_blank(key.empty());
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

// Past 32 references ExactMatch looks each prediction's key up among the references' keys and
// alternative keys rather than comparing every pair (a document of 100,000 keyphrases took 38 s). The
// same flags: references r0..r39 (r7 with the alternative "alt seven"), predictions r5, x, alt seven, r39,
// r0 twice, r40 (no such reference) -> 1 0 1 1 1 1 0, by hand, and the same as some cell of each row of
// the pair matrix (ExactMatchPairs compares every pair).
TEST(Match, ExactMatchOfManyReferencesUsesEveryKeyAndAlternative) {
  Lexicon lex;
  std::vector<Keyphrase> refs_kp;
  for (int i = 0; i < 40; ++i) refs_kp.push_back(Make(lex, {"r", std::to_string(i).c_str()}));
  const Keyphrase alt = Make(lex, {"alt", "seven"});
  const TokenId alt_key = alt.key();
  KeyphraseExtra extra;
  extra.alt_keys = std::span<const TokenId>(&alt_key, 1);
  refs_kp[7].set_extra(&extra);
  const Keyphrase x = Make(lex, {"x"});
  const Keyphrase r40 = Make(lex, {"r", "40"});
  std::vector<const Keyphrase*> refs;
  for (const Keyphrase& k : refs_kp) refs.push_back(&k);
  const std::vector<const Keyphrase*> preds = {&refs_kp[5], &x, &alt, &refs_kp[39], &refs_kp[0], &refs_kp[0], &r40};
  const std::vector<std::uint8_t> flags = ExactMatch(preds, refs);
  EXPECT_EQ(flags, (std::vector<std::uint8_t>{1, 0, 1, 1, 1, 1, 0}));
  const std::vector<std::uint8_t> cells = ExactMatchPairs(preds, refs);
  for (std::size_t i = 0; i < preds.size(); ++i) {
    const bool any = std::any_of(cells.begin() + static_cast<std::ptrdiff_t>(i * refs.size()),
                                 cells.begin() + static_cast<std::ptrdiff_t>((i + 1) * refs.size()),
                                 [](std::uint8_t c) { return c != 0; });
    EXPECT_EQ(flags[i] != 0, any) << i;
  }
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

// AlphaNdcgFromMasks (the kernels' alpha-NDCG) by hand. References t0, t1, t2; alpha 0.5.
//   predictions cover {t0, t1}, {t0}, {t2}: gains 2, 0.5 (t0 seen once), 1
//     DCG@1 = 2, DCG@2 = 2 + 0.5/log2(3), DCG@3 = DCG@2 + 1/log2(4)
//   pool {t0}, {t1}, {t2}, {t0, t1}: the ideal takes {t0, t1} (gain 2), then {t2} (1; {t0} and {t1}
//   are down to 0.5), then {t0} before {t1} (a tie at 0.5: the lower index), then {t1} (0.5)
//     IDCG@1 = 2, @2 = 2 + 1/log2(3), @3 = @2 + 0.5/log2(4), @4 = @3 + 0.5/log2(5)
//   A cut-off beyond the predictions reads DCG@3, beyond the pool IDCG@4.
// alpha 1: a reference seen once gives nothing more. Predictions {t0}, {t0}: DCG 1, 1. Pool {t0},
// {t0}, {t1}: the ideal takes {t0} (1), then {t1} (1; the second {t0} gives 0), then 0.
TEST(Match, AlphaNdcgFromMasksByHand) {
  const double l3 = std::log2(3.0), l4 = std::log2(4.0), l5 = std::log2(5.0);
  const std::uint64_t preds[] = {0b011, 0b001, 0b100}, pool[] = {0b001, 0b010, 0b100, 0b011};
  const std::size_t ks[] = {1, 2, 3, 4, 10};
  std::vector<double> out(5, -1);
  ASSERT_TRUE(AlphaNdcgFromMasks(preds, pool, ks, 0.5, out));
  const double dcg2 = 2 + 0.5 / l3, dcg3 = dcg2 + 1 / l4;
  const double idcg2 = 2 + 1 / l3, idcg3 = idcg2 + 0.5 / l4, idcg4 = idcg3 + 0.5 / l5;
  EXPECT_DOUBLE_EQ(out[0], 1.0);
  EXPECT_DOUBLE_EQ(out[1], dcg2 / idcg2);
  EXPECT_DOUBLE_EQ(out[2], dcg3 / idcg3);
  EXPECT_DOUBLE_EQ(out[3], dcg3 / idcg4);
  EXPECT_DOUBLE_EQ(out[4], dcg3 / idcg4);

  const std::uint64_t repeats[] = {0b01, 0b01}, pool1[] = {0b01, 0b01, 0b10};
  const std::size_t ks1[] = {1, 2, 3};
  std::vector<double> one(3, -1);
  ASSERT_TRUE(AlphaNdcgFromMasks(repeats, pool1, ks1, 1.0, one));
  EXPECT_DOUBLE_EQ(one[0], 1.0);
  EXPECT_DOUBLE_EQ(one[1], 1 / (1 + 1 / l3));
  EXPECT_DOUBLE_EQ(one[2], 1 / (1 + 1 / l3));

  // Nothing covered: 0, not NaN. More than 256 items: refused, out untouched.
  const std::uint64_t none[] = {0, 0};
  std::vector<double> zero(1, -1);
  const std::size_t k5[] = {5};
  ASSERT_TRUE(AlphaNdcgFromMasks(none, none, k5, 0.5, zero));
  EXPECT_EQ(zero[0], 0.0);
  const std::vector<std::uint64_t> many(257, 1);
  std::vector<double> untouched(1, -1);
  EXPECT_FALSE(AlphaNdcgFromMasks(many, none, k5, 0.5, untouched));
  EXPECT_FALSE(AlphaNdcgFromMasks(none, many, k5, 0.5, untouched));
  EXPECT_EQ(untouched[0], -1);
}

}  // namespace
}  // namespace kplab
