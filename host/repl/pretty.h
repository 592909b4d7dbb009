// How the REPL shows values: nested tables (bounded depth and width), arrays of records as aligned
// tables (kp.runs.list()), and kplab userdata by type: a KeyphraseList numbered with present/absent
// marks, a Matrix as aligned columns, a Document with its references and predictions.
//
// Threads: PrettyValue uses its LuaVm on the calling thread (the REPL's); the other functions are pure.
#pragma once

#include <string>
#include <vector>

#include "sandbox.h"

struct lua_State;

namespace kplab::host {

// The value at idx of vm's stack formatted for the REPL. Runs through vm.Call, as every call into a
// script's values: a __tostring or __index of the value is metered (budget, deadline, Ctrl-C), and an
// error or a kill gives "<error while printing: MESSAGE>" instead. `label` names the call in errors
// without a position. [-0, +0]
std::string PrettyValue(LuaVm& vm, int idx, const std::string& label);

// Lua's reserved words (not names; offered by the REPL's completion).
inline constexpr const char* kLuaKeywords[] = {"and",   "break", "do",    "else",     "elseif", "end",
                                               "false", "for",   "function", "goto", "if",     "in",
                                               "local", "nil",   "not",   "or",       "repeat", "return",
                                               "then",  "true",  "until", "while"};

// A Lua name (letters, digits, '_', not starting with a digit) that is not a keyword.
bool IsIdentifier(const std::string& s);

// Left-aligned columns under a header and a rule; cells wider than 60 characters are cut with "...".
std::string FormatTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows);

}  // namespace kplab::host
