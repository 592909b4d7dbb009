// Calibration of keyphrase generators (seed 001: "Deep Seq2Seq Keyphrase Generation: Model Calibration
// and Uncertainty"): keyphrase perplexity (KPP, Eq. 2-3), its word-normalised form (KPP-s, Eq. 7),
// expected calibration error over equal-width confidence bins (Eq. 9), and the positional analysis of
// §5.5 (where in the source a present keyphrase first occurs). The detokenization of subword tokens
// that the "tokens" prediction format needs to count words is in subword.h (included here). No Lua
// here; host/lua/lua_calib.cc exposes it as kp.calib.
//
// Threads: no shared state: pure functions on their arguments, safe from several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/corpus.h"
#include "kplab/result.h"
#include "kplab/subword.h"  // Subword, Detokenize, CountWords (declared here before subword.h)

namespace kplab::calib {

// ---- Keyphrase perplexity ----------------------------------------------------------------------------

// Eq. 2 (and Eq. 3 for One2Set, where the same product runs over one slot's tokens):
// KPP = (prod_i p_i)^(-1/m) = exp(-(sum_i ln p_i) / m), m = number of tokens. NaN for no tokens.
double Kpp(std::span<const double> logprobs);

// Eq. 7: KPP-s = (prod_i p_i)^(-1/wc), wc = words of the detokenized keyphrase. NaN when words <= 0.
double KppWords(std::span<const double> logprobs, int words);

// How the paper's KPP is taken: "tokens" (Eq. 2/3, per token) or "words" (Eq. 7, KPP-s).
enum class KppNorm { kTokens, kWords };
Result<KppNorm> ParseKppNorm(std::string_view s);
double KeyphraseKpp(const TokenProbs& t, KppNorm norm);

// The probability of each word of a keyphrase: the product of the conditional probabilities of its
// tokens (word boundaries from TokenProbs::word_start). For word-level models, the token probabilities.
std::vector<double> WordProbs(const TokenProbs& t);

// Whole-sequence perplexity (Eq. 1): exp(-(sum of ln p over every generated token) / T), T tokens —
// delimiters and end tokens included, padding excluded (RawPrediction::sequence_logprobs). The same
// arithmetic as Kpp over a different span; NaN for no tokens.
inline double SequencePerplexity(std::span<const double> logprobs) { return Kpp(logprobs); }

// ---- Expected calibration error ----------------------------------------------------------------------

// How keyphrases are put into bins: "width" — `bins` equal-width bins of [0, 1] (Guo et al. 2017, the
// paper's Eq. 9); "mass" — equal-mass (adaptive) bins: keyphrases sorted by confidence (ties in input
// order), bin i holding sorted ranks [floor(i*n/k), floor((i+1)*n/k)), so sizes differ by at most one.
enum class Binning { kWidth, kMass };
Result<Binning> ParseBinning(std::string_view s);

// The 0-based bin of a confidence among `bins` equal-width bins of [0, 1]. Bin i holds (i/k, (i+1)/k], as
// Guo et al. (2017) bin (lower bound open); 0 goes to the first bin and values above 1 to the last.
int BinIndex(double confidence, int bins);

struct ReliabilityBin {
  // Equal-width: the range (lo, hi]. Equal-mass: the smallest and largest confidence in the bin (NaN
  // for an empty bin, which only arises when there are fewer keyphrases than bins).
  double lo = 0, hi = 0;
  std::size_t count = 0;     // |B_i|
  std::size_t correct = 0;   // keyphrases of the bin that match a reference
  double confidence_sum = 0;
  double accuracy() const;    // acc(B_i) = correct / count; NaN for an empty bin
  double confidence() const;  // confid(B_i) = mean confidence; NaN for an empty bin
};

struct Reliability {
  std::vector<ReliabilityBin> bins;
  std::size_t n = 0;  // keyphrases binned
  double ece = 0;     // Eq. 9: sum_i |B_i|/n * |acc(B_i) - confid(B_i)|; NaN when n == 0
  double mce = 0;     // maximum calibration error: max over non-empty bins of |acc - confid|; NaN when n == 0
};

// Bins keyphrases by confidence (1/KPP) and computes Eq. 9 and the MCE. confidence and correct have one
// entry per keyphrase. Errors: different lengths, bins < 1, a confidence that is not finite or is negative.
Result<Reliability> ComputeReliability(std::span<const double> confidence,
                                       std::span<const std::uint8_t> correct, int bins,
                                       Binning binning = Binning::kWidth);

// The largest confidence accepted as a probability: the importer lets a log-probability exceed 0 by
// 1e-6 (float rounding, docs/calibration.md), so 1/KPP can reach exp(1e-6) = 1.0000010000005; the
// bound is that, rounded up.
inline constexpr double kMaxProbability = 1.0000011;

// Brier score of binary outcomes: mean over keyphrases of (confidence - correct)^2; NaN for none.
// Errors: different lengths, a confidence that is not a probability (NaN, < 0 or > kMaxProbability).
Result<double> Brier(std::span<const double> confidence, std::span<const std::uint8_t> correct);

// ---- Selective prediction ----------------------------------------------------------------------------

// The risk-coverage curve (Geifman & El-Yaniv 2017): keyphrases sorted by confidence, highest first
// (ties in input order); keeping the first i of n gives coverage i/n and risk = errors among them / i.
// AURC = the mean of the n risks (the area under the step curve). Empty input: empty curve, AURC NaN.
struct RiskCoverage {
  std::vector<double> coverage, risk, threshold;  // one point per kept count i = 1..n
  std::vector<std::size_t> order;                 // input indices, most confident first
  double aurc = 0;
};
// Errors as Brier's, except that a confidence above 1 is allowed (only its order matters).
Result<RiskCoverage> ComputeRiskCoverage(std::span<const double> confidence, std::span<const std::uint8_t> correct);

// ---- Positional analysis (§5.5) -----------------------------------------------------------------------

// Where a keyphrase first occurs in a document's source: the 0-based index of the first source token of
// its first contiguous stem match (within one section unless the profile matches across sections, as
// Corpus::IsPresent decides presence), or nullopt when it does not occur.
std::optional<std::size_t> FirstOccurrence(const Corpus& corpus, const Document& doc,
                                           std::span<const TokenId> stems);

// The source as characters: the document's tokens joined by single spaces (title then body). Returns
// the character (Unicode code point) offset of token `index` in that string and its total length.
struct CharPosition {
  std::size_t offset = 0;
  std::size_t length = 0;
  double relative() const { return length == 0 ? 0.0 : static_cast<double>(offset) / length; }
  // The section of `bins` equal sections: floor(offset * bins / length) in integers, so that an offset
  // exactly on a boundary is not moved by rounding; clipped to [0, bins - 1].
  int Section(int bins) const;
};
CharPosition TokenCharPosition(const Corpus& corpus, const Document& doc, std::size_t index);

// The section (0-based) of `bins` equal sections of the source that a relative position in [0, 1)
// falls in: floor(relative * bins), clipped to [0, bins - 1].
int PositionBin(double relative, int bins);

}  // namespace kplab::calib
