// ROUGE, METEOR, BLEU and Indel counting (kplab/textmetrics.h) and the WordNet reader (kplab/wordnet.h).
// Expected values are worked out by hand in the comments, or are the worked examples of the reference
// implementations' own documentation (nltk's meteor_score docstring, rapidfuzz's Indel docstring); the
// peers' numbers on the real data are checked in tests/conformance (KpevalTextPeers).
#include "kplab/textmetrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "kplab/sha256.h"
#include "kplab/stem.h"
#include "kplab/text.h"
#include "kplab/utf8.h"
#include "kplab/wordnet.h"

namespace kplab::textmetrics {
namespace {

Units Of(std::vector<std::vector<std::string_view>> units) {
  Units u;
  for (const auto& t : units) u.Add(t);
  return u;
}

std::vector<std::vector<std::string>> Words(const Units& u) {
  std::vector<std::vector<std::string>> out;
  for (std::size_t k = 0; k < u.size(); ++k) out.emplace_back(u.unit(k).begin(), u.unit(k).end());
  return out;
}

std::vector<std::string_view> Toks(std::string_view s) { return SplitWhitespace(s); }

// WordNet is a test package (scripts/test.sh installs wordnet-base): a missing database fails here with
// the reader's own message rather than skipping the checks.
std::shared_ptr<const WordNet> Wn() {
  auto wn = WordNet::Shared(WordNet::DefaultDir());
  if (!wn) ADD_FAILURE() << wn.error().message;
  return wn ? *wn : nullptr;
}

TEST(PltrdySentences, CutsAtEveryPeriodAndKeepsABlankPieceAsOneEmptyWord) {
  // "a b. c  d . .e".split('.') = ['a b', ' c  d ', ' ', 'e']: all non-empty; ' ' becomes "" -> [""].
  EXPECT_EQ(Words(PltrdySentences("a b. c  d . .e")),
            (std::vector<std::vector<std::string>>{{"a", "b"}, {"c", "d"}, {""}, {"e"}}));
  // Empty pieces (between two periods, at the ends) are dropped: "." has no sentence at all.
  EXPECT_EQ(PltrdySentences("..").size(), 0u);
  EXPECT_EQ(PltrdySentences("").size(), 0u);
  // Python's whitespace: U+3000 separates words too.
  EXPECT_EQ(Words(PltrdySentences("x\u3000y")), (std::vector<std::vector<std::string>>{{"x", "y"}}));
}

TEST(RougeN, PltrdyCountsDistinctNgramsAcrossKeyphrasesWithTheirCommas) {
  // KPEval joins keyphrases with ", ": the comma stays glued to a word. hyp words: neural, "network,",
  // deep, learning; ref words: deep, "learning,", neural, network. Unigrams in common: neural, deep.
  const Units h = PltrdySentences("neural network, deep learning");
  const Units r = PltrdySentences("deep learning, neural network");
  const Overlap o1 = RougeN(h, r, 1, RougeStyle::kPltrdy);
  EXPECT_EQ(o1.hits, 2);
  EXPECT_EQ(o1.hyp, 4);
  EXPECT_EQ(o1.ref, 4);
  // Bigrams: (neural, network,) (network, deep) (deep, learning) vs (deep, learning,) (learning, neural)
  // (neural, network): none shared.
  const Overlap o2 = RougeN(h, r, 2, RougeStyle::kPltrdy);
  EXPECT_EQ(o2.hits, 0);
  EXPECT_EQ(o2.hyp, 3);
  EXPECT_EQ(o2.ref, 3);
}

TEST(RougeN, LinCountsInsideKeyphrasesWithClippedCounts) {
  const Units h = Of({{"neural", "network"}, {"deep", "learning"}});
  const Units r = Of({{"deep", "learning"}, {"neural", "network"}});
  const Overlap o2 = RougeN(h, r, 2, RougeStyle::kLin);
  EXPECT_EQ(o2.hits, 2);  // no bigram crosses a keyphrase: (neural network), (deep learning) on both sides
  EXPECT_EQ(o2.hyp, 2);
  EXPECT_EQ(o2.ref, 2);
  // hyp [a a b], ref [a b] [a]: unigrams a:2 b:1 on both sides -> 3 hits; bigrams hyp (a a) (a b),
  // ref (a b) -> 1 hit of 2 and 1.
  const Units h2 = Of({{"a", "a", "b"}}), r2 = Of({{"a", "b"}, {"a"}});
  const Overlap u = RougeN(h2, r2, 1, RougeStyle::kLin);
  EXPECT_EQ(u.hits, 3);
  EXPECT_EQ(u.hyp, 3);
  EXPECT_EQ(u.ref, 3);
  const Overlap b = RougeN(h2, r2, 2, RougeStyle::kLin);
  EXPECT_EQ(b.hits, 1);
  EXPECT_EQ(b.hyp, 2);
  EXPECT_EQ(b.ref, 1);
  // pltrdy on "a a b" vs "a b. a": sets {a, b} both sides; bigrams {(a a), (a b)} vs {(a b), (b a)} --
  // (b a) crosses the sentence boundary.
  const Overlap pb = RougeN(PltrdySentences("a a b"), PltrdySentences("a b. a"), 2, RougeStyle::kPltrdy);
  EXPECT_EQ(pb.hits, 1);
  EXPECT_EQ(pb.hyp, 2);
  EXPECT_EQ(pb.ref, 2);
  // A unit shorter than n has no n-gram; nothing at all gives zeros.
  EXPECT_EQ(RougeN(Of({{"a"}}), Of({{"a"}}), 2, RougeStyle::kLin).hyp, 0);
  const Overlap none = RougeN(Units{}, Units{}, 1, RougeStyle::kLin);
  EXPECT_EQ(none.hits + none.hyp + none.ref, 0);
}

TEST(RougeL, PltrdyTracesOneLcsAndCountsItsDistinctWords) {
  // x = ref words [deep, learning,, neural, network], y = hyp words [neural, network,, deep, learning]:
  // LCS length 1. The trace from (4, 4): no equal pair and never a strictly longer LCS upwards until
  // (4, 1), where T[3][1] = 1 > T[4][0] = 0 moves up; (3, 1) takes "neural". Union {neural}: 1 of 4.
  const Overlap o = RougeL(PltrdySentences("neural network, deep learning"),
                           PltrdySentences("deep learning, neural network"), RougeStyle::kPltrdy);
  EXPECT_EQ(o.hits, 1);
  EXPECT_EQ(o.hyp, 4);
  EXPECT_EQ(o.ref, 4);
  // Distinct words: "a a b" has 2; the LCS with "a a" is [a, a] -> one distinct word.
  const Overlap d = RougeL(PltrdySentences("a a b"), PltrdySentences("a a"), RougeStyle::kPltrdy);
  EXPECT_EQ(d.hits, 1);
  EXPECT_EQ(d.hyp, 2);
  EXPECT_EQ(d.ref, 1);
}

TEST(RougeL, LinClipsUnionHitsByTheHypothesisCounts) {
  // Every keyphrase found: each reference unit's LCS with the matching hypothesis unit covers it.
  const Overlap full = RougeL(Of({{"neural", "network"}, {"deep", "learning"}}),
                              Of({{"deep", "learning"}, {"neural", "network"}}), RougeStyle::kLin);
  EXPECT_EQ(full.hits, 4);
  EXPECT_EQ(full.hyp, 4);
  EXPECT_EQ(full.ref, 4);
  // hyp [a b]; refs [a b], [a c]: union positions {a, b} of the first and {a} of the second; the second
  // a finds no hypothesis a left -> 2 hits (unclipped it would be 3, and precision 3/2).
  const Overlap clip = RougeL(Of({{"a", "b"}}), Of({{"a", "b"}, {"a", "c"}}), RougeStyle::kLin);
  EXPECT_EQ(clip.hits, 2);
  EXPECT_EQ(clip.hyp, 2);
  EXPECT_EQ(clip.ref, 4);
  // The union inside one reference unit: r = [a b c d], hyp units [a b], [c d] -> all four positions.
  EXPECT_EQ(RougeL(Of({{"a", "b"}, {"c", "d"}}), Of({{"a", "b", "c", "d"}}), RougeStyle::kLin).hits, 4);
  EXPECT_EQ(RougeLCells(Of({{"a", "b"}, {"c"}}), Of({{"x"}})), (3.0 + 2) * (1 + 1));
  EXPECT_EQ(RougeLTableCells(Of({{"a", "b"}, {"c"}}), Of({{"x"}})), 3.0 * 2);
}

TEST(MeteorAlign, StagesWalkTheHypothesisBackwardsAndCountChunksAsNltk) {
  // hyp "the cats sat on the mat", ref "on the mat the cat sat". Exact, hypothesis from its end, each
  // word taking the last remaining equal reference word: mat(5)->2, the(4)->3, on(3)->0, sat(2)->5,
  // the(0)->1; cats(1) is left. Stems: cats -> cat matches cat(4). Sorted by hypothesis:
  // (0,1) (1,4) (2,5) (3,0) (4,3) (5,2): adjacent in both only (1,4)-(2,5) -> 5 chunks of 6 matches.
  const auto h = Toks("the cats sat on the mat"), r = Toks("on the mat the cat sat");
  const MeteorAlignment a = MeteorAlign(h, r, nullptr);
  EXPECT_EQ(a.matches, 6);
  EXPECT_EQ(a.exact, 5);
  EXPECT_EQ(a.stem, 1);
  EXPECT_EQ(a.synonym, 0);
  EXPECT_EQ(a.chunks, 5);
  EXPECT_EQ(a.hyp_len, 6);
  EXPECT_EQ(a.ref_len, 6);
  // Upper case is lower-cased first (str.lower); nothing in common -> no match, no chunk.
  const auto up = Toks("THE Cat"), cat = Toks("the cat");
  EXPECT_EQ(MeteorAlign(up, cat, nullptr).exact, 2);
  const auto x = Toks("x y");
  const MeteorAlignment none = MeteorAlign(x, cat, nullptr);
  EXPECT_EQ(none.matches, 0);
  EXPECT_EQ(none.chunks, 0);
  EXPECT_EQ(MeteorAlign({}, cat, nullptr).hyp_len, 0);
}

TEST(MeteorAlign, SynonymsAreLookedUpForTheStemsNltkPassesOn) {
  auto wn = Wn();
  ASSERT_TRUE(wn);
  // help/aid: "aid" stems to itself and is a lemma of help's synsets (help.n.01: aid, assist,
  // assistance, help) -> a synonym match.
  const auto help = Toks("help"), aid = Toks("aid");
  EXPECT_EQ(MeteorAlign(help, aid, wn.get()).synonym, 1);
  // car/automobile: "automobile" is a lemma of car.n.01, but the reference reached the synonym stage as
  // its stem "automobil", which is no lemma: nltk 3.8's stage three compares stems, so no match.
  const auto car = Toks("car"), automobile = Toks("automobile");
  EXPECT_EQ(MeteorAlign(car, automobile, wn.get()).matches, 0);
  // Without WordNet the stage is skipped.
  EXPECT_EQ(MeteorAlign(help, aid, nullptr).matches, 0);
}

TEST(MeteorAlign, NltksDocstringExampleScores06944) {
  // nltk 3.8 meteor_score.single_meteor_score's docstring: round(score, 4) == 0.6944 (alpha 0.9,
  // beta 3, gamma 0.5: the formula of plugins/meteor.lua).
  auto wn = Wn();
  ASSERT_TRUE(wn);
  const auto hyp =
      Toks("It is a guide to action which ensures that the military always obeys the commands of the party");
  const auto ref = Toks("It is a guide to action that ensures that the military will forever heed Party commands");
  const MeteorAlignment a = MeteorAlign(hyp, ref, wn.get());
  const double p = static_cast<double>(a.matches) / static_cast<double>(a.hyp_len);
  const double r = static_cast<double>(a.matches) / static_cast<double>(a.ref_len);
  const double fmean = p * r / (0.9 * p + (1 - 0.9) * r);
  const double score = (1 - 0.5 * std::pow(static_cast<double>(a.chunks) / static_cast<double>(a.matches), 3)) * fmean;
  EXPECT_EQ(std::round(score * 10000) / 10000, 0.6944) << score;
}

TEST(WordNet, MorphyFollowsNltksExceptionsAndRules) {
  auto wn = Wn();
  ASSERT_TRUE(wn);
  // noun.exc lists "geese goose"; verb rules: "running" -> run (ing -> ""), runne? no: "run" is in the
  // verb index; the exception list has "ran run".
  EXPECT_EQ(wn->Morphy("geese", 'n'), (std::vector<std::string>{"goose"}));
  EXPECT_EQ(wn->Morphy("ran", 'v'), (std::vector<std::string>{"run"}));
  // "dogs": step 2 finds dog (s -> "").
  EXPECT_EQ(wn->Morphy("dogs", 'n'), (std::vector<std::string>{"dog"}));
  // An adverb has no rules; an unknown word nothing.
  EXPECT_TRUE(wn->Morphy("qqqzzz", 'n').empty());
  EXPECT_EQ(wn->Morphy("x", 'z').size(), 0u);
  // Step three applies the rules level by level until a level has a hit: dogsss -> dogss -> dogs -> dog.
  EXPECT_EQ(wn->Morphy("dogsss", 'n'), (std::vector<std::string>{"dog"}));
  // Hostile forms: 4000 s's shrink one level at a time until "sss" (a noun: nltk gives ['sss'] too);
  // "eseses..." branches three ways for verbs at every level, deduplicated, so both end at once.
  EXPECT_EQ(wn->Morphy(std::string(4000, 's'), 'n'), (std::vector<std::string>{"sss"}));
  std::string branchy;
  for (int i = 0; i < 300; ++i) branchy += "es";
  EXPECT_NO_THROW(wn->Morphy(branchy, 'v'));
}

TEST(WordNet, SynonymsDropMultiwordLemmasAndAdjectiveMarkers) {
  auto wn = Wn();
  ASSERT_TRUE(wn);
  const auto syn = wn->Synonyms("car");
  auto has = [&](std::string_view w) { return std::find(syn.begin(), syn.end(), w) != syn.end(); };
  EXPECT_TRUE(has("automobile"));
  EXPECT_TRUE(has("car"));
  EXPECT_FALSE(has("cable_car"));  // a lemma of car.n.02 with '_': multi-word, skipped
  EXPECT_TRUE(has("motorcar"));
  // Adjective markers: "galore(ip)" in data.adj is the lemma "galore".
  const auto g = wn->Synonyms("galore");
  EXPECT_NE(std::find(g.begin(), g.end(), "galore"), g.end());
  for (std::string_view w : g) EXPECT_EQ(w.find('('), std::string_view::npos) << w;
  // Upper case is lower-cased as synsets() does; no synsets -> nothing.
  EXPECT_EQ(wn->Synonyms("CAR"), syn);
  EXPECT_TRUE(wn->Synonyms("qqqzzz").empty());
  EXPECT_GT(wn->index_size(), 140000u);
}

// nltk's own synonym sets (tests/reference/gen_wordnet_golden.py: lemma names without '_' of
// wordnet.synsets(x) over Debian's WordNet) for every keyphrase word of the shared data and its stem,
// compared as SHA-256 digests of 100 words at a time.
TEST(WordNet, AgreesWithNltkOnSharedData) {
  namespace fs = std::filesystem;
  const std::string shared = std::string(KPLAB_SHARED_DATA) + "/";
  if (!fs::exists(shared + "kpg_testsets_meng2017")) GTEST_SKIP() << "no ../shared/data";
  auto wn = Wn();
  ASSERT_TRUE(wn);
  std::vector<std::string> files;
  for (const char* ds : {"inspec", "kp20k", "krapivin", "semeval"}) {
    files.push_back(shared + "kpg_testsets_meng2017/" + ds + "/word_" + ds + "_testing_allkeywords.txt");
    files.push_back(shared + "predictions/catSeqTG-2RF1/" + ds + "/seed1234.txt");
  }
  std::set<std::string> words;
  for (const std::string& f : files) {
    std::ifstream in(f);
    ASSERT_TRUE(in) << f;
    for (std::string line; std::getline(in, line);) {
      for (std::string_view piece : SplitOn(line, ";")) {
        for (std::string_view w : SplitWhitespace(piece)) words.emplace(w);
      }
    }
  }
  std::ifstream golden(std::string(KPLAB_TEST_DATA) + "/wordnet/synonyms_sha256.txt");
  std::vector<std::string> want;
  for (std::string line; std::getline(golden, line);) want.push_back(line);
  const PorterStemmer stemmer(PorterMode::kNltk);
  std::vector<std::string> chunk_words;
  std::string chunk;
  std::size_t k = 0, bad = 0;
  auto flush = [&] {
    const std::string got = Sha256Hex(chunk).substr(0, 16);
    if (k >= want.size() || got != want[k]) {
      if (++bad <= 3) ADD_FAILURE() << "words " << chunk_words.front() << " .. " << chunk_words.back() << ": " << chunk;
    }
    ++k;
    chunk.clear();
    chunk_words.clear();
  };
  for (const std::string& w : words) {
    for (const std::string& x : {w, stemmer.Stem(w)}) {
      chunk += x + "\t";
      const auto names = wn->Synonyms(x);
      for (std::size_t i = 0; i < names.size(); ++i) chunk += (i ? " " : "") + std::string(names[i]);
      chunk += "\n";
    }
    chunk_words.push_back(w);
    if (chunk_words.size() == 100) flush();
  }
  if (!chunk_words.empty()) flush();
  EXPECT_EQ(words.size(), 23872u);
  EXPECT_EQ(k, want.size());
  EXPECT_EQ(bad, 0u);
}

TEST(WordNet, AMissingDatabaseSaysWhatToInstall) {
  const std::string dir = ::testing::TempDir() + "/no_wordnet_here";
  auto wn = WordNet::Open(dir);
  ASSERT_FALSE(wn.ok());
  EXPECT_TRUE(wn.error().IsInput());
  EXPECT_NE(wn.error().message.find(dir + "/index.noun"), std::string::npos) << wn.error().message;
  EXPECT_NE(wn.error().message.find("scripts/setup.sh --extra wordnet"), std::string::npos) << wn.error().message;
  EXPECT_NE(wn.error().message.find("wordnet-base"), std::string::npos);
}

TEST(WordNet, AMalformedIndexLineIsRefusedWithItsFileAndLine) {
  auto wn = Wn();
  ASSERT_TRUE(wn);
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "bad_wordnet";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"index.noun", "index.verb", "index.adj", "index.adv", "data.noun", "data.verb", "data.adj",
                        "data.adv", "noun.exc", "verb.exc", "adj.exc", "adv.exc"}) {
    fs::copy_file(fs::path(WordNet::DefaultDir()) / f, dir / f);
  }
  {
    std::ofstream out(dir / "index.adv", std::ios::app);
    out << "broken r x\n";
  }
  auto bad = WordNet::Open(dir.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find((dir / "index.adv").string() + ":"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("malformed index line"), std::string::npos) << bad.error().message;
  fs::remove_all(dir);
}

// An index may name any offset a 32-bit number holds: one near 2^32 used to wrap the bounds check
// (off + 9 in 32 bits) and read 4 GiB past the data file (a segfault); it is a synset that is not there.
TEST(WordNet, AnOffsetNearTwoToThe32IsRefusedNotRead) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "wrapping_wordnet";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* pos : {"noun", "verb", "adj", "adv"}) {
    std::ofstream(dir / (std::string("index.") + pos)) << "";
    std::ofstream(dir / (std::string(pos) + ".exc")) << "";
    std::ofstream(dir / (std::string("data.") + pos)) << "00000000 x\n";
  }
  for (const char* off : {"4294967295", "4294967287", "4294967000"}) {
    std::ofstream(dir / "index.noun", std::ios::trunc) << "dog n 1 0 1 0 " << off << "\n";
    auto wn = WordNet::Open(dir.string());
    ASSERT_FALSE(wn.ok()) << off;
    EXPECT_NE(wn.error().message.find(std::string("no synset at offset ") + off), std::string::npos)
        << wn.error().message;
  }
  fs::remove_all(dir);
}

