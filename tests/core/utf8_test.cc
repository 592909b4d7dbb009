// The one UTF-8 codec (kplab/utf8.h). Expected values are written out from the Unicode Standard
// (chapter 3, table 3-7 for well-formedness and table 3-8 for U+FFFD substitution of maximal
// subparts); Python's bytes.decode("utf-8", "replace") follows the same rule and gives the same
// sequences.
#include "kplab/utf8.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace kplab {
namespace {

// Decodes all of s with DecodeUtf8Char, as a lossy decoder does.
std::u32string Lossy(std::string_view s) {
  std::u32string out;
  for (std::size_t i = 0; i < s.size();) {
    const Utf8Char d = DecodeUtf8Char(s, i);
    EXPECT_GE(d.size, 1u);
    EXPECT_LE(i + d.size, s.size()) << "read past the end at " << i;
    out.push_back(d.cp);
    i += d.size;
  }
  return out;
}

TEST(Utf8CodecTest, DecodesEachLength) {
  const std::string_view s("a\xC3\xA9\xE2\x80\x99\xF0\x9F\x98\x80");
  Utf8Char d = DecodeUtf8Char(s, 0);
  EXPECT_EQ(d.cp, U'a');
  EXPECT_EQ(d.size, 1u);
  EXPECT_TRUE(d.valid);
  d = DecodeUtf8Char(s, 1);
  EXPECT_EQ(d.cp, char32_t{0xE9});
  EXPECT_EQ(d.size, 2u);
  d = DecodeUtf8Char(s, 3);
  EXPECT_EQ(d.cp, char32_t{0x2019});
  EXPECT_EQ(d.size, 3u);
  d = DecodeUtf8Char(s, 6);
  EXPECT_EQ(d.cp, char32_t{0x1F600});
  EXPECT_EQ(d.size, 4u);
  EXPECT_TRUE(d.valid);
}

TEST(Utf8CodecTest, MaximalSubpartsAsInTheStandard) {
  // Unicode 15, table 3-8: 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64.
  const std::string_view s("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64");
  const std::u32string want = {U'a', 0xFFFD, 0xFFFD, 0xFFFD, U'b', 0xFFFD, U'c', 0xFFFD, 0xFFFD, U'd'};
  EXPECT_EQ(Lossy(s), want);
}

TEST(Utf8CodecTest, RefusesOverlongsSurrogatesAndTooLarge) {
  // Each byte that cannot continue is its own U+FFFD (the second byte is out of table 3-7's range).
  EXPECT_EQ(Lossy("\xE0\x80\x80"), std::u32string(3, 0xFFFD));      // overlong U+0000
  EXPECT_EQ(Lossy("\xC0\xAF"), std::u32string(2, 0xFFFD));          // overlong '/'
  EXPECT_EQ(Lossy("\xED\xA0\x80"), std::u32string(3, 0xFFFD));      // surrogate U+D800
  EXPECT_EQ(Lossy("\xF4\x90\x80\x80"), std::u32string(4, 0xFFFD));  // U+110000
  EXPECT_EQ(Lossy("\xF5\x80"), std::u32string(2, 0xFFFD));          // F5 never starts a sequence
  // The extremes that are allowed.
  EXPECT_EQ(Lossy("\xED\x9F\xBF\xEE\x80\x80\xF4\x8F\xBF\xBF"), (std::u32string{0xD7FF, 0xE000, 0x10FFFF}));
  const Utf8Char d = DecodeUtf8Char("\xED\xA0\x80", 0);
  EXPECT_FALSE(d.valid);
  EXPECT_EQ(d.size, 1u);
}

TEST(Utf8CodecTest, TruncatedSequenceIsOneReplacementAndStopsAtTheEnd) {
  const std::string_view s("\xF0\x9F\x98", 3);
  const Utf8Char d = DecodeUtf8Char(s, 0);
  EXPECT_EQ(d.cp, char32_t{0xFFFD});
  EXPECT_EQ(d.size, 3u);
  EXPECT_FALSE(d.valid);
  EXPECT_EQ(Lossy(std::string_view("ab\xE2\x80", 4)), (std::u32string{U'a', U'b', 0xFFFD}));
}

TEST(Utf8CodecTest, DecodeUtf8AdvancesOneByteOnBadInput) {
  // The stepping form resynchronizes byte by byte (text.h's callers promise valid UTF-8).
  const std::string_view s("\xE2\x80" "a", 3);
  std::size_t i = 0;
  EXPECT_EQ(DecodeUtf8(s, i), char32_t{0xFFFD});
  EXPECT_EQ(i, 1u);
  EXPECT_EQ(DecodeUtf8(s, i), char32_t{0xFFFD});
  EXPECT_EQ(i, 2u);
  EXPECT_EQ(DecodeUtf8(s, i), U'a');
  EXPECT_EQ(i, 3u);
}

TEST(Utf8CodecTest, EncodesEveryLengthBoundary) {
  struct Case {
    char32_t cp;
    std::string_view bytes;
  };
  const std::vector<Case> cases = {
      {0x00, std::string_view("\x00", 1)}, {0x7F, "\x7F"},           {0x80, "\xC2\x80"},
      {0x7FF, "\xDF\xBF"},                 {0x800, "\xE0\xA0\x80"},  {0xFFFF, "\xEF\xBF\xBF"},
      {0x10000, "\xF0\x90\x80\x80"},       {0x10FFFF, "\xF4\x8F\xBF\xBF"},
  };
  for (const Case& c : cases) {
    std::string out = "x";
    AppendUtf8(out, c.cp);
    EXPECT_EQ(out.substr(1), c.bytes) << std::hex << static_cast<unsigned>(c.cp);
    EXPECT_EQ(out[0], 'x');
    std::size_t i = 1;
    EXPECT_EQ(DecodeUtf8(out, i), c.cp);
    EXPECT_EQ(i, out.size());
    EXPECT_TRUE(ValidUtf8(out));
  }
}

TEST(Utf8CodecTest, ValidUtf8AgreesWithTheDecoder) {
  // The first ill-formed sequence is where the decoder first says !valid, past an ASCII run long
  // enough for the eight-byte fast path.
  const std::string s = std::string("twelve bytes") + "\xC3\xA9" + "\xE0\x9F\xBF" + "z";
  std::size_t bad = 99;
  EXPECT_FALSE(ValidUtf8(s, &bad));
  EXPECT_EQ(bad, 14u);
  EXPECT_FALSE(DecodeUtf8Char(s, 14).valid);
  EXPECT_TRUE(ValidUtf8(s.substr(0, 14)));
}

TEST(Utf8CodecTest, LengthsForValidText) {
  EXPECT_EQ(Utf8Length(""), 0u);
  EXPECT_EQ(Utf8Length("caf\xC3\xA9 \xF0\x9F\x98\x80"), 6u);
  EXPECT_EQ(Utf8SequenceLength('a'), 1u);
  EXPECT_EQ(Utf8SequenceLength(0xC3), 2u);
  EXPECT_EQ(Utf8SequenceLength(0xE2), 3u);
  EXPECT_EQ(Utf8SequenceLength(0xF0), 4u);
  EXPECT_EQ(Utf8SequenceLength(0x80), 1u);  // a continuation byte still advances
  EXPECT_TRUE(IsUtf8Continuation(0xBF));
  EXPECT_FALSE(IsUtf8Continuation(0xC0));
}

}  // namespace
}  // namespace kplab
