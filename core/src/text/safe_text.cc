#include "kplab/safe_text.h"

#include <fmt/format.h>

#include "kplab/utf8.h"

namespace kplab {

bool IsUnsafeCodePoint(char32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || cp == 0x061C || cp == 0x200E ||
         cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

namespace {

bool Kept(char32_t cp, Newlines newlines) { return newlines == Newlines::kKeep && (cp == '\n' || cp == '\t'); }

}  // namespace

bool IsTerminalSafe(std::string_view s, Newlines newlines) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F) {
      ++i;
      continue;
    }
    const Utf8Char d = DecodeUtf8Char(s, i);
    if (!d.valid || (IsUnsafeCodePoint(d.cp) && !Kept(d.cp, newlines))) return false;
    i += d.size;
  }
  return true;
}

std::string TerminalText(std::string_view s, Newlines newlines) {
  if (IsTerminalSafe(s, newlines)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 16);
  for (std::size_t i = 0; i < s.size();) {
    const Utf8Char d = DecodeUtf8Char(s, i);
    if (!d.valid) {
      for (std::size_t k = 0; k < d.size; ++k) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[i + k]));
    } else if (!IsUnsafeCodePoint(d.cp) || Kept(d.cp, newlines)) {
      out.append(s.substr(i, d.size));
    } else if (d.cp == '\n') {
      out += "\\n";
    } else if (d.cp == '\r') {
      out += "\\r";
    } else if (d.cp == '\t') {
      out += "\\t";
    } else if (d.cp < 0x80) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(d.cp));
    } else {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(d.cp));
    }
    i += d.size;
  }
  return out;
}

std::string ErrorText(std::string_view message) {
  if (message.find('\n') == std::string_view::npos) return TerminalText(message, Newlines::kKeep);
  std::string joined;
  joined.reserve(message.size() + 16);
  // Whole lines are copied at once: a plugin's message may be many megabytes.
  for (std::size_t start = 0;;) {
    const std::size_t nl = message.find('\n', start);
    joined.append(message.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
    if (nl == std::string_view::npos) break;
    const std::string_view next = message.substr(nl + 1);
    const bool kept = next.starts_with("stack traceback:") || next.starts_with("\t") || next.starts_with("(while ");
    joined += kept ? "\n" : "\\n";
    start = nl + 1;
  }
  return TerminalText(joined, Newlines::kKeep);
}

std::string NameProblem(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const Utf8Char d = DecodeUtf8Char(s, i);
    if (!d.valid) return fmt::format("invalid UTF-8 at byte {} (0x{:02X})", i + 1, static_cast<unsigned char>(s[i]));
    if (IsUnsafeCodePoint(d.cp)) {
      return fmt::format("{} U+{:04X} at byte {}", d.cp < 0xA0 ? "control character" : "formatting character",
                         static_cast<unsigned>(d.cp), i + 1);
    }
    i += d.size;
  }
  return "";
}

Status CheckName(std::string_view field, std::string_view value) {
  const std::string problem = NameProblem(value);
  if (problem.empty()) return Status::Ok();
  return Error::Usage(
      fmt::format("{} '{}': {} (expected UTF-8 text without control characters)", field, TerminalText(value), problem));
}

}  // namespace kplab
