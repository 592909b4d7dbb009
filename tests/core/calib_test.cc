// Calibration core (kplab/calib.h) and the "tokens" prediction format. Expected values come from the
// paper's worked example (seed 001, Eq. 4-8), from hand calculations written out next to each check, and
// from the fixtures in tests/data/calib/ (made for these tests; their probabilities are chosen so the
// arithmetic is easy to do by hand).
#include "kplab/calib.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "kplab/corpus.h"
#include "kplab/io.h"
#include "kplab/profile.h"
#include "temp_dir.h"

namespace kplab::calib {
namespace {

const std::string kData = std::string(KPLAB_TEST_DATA) + "/calib/";

// The geothermal example (§4.1): p(geothermal) = 0.5 as one word-level token gives KPP = 0.5^-1 = 2
// (Eq. 4); as the subwords ('geo', 'thermal') with p = 0.625 and 0.8 (product 0.5, Eq. 5) KPP =
// 0.5^(-1/2) = sqrt(2) = 1.41 (Eq. 6); normalised by its one word, KPP-s = 0.5^-1 = 2 (Eq. 8).
TEST(CalibKpp, PaperGeothermalExample) {
  const std::vector<double> word = {std::log(0.5)};
  const std::vector<double> subwords = {std::log(0.625), std::log(0.8)};
  EXPECT_NEAR(Kpp(word), 2.0, 1e-12);                    // Eq. 4
  EXPECT_NEAR(Kpp(subwords), 1.41, 0.005);               // Eq. 6 as printed (two decimals)
  EXPECT_NEAR(Kpp(subwords), std::sqrt(2.0), 1e-12);     // the same, exactly
  EXPECT_NEAR(KppWords(subwords, 1), 2.0, 1e-12);        // Eq. 8
  EXPECT_NEAR(KppWords(word, 1), Kpp(word), 1e-15);      // word-level: KPP-s = KPP
  EXPECT_TRUE(std::isnan(Kpp({})));
  EXPECT_TRUE(std::isnan(KppWords(subwords, 0)));
}

TEST(CalibKpp, WordProbsMultiplySubwords) {
  TokenProbs t;
  t.logprobs = {std::log(0.625), std::log(0.8), std::log(0.3)};  // geo thermal ▁energy
  t.word_start = {1, 0, 1};
  const auto w = WordProbs(t);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NEAR(w[0], 0.5, 1e-12);  // 0.625 * 0.8
  EXPECT_NEAR(w[1], 0.3, 1e-12);
}

// Bins are (i/10, (i+1)/10]; 0 goes to the first bin, 1 to the last.
TEST(CalibEce, BinBoundaries) {
  EXPECT_EQ(BinIndex(0.0, 10), 0);
  EXPECT_EQ(BinIndex(0.05, 10), 0);
  EXPECT_EQ(BinIndex(0.1, 10), 0);
  EXPECT_EQ(BinIndex(0.1000001, 10), 1);
  EXPECT_EQ(BinIndex(0.3, 10), 2);
  EXPECT_EQ(BinIndex(0.7, 10), 6);
  EXPECT_EQ(BinIndex(0.95, 10), 9);
  EXPECT_EQ(BinIndex(1.0, 10), 9);
  EXPECT_EQ(BinIndex(1.5, 10), 9);
  EXPECT_EQ(BinIndex(0.5, 1), 0);
  // Far above 1 (found by fuzz_lua_api: kp.calib.bin(2^63) overflowed the int conversion): last bin.
  EXPECT_EQ(BinIndex(9.2233720368547758e18, 10), 9);
  EXPECT_EQ(BinIndex(1e308, 1000), 999);
}

// By hand, 10 bins:
//   bin (0.1, 0.2]: 0.15 (wrong), 0.18 (right)          acc 1/2, conf 0.165, |0.5 - 0.165| = 0.335
//   bin (0.5, 0.6]: 0.55 (right), 0.58 (wrong), 0.52 (right)  acc 2/3, conf 0.55, |2/3 - 0.55| = 0.35/3
//   bin (0.9, 1.0]: 0.95 (right)                         acc 1, conf 0.95, |1 - 0.95| = 0.05
//   ECE = 2/6 * 0.335 + 3/6 * 0.35/3 + 1/6 * 0.05 = (0.67 + 0.35 + 0.05) / 6 = 1.07 / 6
TEST(CalibEce, HandComputed) {
  const std::vector<double> conf = {0.15, 0.18, 0.55, 0.58, 0.52, 0.95};
  const std::vector<std::uint8_t> correct = {0, 1, 1, 0, 1, 1};
  auto r = ComputeReliability(conf, correct, 10);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->n, 6u);
  EXPECT_NEAR(r->ece, 1.07 / 6, 1e-12);
  ASSERT_EQ(r->bins.size(), 10u);
  EXPECT_EQ(r->bins[1].count, 2u);
  EXPECT_NEAR(r->bins[1].accuracy(), 0.5, 1e-15);
  EXPECT_NEAR(r->bins[1].confidence(), 0.165, 1e-15);
  EXPECT_EQ(r->bins[5].count, 3u);
  EXPECT_NEAR(r->bins[5].accuracy(), 2.0 / 3, 1e-15);
  EXPECT_NEAR(r->bins[5].confidence(), 0.55, 1e-15);
  EXPECT_EQ(r->bins[9].count, 1u);
  EXPECT_EQ(r->bins[0].count, 0u);
  EXPECT_TRUE(std::isnan(r->bins[0].accuracy()));
  EXPECT_DOUBLE_EQ(r->bins[5].lo, 0.5);
  EXPECT_DOUBLE_EQ(r->bins[5].hi, 0.6);
  // One bin: |mean accuracy - mean confidence| = |4/6 - 2.93/6| = 1.07/6 as well.
  EXPECT_NEAR(ComputeReliability(conf, correct, 1)->ece, 1.07 / 6, 1e-12);
}

TEST(CalibEce, Errors) {
  const std::vector<double> conf = {0.5, 0.2};
  const std::vector<std::uint8_t> one = {1};
  EXPECT_NE(ComputeReliability(conf, one, 10).error().message.find("2 confidences and 1"), std::string::npos);
  const std::vector<std::uint8_t> two = {1, 0};
  EXPECT_NE(ComputeReliability(conf, two, 0).error().message.find("bins must be >= 1"), std::string::npos);
  const std::vector<double> bad = {0.5, NAN};
  EXPECT_NE(ComputeReliability(bad, two, 10).error().message.find("confidence 2 is nan"), std::string::npos);
  auto empty = ComputeReliability({}, {}, 10);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(std::isnan(empty->ece));
}

// MCE, Brier and AURC worked out by hand on four keyphrases:
//   confidence 0.9 0.8 0.3 0.2, correct 1 0 1 0.
// Two equal-width bins (0, 0.5], (0.5, 1]: low {0.3 right, 0.2 wrong} acc 0.5 conf 0.25 gap 0.25; high
// {0.9 right, 0.8 wrong} acc 0.5 conf 0.85 gap 0.35. ECE = 0.5*0.25 + 0.5*0.35 = 0.3, MCE = 0.35.
// Brier = (0.1^2 + 0.8^2 + 0.7^2 + 0.2^2) / 4 = (0.01 + 0.64 + 0.49 + 0.04) / 4 = 0.295.
// Risk-coverage, most confident first (0.9 r, 0.8 w, 0.3 r, 0.2 w): risks 0/1, 1/2, 1/3, 2/4;
// AURC = (0 + 0.5 + 1/3 + 0.5) / 4 = 1/3.
TEST(CalibStats, HandComputedMceBrierAurc) {
  const std::vector<double> conf = {0.9, 0.8, 0.3, 0.2};
  const std::vector<std::uint8_t> correct = {1, 0, 1, 0};
  auto r = ComputeReliability(conf, correct, 2);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->ece, 0.3, 1e-12);
  EXPECT_NEAR(r->mce, 0.35, 1e-12);
  EXPECT_NEAR(*Brier(conf, correct), 0.295, 1e-12);
  auto rc = ComputeRiskCoverage(conf, correct);
  ASSERT_TRUE(rc.ok());
  EXPECT_NEAR(rc->aurc, 1.0 / 3, 1e-12);
  EXPECT_EQ(rc->order, (std::vector<std::size_t>{0, 1, 2, 3}));
  EXPECT_EQ(rc->coverage, (std::vector<double>{0.25, 0.5, 0.75, 1.0}));
  EXPECT_NEAR(rc->risk[2], 1.0 / 3, 1e-15);
  // Equal-mass, two bins: sorted 0.2 w, 0.3 r | 0.8 w, 0.9 r -- here the same bins as equal-width.
  auto m = ComputeReliability(conf, correct, 2, Binning::kMass);
  ASSERT_TRUE(m.ok());
  EXPECT_NEAR(m->ece, 0.3, 1e-12);
  EXPECT_EQ(m->bins[0].lo, 0.2);
  EXPECT_EQ(m->bins[0].hi, 0.3);
  EXPECT_EQ(m->bins[1].lo, 0.8);
  // Three equal-mass bins of four: ranks [0,1), [1,2), [2,4): {0.2 w} gap 0.2, {0.3 r} gap 0.7,
  // {0.8 w, 0.9 r} gap |0.5 - 0.85| = 0.35. ECE = 0.25*0.2 + 0.25*0.7 + 0.5*0.35 = 0.4, MCE = 0.7.
  auto m3 = ComputeReliability(conf, correct, 3, Binning::kMass);
  EXPECT_NEAR(m3->ece, 0.4, 1e-12);
  EXPECT_NEAR(m3->mce, 0.7, 1e-12);
  EXPECT_EQ(m3->bins[2].count, 2u);
  // Whole-sequence perplexity: p = 0.5, 0.5, 1 -> exp(-(2 ln 0.5)/3) = 2^(2/3).
  EXPECT_NEAR(SequencePerplexity(std::vector<double>{std::log(0.5), std::log(0.5), 0.0}), std::pow(2.0, 2.0 / 3), 1e-12);
  // Nothing to measure: NaN, not 0.
  EXPECT_TRUE(std::isnan(*Brier({}, {})));
  EXPECT_TRUE(std::isnan(ComputeRiskCoverage({}, {})->aurc));
  EXPECT_TRUE(std::isnan(ComputeReliability({}, {}, 3, Binning::kMass)->mce));
}

