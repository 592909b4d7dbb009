// JSON reading helpers shared by the simdjson-based readers (io_json.cc, hf_tokenizer.cc). Only for
// translation units of kplab_core: simdjson's layout depends on its compile definitions.
#pragma once

#include <simdjson.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "kplab/safe_text.h"
#include "kplab/utf8.h"

namespace kplab::json_internal {

// "an array", "a number", ... for error messages.
inline const char* TypeName(const simdjson::dom::element& e) {
  using simdjson::dom::element_type;
  switch (e.type()) {
    case element_type::ARRAY:
      return "an array";
    case element_type::OBJECT:
      return "an object";
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE:
      return "a number";
    case element_type::STRING:
      return "a string";
    case element_type::BOOL:
      return "a boolean";
    case element_type::NULL_VALUE:
      return "null";
  }
  return "a value";
}

namespace detail {

struct Spot {
  std::size_t line = 1, column = 1;
};

inline std::string Where(const Spot& at, bool one_line) {
  return one_line ? fmt::format("column {}", at.column) : fmt::format("line {}, column {}", at.line, at.column);
}

// What is wrong with a number token that does not fit; "" when it does.
inline std::string NumberRangeProblem(std::string_view token) {
  const bool integer = token.find_first_of(".eE") == std::string_view::npos;
  const std::string shown =
      TerminalText(token.size() > 40 ? std::string(token.substr(0, 37)) + "..." : std::string(token));
  if (integer) {
    std::int64_t i = 0;
    std::uint64_t u = 0;
    const char* end = token.data() + token.size();
    if (std::from_chars(token.data(), end, i).ec == std::errc() ||
        (token[0] != '-' && std::from_chars(token.data(), end, u).ec == std::errc())) {
      return "";
    }
    return fmt::format("integer out of range ('{}': JSON integers are read as 64-bit integers)", shown);
  }
  double d = 0;
  const auto r = std::from_chars(token.data(), token.data() + token.size(), d);
  if (r.ec == std::errc::result_out_of_range || (r.ec == std::errc() && !std::isfinite(d))) {
    return fmt::format("number out of range ('{}': beyond the range of a double)", shown);
  }
  return "";
}

// What simdjson's code says, in a phrase for a message.
inline std::string Kind(simdjson::error_code err) {
  switch (err) {
    case simdjson::TAPE_ERROR: return "a missing or extra comma, colon, brace, bracket or key";
    case simdjson::INCOMPLETE_ARRAY_OR_OBJECT: return "an array or object that is not closed";
    case simdjson::EMPTY: return "no JSON value";
    case simdjson::UNCLOSED_STRING: return "a string without its closing quote";
    case simdjson::STRING_ERROR: return "a bad escape in a string";
    case simdjson::UNESCAPED_CHARS: return "a control character inside a string (it must be escaped)";
    case simdjson::T_ATOM_ERROR: return "a word that is not true";
    case simdjson::F_ATOM_ERROR: return "a word that is not false";
    case simdjson::N_ATOM_ERROR: return "a word that is not null";
    case simdjson::NUMBER_ERROR: return "a malformed number";
    case simdjson::TRAILING_CONTENT: return "more after the JSON value";
    default: return std::string("simdjson: ") + simdjson::error_message(err);
  }
}

}  // namespace detail

// What is wrong with JSON text that simdjson refused with `err`, for an error message: "too deeply nested
// at line 3, column 70 (more than 1024 levels of arrays and objects)", "number out of range at column 9
// ('1e999': beyond the range of a double)", "integer out of range at ... ('1267650600228229401496703205376':
// JSON integers are read as 64-bit integers)", "invalid UTF-8 at line 2, column 4", else "malformed
// JSON (WHAT simdjson FOUND)", e.g. "malformed JSON (a string without its closing quote)". one_line: the text is one line of a file whose line the message already
// names (JSON Lines): the position is a column only.
namespace detail {

inline Spot SpotOf(std::string_view text, std::size_t offset) {
  Spot s;
  for (std::size_t k = 0; k < offset && k < text.size(); ++k) {
    if (text[k] == '\n') {
      ++s.line;
      s.column = 1;
    } else if (!IsUtf8Continuation(static_cast<unsigned char>(text[k]))) {
      ++s.column;
    }
  }
  return s;
}

inline std::size_t NumberEnd(std::string_view text, std::size_t i) {
  std::size_t j = i + 1;
  while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.' || text[j] == 'e' ||
                             text[j] == 'E' || text[j] == '+' || text[j] == '-')) {
    ++j;
  }
  return j;
}

}  // namespace detail

// For an on-demand parser, which finds a number that does not fit only when it reads it: what is wrong with
// the number token at byte `offset` of `text` ("integer out of range at line 2, column 9 (...)"), or "" when
// no number starts there or it fits.
inline std::string NumberProblemAt(std::string_view text, std::size_t offset) {
  if (offset >= text.size() || !(text[offset] == '-' || (text[offset] >= '0' && text[offset] <= '9'))) return "";
  const std::size_t end = detail::NumberEnd(text, offset);
  std::string p = detail::NumberRangeProblem(text.substr(offset, end - offset));
  if (p.empty()) return "";
  const std::size_t open = p.find(" (");
  return p.substr(0, open) + " at " + detail::Where(detail::SpotOf(text, offset), false) + p.substr(open);
}

inline std::string JsonProblem(std::string_view text, simdjson::error_code err, bool one_line = false) {
  using detail::Spot;
  auto spot_of = [&](std::size_t offset) { return detail::SpotOf(text, offset); };
  if (err == simdjson::UTF8_ERROR) {
    std::size_t bad = 0;
    if (!ValidUtf8(text, &bad)) return "invalid UTF-8 at " + detail::Where(spot_of(bad), one_line);
  }
  // Depth and numbers: one pass over the text outside strings.
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > simdjson::DEFAULT_MAX_DEPTH && err == simdjson::DEPTH_ERROR) {
        return fmt::format("too deeply nested at {} (more than {} levels of arrays and objects)",
                           detail::Where(spot_of(i), one_line), simdjson::DEFAULT_MAX_DEPTH);
      }
    } else if (c == ']' || c == '}') {
      if (depth > 0) --depth;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      const std::size_t j = detail::NumberEnd(text, i);
      if (err == simdjson::NUMBER_ERROR || err == simdjson::NUMBER_OUT_OF_RANGE) {
        if (std::string p = detail::NumberRangeProblem(text.substr(i, j - i)); !p.empty()) {
          const std::size_t open = p.find(" (");
          return p.substr(0, open) + " at " + detail::Where(spot_of(i), one_line) + p.substr(open);
        }
      }
      i = j - 1;
    }
  }
  return "malformed JSON (" + detail::Kind(err) + ")";
}

}  // namespace kplab::json_internal
