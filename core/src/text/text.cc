#include "kplab/text.h"

#include <unicode/bytestream.h>
#include <unicode/casemap.h>
#include <unicode/uchar.h>
#include <unicode/utypes.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kplab {

namespace {

inline bool IsAsciiSpace(unsigned char c) {
  return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
}

// Decodes the code point before byte offset end (end > 0), returning its start in *start.
char32_t DecodeBefore(std::string_view s, std::size_t end, std::size_t* start) {
  std::size_t b = end - 1;
  while (b > 0 && IsUtf8Continuation(static_cast<unsigned char>(s[b]))) --b;
  *start = b;
  return DecodeUtf8(s, b);
}

}  // namespace

bool IsAscii(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  std::uint64_t acc = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w;
    __builtin_memcpy(&w, p + i, 8);
    acc |= w;
  }
  if ((acc & 0x8080808080808080ULL) != 0) return false;
  for (; i < n; ++i) {
    if (p[i] >= 0x80) return false;
  }
  return true;
}

std::string Lower(std::string_view s) {
  if (IsAscii(s)) {
    std::string out(s);
    for (char& c : out) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + ('a' - 'A'));
    }
    return out;
  }
  // The root locale ("") gives the language-independent full mappings of SpecialCasing.txt plus
  // the Final_Sigma condition, which is what CPython's str.lower implements.
  std::string out;
  out.reserve(s.size());
  icu::StringByteSink<std::string> sink(&out);
  UErrorCode status = U_ZERO_ERROR;
  icu::CaseMap::utf8ToLower("", 0, icu::StringPiece(s.data(), static_cast<int32_t>(s.size())), sink,
                            nullptr, status);
  return out;
}

bool IsPySpace(char32_t cp) {
  if (cp < 0x80) return IsAsciiSpace(static_cast<unsigned char>(cp));
  switch (cp) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool IsPyWordChar(char32_t cp) {
  if (cp < 0x80) {
    return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9') ||
           cp == '_';
  }
  // str.isalnum() = isalpha() (general category L*, without marks) or isnumeric() (any
  // Numeric_Type, which includes isdecimal() and isdigit()).
  switch (u_charType(static_cast<UChar32>(cp))) {
    case U_UPPERCASE_LETTER:
    case U_LOWERCASE_LETTER:
    case U_TITLECASE_LETTER:
    case U_MODIFIER_LETTER:
    case U_OTHER_LETTER:
      return true;
    default:
      return u_getIntPropertyValue(static_cast<UChar32>(cp), UCHAR_NUMERIC_TYPE) != U_NT_NONE;
  }
}

bool IsPyDecimal(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return u_charType(static_cast<UChar32>(cp)) == U_DECIMAL_DIGIT_NUMBER;
}

std::string_view Strip(std::string_view s) {
  // Nearly every string (a token, a piece) starts and ends with an ASCII byte that is not whitespace:
  // nothing to strip, and nothing to decode.
  if (s.empty()) return s;
  const auto first = static_cast<unsigned char>(s.front()), last = static_cast<unsigned char>(s.back());
  if (first < 0x80 && last < 0x80 && !IsAsciiSpace(first) && !IsAsciiSpace(last)) return s;
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e) {
    std::size_t next = b;
    if (!IsPySpace(DecodeUtf8(s, next))) break;
    b = next;
  }
  while (e > b) {
    std::size_t start;
    if (!IsPySpace(DecodeBefore(s, e, &start))) break;
    e = start;
  }
  return s.substr(b, e - b);
}

std::vector<std::string_view> SplitSpace(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ' ') {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(s.substr(start));
  return out;
}