TEST(CalibStats, Errors) {
  const std::vector<double> conf = {0.5, 1.5};
  const std::vector<std::uint8_t> two = {1, 0}, one = {1};
  EXPECT_EQ(Brier(conf, two).error().message, "confidence 2 is 1.5 (expected a probability in [0, 1])");
  EXPECT_EQ(Brier(conf, one).error().message,
            "2 confidences and 1 correctness flags (expected one of each per keyphrase)");
  const std::vector<double> neg = {0.5, -0.1}, nan = {std::nan(""), 0.5};
  EXPECT_EQ(Brier(neg, two).error().message, "confidence 2 is -0.1 (expected a finite number >= 0)");
  EXPECT_EQ(ComputeRiskCoverage(nan, two).error().message, "confidence 1 is nan (expected a finite number >= 0)");
  EXPECT_EQ(ComputeRiskCoverage(conf, one).error().message,
            "2 confidences and 1 correctness flags (expected one of each per keyphrase)");
  EXPECT_TRUE(ComputeRiskCoverage(conf, two).ok());  // only the order of confidences matters
  EXPECT_EQ(ComputeReliability(neg, two, 0, Binning::kMass).error().message, "bins must be >= 1 (got 0)");
  EXPECT_EQ(ParseBinning("quantile").error().message,
            "unknown binning 'quantile' (expected 'width' for equal-width bins or 'mass' for equal-mass bins)");
  EXPECT_EQ(*ParseBinning("mass"), Binning::kMass);
  // The importer's rounding excess (a log-probability up to 1e-6) is a probability still.
  EXPECT_TRUE(Brier(std::vector<double>{std::exp(1e-6)}, std::vector<std::uint8_t>{1}).ok());
}

