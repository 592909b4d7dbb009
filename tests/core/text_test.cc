// Text primitives against Python 3 semantics. Expected values are written out by hand from Python's
// documented behaviour, or come from files produced by Python and nltk 3.8
// (scripts/gen_text_golden.py, tests/data/text/).
#include "kplab/text.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace kplab {
namespace {

using Views = std::vector<std::string_view>;
using Strings = std::vector<std::string>;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    out.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

std::string U8(char32_t cp) {
  std::string s;
  AppendUtf8(s, cp);
  return s;
}

TEST(ValidUtf8Test, AcceptsWellFormed) {
  EXPECT_TRUE(ValidUtf8(""));
  EXPECT_TRUE(ValidUtf8("plain ascii text that is longer than eight bytes"));
  EXPECT_TRUE(ValidUtf8("caf\xC3\xA9 \xE2\x80\x99 \xF0\x9F\x98\x80"));
  EXPECT_TRUE(ValidUtf8("\xEF\xBF\xBF\xF4\x8F\xBF\xBF"));  // U+FFFF, U+10FFFF
}

TEST(ValidUtf8Test, ReportsFirstBadOffset) {
  std::size_t off = 99;
  // Lone continuation byte after 3 ASCII bytes.
  EXPECT_FALSE(ValidUtf8("abc\x80", &off));
  EXPECT_EQ(off, 3u);
  // Overlong encoding of '/' (C0 AF) at offset 1.
  EXPECT_FALSE(ValidUtf8("a\xC0\xAF", &off));
  EXPECT_EQ(off, 1u);
  // Overlong 3-byte form (E0 80 80) after "\xC3\xA9" (2 bytes).
  EXPECT_FALSE(ValidUtf8("\xC3\xA9\xE0\x80\x80", &off));
  EXPECT_EQ(off, 2u);
  // Surrogate U+D800 (ED A0 80) after 9 ASCII bytes (crosses the 8-byte fast path).
  EXPECT_FALSE(ValidUtf8("123456789\xED\xA0\x80", &off));
  EXPECT_EQ(off, 9u);
  // Above U+10FFFF (F4 90 80 80).
  EXPECT_FALSE(ValidUtf8("x\xF4\x90\x80\x80", &off));
  EXPECT_EQ(off, 1u);
  // Truncated sequence at the end.
  EXPECT_FALSE(ValidUtf8("ab\xE2\x80", &off));
  EXPECT_EQ(off, 2u);
  // Byte F5 never occurs in UTF-8.
  EXPECT_FALSE(ValidUtf8("\xF5\x80\x80\x80", &off));
  EXPECT_EQ(off, 0u);
}

TEST(Utf8Test, DecodeAndAppendRoundTrip) {
  const std::string s = "a\xC3\xA9\xE2\x80\x99\xF0\x9F\x98\x80";  // a, U+00E9, U+2019, U+1F600
  std::size_t i = 0;
  EXPECT_EQ(DecodeUtf8(s, i), U'a');
  EXPECT_EQ(i, 1u);
  EXPECT_EQ(DecodeUtf8(s, i), char32_t{0xE9});
  EXPECT_EQ(i, 3u);
  EXPECT_EQ(DecodeUtf8(s, i), char32_t{0x2019});
  EXPECT_EQ(i, 6u);
  EXPECT_EQ(DecodeUtf8(s, i), char32_t{0x1F600});
  EXPECT_EQ(i, 10u);
  std::string out;
  for (char32_t cp : {U'a', char32_t{0xE9}, char32_t{0x2019}, char32_t{0x1F600}}) {
    AppendUtf8(out, cp);
  }
  EXPECT_EQ(out, s);
}

TEST(Utf8Test, DecodeNeverReadsPastTheEnd) {
  // Truncated 3-byte sequence: U+FFFD for one byte at a time.
  const std::string_view s("\xE2\x80", 2);
  std::size_t i = 0;
  EXPECT_EQ(DecodeUtf8(s, i), char32_t{0xFFFD});
  EXPECT_EQ(i, 1u);
  EXPECT_EQ(DecodeUtf8(s, i), char32_t{0xFFFD});
  EXPECT_EQ(i, 2u);
  // Tokenizing and splitting bad input is safe (the contract asks for valid UTF-8).
  EXPECT_EQ(SplitWhitespace(std::string_view("a \xF0\x9F", 4)).size(), 2u);
  EXPECT_FALSE(WordTokenize(std::string_view("x. \xE2", 4)).empty());
}

TEST(LowerTest, PythonSemantics) {
  EXPECT_EQ(Lower("Hello WORLD 123"), "hello world 123");
  EXPECT_EQ(Lower(""), "");
  // 'İ'.lower() == 'i\u0307' (full mapping: two code points).
  EXPECT_EQ(Lower("\xC4\xB0"), "i\xCC\x87");
  EXPECT_EQ(Lower("\xC4\xB0stanbul"), "i\xCC\x87stanbul");
  // 'ΟΔΟΣ'.lower() == 'οδος' with a final sigma (U+03C2); a non-final Σ gives σ (U+03C3).
  EXPECT_EQ(Lower("\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3"), "\xCE\xBF\xCE\xB4\xCE\xBF\xCF\x82");
  EXPECT_EQ(Lower("\xCE\xA3\xCE\x91"), "\xCF\x83\xCE\xB1");  // 'ΣΑ' -> 'σα'
  // A lone 'Σ' is not preceded by a cased letter: 'σ'.
  EXPECT_EQ(Lower("\xCE\xA3"), "\xCF\x83");
  // 'ΟΔΟΣ ΟΔΟΣ' -> both sigmas final (each followed by a non-cased character or the end).
  EXPECT_EQ(Lower("\xCE\x9F\xCE\xA3 \xCE\x9F\xCE\xA3"), "\xCE\xBF\xCF\x82 \xCE\xBF\xCF\x82");
  // Kelvin sign -> 'k'; 'ẞ' (U+1E9E) -> 'ß'; 'Ǆ' (U+01C4) -> 'ǆ'.
  EXPECT_EQ(Lower("\xE2\x84\xAA"), "k");
  EXPECT_EQ(Lower("\xE1\xBA\x9E"), "\xC3\x9F");
  EXPECT_EQ(Lower("\xC7\x84"), "\xC7\x86");
}

// Every code point Python 3.11 assigns: Lower() of the single code point equals Python's lower().
TEST(LowerTest, AgreesWithPythonOnEveryCodePoint) {
  std::vector<std::string> expected(0x110000);
  std::vector<bool> identity(0x110000, false);
  std::vector<bool> assigned(0x110000, false);
  for (const auto& line : Lines(ReadFile(KPLAB_TEST_DATA "/text/unicode_classes.tsv"))) {
    if (line.empty() || line[0] == '#') continue;
    unsigned first, last, flags;
    ASSERT_EQ(std::sscanf(line.c_str(), "%x %x %u", &first, &last, &flags), 3) << line;
    for (unsigned cp = first; cp <= last; ++cp) {
      assigned[cp] = (flags & 8) != 0;
      identity[cp] = (flags & 16) != 0;
    }
  }
  std::size_t mapped = 0;
  for (const auto& line : Lines(ReadFile(KPLAB_TEST_DATA "/text/unicode_lower.tsv"))) {
    std::istringstream ss(line);
    unsigned cp, low;
    ss >> std::hex >> cp;
    std::string s;
    while (ss >> low) AppendUtf8(s, low);
    expected[cp] = s;
    ++mapped;
  }
  ASSERT_GT(mapped, 1000u);
  int failures = 0;
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    if (!assigned[cp] || (cp >= 0xD800 && cp <= 0xDFFF)) continue;
    const std::string want = identity[cp] ? U8(cp) : expected[cp];
    const std::string got = Lower(U8(cp));
    if (got != want && ++failures <= 10) {
      ADD_FAILURE() << "U+" << std::hex << static_cast<unsigned>(cp);
    }
  }
  EXPECT_EQ(failures, 0);
}

