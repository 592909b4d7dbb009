// Plugin parameters (plugin API 2, docs/plugins.md): a declared type, range and doc per parameter,
// checked once per run, before any document is scored. Lua-free, shared by the loader (plugin.cc) and
// kp.int / kp.number / kp.bool / kp.string / kp.cutoffs (lua_params.cc).
//
// Threads: ParamSpec is a plain value; the functions are pure.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "kplab/result.h"

namespace kplab::host {

// A parameter's value: numbers (integers too) as double, booleans, strings (cut-off lists as their text).
using ParamValue = std::variant<double, bool, std::string>;

enum class ParamType { kNumber, kInt, kBool, kString, kCutoffs };

struct ParamSpec {
  ParamType type = ParamType::kNumber;
  ParamValue default_value;
  std::optional<double> min, max;   // kNumber, kInt: inclusive bounds
  std::vector<std::string> one_of;  // kString: the allowed values (empty: any string)
  std::string doc;
};

// "number", "integer", "boolean", "string", "cut-off list".
const char* ParamTypeName(ParamType type);
// "an integer >= 1", "a number from 0 to 1", "one of: union, max, mean", ...: what a value must be.
std::string ParamExpectation(const ParamSpec& spec);
// "" when value fits spec, else "must be an integer >= 1 (got 0)", or for a cut-off list the parser's
// message ("'0' is not a cut-off (...)"). Join with ParamError.
std::string CheckParamValue(const ParamSpec& spec, const ParamValue& value);
// "parameter 'k' must be ..." / "parameter 'ks': '0' is not a cut-off ...".
std::string ParamError(const std::string& what, const std::string& message);
// Parses a command-line / library value ("5", "true", "5,10,M") for spec; the error is the same
// "must be ..." text as CheckParamValue's.
Result<ParamValue> ParseParamText(const ParamSpec& spec, const std::string& text);
// The value as text for listings ("5", "0.5", "true", "5,10,M,O").
std::string ParamText(const ParamValue& value);

}  // namespace kplab::host