// Every statistic against numpy's values in tests/data/calib/stats_reference.txt, written by
// tests/reference/gen_calib_stats.py from the hand-made cases listed there.
TEST(CalibStats, MatchNumpyReference) {
  std::ifstream in(kData + "stats_reference.txt");
  ASSERT_TRUE(in) << kData + "stats_reference.txt";
  auto read_n = [&](std::size_t n) {
    std::vector<double> v(n);
    for (double& x : v) in >> x;
    return v;
  };
  auto expect_key = [&](const std::string& key) {
    std::string k;
    in >> k;
    EXPECT_EQ(k, key);
  };
  int cases = 0, seqs = 0;
  std::string word;
  while (in >> word) {
    if (word[0] == '#') {
      std::getline(in, word);
      continue;
    }
    if (word == "case") {
      std::string name;
      int bins = 0;
      std::size_t n = 0;
      in >> name >> bins >> n;
      SCOPED_TRACE(name);
      expect_key("conf");
      const std::vector<double> conf = read_n(n);
      expect_key("correct");
      std::vector<std::uint8_t> correct;
      for (double x : read_n(n)) correct.push_back(x != 0);
      auto value = [&](const std::string& key) {
        expect_key(key);
        double v = 0;
        in >> v;
        return v;
      };
      auto w = ComputeReliability(conf, correct, bins, Binning::kWidth);
      auto m = ComputeReliability(conf, correct, bins, Binning::kMass);
      ASSERT_TRUE(w.ok() && m.ok());
      EXPECT_NEAR(w->ece, value("ece_width"), 1e-12);
      EXPECT_NEAR(w->mce, value("mce_width"), 1e-12);
      EXPECT_NEAR(m->ece, value("ece_mass"), 1e-12);
      EXPECT_NEAR(m->mce, value("mce_mass"), 1e-12);
      expect_key("mass_counts");
      const std::vector<double> counts = read_n(static_cast<std::size_t>(bins));
      for (int b = 0; b < bins; ++b) EXPECT_EQ(static_cast<double>(m->bins[b].count), counts[b]) << "bin " << b;
      EXPECT_NEAR(*Brier(conf, correct), value("brier"), 1e-12);
      auto rc = ComputeRiskCoverage(conf, correct);
      ASSERT_TRUE(rc.ok());
      EXPECT_NEAR(rc->aurc, value("aurc"), 1e-12);
      expect_key("risk");
      const std::vector<double> risk = read_n(n);
      for (std::size_t i = 0; i < n; ++i) EXPECT_NEAR(rc->risk[i], risk[i], 1e-12) << "point " << i;
      expect_key("end");
      ++cases;
    } else if (word == "seq") {
      std::string name;
      std::size_t t = 0;
      in >> name >> t;
      const std::vector<double> lp = read_n(t);
      expect_key("ppl");
      double ppl = 0;
      in >> ppl;
      EXPECT_NEAR(SequencePerplexity(lp), ppl, 1e-12) << name;
      ++seqs;
    } else {
      FAIL() << "unexpected '" << word << "' in stats_reference.txt";
    }
  }
  EXPECT_EQ(cases, 7);
  EXPECT_EQ(seqs, 3);
}