std::vector<std::string_view> SplitWhitespace(std::string_view s) {
  std::vector<std::string_view> out;
  const std::size_t n = s.size();
  if (IsAscii(s)) {  // the common case: no decoding, Python's ASCII whitespace is \t\n\v\f\r, space, \x1c-\x1f
    std::size_t i = 0;
    while (i < n) {
      while (i < n && IsAsciiSpace(static_cast<unsigned char>(s[i]))) ++i;
      const std::size_t start = i;
      while (i < n && !IsAsciiSpace(static_cast<unsigned char>(s[i]))) ++i;
      if (i > start) out.push_back(s.substr(start, i - start));
    }
    return out;
  }
  std::size_t i = 0;
  std::size_t tok = std::string_view::npos;  // start of the current token, if any
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t next = i;
    bool space;
    if (c < 0x80) {
      space = IsAsciiSpace(c);
      next = i + 1;
    } else {
      space = IsPySpace(DecodeUtf8(s, next));
    }
    if (space) {
      if (tok != std::string_view::npos) {
        out.push_back(s.substr(tok, i - tok));
        tok = std::string_view::npos;
      }
    } else if (tok == std::string_view::npos) {
      tok = i;
    }
    i = next;
  }
  if (tok != std::string_view::npos) out.push_back(s.substr(tok));
  return out;
}

std::vector<std::string_view> SplitOn(std::string_view s, std::string_view sep) {
  std::vector<std::string_view> out;
  if (sep.empty()) {
    out.push_back(s);
    return out;
  }
  std::size_t start = 0;
  for (;;) {
    std::size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) break;
    out.push_back(s.substr(start, pos - start));
    start = pos + sep.size();
  }
  out.push_back(s.substr(start));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Word tokenizer. Each pass below reproduces one re.sub of nltk 3.8's NLTKWordTokenizer.tokenize
// (nltk/tokenize/destructive.py) on code points, with Python's re semantics: leftmost,
// non-overlapping matches found on the pass's input, \w/\d/\s/\b in their Unicode meaning, `$`
// at the end or before a final "\n", and (?i) matching ASCII letters also against the code points
// Python's re folds onto them (U+0130, U+0131 for i; U+017F for s).

