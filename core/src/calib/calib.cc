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
  return Error::Usage(fmt::format("unknown KPP normalisation '{}' (expected 'tokens' or 'words')", s));
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

Result<Binning> ParseBinning(std::string_view s) {
  if (s == "width") return Binning::kWidth;
  if (s == "mass") return Binning::kMass;
  return Error::Usage(
      fmt::format("unknown binning '{}' (expected 'width' for equal-width bins or 'mass' for "
                  "equal-mass bins)",
                  s));
}

namespace {

Status CheckPairs(std::span<const double> confidence, std::span<const std::uint8_t> correct) {
  if (confidence.size() != correct.size()) {
    return Error::Input(fmt::format("{} confidences and {} correctness flags (expected one of each per keyphrase)",
                                    confidence.size(), correct.size()));
  }
  for (std::size_t j = 0; j < confidence.size(); ++j) {
    const double c = confidence[j];
    if (!std::isfinite(c) || c < 0) {
      // "nan" whatever its sign bit: Lua's 0/0 is a negative NaN, which fmt spells "-nan".
      return Error::Input(fmt::format("confidence {} is {} (expected a finite number >= 0)", j + 1,
                                      std::isnan(c) ? std::string("nan") : fmt::format("{}", c)));
    }
  }
  return {};
}

// Input indices sorted by confidence (ascending, or descending), ties in input order.
std::vector<std::size_t> SortedOrder(std::span<const double> confidence, bool descending) {
  std::vector<std::size_t> order(confidence.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return descending ? confidence[a] > confidence[b] : confidence[a] < confidence[b];
  });
  return order;
}

}  // namespace

Result<Reliability> ComputeReliability(std::span<const double> confidence,
                                       std::span<const std::uint8_t> correct, int bins, Binning binning) {
  if (bins < 1) return Error::Usage(fmt::format("bins must be >= 1 (got {})", bins));
  if (auto st = CheckPairs(confidence, correct); !st) return st.error();
  Reliability r;
  r.bins.resize(static_cast<std::size_t>(bins));
  const std::size_t n = confidence.size();
  if (binning == Binning::kWidth) {
    for (int i = 0; i < bins; ++i) {
      r.bins[i].lo = static_cast<double>(i) / bins;
      r.bins[i].hi = static_cast<double>(i + 1) / bins;
    }
    for (std::size_t j = 0; j < n; ++j) {
      ReliabilityBin& b = r.bins[static_cast<std::size_t>(BinIndex(confidence[j], bins))];
      ++b.count;
      b.correct += correct[j] ? 1 : 0;
      b.confidence_sum += confidence[j];
    }
  } else {
    const std::vector<std::size_t> order = SortedOrder(confidence, false);
    const auto k = static_cast<std::size_t>(bins);
    for (std::size_t i = 0; i < k; ++i) {
      ReliabilityBin& b = r.bins[i];
      // floor(i*n/k) in integers: exact for any n and k the caller can hold in memory.
      const std::size_t begin = i * n / k, end = (i + 1) * n / k;
      b.lo = b.hi = kNaN;
      for (std::size_t s = begin; s < end; ++s) {
        const std::size_t j = order[s];
        ++b.count;
        b.correct += correct[j] ? 1 : 0;
        b.confidence_sum += confidence[j];
      }
      if (end > begin) {
        b.lo = confidence[order[begin]];
        b.hi = confidence[order[end - 1]];
      }
    }
  }
  r.n = n;
  if (r.n == 0) {
    r.ece = r.mce = kNaN;
    return r;
  }
  double ece = 0, mce = 0;
  for (const ReliabilityBin& b : r.bins) {
    if (b.count == 0) continue;
    const double gap = std::fabs(b.accuracy() - b.confidence());
    ece += static_cast<double>(b.count) / static_cast<double>(r.n) * gap;
    mce = std::max(mce, gap);
  }
  r.ece = ece;
  r.mce = mce;
  return r;
}

Result<double> Brier(std::span<const double> confidence, std::span<const std::uint8_t> correct) {
  if (auto st = CheckPairs(confidence, correct); !st) return st.error();
  if (confidence.empty()) return kNaN;
  double sum = 0;
  for (std::size_t j = 0; j < confidence.size(); ++j) {
    if (confidence[j] > kMaxProbability) {
      return Error::Input(fmt::format("confidence {} is {} (expected a probability in [0, 1])", j + 1, confidence[j]));
    }
    const double d = confidence[j] - (correct[j] ? 1.0 : 0.0);
    sum += d * d;
  }
  return sum / static_cast<double>(confidence.size());
}

Result<RiskCoverage> ComputeRiskCoverage(std::span<const double> confidence, std::span<const std::uint8_t> correct) {
  if (auto st = CheckPairs(confidence, correct); !st) return st.error();
  RiskCoverage rc;
  const std::size_t n = confidence.size();
  rc.order = SortedOrder(confidence, true);
  rc.coverage.reserve(n);
  rc.risk.reserve(n);
  rc.threshold.reserve(n);
  std::size_t errors = 0;
  double risk_sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t j = rc.order[i];
    errors += correct[j] ? 0 : 1;
    const double risk = static_cast<double>(errors) / static_cast<double>(i + 1);
    rc.coverage.push_back(static_cast<double>(i + 1) / static_cast<double>(n));
    rc.risk.push_back(risk);
    rc.threshold.push_back(confidence[j]);
    risk_sum += risk;
  }
  rc.aurc = n == 0 ? kNaN : risk_sum / static_cast<double>(n);
  return rc;
}

std::optional<std::size_t> FirstOccurrence(const Corpus& corpus, const Document& doc,
                                           std::span<const TokenId> stems) {
  return corpus.FirstOccurrence(doc, stems);
}

CharPosition TokenCharPosition(const Corpus& corpus, const Document& doc, std::size_t index) {
  CharPosition p;
  const auto toks = doc.src_tokens();
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
