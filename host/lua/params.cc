#include "params.h"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "kplab/match.h"

namespace kplab::host {

const char* ParamTypeName(ParamType type) {
  switch (type) {
    case ParamType::kNumber: return "number";
    case ParamType::kInt: return "integer";
    case ParamType::kBool: return "boolean";
    case ParamType::kString: return "string";
    case ParamType::kCutoffs: return "cut-off list";
  }
  return "?";
}

std::string ParamText(const ParamValue& value) {
  if (const double* d = std::get_if<double>(&value)) {
    if (std::floor(*d) == *d && std::abs(*d) < 1e15) return fmt::format("{}", static_cast<long long>(*d));
    return fmt::format("{}", *d);
  }
  if (const bool* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  return std::get<std::string>(value);
}

std::string ParamExpectation(const ParamSpec& spec) {
  switch (spec.type) {
    case ParamType::kBool: return "a boolean";
    case ParamType::kCutoffs: return "a cut-off list (integers from 1 to 100000, M or O, comma-separated)";
    case ParamType::kString: {
      if (spec.one_of.empty()) return "a string";
      std::string list;
      for (const auto& v : spec.one_of) list += (list.empty() ? "" : ", ") + v;
      return "one of: " + list;
    }
    case ParamType::kNumber:
    case ParamType::kInt: {
      const std::string what = spec.type == ParamType::kInt ? "an integer" : "a number";
      auto num = [](double v) { return ParamText(ParamValue(v)); };
      if (spec.min && spec.max) return fmt::format("{} from {} to {}", what, num(*spec.min), num(*spec.max));
      if (spec.min) return fmt::format("{} >= {}", what, num(*spec.min));
      if (spec.max) return fmt::format("{} <= {}", what, num(*spec.max));
      return what;
    }
  }
  return "?";
}

std::string CheckParamValue(const ParamSpec& spec, const ParamValue& value) {
  const std::string shown = [&] {
    std::string t = ParamText(value);
    if (t.size() > 60) t = t.substr(0, 57) + "...";
    return std::holds_alternative<std::string>(value) ? "'" + t + "'" : t;
  }();
  const std::string fail = fmt::format("must be {} (got {})", ParamExpectation(spec), shown);
  switch (spec.type) {
    case ParamType::kBool: return std::holds_alternative<bool>(value) ? "" : fail;
    case ParamType::kString: {
      const std::string* s = std::get_if<std::string>(&value);
      if (s == nullptr) return fail;
      if (spec.one_of.empty()) return "";
      for (const auto& v : spec.one_of) {
        if (v == *s) return "";
      }
      return fail;
    }
    case ParamType::kCutoffs: {
      const std::string* s = std::get_if<std::string>(&value);
      if (s == nullptr) return fail;
      Result<std::vector<Cutoff>> ks = ParseCutoffs(*s);
      return ks ? "" : ks.error().message;
    }
    case ParamType::kNumber:
    case ParamType::kInt: {
      const double* d = std::get_if<double>(&value);
      if (d == nullptr || !std::isfinite(*d)) return fail;
      if (spec.type == ParamType::kInt && (std::floor(*d) != *d || std::abs(*d) > 9007199254740992.0)) return fail;
      if ((spec.min && *d < *spec.min) || (spec.max && *d > *spec.max)) return fail;
      return "";
    }
  }
  return fail;
}

std::string ParamError(const std::string& what, const std::string& message) {
  return what + (message.starts_with("must ") ? " " : ": ") + message;
}

Result<ParamValue> ParseParamText(const ParamSpec& spec, const std::string& text) {
  ParamValue value = text;
  if (spec.type == ParamType::kNumber || spec.type == ParamType::kInt) {
    double d = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
      return Error::Usage(fmt::format("must be {} (got '{}')", ParamExpectation(spec),
                                      text.size() > 60 ? text.substr(0, 57) + "..." : text));
    }
    value = d;
  } else if (spec.type == ParamType::kBool) {
    if (text == "true" || text == "1") {
      value = true;
    } else if (text == "false" || text == "0") {
      value = false;
    } else {
      return Error::Usage(fmt::format("must be a boolean: true, false, 1 or 0 (got '{}')", text));
    }
  }
  if (std::string message = CheckParamValue(spec, value); !message.empty()) return Error::Usage(message);
  return value;
}

}  // namespace kplab::host
