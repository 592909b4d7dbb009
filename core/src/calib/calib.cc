#include "kplab/calib.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "kplab/utf8.h"

namespace kplab::calib {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

double Kpp(std::span<const double> logprobs) {
  if (logprobs.empty()) return kNaN;
  const double sum = std::accumulate(logprobs.begin(), logprobs.end(), 0.0);
  return std::exp(-sum / static_cast<double>(logprobs.size()));
}

double KppWords(std::span<const double> logprobs, int words) {
  if (words <= 0 || logprobs.empty()) return kNaN;
  const double sum = std::accumulate(logprobs.begin(), logprobs.end(), 0.0);
  return std::exp(-sum / static_cast<double>(words));
}

Result<KppNorm> ParseKppNorm(std::string_view s) {
  if (s == "tokens") return KppNorm::kTokens;
  if (s == "words") return KppNorm::kWords;
  return Error{fmt::format("unknown KPP normalisation '{}' (expected 'tokens' or 'words')", s)};
}

double KeyphraseKpp(const TokenProbs& t, KppNorm norm) {
  return norm == KppNorm::kTokens ? Kpp(t.logprobs) : KppWords(t.logprobs, t.words);
}

std::vector<double> WordProbs(const TokenProbs& t) {
  std::vector<double> out;
  double log_sum = 0;
  for (std::size_t i = 0; i < t.logprobs.size(); ++i) {
    const bool starts = i == 0 || (i < t.word_start.size() && t.word_start[i]);
    if (starts && i > 0) {
      out.push_back(std::exp(log_sum));
      log_sum = 0;
    }
    log_sum += t.logprobs[i];
  }
  if (!t.logprobs.empty()) out.push_back(std::exp(log_sum));
  return out;
}

int BinIndex(double confidence, int bins) {
  // (i/k, (i+1)/k]: ceil(c*k) - 1. Computed as the count of upper bounds below c so that a confidence
  // exactly on a bound (0.3 with k = 10) lands where the decimal bound says, not where c*k rounds.
  // Clamped as a double: a confidence far above 1 (a script's 2^63) must not overflow the int.
  const double scaled = std::ceil(confidence * bins) - 1;
  int i = !(scaled > 0) ? 0 : scaled >= bins - 1 ? bins - 1 : static_cast<int>(scaled);
  // Correct a rounding step of c*k against the exact bound i/k computed the way the bins are reported.
  if (i > 0 && confidence <= static_cast<double>(i) / bins) --i;
  if (i + 1 < bins && confidence > static_cast<double>(i + 1) / bins) ++i;
  return i;
}

double ReliabilityBin::accuracy() const {
  return count == 0 ? kNaN : static_cast<double>(correct) / static_cast<double>(count);
}
double ReliabilityBin::confidence() const {
  return count == 0 ? kNaN : confidence_sum / static_cast<double>(count);
}

Result<Reliability> ComputeReliability(std::span<const double> confidence,
                                       std::span<const std::uint8_t> correct, int bins) {
  if (bins < 1) return Error{fmt::format("bins must be >= 1 (got {})", bins)};
  if (confidence.size() != correct.size()) {
    return Error{fmt::format("{} confidences and {} correctness flags (expected one of each per keyphrase)",
                             confidence.size(), correct.size())};
  }
  Reliability r;
  r.bins.resize(static_cast<std::size_t>(bins));
  for (int i = 0; i < bins; ++i) {
    r.bins[i].lo = static_cast<double>(i) / bins;
    r.bins[i].hi = static_cast<double>(i + 1) / bins;
  }
  for (std::size_t j = 0; j < confidence.size(); ++j) {
    const double c = confidence[j];
    if (!std::isfinite(c) || c < 0) {
      return Error{fmt::format("confidence {} is {} (expected a finite number >= 0)", j + 1, c)};
    }
    ReliabilityBin& b = r.bins[static_cast<std::size_t>(BinIndex(c, bins))];
    ++b.count;
    b.correct += correct[j] ? 1 : 0;
    b.confidence_sum += c;
  }
  r.n = confidence.size();
  if (r.n == 0) {
    r.ece = kNaN;
    return r;
  }
  double ece = 0;
  for (const ReliabilityBin& b : r.bins) {
    if (b.count == 0) continue;
    ece += static_cast<double>(b.count) / static_cast<double>(r.n) * std::fabs(b.accuracy() - b.confidence());
  }
  r.ece = ece;
  return r;
}

std::optional<std::size_t> FirstOccurrence(const Corpus& corpus, const Document& doc,
                                           std::span<const TokenId> stems) {
  return corpus.FirstOccurrence(doc, stems);
}

CharPosition TokenCharPosition(const Corpus& corpus, const Document& doc, std::size_t index) {
  CharPosition p;
  const auto& toks = doc.src_tokens;
  for (std::size_t i = 0; i < toks.size(); ++i) {
    if (i == index) p.offset = p.length + (i > 0 ? 1 : 0);
    p.length += Utf8Length(corpus.Str(toks[i])) + (i > 0 ? 1 : 0);
  }
  return p;
}

int CharPosition::Section(int bins) const {
  if (length == 0 || bins < 1) return 0;
  const std::size_t b = offset * static_cast<std::size_t>(bins) / length;
  return static_cast<int>(std::min<std::size_t>(b, static_cast<std::size_t>(bins - 1)));
}

int PositionBin(double relative, int bins) {
  // Clamped as a double: a position far outside 0..1 (a script's -2^31) must not overflow the int.
  const double b = std::floor(relative * bins);
  return !(b > 0) ? 0 : b >= bins - 1 ? bins - 1 : static_cast<int>(b);
}

}  // namespace kplab::calib