TEST(SentenceBleuCounts, ModifiedPrecisionAndClosestReferenceLength) {
  // hyp [a b c]; refs [a b d], [e]. Unigrams a, b found (c not): 2 of 3; bigrams (a b) of (a b), (b c):
  // 1 of 2; the trigram (a b c): 0 of 1. Reference lengths 3 and 1: the closest to 3 is 3.
  const auto h = Toks("a b c"), r1 = Toks("a b d"), r2 = Toks("e");
  const std::vector<std::span<const std::string_view>> refs = {r1, r2};
  const BleuCounts c = SentenceBleuCounts(h, refs, 3);
  EXPECT_EQ(c.num, (std::vector<std::int64_t>{2, 1, 0}));
  EXPECT_EQ(c.den, (std::vector<std::int64_t>{3, 2, 1}));
  EXPECT_EQ(c.hyp_len, 3);
  EXPECT_EQ(c.ref_len, 3);
  // Clipping: hyp [a a a] against [a a]: 2 of 3. A tie in length distance takes the shorter (2 vs 4
  // around 3). No n-gram of order 2 in a 1-word hypothesis: the denominator is max(1, 0) = 1.
  const auto aaa = Toks("a a a"), aa = Toks("a a"), four = Toks("a b c d"), one = Toks("a");
  const std::vector<std::span<const std::string_view>> refs2 = {four, aa};
  const BleuCounts k = SentenceBleuCounts(aaa, refs2, 2);
  EXPECT_EQ(k.num[0], 2);
  EXPECT_EQ(k.ref_len, 2);
  const BleuCounts s = SentenceBleuCounts(one, refs2, 2);
  EXPECT_EQ(s.den[1], 1);
  EXPECT_EQ(s.num[1], 0);
}

