// The UTF-8 codec of kplab: validation, decoding one code point, encoding one code point. Every
// part of the core that reads or writes UTF-8 byte by byte goes through these, so that "well-formed"
// means one thing everywhere: Unicode's definition (table 3-7: no overlongs, no surrogates, nothing
// above U+10FFFF).
// Threads: all functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kplab {

// Whether byte c continues a sequence (10xxxxxx).
inline bool IsUtf8Continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// One step of decoding.
struct Utf8Char {
  char32_t cp;       // the code point; U+FFFD when !valid
  std::size_t size;  // bytes read: the whole sequence, or the maximal ill-formed subpart (>= 1)
  bool valid;
};

// Decodes the sequence starting at s[i] (i < s.size()), never reading past s. An ill-formed
// sequence gives U+FFFD and, as size, the length of its maximal subpart (Unicode's "substitution of
// maximal subparts", as Rust's from_utf8_lossy and the WHATWG decoder): a truncated "\xE2\x80" is one
// U+FFFD of 2 bytes, a stray continuation byte is one U+FFFD of 1 byte.
Utf8Char DecodeUtf8Char(std::string_view s, std::size_t i);

// Decodes one code point at s[i] (i < s.size()), advancing i. For valid UTF-8; an ill-formed or
// truncated sequence gives U+FFFD and advances one byte, never reading past s.
// The ASCII case is inline: tokenizers call this once per character.
inline char32_t DecodeUtf8(std::string_view s, std::size_t& i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) {
    ++i;
    return c;
  }
  const Utf8Char d = DecodeUtf8Char(s, i);
  i += d.valid ? d.size : 1;
  return d.cp;
}

// Appends the UTF-8 encoding of cp (cp <= U+10FFFF).
void AppendUtf8(std::string& out, char32_t cp);

// True if s is well-formed UTF-8. On failure, *bad_offset (if given) is the byte offset of the first
// ill-formed sequence.
bool ValidUtf8(std::string_view s, std::size_t* bad_offset = nullptr);

// Length in bytes of the sequence that lead byte c starts, read from c alone: for stepping over
// UTF-8 already known to be valid (1 for ASCII, 2..4 for a lead byte). A continuation byte gives 1,
// so stepping always advances.
inline std::size_t Utf8SequenceLength(unsigned char c) {
  return c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

// Number of code points of valid UTF-8 s (its bytes that are not continuation bytes).
std::size_t Utf8Length(std::string_view s);

}  // namespace kplab
