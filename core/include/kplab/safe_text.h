// Text on its way out, and names where they are made (docs/design-notes.md, notes 44 and 63).
//  - Names (system, dataset, metric, column, parameter, profile, model names) are valid UTF-8 without
//    control characters: CheckName refuses anything else where the name is made, naming the field and
//    the offending byte.
//  - Every text from data or plugins that reaches a terminal (tables, errors, kp.log, the REPL's output,
//    a script's print, tracebacks) goes through TerminalText: control characters, invalid bytes and the
//    characters that reorder or split lines are shown as escapes, so no text can clear the screen, move
//    the cursor, fake a line or flip the direction of what follows. The kplab program passes its stdout
//    and stderr through it as well; every other write to them is listed, with its reason, in
//    tests/host/output_rules_test.cc.
//  - JSON output (kplab/json.h, JsonString) escapes the same characters the JSON way and shows invalid
//    bytes as \xNN text: it is always valid JSON.
//
// Threads: no shared state: pure functions, safe from several threads at once.
#pragma once

#include <string>
#include <string_view>

#include "kplab/result.h"

namespace kplab {

// Code points that must not reach a terminal raw: C0 controls (U+0000-U+001F), DEL (U+007F), C1
// controls (U+0080-U+009F), the line and paragraph separators (U+2028, U+2029) and the bidirectional
// formatting characters (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069).
bool IsUnsafeCodePoint(char32_t cp);

enum class Newlines { kEscape, kKeep };

// The one escaping function for terminals and text formats. Each byte of an ill-formed UTF-8 sequence
// becomes \xNN; \n, \r and \t become \n, \r, \t (except '\n' and '\t' with Newlines::kKeep, for texts
// of several lines such as a message with its traceback); other C0 controls and DEL become \xNN; the
// other unsafe code points \uNNNN. Everything else, backslashes included, is copied.
std::string TerminalText(std::string_view s, Newlines newlines = Newlines::kEscape);

// TerminalText for an error message that may end with a Lua traceback: a line break is kept only where a
// line of the traceback or of kplab's own note begins ("stack traceback:", a line that starts with a tab,
// "(while "); any other is shown as \n, so that a newline inside a name, path or plugin message cannot
// fake a line of kplab's own output.
std::string ErrorText(std::string_view message);

// True when TerminalText would copy s unchanged (the common case: no allocation needed).
bool IsTerminalSafe(std::string_view s, Newlines newlines = Newlines::kEscape);

// "" when s is a valid name: well-formed UTF-8 without an unsafe code point; else what is wrong,
// naming the byte: "invalid UTF-8 at byte 3 (0xFF)", "control character U+001B at byte 2".
std::string NameProblem(std::string_view s);

// Error::Usage("FIELD 'SHOWN': PROBLEM (expected UTF-8 text without control characters)") when
// NameProblem(value) is not empty (SHOWN is TerminalText(value)); Ok otherwise. FIELD says where the
// name came from: "--system", "system name", "plugin 'x': column name".
Status CheckName(std::string_view field, std::string_view value);

}  // namespace kplab