TEST(CalibDetokenize, Schemes) {
  std::vector<std::uint8_t> starts;
  const std::vector<std::string> sp = {"\xE2\x96\x81geo", "thermal", "\xE2\x96\x81heat"};
  EXPECT_EQ(*Detokenize(sp, Subword::kSentencePiece, &starts), "geothermal heat");
  EXPECT_EQ(starts, (std::vector<std::uint8_t>{1, 0, 1}));
  const std::vector<std::string> wp = {"geo", "##thermal", "heat"};
  EXPECT_EQ(*Detokenize(wp, Subword::kWordPiece, &starts), "geothermal heat");
  EXPECT_EQ(starts, (std::vector<std::uint8_t>{1, 0, 1}));
  // Byte-level BPE: U+0120 'Ġ' is the byte 0x20 (a space); "Ã©" is U+00C3 U+00A9, the bytes C3 A9 =
  // UTF-8 "é" (both bytes are printable Latin-1, so they stand for themselves in GPT-2's alphabet).
  const std::vector<std::string> bpe = {"caf\xC3\x83\xC2\xA9", "\xC4\xA0" "au", "\xC4\xA0" "lait"};
  EXPECT_EQ(*Detokenize(bpe, Subword::kByteBpe, &starts), "caf\xC3\xA9 au lait");
  EXPECT_EQ(starts, (std::vector<std::uint8_t>{1, 1, 1}));
  const std::vector<std::string> words = {"heat", "pump"};
  EXPECT_EQ(*Detokenize(words, Subword::kNone, &starts), "heat pump");
  // U+0100 stands for byte 0x00 in GPT-2's alphabet, U+4E00 for nothing.
  const std::vector<std::string> bad = {"\xE4\xB8\x80"};
  EXPECT_NE(Detokenize(bad, Subword::kByteBpe, nullptr).error().message.find("U+4E00"), std::string::npos);
  const std::vector<std::string> half = {"\xC3\x83"};  // the lone byte C3: not UTF-8
  EXPECT_NE(Detokenize(half, Subword::kByteBpe, nullptr).error().message.find("not UTF-8"), std::string::npos);
  EXPECT_EQ(CountWords("geothermal heat  pump "), 3);
  EXPECT_EQ(CountWords(""), 0);
}

