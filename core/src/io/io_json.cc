// JSON-lines formats: KPEval datasets (source/target), KPTimes (title/abstract/keyword) and JSONL
// predictions. One JSON object a line; blank lines are skipped (many writers end files with one).
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "io/io_internal.h"
#include "io/io_json_internal.h"
#include "kplab/io.h"

namespace kplab::io_internal {
namespace {

namespace fs = std::filesystem;
using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

constexpr std::string_view kOneObject = "one JSON object a line";

using json_internal::TypeName;

// Calls fn(line_number, object) for every non-blank line of a JSONL file.
template <class Fn>
void ForEachObject(const FileData& file, Fn fn) {
  simdjson::dom::parser parser;
  const auto lines = SplitLines(file.bytes);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const int line_no = static_cast<int>(i + 1);
    if (IsBlankLine(lines[i])) continue;
    element el;
    if (auto err = parser.parse(lines[i].data(), lines[i].size()).get(el); err != simdjson::SUCCESS) {
      Fail(file.path, line_no, json_internal::JsonProblem(lines[i], err, true), kOneObject);
    }
    if (el.type() != element_type::OBJECT) {
      Fail(file.path, line_no, fmt::format("line is {}", TypeName(el)), kOneObject);
    }
    fn(line_no, el.get_object().value_unsafe());
  }
}

// References: a ';'-joined string (pieces of split(';'), as KPEval reads them), or an array whose
// items are strings (one reference each) or arrays of strings (alternatives, first = primary).
void ParseRefs(const Line& line, std::string_view key, RawDoc& doc) {
  constexpr std::string_view kExpected =
      "a ';'-joined string or an array of strings or of arrays of strings";
  const element e = line.Require(key);
  if (e.type() == element_type::STRING) {
    std::vector<std::string_view> pieces;
    SplitChar(Str(e), ';', pieces);
    for (std::string_view p : pieces) doc.refs.push_back({std::string(p)});
    return;
  }
  if (e.type() != element_type::ARRAY)
    line.WrongType(fmt::format("field \"{}\"", key), e, kExpected);
  std::size_t i = 0;
  for (element item : Arr(e)) {
    const std::string what = fmt::format("\"{}\"[{}]", key, i);
    if (item.type() == element_type::STRING) {
      doc.refs.push_back({std::string(Str(item))});
    } else if (item.type() == element_type::ARRAY) {
      std::vector<std::string> alternatives;
      std::size_t k = 0;
      for (element alt : Arr(item)) {
        if (alt.type() != element_type::STRING) {
          line.WrongType(fmt::format("{}[{}]", what, k), alt, "a string");
        }
        alternatives.emplace_back(Str(alt));
        ++k;
      }
      if (alternatives.empty()) {
        Fail(line.file.path, line.no, fmt::format("{} is an empty array", what),
             "a non-empty list of alternatives");
      }
      doc.refs.push_back(std::move(alternatives));
    } else {
      line.WrongType(what, item, "a string or an array of strings");
    }
    ++i;
  }
}

}  // namespace

const FileData& ReadOneRecordFile(const std::string& path, std::vector<FileData>& files) {
  std::string file_path = path;
  if (fs::is_directory(path)) {
    std::vector<std::string> found;
    std::error_code ec;
    for (const auto& entry : ListDirectory(path)) {
      const std::string name = entry.path().filename().string();
      // Not is_regular_file(): a FIFO or link loop named *.jsonl is read and refused, not skipped.
      if (!entry.is_directory(ec) && (EndsWith(name, ".jsonl") || EndsWith(name, ".json"))) {
        found.push_back(entry.path().string());
      }
    }
    if (found.size() != 1) {
      std::sort(found.begin(), found.end());
      Fail(path, 0,
           found.empty() ? "no JSON file" : fmt::format("{} JSON files ({})", found.size(), fmt::join(found, ", ")),
           "exactly one *.jsonl or *.json file in the directory, or the path of the file");
    }
    file_path = found[0];
  }
  files.push_back(ReadTextFile(file_path, fs::path(file_path).filename().string()));
  return files.back();
}

std::size_t FindSep(std::string_view s, std::size_t from) {
  constexpr std::string_view kSep = "[sep]";
  for (std::size_t i = s.find('[', from); i != std::string_view::npos; i = s.find('[', i + 1)) {
    if (s.size() - i < kSep.size()) return std::string_view::npos;
    bool match = true;
    for (std::size_t k = 1; k < kSep.size() && match; ++k) {
      char c = s[i + k];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      match = c == kSep[k];
    }
    if (match) return i;
  }
  return std::string_view::npos;
}

std::string DetectJsonlFormat(const std::string& path) {
  // mapped-read: detection only; the importer it picks reads the file again, and checks it
  return DetectRecordFormat(ReadTextFile(path, ""));
}

