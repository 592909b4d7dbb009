// Subword detokenization (kplab/subword.h).
#include "kplab/subword.h"

#include <fmt/format.h>

#include <array>

#include "kplab/utf8.h"

namespace kplab::calib {

namespace {

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

Result<Subword> ParseSubword(std::string_view s) {
  if (s == "none") return Subword::kNone;
  if (s == "sentencepiece") return Subword::kSentencePiece;
  if (s == "wordpiece") return Subword::kWordPiece;
  if (s == "bpe") return Subword::kByteBpe;
  return Error::Usage(fmt::format("unknown subword scheme \"{}\"", s));
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
            return Error::Input(
                fmt::format("token \"{}\" has U+{:04X}, which is not in the byte-level BPE alphabet", t, cp));
          }
          text.push_back(static_cast<char>(byte));
        }
      }
      std::size_t bad = 0;
      if (!ValidUtf8(text, &bad)) {
        return Error::Input(
            fmt::format("the byte-level BPE tokens decode to bytes that are not UTF-8 (at byte {})", bad + 1));
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