RawPredictions Import(const std::string& path) {
  auto r = ImportPredictions(path);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? std::move(r).value() : RawPredictions{};
}

TEST(CalibTokensFormat, ImportsSequenceFixture) {
  const RawPredictions p = Import(kData + "tokens.jsonl");
  EXPECT_EQ(p.format, "tokens");
  ASSERT_EQ(p.docs.size(), 2u);
  const RawPrediction& d1 = p.docs[0];
  EXPECT_EQ(d1.doc_id, "d1");
  EXPECT_FALSE(d1.one2set);
  EXPECT_EQ(d1.phrases, (std::vector<std::string>{"geothermal energy", "heat pump", "solar power"}));
  ASSERT_EQ(d1.token_probs.size(), 3u);
  EXPECT_EQ(d1.token_probs[0].tokens.size(), 3u);  // ▁geo thermal ▁energy; ';' excluded
  EXPECT_EQ(d1.token_probs[0].words, 2);
  // 0.625 * 0.8 * 0.605 = 0.3025 over 2 words: KPP-s = 0.3025^(-1/2) = 1/0.55.
  EXPECT_NEAR(KppWords(d1.token_probs[0].logprobs, d1.token_probs[0].words), 1 / 0.55, 1e-12);
  // d2 ends with "</s>" and "<pad>", both special: three keyphrases.
  EXPECT_EQ(p.docs[1].phrases, (std::vector<std::string>{"keyphrase generation", "neural network", "deep learning"}));
}

