// Small JSON writing helpers shared by the CLI, run records and model manifests (no JSON library
// needed for output).
//
// Threads: no shared state: pure functions, safe from several threads at once.
#pragma once

#include <cmath>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "kplab/safe_text.h"
#include "kplab/utf8.h"

namespace kplab {

// A JSON string literal that is always valid JSON and safe on a terminal (kplab/safe_text.h): '"',
// '\\' and the unsafe code points are escaped the JSON way (\n, \t, \r, \u001b, \u202e, ...), and each
// byte of an ill-formed UTF-8 sequence becomes the six characters \\xNN (the text a terminal shows for
// it), never a copy of the byte.
inline std::string JsonString(std::string_view s) {
  std::string out = "\"";
  out.reserve(s.size() + 2);
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F) {
      if (c == '"' || c == '\\') out.push_back('\\');
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    const Utf8Char d = DecodeUtf8Char(s, i);
    if (!d.valid) {
      for (std::size_t k = 0; k < d.size; ++k) out += fmt::format("\\\\x{:02x}", static_cast<unsigned char>(s[i + k]));
    } else if (d.cp == '\n') {
      out += "\\n";
    } else if (d.cp == '\t') {
      out += "\\t";
    } else if (d.cp == '\r') {
      out += "\\r";
    } else if (IsUnsafeCodePoint(d.cp)) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(d.cp));
    } else {
      out.append(s.substr(i, d.size));
    }
    i += d.size;
  }
  return out + "\"";
}

// A JSON number: the shortest representation that round-trips; NaN and infinities (not JSON) as null.
inline std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  return fmt::format("{}", v);
}

}  // namespace kplab