// IsPySpace / IsPyWordChar / IsPyDecimal against Python on every code point it assigns.
TEST(UnicodeClassesTest, AgreeWithPython) {
  int failures = 0;
  std::size_t checked = 0;
  for (const auto& line : Lines(ReadFile(KPLAB_TEST_DATA "/text/unicode_classes.tsv"))) {
    if (line.empty() || line[0] == '#') continue;
    unsigned first, last, flags;
    ASSERT_EQ(std::sscanf(line.c_str(), "%x %x %u", &first, &last, &flags), 3) << line;
    if ((flags & 8) == 0) continue;  // unassigned in Python's Unicode 14
    for (unsigned cp = first; cp <= last; ++cp) {
      ++checked;
      const bool w = IsPyWordChar(cp), d = IsPyDecimal(cp), s = IsPySpace(cp);
      if ((w != ((flags & 1) != 0) || d != ((flags & 2) != 0) || s != ((flags & 4) != 0)) &&
          ++failures <= 10) {
        ADD_FAILURE() << "U+" << std::hex << cp << " w=" << w << " d=" << d << " s=" << s
                      << " python flags=" << std::dec << flags;
      }
    }
  }
  EXPECT_GT(checked, 280000u);
  EXPECT_EQ(failures, 0);
}

TEST(TextTest, IsAscii) {
  EXPECT_TRUE(IsAscii(""));
  EXPECT_TRUE(IsAscii("abcdefghijklmnop"));
  EXPECT_FALSE(IsAscii("abcdefghijklmno\xC3\xA9"));
  EXPECT_FALSE(IsAscii("\xC3\xA9"));
}