TEST(CalibTokensFormat, ImportsOne2SetFixture) {
  const RawPredictions p = Import(kData + "one2set.jsonl");
  ASSERT_EQ(p.docs.size(), 2u);
  EXPECT_TRUE(p.docs[0].one2set);
  // Null slots give no keyphrase.
  EXPECT_EQ(p.docs[0].phrases, (std::vector<std::string>{"keyphrase generation", "neural network"}));
  EXPECT_EQ(p.docs[1].phrases, (std::vector<std::string>{"geothermal"}));
  // ge ot her mal: 0.5 * 0.5 * 0.8 * 0.5 = 0.1; KPP (Eq. 3) = 0.1^(-1/4); one word: KPP-s = 10.
  const TokenProbs& g = p.docs[1].token_probs[0];
  EXPECT_NEAR(Kpp(g.logprobs), std::pow(0.1, -0.25), 1e-12);
  EXPECT_NEAR(KppWords(g.logprobs, g.words), 10.0, 1e-12);
}

// Whole-sequence log-probabilities keep delimiters and end tokens (d1: 10 tokens) and leave out the
// "padding" tokens (d2: 11 tokens, its final <pad> listed as padding).
TEST(CalibTokensFormat, KeepsTheWholeSequence) {
  const RawPredictions p = Import(kData + "tokens.jsonl");
  ASSERT_EQ(p.docs.size(), 2u);
  ASSERT_EQ(p.docs[0].sequence_logprobs.size(), 10u);
  EXPECT_EQ(p.docs[0].sequence_logprobs[3], std::log(0.99));  // the first ';'
  EXPECT_EQ(p.docs[0].sequence_logprobs[9], std::log(0.97));  // '</s>'
  EXPECT_EQ(p.docs[1].sequence_logprobs.size(), 10u);
  // d1: 0.625 0.8 0.605 0.99 0.95 0.95 0.9 0.35 0.35 0.97.
  double lp = 0;
  for (double q : {0.625, 0.8, 0.605, 0.99, 0.95, 0.95, 0.9, 0.35, 0.35, 0.97}) lp += std::log(q);
  EXPECT_NEAR(SequencePerplexity(p.docs[0].sequence_logprobs), std::exp(-lp / 10), 1e-12);
  // One2Set: slot after slot. d2: key phrase Ġgeneration </s> | <null> | neural Ġnetwork </s> <pad>,
  // nothing declared as padding: all 9 tokens.
  const RawPredictions s = Import(kData + "one2set.jsonl");
  EXPECT_EQ(s.docs[0].sequence_logprobs.size(), 9u);
}

