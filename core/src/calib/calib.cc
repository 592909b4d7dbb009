#include "kplab/calib.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>

#include "kplab/text.h"
#include "kplab/utf8.h"

namespace kplab::calib {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// GPT-2's byte-level alphabet: bytes that are printable Latin-1 stand for themselves; the other 68
// bytes, in increasing order, are shifted to U+0100.. so that every token is printable text. This
// is the inverse map (code point -> byte), -1 outside the alphabet.
const std::array<int, 256 + 68>& ByteOfCodePoint() {
  static const std::array<int, 256 + 68> table = [] {
    std::array<int, 256 + 68> t;
    t.fill(-1);
    int shifted = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      if (printable) {
        t[b] = b;
      } else {
        t[256 + shifted++] = b;
      }
    }
    return t;
  }();
  return table;
}

std::string_view StripSpaces(std::string_view s) {
  const auto b = s.find_first_not_of(' ');
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(' ') - b + 1);
}

constexpr std::string_view kSpMarker = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK
constexpr std::string_view kBpeMarker = "\xC4\xA0";     // U+0120, the byte-level form of ' '

std::string ReplaceAll(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(s.substr(pos));
  return out;
}

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
  int i = static_cast<int>(std::ceil(confidence * bins)) - 1;
  i = std::clamp(i, 0, bins - 1);
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
                                           const std::vector<TokenId>& stems) {
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
  const int b = static_cast<int>(std::floor(relative * bins));
  return std::clamp(b, 0, bins - 1);
}

Result<Subword> ParseSubword(std::string_view s) {
  if (s == "none") return Subword::kNone;
  if (s == "sentencepiece") return Subword::kSentencePiece;
  if (s == "wordpiece") return Subword::kWordPiece;
  if (s == "bpe") return Subword::kByteBpe;
  return Error{fmt::format("unknown subword scheme \"{}\"", s)};
}

Result<std::string> Detokenize(std::span<const std::string> tokens, Subword scheme,
                               std::vector<std::uint8_t>* word_start) {
  std::vector<std::uint8_t> starts(tokens.size(), 0);
  std::string text;
  switch (scheme) {
    case Subword::kNone:
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        if (i > 0) text.push_back(' ');
        text += tokens[i];
        starts[i] = 1;
      }
      break;
    case Subword::kSentencePiece:
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        starts[i] = i == 0 || tokens[i].starts_with(kSpMarker);
        text += tokens[i];
      }
      text = ReplaceAll(text, kSpMarker, " ");
      break;
    case Subword::kWordPiece:
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        const bool cont = tokens[i].starts_with("##");
        starts[i] = i == 0 || !cont;
        if (cont) {
          text.append(tokens[i], 2);
        } else {
          if (i > 0) text.push_back(' ');
          text += tokens[i];
        }
      }
      break;
    case Subword::kByteBpe: {
      const auto& table = ByteOfCodePoint();
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        starts[i] = i == 0 || tokens[i].starts_with(kBpeMarker);
        const std::string& t = tokens[i];
        for (std::size_t k = 0; k < t.size();) {
          const std::uint32_t cp = DecodeUtf8(t, k);  // tokens come from JSON: valid UTF-8
          const int byte = cp < table.size() ? table[cp] : -1;
          if (byte < 0) {
            return Error{fmt::format("token \"{}\" has U+{:04X}, which is not in the byte-level BPE alphabet", t, cp)};
          }
          text.push_back(static_cast<char>(byte));
        }
      }
      std::size_t bad = 0;
      if (!ValidUtf8(text, &bad)) {
        return Error{fmt::format("the byte-level BPE tokens decode to bytes that are not UTF-8 (at byte {})", bad + 1)};
      }
      break;
    }
  }
  if (word_start) *word_start = std::move(starts);
  return std::string(StripSpaces(text));
}

int CountWords(std::string_view s) {
  int n = 0;
  bool in_word = false;
  for (char c : s) {
    if (c == ' ') {
      in_word = false;
    } else if (!in_word) {
      in_word = true;
      ++n;
    }
  }
  return n;
}

}  // namespace kplab::calib