TEST(TextTest, IsPySpaceHandList) {
  // Python: ''.join(chr(c) for c in range(0x110000) if chr(c).isspace()) is exactly these.
  for (char32_t cp :
       {0x09, 0x0A,   0x0B,   0x0C,   0x0D,   0x1C,   0x1D,   0x1E,   0x1F,   0x20,  0x85,
        0xA0, 0x1680, 0x2000, 0x2005, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000}) {
    EXPECT_TRUE(IsPySpace(cp)) << std::hex << static_cast<unsigned>(cp);
  }
  // Zero-width space, BOM, word joiner and Mongolian vowel separator are not whitespace.
  for (char32_t cp : {0x200B, 0xFEFF, 0x2060, 0x180E, 0x00, 0x7F, 0x0E}) {
    EXPECT_FALSE(IsPySpace(cp)) << std::hex << static_cast<unsigned>(cp);
  }
}

TEST(TextTest, StripLikePython) {
  EXPECT_EQ(Strip("  a b  "), "a b");
  EXPECT_EQ(Strip(""), "");
  EXPECT_EQ(Strip(" \t\n "), "");
  // '\u3000\xa0x\u2009\x1c'.strip() == 'x'
  EXPECT_EQ(Strip("\xE3\x80\x80\xC2\xA0x\xE2\x80\x89\x1C"), "x");
  // U+200B (zero-width space) is not stripped.
  EXPECT_EQ(Strip("\xE2\x80\x8Bx"), "\xE2\x80\x8Bx");
  // Either end alone decides: an ASCII control space at one end ('\x1fa', 'a\x1c'), a Unicode one
  // ('a\xa0'), none at an end that is ASCII but not a letter ('\x7fa\x7f' keeps DEL), none at all.
  EXPECT_EQ(Strip("\x1F"
                  "a"),
            "a");
  EXPECT_EQ(Strip("a\x1C"), "a");
  EXPECT_EQ(Strip("a\xC2\xA0"), "a");
  EXPECT_EQ(Strip("\x7F"
                  "a\x7F"),
            "\x7F"
            "a\x7F");
  EXPECT_EQ(Strip("a b"), "a b");
  // Interior whitespace stays.
  EXPECT_EQ(Strip("\xC2\xA0"
                  "a\xC2\xA0"
                  "b\xC2\xA0"),
            "a\xC2\xA0"
            "b");
}

TEST(TextTest, SplitSpaceLikePythonSplitSpace) {
  // 'a  b'.split(' ') == ['a', '', 'b']
  EXPECT_EQ(SplitSpace("a  b"), (Views{"a", "", "b"}));
  // ''.split(' ') == ['']
  EXPECT_EQ(SplitSpace(""), (Views{""}));
  // ' a '.split(' ') == ['', 'a', '']
  EXPECT_EQ(SplitSpace(" a "), (Views{"", "a", ""}));
  // Tabs are not separators for split(' ').
  EXPECT_EQ(SplitSpace("a\tb c"), (Views{"a\tb", "c"}));
}

TEST(TextTest, SplitWhitespaceLikePythonSplit) {
  EXPECT_EQ(SplitWhitespace(""), Views{});
  EXPECT_EQ(SplitWhitespace("  \t "), Views{});
  EXPECT_EQ(SplitWhitespace(" a  b\tc\n"), (Views{"a", "b", "c"}));
  // 'a\xa0b\u3000c\x1fd\u200be'.split() == ['a', 'b', 'c', 'd\u200be']
  EXPECT_EQ(SplitWhitespace("a\xC2\xA0"
                            "b\xE3\x80\x80"
                            "c\x1F"
                            "d\xE2\x80\x8B"
                            "e"),
            (Views{"a", "b", "c",
                   "d\xE2\x80\x8B"
                   "e"}));
}