namespace {

using U32 = std::u32string;

bool CiEq(char32_t c, char letter) {
  if (c < 0x80) return (c | 0x20) == static_cast<char32_t>(letter) && c >= 'A';
  if (letter == 'i') return c == 0x130 || c == 0x131;
  if (letter == 's') return c == 0x17F;
  if (letter == 'k') return c == 0x212A;
  return false;
}

// Case-insensitive match of the ASCII pattern lit (letters folded, other bytes exact) at in[i].
bool CiMatch(const U32& in, std::size_t i, std::string_view lit) {
  if (i + lit.size() > in.size()) return false;
  for (std::size_t k = 0; k < lit.size(); ++k) {
    const char l = lit[k];
    if (l >= 'a' && l <= 'z') {
      if (!CiEq(in[i + k], l)) return false;
    } else if (in[i + k] != static_cast<char32_t>(static_cast<unsigned char>(l))) {
      return false;
    }
  }
  return true;
}

bool Contains(const U32& in, char32_t c) { return in.find(c) != U32::npos; }

template <typename Pred>
bool ContainsIf(const U32& in, Pred pred) {
  for (char32_t c : in) {
    if (pred(c)) return true;
  }
  return false;
}

void Pad(U32& out, char32_t c) {
  out.push_back(' ');
  out.push_back(c);
  out.push_back(' ');
}

// Replaces every code point for which pred holds by " c " (regexes like `[;@#$%&]`).
template <typename Pred>
void PadEach(const U32& in, U32& out, Pred pred) {
  out.clear();
  for (char32_t c : in) {
    if (pred(c)) {
      Pad(out, c);
    } else {
      out.push_back(c);
    }
  }
}

// `([«“‘„]|[`]+)` -> " \1 "
void StartingQuotePad(const U32& in, U32& out) {
  out.clear();
  const std::size_t n = in.size();
  for (std::size_t i = 0; i < n;) {
    const char32_t c = in[i];
    if (c == 0xAB || c == 0x201C || c == 0x2018 || c == 0x201E) {
      Pad(out, c);
      ++i;
    } else if (c == '`') {
      out.push_back(' ');
      while (i < n && in[i] == '`') out.push_back(in[i++]);
      out.push_back(' ');
    } else {
      out.push_back(c);
      ++i;
    }
  }
}

// Non-overlapping occurrences of the two-code-point string ab -> " ab ".
void PadPair(const U32& in, U32& out, char32_t a, char32_t b) {
  out.clear();
  const std::size_t n = in.size();
  for (std::size_t i = 0; i < n;) {
    if (in[i] == a && i + 1 < n && in[i + 1] == b) {
      out.push_back(' ');
      out.push_back(a);
      out.push_back(b);
      out.push_back(' ');
      i += 2;
    } else {
      out.push_back(in[i++]);
    }
  }
}

// `([ \(\[{<])(\"|\'{2})` -> "\1 `` "
void OpeningDoubleQuote(const U32& in, U32& out) {
  out.clear();
  const std::size_t n = in.size();
  for (std::size_t i = 0; i < n;) {
    const char32_t c = in[i];
    if ((c == ' ' || c == '(' || c == '[' || c == '{' || c == '<') && i + 1 < n) {
      std::size_t len = 0;
      if (in[i + 1] == '"') {
        len = 2;
      } else if (in[i + 1] == '\'' && i + 2 < n && in[i + 2] == '\'') {
        len = 3;
      }
      if (len > 0) {
        out.push_back(c);
        out += U" `` ";
        i += len;
        continue;
      }
    }
    out.push_back(c);
    ++i;
  }
}

// `(?i)(\')(?!re|ve|ll|m|t|s|d|n)(\w)\b` -> "\1 \2". The \w must be followed by a \b, so the
// two-letter alternatives of the lookahead can never apply (their second letter is a \w).
void QuoteBeforeLetter(const U32& in, U32& out) {
  out.clear();
  const std::size_t n = in.size();
  for (std::size_t i = 0; i < n;) {
    if (in[i] == '\'' && i + 1 < n) {
      const char32_t w = in[i + 1];
      if (IsPyWordChar(w) && (i + 2 == n || !IsPyWordChar(in[i + 2])) && !CiEq(w, 'm') &&
          !CiEq(w, 't') && !CiEq(w, 's') && !CiEq(w, 'd') && !CiEq(w, 'n')) {
        out.push_back('\'');
        out.push_back(' ');
        out.push_back(w);
        i += 2;
        continue;
      }
    }
    out.push_back(in[i++]);
  }
}

bool InClosers(char32_t c, bool unicode_and_space) {
  switch (c) {
    case ']':
    case ')':
    case '}':
    case '>':
    case '"':
    case '\'':
      return true;
    case 0xBB:
    case 0x201D:
    case 0x2019:
    case ' ':
      return unicode_and_space;
    default:
      return false;
  }
}

// `([^\.])(\.)([CLOSERS]*)\s*$` -> "\1 \2 \3 " (first form, CLOSERS with »”’ and space) or
// "\1 \2\3 " (second form). Returns false (out untouched) when there is no match. A match must
// use the last period, since neither the closers nor \s contain one; the greedy closer run is
// then maximal, and everything after it must be whitespace.
bool FinalPeriod(const U32& in, U32& out, bool first_form) {
  const std::size_t p = in.rfind(U'.');
  if (p == U32::npos || p == 0 || in[p - 1] == '.') return false;
  const std::size_t n = in.size();
  std::size_t q = p + 1;
  while (q < n && InClosers(in[q], first_form)) ++q;
  for (std::size_t r = q; r < n; ++r) {
    if (!IsPySpace(in[r])) return false;
  }
  out.assign(in, 0, p);
  out.push_back(' ');
  out.push_back('.');
  if (first_form) out.push_back(' ');
  out.append(in, p + 1, q - (p + 1));
  out.push_back(' ');
  return true;
}

// `([:,])([^\d])` -> " \1 \2"
void ColonCommaBeforeNonDigit(const U32& in, U32& out) {
  out.clear();
  const std::size_t n = in.size();
  for (std::size_t i = 0; i < n;) {
    const char32_t c = in[i];
    if ((c == ':' || c == ',') && i + 1 < n && !IsPyDecimal(in[i + 1])) {
      Pad(out, c);
      out.push_back(in[i + 1]);
      i += 2;
    } else {
      out.push_back(c);
      ++i;
    }
  }
}

// `([:,])$` -> " \1 ". Returns false when there is no match.
bool ColonCommaAtEnd(const U32& in, U32& out) {
  const std::size_t n = in.size();
  std::size_t at;
  if (n >= 2 && in[n - 1] == '\n' && (in[n - 2] == ':' || in[n - 2] == ',')) {
    at = n - 2;
  } else if (n >= 1 && (in[n - 1] == ':' || in[n - 1] == ',')) {
    at = n - 1;
  } else {
    return false;
  }
  out.assign(in, 0, at);
  Pad(out, in[at]);
  out.append(in, at + 1, U32::npos);
  return true;
}

// `\.{2,}` -> " \g<0> "
void Ellipsis(const U32& in, U32& out) {
  out.clear();
  const std::size_t n = in.size();
  for (std::size_t i = 0; i < n;) {
    if (in[i] == '.' && i + 1 < n && in[i + 1] == '.') {
      out.push_back(' ');
      while (i < n && in[i] == '.') out.push_back(in[i++]);
      out.push_back(' ');
    } else {
      out.push_back(in[i++]);
    }
  }
}

// `([^'])' ` -> "\1 ' "
void QuoteBeforeSpace(const U32& in, U32& out) {
  out.clear();
  const std::size_t n = in.size();
  for (std::size_t i = 0; i < n;) {
    if (in[i] != '\'' && i + 2 < n && in[i + 1] == '\'' && in[i + 2] == ' ') {
      out.push_back(in[i]);
      out += U" ' ";
      i += 3;
    } else {
      out.push_back(in[i++]);
    }
  }
}

// `([^' ])('[sS]|'[mM]|'[dD]|') ` -> "\1 \2 " and
// `([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ` -> "\1 \2 ".
void Clitics(const U32& in, U32& out, bool long_form) {
  out.clear();
  const std::size_t n = in.size();
  for (std::size_t i = 0; i < n;) {
    const char32_t c = in[i];
    std::size_t len = 0;  // length of \2
    if (c != '\'' && c != ' ' && i + 1 < n) {
      if (!long_form) {
        if (in[i + 1] == '\'') {
          const char32_t d = i + 2 < n ? in[i + 2] : 0;
          if ((d == 's' || d == 'S' || d == 'm' || d == 'M' || d == 'd' || d == 'D') && i + 3 < n &&
              in[i + 3] == ' ') {
            len = 2;
          } else if (d == ' ') {
            len = 1;
          }
        }
      } else if (i + 4 < n && in[i + 4] == ' ') {
        static constexpr std::u32string_view kForms[] = {U"'ll", U"'LL", U"'re", U"'RE",
                                                         U"'ve", U"'VE", U"n't", U"N'T"};
        const std::u32string_view three(in.data() + i + 1, 3);
        for (auto f : kForms) {
          if (three == f) len = 3;
        }
      }
    }
    if (len > 0) {
      out.push_back(c);
      out.push_back(' ');
      out.append(in, i + 1, len);
      out.push_back(' ');
      i += len + 2;
    } else {
      out.push_back(c);
      ++i;
    }
  }
}

struct Contraction {
  std::string_view first;
  std::string_view second;
  bool space_after;  // (?=\s) instead of \b
};

// MacIntyre's CONTRACTIONS2: `(?i)\b(first)(second)\b` -> " \1 \2 ". Both parts end in a letter,
// so the closing \b means "no \w follows"; the opening one means "no \w precedes".
void SplitContraction(const U32& in, U32& out, const Contraction& k) {
  out.clear();
  const std::size_t n = in.size();
  const std::size_t len1 = k.first.size();
  const std::size_t len = len1 + k.second.size();
  for (std::size_t i = 0; i < n;) {
    if ((i == 0 || !IsPyWordChar(in[i - 1])) && CiMatch(in, i, k.first) &&
        CiMatch(in, i + len1, k.second)) {
      const std::size_t j = i + len;
      const bool tail_ok =
          k.space_after ? (j < n && IsPySpace(in[j])) : (j == n || !IsPyWordChar(in[j]));
      if (tail_ok) {
        out.push_back(' ');
        out.append(in, i, len1);
        out.push_back(' ');
        out.append(in, i + len1, len - len1);
        out.push_back(' ');
        i = j;
        continue;
      }
    }
    out.push_back(in[i++]);
  }
}

// CONTRACTIONS3: `(?i) ('t)(word)\b` -> " \1 \2 ".
void SplitTis(const U32& in, U32& out, std::string_view word) {
  out.clear();
  const std::size_t n = in.size();
  const std::size_t len = 3 + word.size();
  for (std::size_t i = 0; i < n;) {
    if (in[i] == ' ' && CiMatch(in, i + 1, "'t") && CiMatch(in, i + 3, word) &&
        (i + len == n || !IsPyWordChar(in[i + len]))) {
      out.push_back(' ');
      out.append(in, i + 1, 2);
      out.push_back(' ');
      out.append(in, i + 3, word.size());
      out.push_back(' ');
      i += len;
      continue;
    }
    out.push_back(in[i++]);
  }
}

bool IsLetterCi(char32_t c) { return c >= 0x80 || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }

// nltk 3.8 NLTKWordTokenizer().tokenize(text) on one sentence, appending the tokens to tokens.
// Passes whose trigger characters are absent are skipped: they would copy their input.
void TokenizeSentence(std::string_view sentence, std::vector<std::string>& tokens) {
  U32 a;
  a.reserve(sentence.size() + 16);
  for (std::size_t i = 0; i < sentence.size();) a.push_back(DecodeUtf8(sentence, i));
  U32 b;
  b.reserve(a.size() * 2 + 16);
  auto run = [&](auto&& pass) {
    pass(a, b);
    a.swap(b);
  };

  // STARTING_QUOTES
  if (ContainsIf(a, [](char32_t c) {
        return c == '`' || c == 0xAB || c == 0x201C || c == 0x2018 || c == 0x201E;
      })) {
    run(StartingQuotePad);
  }
  if (!a.empty() && a[0] == '"') a.replace(0, 1, U"``");
  if (Contains(a, '`')) run([](const U32& in, U32& out) { PadPair(in, out, '`', '`'); });
  const bool has_dq = Contains(a, '"');
  const bool has_sq = Contains(a, '\'');
  if (has_dq || has_sq) run(OpeningDoubleQuote);
  if (has_sq) run(QuoteBeforeLetter);

  // PUNCTUATION
  if (FinalPeriod(a, b, /*first_form=*/true)) a.swap(b);
  if (Contains(a, ':') || Contains(a, ',')) {
    run(ColonCommaBeforeNonDigit);
    if (ColonCommaAtEnd(a, b)) a.swap(b);
  }
  if (Contains(a, '.')) run(Ellipsis);
  run([](const U32& in, U32& out) {
    PadEach(in, out, [](char32_t c) {
      return c == ';' || c == '@' || c == '#' || c == '$' || c == '%' || c == '&';
    });
  });
  if (FinalPeriod(a, b, /*first_form=*/false)) a.swap(b);
  run([](const U32& in, U32& out) {
    PadEach(in, out, [](char32_t c) { return c == '?' || c == '!'; });
  });
  if (Contains(a, '\'')) run(QuoteBeforeSpace);
  if (Contains(a, '*')) {
    run([](const U32& in, U32& out) { PadEach(in, out, [](char32_t c) { return c == '*'; }); });
  }

  // PARENS_BRACKETS, DOUBLE_DASHES
  run([](const U32& in, U32& out) {
    PadEach(in, out, [](char32_t c) {
      return c == '[' || c == ']' || c == '(' || c == ')' || c == '{' || c == '}' || c == '<' ||
             c == '>';
    });
  });
  if (Contains(a, '-')) run([](const U32& in, U32& out) { PadPair(in, out, '-', '-'); });

  a.insert(a.begin(), U' ');
  a.push_back(' ');

  // ENDING_QUOTES
  if (ContainsIf(a, [](char32_t c) { return c == 0xBB || c == 0x201D || c == 0x2019; })) {
    run([](const U32& in, U32& out) {
      PadEach(in, out, [](char32_t c) { return c == 0xBB || c == 0x201D || c == 0x2019; });
    });
  }
  if (Contains(a, '\'')) run([](const U32& in, U32& out) { PadPair(in, out, '\'', '\''); });
  if (Contains(a, '"')) {
    run([](const U32& in, U32& out) {
      out.clear();
      for (char32_t c : in) {
        if (c == '"') {
          out += U" '' ";
        } else {
          out.push_back(c);
        }
      }
    });
  }
  if (Contains(a, '\'')) {
    run([](const U32& in, U32& out) { Clitics(in, out, false); });
    run([](const U32& in, U32& out) { Clitics(in, out, true); });
  }

  // CONTRACTIONS2 and CONTRACTIONS3, in nltk's order.
  static constexpr Contraction kContractions[] = {
      {"can", "not", false}, {"d", "'ye", false},  {"gim", "me", false},  {"gon", "na", false},
      {"got", "ta", false},  {"lem", "me", false}, {"more", "'n", false}, {"wan", "na", true},
  };
  if (ContainsIf(a, IsLetterCi)) {
    for (const auto& k : kContractions) {
      run([&k](const U32& in, U32& out) { SplitContraction(in, out, k); });
    }
    if (Contains(a, '\'')) {
      run([](const U32& in, U32& out) { SplitTis(in, out, "is"); });
      run([](const U32& in, U32& out) { SplitTis(in, out, "was"); });
    }
  }

  // text.split()
  std::string tok;
  for (char32_t c : a) {
    if (IsPySpace(c)) {
      if (!tok.empty()) {
        tokens.push_back(std::move(tok));
        tok.clear();
      }
    } else {
      AppendUtf8(tok, c);
    }
  }
  if (!tok.empty()) tokens.push_back(std::move(tok));
}

// Text of ASCII letters, digits and spaces only (most keyphrases): the only pass of nltk's tokenizer
// that changes such text is CONTRACTIONS2 on a word that is, case aside, cannot, gimme, gonna, gotta,
// lemme or wanna ("d'ye" and "more'n" need an apostrophe; \b and (?=\s) fall on the spaces and ends,
// the text being padded with spaces first), so its tokens are its words. Appends them and returns
// true; returns false, appending nothing, for any other text.
bool PlainWords(std::string_view s, std::vector<std::string>& tokens) {
  for (const char c : s) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && c != ' ') return false;
  }
  static constexpr std::string_view kContractions[] = {"cannot", "gimme", "gonna", "gotta", "lemme", "wanna"};
  const std::size_t first = tokens.size();
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == ' ') {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < s.size() && s[j] != ' ') ++j;
    const std::string_view word = s.substr(i, j - i);
    if (word.size() == 5 || word.size() == 6) {
      for (const std::string_view k : kContractions) {
        if (k.size() != word.size()) continue;
        bool same = true;
        for (std::size_t c = 0; c < k.size() && same; ++c) same = (word[c] | 0x20) == k[c];
        if (same) {
          tokens.resize(first);
          return false;
        }
      }
    }
    tokens.emplace_back(word);
    i = j;
  }
  return true;
}

}  // namespace

std::vector<std::string> WordTokenize(std::string_view s) {
  std::vector<std::string> tokens;
  if (PlainWords(s, tokens)) return tokens;
  // Sentences end after '.', '?' or '!' followed by whitespace; each is stripped, empty ones are
  // dropped (docs/text.md).
  const std::size_t n = s.size();
  std::size_t start = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = s[i];
    if ((c == '.' || c == '?' || c == '!') && i + 1 < n) {
      std::size_t j = i + 1;
      if (IsPySpace(DecodeUtf8(s, j))) {
        std::string_view sentence = Strip(s.substr(start, i + 1 - start));
        if (!sentence.empty()) TokenizeSentence(sentence, tokens);
        start = i + 1;
      }
    }
  }
  std::string_view last = Strip(s.substr(start));
  if (!last.empty()) TokenizeSentence(last, tokens);
  return tokens;
}

}  // namespace kplab