// Each bad line yields FILE:LINE and what was expected.
TEST(CalibTokensFormat, Errors) {
  test::TempDir dir;
  auto error_of = [&](const std::string& second_line) {
    const std::string path = dir / "p.jsonl";
    std::ofstream(path) << R"({"tokens": ["a"], "logprobs": [-0.1]})" << "\n" << second_line << "\n";
    auto r = ImportPredictions(path);
    EXPECT_FALSE(r.ok()) << second_line;
    return r.ok() ? std::string() : r.error().message;
  };
  const std::string at = dir / "p.jsonl:2: ";
  EXPECT_EQ(error_of(R"({"tokens": ["a", "b"], "logprobs": [-0.1]})"),
            at + "2 tokens and 1 log-probabilities (expected one log-probability per token)");
  EXPECT_EQ(error_of(R"({"tokens": ["a"], "logprobs": [0.5]})").rfind(at + "field \"logprobs\"[0] is 0.5 (expected a natural-log", 0), 0u);
  EXPECT_EQ(error_of(R"({"tokens": ["a"], "logprobs": ["x"]})"),
            at + "field \"logprobs\"[0] is a string (expected a log-probability (a number <= 0))");
  EXPECT_EQ(error_of(R"({"tokens": ["a"]})"),
            at + "missing field \"logprobs\" (expected a JSON object with \"tokens\" and \"logprobs\" (docs/calibration.md))");
  EXPECT_EQ(error_of(R"({"tokens": ["a"], "logprobs": [-1], "subword": "spm"})"),
            at + "field \"subword\" is \"spm\" (expected \"none\", \"sentencepiece\", \"wordpiece\" or \"bpe\")");
  EXPECT_EQ(error_of(R"({"tokens": ["a"], "logprobs": [-1], "decoding": "greedy"})"),
            at + "field \"decoding\" is \"greedy\" (expected \"one2seq\" or \"one2set\")");
  EXPECT_EQ(error_of(R"({"tokens": ["a"], "logprobs": [-1], "specials": []})"),
            at + "unknown field \"specials\" (expected only id, decoding, subword, special, padding, tokens, logprobs)");
  EXPECT_EQ(error_of(R"({"decoding": "one2set", "special": [";"], "tokens": [["a", ";", "b"]], "logprobs": [[-1, -1, -1]]})"),
            at + "slot 0 has 2 keyphrases (runs of tokens between \"special\" tokens) (expected at most one keyphrase per One2Set slot)");
  EXPECT_EQ(error_of(R"({"decoding": "one2set", "tokens": ["a"], "logprobs": [-1]})"),
            at + "\"tokens\"[0] is a string (expected an array of strings)");
  EXPECT_EQ(error_of(R"({"subword": "bpe", "tokens": ["\u4e00"], "logprobs": [-1]})"),
            at + "\"tokens\" tokens 0..0: token \"\xE4\xB8\x80\" has U+4E00, which is not in the byte-level BPE alphabet "
                 "(expected tokens of the declared \"subword\" scheme)");
  EXPECT_EQ(error_of(R"({"tokens": ["a"], "logprobs": [-1], "padding": "<pad>"})"),
            at + "field \"padding\" is a string (expected an array of strings)");
  EXPECT_EQ(error_of(R"({"tokens": ["a", "<pad>"], "logprobs": [-1, 0], "special": ["</s>"], "padding": ["<pad>"]})"),
            at + "field \"padding\" lists \"<pad>\", which \"special\" does not (expected padding tokens listed in \"special\" too)");
  // What simdjson found is named (json_internal::JsonProblem).
  EXPECT_EQ(error_of(R"({"tokens": ["a"]], "logprobs": [-1]})"),
            at + "malformed JSON (a missing or extra comma, colon, brace, bracket or key) (expected a JSON object with "
                 "\"tokens\" and \"logprobs\" (docs/calibration.md))");
  EXPECT_EQ(error_of("[1, 2]"), at + "line is an array (expected a JSON object with \"tokens\" and \"logprobs\" (docs/calibration.md))");
  EXPECT_EQ(error_of("{\"tokens\": "), at + "malformed JSON (a missing or extra comma, colon, brace, bracket or key) "
                                            "(expected a JSON object with \"tokens\" and \"logprobs\" (docs/calibration.md))");
}

Corpus Build(const std::string& preds_file) {
  auto ds = ImportDataset(kData + "dataset.jsonl");
  EXPECT_TRUE(ds.ok()) << (ds.ok() ? "" : ds.error().message);
  auto p = ImportPredictions(kData + preds_file);
  EXPECT_TRUE(p.ok());
  auto a = AlignPredictions(*ds, std::move(*p));
  EXPECT_TRUE(a.ok()) << (a.ok() ? "" : a.error().message);
  auto c = BuildCorpus(*ds, &*a, *FindProfile("kplab"));
  EXPECT_TRUE(c.ok());
  return std::move(c).value();
}

TEST(CalibCorpus, PredictionsCarryTokenProbabilities) {
  const Corpus c = Build("one2set.jsonl");  // lines in the order d2, d1: aligned by id
  ASSERT_EQ(c.docs.size(), 2u);
  const Document& d1 = c.docs[0];
  EXPECT_EQ(d1.id, "d1");
  EXPECT_TRUE(d1.one2set);
  ASSERT_EQ(d1.preds.size(), 1u);
  ASSERT_NE(d1.preds[0].probs(), nullptr);
  EXPECT_EQ(d1.preds[0].probs()->tokens.size(), 4u);
  EXPECT_NEAR(KeyphraseKpp(*d1.preds[0].probs(), KppNorm::kWords), 10.0, 1e-12);
  const Document& d2 = c.docs[1];
  ASSERT_EQ(d2.preds.size(), 2u);
  EXPECT_EQ(d2.preds[1].surface(), "neural network");
  // 0.65 * 0.65 over two tokens (the end token excluded): KPP = 1/0.65.
  EXPECT_NEAR(KeyphraseKpp(*d2.preds[1].probs(), KppNorm::kTokens), 1 / 0.65, 1e-12);
}