TEST(TextTest, SplitOnLikePython) {
  // 'a;b;;c;'.split(';') == ['a', 'b', '', 'c', '']
  EXPECT_EQ(SplitOn("a;b;;c;", ";"), (Views{"a", "b", "", "c", ""}));
  EXPECT_EQ(SplitOn("", ";"), (Views{""}));
  // 'x<eos>y<eos>'.split('<eos>') == ['x', 'y', '']
  EXPECT_EQ(SplitOn("x<eos>y<eos>", "<eos>"), (Views{"x", "y", ""}));
  // 'aaa'.split('aa') == ['', 'a'] (non-overlapping, left to right)
  EXPECT_EQ(SplitOn("aaa", "aa"), (Views{"", "a"}));
}

TEST(WordTokenizeTest, HandCases) {
  // nltk.tokenize.NLTKWordTokenizer().tokenize, sentence by sentence (nltk's own docstring example,
  // where its single call leaves "York." and "them." whole; kplab splits sentences first).
  EXPECT_EQ(WordTokenize("Good muffins cost $3.88\nin New York.  Please buy me\ntwo of them."),
            (Strings{"Good", "muffins", "cost", "$", "3.88", "in", "New", "York", ".", "Please",
                     "buy", "me", "two", "of", "them", "."}));
  EXPECT_EQ(WordTokenize("They'll save and invest more."),
            (Strings{"They", "'ll", "save", "and", "invest", "more", "."}));
  EXPECT_EQ(WordTokenize("hi, my name can't hello,"),
            (Strings{"hi", ",", "my", "name", "ca", "n't", "hello", ","}));
  EXPECT_EQ(WordTokenize("\"Hi,\" she said."),
            (Strings{"``", "Hi", ",", "''", "she", "said", "."}));
  EXPECT_EQ(WordTokenize(""), Strings{});
}

// Letters, digits and spaces only (most keyphrases) take a shortcut past nltk's passes; the tokens
// must stay nltk's. The one pass that changes such text is CONTRACTIONS2 — (?i)\b(can)(not)\b,
// (gim)(me), (gon)(na), (got)(ta), (lem)(me) and (wan)(na)(?=\s), the text padded with spaces first —
// and only on a whole word.
TEST(WordTokenizeTest, PlainWordsKeepNltkTokens) {
  EXPECT_EQ(WordTokenize("neural network copy7"), (Strings{"neural", "network", "copy7"}));
  EXPECT_EQ(WordTokenize("  graph   based  "), (Strings{"graph", "based"}));
  EXPECT_EQ(WordTokenize("123 4x5 X"), (Strings{"123", "4x5", "X"}));
  EXPECT_EQ(WordTokenize("   "), Strings{});
  EXPECT_EQ(WordTokenize("gonna make it"), (Strings{"gon", "na", "make", "it"}));
  EXPECT_EQ(WordTokenize("we Wanna"), (Strings{"we", "Wan", "na"}));
  EXPECT_EQ(WordTokenize("CANNOT stop"), (Strings{"CAN", "NOT", "stop"}));
  EXPECT_EQ(WordTokenize("gimme lemme gotta"), (Strings{"gim", "me", "lem", "me", "got", "ta"}));
  // Not whole words: no split.
  EXPECT_EQ(WordTokenize("gonnax cannot2 xwanna 2gimme"), (Strings{"gonnax", "cannot2", "xwanna", "2gimme"}));
  // A character outside the shortcut's set takes nltk's passes: the tab is whitespace to split(),
  // the hyphen is kept inside the word, the period ends the text.
  EXPECT_EQ(WordTokenize("deep\tlearning"), (Strings{"deep", "learning"}));
  EXPECT_EQ(WordTokenize("state-of-the-art model"), (Strings{"state-of-the-art", "model"}));
  EXPECT_EQ(WordTokenize("gonna be fine."), (Strings{"gon", "na", "be", "fine", "."}));
}

std::string Unescape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char c = s[++i];
      out.push_back(c == 't' ? '\t' : c == 'n' ? '\n' : c == 'r' ? '\r' : c);
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string Join(const Strings& tokens) {
  std::string out;
  for (const auto& t : tokens) out += "[" + t + "]";
  return out;
}