TEST(SelfBleuCounts, EqualTheCountsOfEachItemAgainstTheOthers) {
  // Item 0 against items 1 and 2 is the example above; item 2 ("e") has no unigram in the others.
  const Units items = Of({{"a", "b", "c"}, {"a", "b", "d"}, {"e"}});
  const auto c = SelfBleuCounts(items, 3);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].num, (std::vector<std::int64_t>{2, 1, 0}));
  EXPECT_EQ(c[1].num, (std::vector<std::int64_t>{2, 1, 0}));
  EXPECT_EQ(c[2].num, (std::vector<std::int64_t>{0, 0, 0}));
  EXPECT_EQ(c[2].den, (std::vector<std::int64_t>{1, 1, 1}));
  EXPECT_EQ(c[2].ref_len, 3);
  // A repeated item finds itself in its twin: counts of the largest other, not of itself.
  const Units twins = Of({{"x", "x"}, {"x", "x"}, {"x"}});
  const auto t = SelfBleuCounts(twins, 2);
  EXPECT_EQ(t[0].num, (std::vector<std::int64_t>{2, 1}));
  EXPECT_EQ(t[2].num, (std::vector<std::int64_t>{1, 0}));
  // The same as SentenceBleuCounts on a larger list, item by item.
  const Units many = Of({{"a", "b", "a", "c"}, {"b", "a"}, {"c", "c", "a", "b"}, {"a"}, {}, {"b", "a", "c"}});
  const auto all = SelfBleuCounts(many, 4);
  for (std::size_t i = 0; i < many.size(); ++i) {
    std::vector<std::span<const std::string_view>> others;
    for (std::size_t j = 0; j < many.size(); ++j) {
      if (j != i) others.push_back(many.unit(j));
    }
    const BleuCounts one = SentenceBleuCounts(many.unit(i), others, 4);
    EXPECT_EQ(all[i].num, one.num) << i;
    EXPECT_EQ(all[i].den, one.den) << i;
    EXPECT_EQ(all[i].ref_len, one.ref_len) << i;
    EXPECT_EQ(all[i].hyp_len, one.hyp_len) << i;
  }
}