// tests/data/calib/excluded.jsonl, d1: "heat pump", "heat pump" (a repeat), "<unk> energy" (an invalid
// token under the kplab profile), "Heat Pumps" (the same stems: a repeat): 2 duplicates, 1 invalid, one
// kept prediction carrying the first occurrence's probabilities (0.95, 0.95). d2 drops nothing.
TEST(CalibCorpus, CountsDroppedPredictions) {
  const Corpus c = Build("excluded.jsonl");
  ASSERT_EQ(c.docs.size(), 2u);
  EXPECT_EQ(c.docs[0].n_pred_dups(), 2);
  EXPECT_EQ(c.docs[0].n_pred_invalid, 1);
  ASSERT_EQ(c.docs[0].preds.size(), 1u);
  EXPECT_NEAR(KeyphraseKpp(*c.docs[0].preds[0].probs(), KppNorm::kTokens), 1 / 0.95, 1e-12);
  EXPECT_EQ(c.docs[0].sequence_logprobs().size(), 12u);
  EXPECT_EQ(c.docs[1].n_pred_dups(), 0);
  EXPECT_EQ(c.docs[1].n_pred_invalid, 0);
}

// Source of d1 (kplab profile: title and body tokens joined by spaces):
//   "geothermal heat pumps for buildings we study geothermal energy and heat pumps in cold climates ."
// 96 characters. Python: s.find("geothermal energy") = 45 (the title's "geothermal" is followed by
// "heat"); s.find("heat pumps") = 11. 45/96 = 0.46875 -> section 2 of 5 (0-based; 40-60%), 11/96 ->
// section 0.
TEST(CalibPosition, FirstOccurrenceInCharacters) {
  const Corpus c = Build("tokens.jsonl");
  const Document& d1 = c.docs[0];
  ASSERT_EQ(d1.refs.size(), 3u);
  const auto geo = FirstOccurrence(c, d1, d1.refs[0].stems());
  ASSERT_TRUE(geo.has_value());
  EXPECT_EQ(*geo, 7u);
  const CharPosition p = TokenCharPosition(c, d1, *geo);
  EXPECT_EQ(p.offset, 45u);
  EXPECT_EQ(p.length, 96u);
  EXPECT_EQ(p.Section(5), 2);
  EXPECT_DOUBLE_EQ(p.relative(), 0.46875);
  const CharPosition heat = TokenCharPosition(c, d1, *FirstOccurrence(c, d1, d1.refs[1].stems()));
  EXPECT_EQ(heat.offset, 11u);
  EXPECT_EQ(heat.Section(5), 0);
  EXPECT_FALSE(FirstOccurrence(c, d1, d1.refs[2].stems()).has_value());  // "climate change"
  EXPECT_EQ(PositionBin(0.46875, 5), 2);
  EXPECT_EQ(PositionBin(1.0, 5), 4);
  // Far outside 0..1 (found by fuzz_lua_api: kp.calib.position_bin(-2^31, 10) overflowed the int
  // conversion): the first or last bin.
  EXPECT_EQ(PositionBin(-2147483648.0 * 10, 10), 0);
  EXPECT_EQ(PositionBin(1e300, 10), 9);
  // An offset exactly on a boundary: 48 of 96 characters with 4 sections = 2.
  EXPECT_EQ((CharPosition{48, 96}.Section(4)), 2);
}

}  // namespace
}  // namespace kplab::calib
