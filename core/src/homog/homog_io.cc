// Reformulation pairs (homog.h): one JSON object a line, {"id", "original", "reformulation",
// "keyphrases", "method"}. The paper's data (GPT-4o paraphrases and back-translations of Inspec) is not
// public in ../shared/data; this is kplab's own format for it (docs/homogeneity.md).
#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include "io/io_internal.h"
#include "util/json_internal.h"
#include "kplab/homog.h"
#include "kplab/text.h"

namespace kplab::homog {

namespace {

using io_internal::Fail;
using io_internal::ImportFailure;
using json_internal::TypeName;
using simdjson::dom::element;
using simdjson::dom::element_type;

constexpr std::string_view kExpectedLine =
    "one JSON object a line with \"original\", \"reformulation\" and \"keyphrases\"";

std::string RequireString(const std::string& path, int line, simdjson::dom::object obj, std::string_view key) {
  element e;
  if (obj.at_key(key).get(e) != simdjson::SUCCESS) {
    Fail(path, line, fmt::format("missing field \"{}\"", key), kExpectedLine);
  }
  if (e.type() != element_type::STRING) {
    Fail(path, line, fmt::format("field \"{}\" is {}", key, TypeName(e)), "a string");
  }
  return std::string(e.get_string().value_unsafe());
}

}  // namespace

namespace {

std::vector<ReformulationPair> Parse(std::string_view text, const std::string& path) {
  const auto lines = io_internal::SplitLines(text);
  simdjson::dom::parser parser;
  std::vector<ReformulationPair> out;
  std::set<std::string> ids;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const int no = static_cast<int>(i + 1);
    if (lines[i].find_first_not_of(" \t\r") == std::string_view::npos) continue;
    element el;
    if (auto err = parser.parse(lines[i].data(), lines[i].size()).get(el); err != simdjson::SUCCESS) {
      Fail(path, no, json_internal::JsonProblem(lines[i], err, true), kExpectedLine);
    }
    if (el.type() != element_type::OBJECT) {
      Fail(path, no, fmt::format("line is {}", TypeName(el)), kExpectedLine);
    }
    const simdjson::dom::object obj = el.get_object().value_unsafe();
    for (const auto& field : obj) {
      const std::string_view k = field.key;
      if (k != "id" && k != "original" && k != "reformulation" && k != "keyphrases" && k != "method") {
        Fail(path, no, fmt::format("unknown field \"{}\"", k),
             "only id, original, reformulation, keyphrases, method");
      }
    }
    ReformulationPair p;
    p.line = no;
    element e;
    if (obj.at_key("id").get(e) == simdjson::SUCCESS) {
      if (e.type() == element_type::STRING) {
        p.id = std::string(e.get_string().value_unsafe());
      } else if (e.type() == element_type::INT64) {
        p.id = std::to_string(e.get_int64().value_unsafe());
      } else if (e.type() == element_type::UINT64) {
        p.id = std::to_string(e.get_uint64().value_unsafe());
      } else {
        Fail(path, no, fmt::format("field \"id\" is {}", TypeName(e)), "a string or an integer");
      }
    } else {
      p.id = std::to_string(no);
    }
    if (!ids.insert(p.id).second) {
      Fail(path, no, fmt::format("duplicate id \"{}\"", p.id), "a unique id per pair");
    }
    p.original = RequireString(path, no, obj, "original");
    p.reformulation = RequireString(path, no, obj, "reformulation");
    if (obj.at_key("method").get(e) == simdjson::SUCCESS) p.method = RequireString(path, no, obj, "method");
    if (obj.at_key("keyphrases").get(e) != simdjson::SUCCESS) {
      Fail(path, no, "missing field \"keyphrases\"", kExpectedLine);
    }
    if (e.type() == element_type::STRING) {
      std::vector<std::string_view> pieces;
      io_internal::SplitChar(e.get_string().value_unsafe(), ';', pieces);
      for (auto piece : pieces) p.keyphrases.emplace_back(piece);
    } else if (e.type() == element_type::ARRAY) {
      std::size_t k = 0;
      const simdjson::dom::array items = e.get_array().value_unsafe();
      for (element item : items) {
        if (item.type() != element_type::STRING) {
          Fail(path, no, fmt::format("\"keyphrases\"[{}] is {}", k, TypeName(item)), "a string");
        }
        p.keyphrases.emplace_back(item.get_string().value_unsafe());
        ++k;
      }
    } else {
      Fail(path, no, fmt::format("field \"keyphrases\" is {}", TypeName(e)),
           "an array of strings or a ';'-joined string");
    }
    out.push_back(std::move(p));
  }
  if (out.empty()) Fail(path, 0, "no pairs", "at least one line");
  return out;
}

}  // namespace

Result<std::vector<ReformulationPair>> ParseReformulations(std::string_view text, const std::string& name) {
  try {
    std::size_t bad = 0;
    if (!ValidUtf8(text, &bad)) {
      const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n');
      Fail(name, static_cast<int>(line), "invalid UTF-8", "UTF-8 text");
    }
    return Parse(text, name);
  } catch (const ImportFailure& e) {
    return e.error;
  }
}

Result<std::vector<ReformulationPair>> ImportReformulations(const std::string& path) {
  io_internal::FileData file;
  try {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
      Fail(path, 0, fs::exists(path, ec) ? "not a file" : "no such file", "a reformulation-pairs JSONL file");
    }
    file = io_internal::ReadTextFile(path, fs::path(path).filename().string());
    auto pairs = Parse(file.bytes, path);
    io_internal::CheckUnchanged(file);
    return pairs;
  } catch (const ImportFailure& e) {
    return io_internal::ChangedWhileRead(std::span(&file, 1)).value_or(e.error);
  }
}

}  // namespace kplab::homog