std::u32string U32(std::string_view s) {
  std::u32string out;
  for (std::size_t i = 0; i < s.size();) out.push_back(DecodeUtf8(s, i));
  return out;
}

TEST(Indel, DistanceAndRapidfuzzsDocstringExamples) {
  // kitten/sitting: LCS "ittn" = 4 -> 6 + 7 - 8 = 5.
  EXPECT_EQ(IndelDistance(U32("kitten"), U32("sitting")), 5);
  // rapidfuzz: Indel.normalized_similarity("lewenstein", "levenshtein") = 0.85714285714285 -> with
  // lengths 10 + 11 = 21 the distance is 3.
  EXPECT_EQ(IndelDistance(U32("lewenstein"), U32("levenshtein")), 3);
  // fuzz.ratio("this is a test", "this is a test!") = (1 - 1/29) * 100.
  const std::vector<std::u32string> two = {U32("this is a test"), U32("this is a test!")};
  const auto sim = SelfIndelSimilarity(two);
  EXPECT_DOUBLE_EQ(sim[0] * 100, (1 - 1.0 / 29) * 100);
  EXPECT_DOUBLE_EQ(sim[1], sim[0]);
  // Code points, not bytes: "é" vs "e" differ by one code point each way.
  EXPECT_EQ(IndelDistance(U32("caf\u00e9"), U32("cafe")), 2);
  // Long strings cross the 64-bit words of the bit-parallel LCS: 150 a's vs 100 a's + "b" -> LCS 100.
  EXPECT_EQ(IndelDistance(U32(std::string(150, 'a')), U32(std::string(100, 'a') + "b")), 150 + 101 - 200);
  // A worked multi-word case against the plain dynamic programme.
  const std::string x = "the quick brown fox jumps over the lazy dog and keeps running through the field of grass";
  const std::string y = "a quick brown dog jumps over the lazy fox, then runs through fields of green grass!!";
  std::vector<std::vector<int>> t(x.size() + 1, std::vector<int>(y.size() + 1, 0));
  for (std::size_t i = 1; i <= x.size(); ++i) {
    for (std::size_t j = 1; j <= y.size(); ++j) {
      t[i][j] = x[i - 1] == y[j - 1] ? t[i - 1][j - 1] + 1 : std::max(t[i - 1][j], t[i][j - 1]);
    }
  }
  EXPECT_EQ(IndelDistance(U32(x), U32(y)), static_cast<std::int64_t>(x.size() + y.size()) - 2 * t[x.size()][y.size()]);
}

