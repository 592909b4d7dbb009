// Text primitives. Strings are UTF-8. Semantics follow Python 3 str methods where the peers
// (KPEval, kenchan0226, kg_one2set) rely on them, so that kplab tokenizes exactly as they do.
// Threads: all functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/utf8.h"  // ValidUtf8, DecodeUtf8, AppendUtf8 (declared here before utf8.h existed)

namespace kplab {

// Python str.lower(): full Unicode lower-case mapping (SpecialCasing, e.g. U+0130 -> "i\u0307") and
// the final-sigma rule. ASCII input takes a fast path. Input must be valid UTF-8.
std::string Lower(std::string_view s);

// True if every byte is < 0x80.
bool IsAscii(std::string_view s);

// Python str.isspace() for one code point.
bool IsPySpace(char32_t cp);

// Python's re module, str patterns: \w (str.isalnum() or '_') and \d (str.isdecimal()) for one code
// point. Python 3.11 uses Unicode 14, ICU 72 Unicode 15: code points first assigned in Unicode 15 differ.
bool IsPyWordChar(char32_t cp);
bool IsPyDecimal(char32_t cp);

// Python str.strip() with no argument: removes leading/trailing code points for which isspace().
std::string_view Strip(std::string_view s);

// Python s.split(' '): splits on every single U+0020, so consecutive spaces give empty tokens and
// "" gives {""}. Views point into s.
std::vector<std::string_view> SplitSpace(std::string_view s);

// Python s.split(): runs of Python whitespace separate tokens; no empty tokens. Views point into s.
std::vector<std::string_view> SplitWhitespace(std::string_view s);

// Python s.split(sep) for a non-empty separator string. Views point into s.
std::vector<std::string_view> SplitOn(std::string_view s, std::string_view sep);

// Word tokenizer for raw, untokenized text (Inspec .abstr, SemEval full text, KPTimes): splits
// sentences after '.', '?' or '!' followed by whitespace, then applies nltk 3.8's
// NLTKWordTokenizer rules to each sentence, exactly (docs/text.md). Returns owned tokens, original
// case.
std::vector<std::string> WordTokenize(std::string_view s);

}  // namespace kplab