// Tricky inputs (quotes, contractions, clitics, final periods, Unicode) with nltk's tokens.
TEST(WordTokenizeTest, GoldenCases) {
  const auto lines = Lines(ReadFile(KPLAB_TEST_DATA "/text/word_tokenize_cases.tsv"));
  ASSERT_GT(lines.size(), 40u);
  for (const auto& line : lines) {
    std::vector<std::string> fields;
    for (auto f : SplitOn(line, "\t")) fields.push_back(Unescape(f));
    const std::string input = fields[0];
    const Strings want(fields.begin() + 1, fields.end());
    EXPECT_EQ(Join(WordTokenize(input)), Join(want)) << "input: " << input;
  }
}

std::uint64_t JoinedTokensFnv1a64(const Strings& tokens) {
  std::uint64_t h = 0xCBF29CE484222325ULL;
  bool first = true;
  for (const auto& t : tokens) {
    if (!first) h = (h ^ '\n') * 0x100000001B3ULL;
    first = false;
    for (unsigned char c : t) h = (h ^ c) * 0x100000001B3ULL;
  }
  return h;
}

// The value of the JSON string field `key` in a one-line JSON object, decoded (escapes and
// surrogate pairs). Enough for the KPTimes sample, whose fields are flat strings.
bool JsonStringField(std::string_view line, std::string_view key, std::string* out) {
  const std::string pat = "\"" + std::string(key) + "\": \"";
  std::size_t i = line.find(pat);
  if (i == std::string_view::npos) return false;
  i += pat.size();
  out->clear();
  auto hex4 = [&](std::size_t at) {
    return static_cast<char32_t>(std::stoul(std::string(line.substr(at, 4)), nullptr, 16));
  };
  while (i < line.size() && line[i] != '"') {
    if (line[i] != '\\') {
      out->push_back(line[i++]);
      continue;
    }
    const char e = line[i + 1];
    i += 2;
    switch (e) {
      case 'n':
        out->push_back('\n');
        break;
      case 't':
        out->push_back('\t');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case 'b':
        out->push_back('\b');
        break;
      case 'f':
        out->push_back('\f');
        break;
      case 'u': {
        char32_t cp = hex4(i);
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF && line.substr(i, 2) == "\\u") {
          const char32_t lo = hex4(i + 2);
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          i += 6;
        }
        AppendUtf8(*out, cp);
        break;
      }
      default:
        out->push_back(e);
    }
  }
  return true;
}

// Real raw text of ../shared/data (Inspec abstracts, SemEval full papers, KPTimes): the tokens'
// count and hash equal those of nltk on the same sentences.
TEST(WordTokenizeTest, AgreesWithNltkOnSharedData) {
  const std::string shared = KPLAB_SHARED_DATA;
  if (!std::filesystem::exists(shared + "/inspec_hulth2003")) {
    GTEST_SKIP() << "shared data not found at " << shared;
  }
  const auto golden = Lines(ReadFile(KPLAB_TEST_DATA "/text/word_tokenize_data.tsv"));
  ASSERT_GT(golden.size(), 2200u);
  std::string cached_path;
  std::vector<std::string> cached_lines;
  int failures = 0;
  for (const auto& line : golden) {
    const auto f = SplitOn(line, "\t");
    ASSERT_EQ(f.size(), 4u) << line;
    const std::string rel(f[0]), field(f[1]);
    const std::string path = shared + "/" + rel;
    std::string text;
    if (field == "-") {
      text = ReadFile(path);
    } else {
      if (path != cached_path) {
        cached_lines = Lines(ReadFile(path));
        cached_path = path;
      }
      const std::size_t dot = field.find('.');
      const std::size_t lineno = std::stoul(field.substr(0, dot));
      ASSERT_LE(lineno, cached_lines.size()) << line;
      ASSERT_TRUE(JsonStringField(cached_lines[lineno - 1], field.substr(dot + 1), &text)) << line;
    }
    ASSERT_TRUE(ValidUtf8(text)) << rel;
    const Strings tokens = WordTokenize(text);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(JoinedTokensFnv1a64(tokens)));
    if ((std::to_string(tokens.size()) != f[2] || hex != f[3]) && ++failures <= 5) {
      ADD_FAILURE() << rel << " " << field << ": " << tokens.size() << " tokens, hash " << hex
                    << "; nltk: " << f[2] << " tokens, hash " << f[3]
                    << " (see: /usr/bin/python3 scripts/gen_text_golden.py --show " << rel << " "
                    << field << ")";
    }
  }
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace kplab