TEST(Indel, SelfSimilarityMeansOverTheOthersAndEmptyStrings) {
  // ["ab", "ab", ""]: sim(0,1) = 1; sim(0,2) = 1 - 2/2 = 0; rows: (1 + 0)/2, (1 + 0)/2, (0 + 0)/2.
  const std::vector<std::u32string> items = {U32("ab"), U32("ab"), U32("")};
  EXPECT_EQ(SelfIndelSimilarity(items), (std::vector<double>{0.5, 0.5, 0.0}));
  // Two empty strings are equal (rapidfuzz: distance 0 of maximum 0 -> similarity 1).
  const std::vector<std::u32string> empty = {U32(""), U32("")};
  EXPECT_EQ(SelfIndelSimilarity(empty), (std::vector<double>{1.0, 1.0}));
  EXPECT_TRUE(SelfIndelSimilarity(std::vector<std::u32string>{U32("x")}).empty());
  EXPECT_GT(SelfIndelCells(items), 0);
}

TEST(Indel, TenThousandItemsFinishAndCheckpointsSeeTheWork) {
  std::vector<std::u32string> items;
  for (int i = 0; i < 10000; ++i) items.push_back(U32("keyphrase number " + std::to_string(i % 977)));
  double seen = 0;
  const auto sim = SelfIndelSimilarity(items, [&](double w) { seen += w; });
  ASSERT_EQ(sim.size(), items.size());
  EXPECT_GT(seen, 0.5 * SelfIndelCells(items));
  EXPECT_LE(seen, SelfIndelCells(items) * 1.0001);
  for (double s : sim) ASSERT_TRUE(s > 0 && s < 1);
}

}  // namespace
}  // namespace kplab::textmetrics
