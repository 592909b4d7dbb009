// JSON helpers shared by the JSON-record importers (io_json.cc: KPEval, KPTimes, JSONL predictions;
// io_records.cc: Hugging Face records, OpenNMT-kpg predictions, pke references). Not installed.
#pragma once

#include <fmt/format.h>
#include <simdjson.h>

#include <string>
#include <string_view>
#include <vector>

#include "io/io_internal.h"
#include "util/json_internal.h"

namespace kplab::io_internal {

// The record file of a JSON dataset (kpeval, kptimes, midas, taln): PATH itself, or the one *.jsonl /
// *.json file of the directory PATH (none or several: an error naming them). Read into `files`.
const FileData& ReadOneRecordFile(const std::string& path, std::vector<FileData>& files);

// Accessors for elements whose type has been checked.
inline std::string_view Str(const simdjson::dom::element& e) { return e.get_string().value_unsafe(); }
inline simdjson::dom::array Arr(const simdjson::dom::element& e) { return e.get_array().value_unsafe(); }

inline bool IsBlankLine(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

// One JSON object of a file: a line of a JSONL file (no = its line), or an item of a JSON array
// (record = its 1-based index; no = 0, since the DOM keeps no positions). Errors name it:
// "F:L: what (expected ...)" or "F: record N: what (expected ...)".
struct Line {
  const FileData& file;
  int no;
  simdjson::dom::object obj;
  std::string_view expected_object;  // e.g. a JSON object with "source" and "target"
  int record = 0;

  [[noreturn]] void Fail(std::string_view what, std::string_view expected) const {
    if (record > 0) io_internal::Fail(file.path, 0, fmt::format("record {}: {}", record, what), expected);
    io_internal::Fail(file.path, no, what, expected);
  }
  bool Has(std::string_view key) const {
    simdjson::dom::element e;
    return obj.at_key(key).get(e) == simdjson::SUCCESS;
  }
  simdjson::dom::element Require(std::string_view key) const {
    simdjson::dom::element e;
    if (obj.at_key(key).get(e) != simdjson::SUCCESS) {
      Fail(fmt::format("missing field \"{}\"", key), expected_object);
    }
    return e;
  }
  [[noreturn]] void WrongType(std::string_view what, const simdjson::dom::element& e,
                              std::string_view expected) const {
    Fail(fmt::format("{} is {}", what, json_internal::TypeName(e)), expected);
  }
  std::string_view String(std::string_view key) const {
    const simdjson::dom::element e = Require(key);
    if (e.type() != simdjson::dom::element_type::STRING) {
      WrongType(fmt::format("field \"{}\"", key), e, "a string");
    }
    return Str(e);
  }
  // Optional "id": a string, or an integer written as its decimal digits. "" when absent.
  std::string Id() const {
    using simdjson::dom::element_type;
    simdjson::dom::element e;
    if (obj.at_key("id").get(e) != simdjson::SUCCESS) return "";
    switch (e.type()) {
      case element_type::STRING:
        return std::string(Str(e));
      case element_type::INT64:
        return std::to_string(e.get_int64().value_unsafe());
      case element_type::UINT64:
        return std::to_string(e.get_uint64().value_unsafe());
      default:
        WrongType("field \"id\"", e, "a string or an integer");
    }
  }
};

// Finds "[sep]" ignoring ASCII case (KPEval and DeepKPG lower-case the source before looking for it).
std::size_t FindSep(std::string_view s, std::size_t from);

// A ranked prediction list in field `key` of a record (io_json.cc): a ';'-joined string (its pieces),
// or an array of strings, [phrase, score] pairs or {"phrase", "score"?} objects, scores all-or-none.
void ParsePredictionList(const Line& line, std::string_view key, RawPrediction& pred);

}  // namespace kplab::io_internal