void ImportKpEval(const std::string& path, RawDataset& out, std::vector<FileData>& files) {
  const FileData& file = ReadOneRecordFile(path, files);
  ForEachObject(file, [&](int no, object obj) {
    const Line line{file, no, obj, "a JSON object with \"source\" and \"target\""};
    RawDoc doc;
    doc.id = line.Id();
    if (doc.id.empty()) doc.id = std::to_string(out.docs.size() + 1);
    doc.pretokenized = true;
    const std::string_view src = line.String("source");
    const std::size_t sep = FindSep(src, 0);
    if (sep == std::string_view::npos) {
      doc.body.assign(src);
    } else {
      if (FindSep(src, sep + 5) != std::string_view::npos) {
        Fail(file.path, no, "second \"[sep]\" in field \"source\"",
             "\"title [sep] abstract\" with one [sep]");
      }
      SplitTitleBody(src, sep, 5, "[sep]", doc);
    }
    ParseRefs(line, "target", doc);
    doc.loc = {LocPath(file), no};
    out.docs.push_back(std::move(doc));
  });
}

void ImportKpTimes(const std::string& path, RawDataset& out, std::vector<FileData>& files) {
  const FileData& file = ReadOneRecordFile(path, files);
  ForEachObject(file, [&](int no, object obj) {
    const Line line{file, no, obj, "a JSON object with \"title\", \"abstract\" and \"keyword\""};
    RawDoc doc;
    doc.id = line.Id();
    if (doc.id.empty()) doc.id = std::to_string(out.docs.size() + 1);
    doc.title.assign(line.String("title"));
    doc.body.assign(line.String("abstract"));
    ParseRefs(line, "keyword", doc);
    doc.loc = {LocPath(file), no};
    out.docs.push_back(std::move(doc));
  });
}

void ParsePredictionList(const Line& line, std::string_view key, RawPrediction& pred) {
  constexpr std::string_view kItem =
      "a string, [phrase, score] or {\"phrase\": ..., \"score\": ...}";
  const element e = line.Require(key);
  if (e.type() == element_type::STRING) {
    std::vector<std::string_view> pieces;
    SplitChar(Str(e), ';', pieces);
    pred.phrases.assign(pieces.begin(), pieces.end());
    return;
  }
  if (e.type() != element_type::ARRAY) {
    line.WrongType(fmt::format("field \"{}\"", key), e, "a ';'-joined string or an array");
  }
  std::vector<bool> scored;
  std::size_t i = 0;
  for (element item : Arr(e)) {
    const std::string what = fmt::format("\"{}\"[{}]", key, i);
    double score = 0;
    bool has_score = false;
    if (item.type() == element_type::STRING) {
      pred.phrases.emplace_back(Str(item));
    } else if (item.type() == element_type::ARRAY) {
      const simdjson::dom::array pair = Arr(item);
      if (pair.size() != 2) line.Fail(fmt::format("{} has {} items", what, pair.size()), "[phrase, score]");
      const element phrase = pair.at(0).value_unsafe(), value = pair.at(1).value_unsafe();
      if (phrase.type() != element_type::STRING) {
        line.WrongType(what + "[0]", phrase, "a string");
      }
      if (value.get_double().get(score) != simdjson::SUCCESS) {
        line.WrongType(what + "[1]", value, "a number");
      }
      pred.phrases.emplace_back(Str(phrase));
      has_score = true;
    } else if (item.type() == element_type::OBJECT) {
      const object o = item.get_object().value_unsafe();
      element phrase, value;
      if (o.at_key("phrase").get(phrase) != simdjson::SUCCESS) {
        line.Fail(fmt::format("{} has no field \"phrase\"", what), kItem);
      }
      if (phrase.type() != element_type::STRING) {
        line.WrongType(what + ".phrase", phrase, "a string");
      }
      pred.phrases.emplace_back(Str(phrase));
      if (o.at_key("score").get(value) == simdjson::SUCCESS) {
        if (value.get_double().get(score) != simdjson::SUCCESS) {
          line.WrongType(what + ".score", value, "a number");
        }
        has_score = true;
      }
    } else {
      line.WrongType(what, item, kItem);
    }
    if (i > 0 && has_score != scored[0]) {
      line.Fail(fmt::format("{} {}", what, has_score ? "has a score" : "has no score"),
                "scores for all predictions of a line or for none");
    }
    scored.push_back(has_score);
    if (has_score) pred.scores.push_back(score);
    ++i;
  }
}

void ParseJsonlPredictions(const FileData& file, RawPredictions& out) {
  ForEachObject(file, [&](int no, object obj) {
    const Line line{file, no, obj, "a JSON object with \"predictions\""};
    RawPrediction pred;
    pred.doc_id = line.Id();
    pred.loc = {LocPath(file), no};
    ParsePredictionList(line, "predictions", pred);
    out.docs.push_back(std::move(pred));
  });
}

}  // namespace kplab::io_internal
