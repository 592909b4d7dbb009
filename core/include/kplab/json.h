// Small JSON writing helpers shared by the CLI, run records and model manifests (no JSON library
// needed for output).
#pragma once

#include <cmath>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace kplab {

// A JSON string literal with the required escapes.
inline std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  return out + "\"";
}

// A JSON number: the shortest representation that round-trips; NaN and infinities (not JSON) as null.
inline std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  return fmt::format("{}", v);
}

}  // namespace kplab
