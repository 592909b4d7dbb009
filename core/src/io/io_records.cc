// Formats of the keyphrase projects that publish records rather than line files (docs/formats.md):
// Hugging Face midas/* and taln-ls2n/* datasets (JSON Lines, or the JSON array datasets' to_json
// writes with lines=False), DeepKPG/KPEval test.source + test.target pairs, pke's reference JSON,
// Hugging Face-style prediction records keyed by id and OpenNMT-kpg's JSONL predictions.
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
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

constexpr std::string_view kRecords =
    "one JSON object a line, or a JSON array of objects (datasets' to_json)";

// Whether the file's first non-blank byte opens a JSON array: datasets' to_json(lines=False) writes the
// records as one array; otherwise the file is JSON Lines.
bool IsJsonArray(std::string_view bytes) {
  const std::size_t first = bytes.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && bytes[first] == '[';
}

// Calls fn(Line) for every record of a JSON Lines file (blank lines skipped) or JSON array file.
template <class Fn>
void ForEachRecord(const FileData& file, std::string_view expected_object, Fn fn) {
  simdjson::dom::parser parser;
  if (IsJsonArray(file.bytes)) {
    element root;
    if (auto err = parser.parse(file.bytes.data(), file.bytes.size()).get(root); err != simdjson::SUCCESS) {
      Fail(file.path, 0, json_internal::JsonProblem(file.bytes, err), kRecords);
    }
    int record = 0;
    for (element item : Arr(root)) {
      ++record;
      if (item.type() != element_type::OBJECT) {
        Fail(file.path, 0, fmt::format("record {} is {}", record, json_internal::TypeName(item)),
             "a JSON object for each record");
      }
      fn(Line{file, 0, item.get_object().value_unsafe(), expected_object, record});
    }
    return;
  }
  const auto lines = SplitLines(file.bytes);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const int no = static_cast<int>(i + 1);
    if (IsBlankLine(lines[i])) continue;
    element el;
    if (auto err = parser.parse(lines[i].data(), lines[i].size()).get(el); err != simdjson::SUCCESS) {
      Fail(file.path, no, json_internal::JsonProblem(lines[i], err, true), kRecords);
    }
    if (el.type() != element_type::OBJECT) {
      Fail(file.path, no, fmt::format("line is {}", json_internal::TypeName(el)), kRecords);
    }
    fn(Line{file, no, el.get_object().value_unsafe(), expected_object});
  }
}

// "line 3" or "record 3": where a record is, for messages that point back at it.
std::string Where(const Line& line) {
  return line.record > 0 ? fmt::format("record {}", line.record) : fmt::format("line {}", line.no);
}

// The record's "id": required in these formats, a non-empty string or an integer.
std::string RequiredId(const Line& line) {
  line.Require("id");
  std::string id = line.Id();
  if (id.empty()) line.Fail("field \"id\" is an empty string", "a non-empty string or an integer");
  return id;
}

// An array of strings in field key (token lists, keyphrase lists).
std::vector<std::string_view> StringList(const Line& line, std::string_view key, std::string_view what) {
  const element e = line.Require(key);
  if (e.type() != element_type::ARRAY) {
    line.WrongType(fmt::format("field \"{}\"", key), e, fmt::format("an array of {}", what));
  }
  std::vector<std::string_view> out;
  std::size_t i = 0;
  for (element item : Arr(e)) {
    if (item.type() != element_type::STRING) {
      line.WrongType(fmt::format("\"{}\"[{}]", key, i), item, "a string");
    }
    out.push_back(Str(item));
    ++i;
  }
  return out;
}

// A parsed record waiting for the split filter and the duplicate-id check.
struct Pending {
  RawDoc doc;
  std::string split;
  bool has_split = false;
  std::string where;  // "line 3" / "record 3"
  int no = 0, record = 0;
};

[[noreturn]] void FailAt(const std::string& file, const Pending& p, std::string_view what,
                         std::string_view expected) {
  if (p.record > 0) Fail(file, 0, fmt::format("record {}: {}", p.record, what), expected);
  Fail(file, p.no, what, expected);
}

// Keeps the records of the chosen split (or the only one) and refuses repeated ids among them.
void SelectSplit(const FileData& file, const DatasetOptions& options, std::vector<Pending>& records,
                 RawDataset& out) {
  if (records.empty()) return;  // ImportDataset's "no documents"
  std::vector<std::string> splits;  // in order of first appearance
  for (const Pending& p : records) {
    if (p.has_split != records.front().has_split) {
      FailAt(file.path, p,
             fmt::format(fmt::runtime(p.has_split ? "a \"split\" field, but {} has none"
                                                     : "no \"split\" field, but {} has one"),
                         records.front().where),
             "\"split\" on every record or on none");
    }
    if (p.has_split && std::find(splits.begin(), splits.end(), p.split) == splits.end()) {
      splits.push_back(p.split);
    }
  }
  const auto list = [&] {
    std::string s;
    for (const auto& name : splits) s += (s.empty() ? "" : ", ") + name;
    return s;
  };
  std::string chosen = options.split;
  if (!chosen.empty()) {
    if (!records.front().has_split) {
      Fail(file.path, 0, fmt::format("split \"{}\" asked for, but the records have no \"split\" field", chosen),
           "a \"split\" field in every record, or no split option");
    }
    if (std::find(splits.begin(), splits.end(), chosen) == splits.end()) {
      Fail(file.path, 0, fmt::format("no record of split \"{}\"", chosen), "one of the splits in the file: " + list());
    }
  } else if (splits.size() > 1) {
    Fail(file.path, 0, fmt::format("records of {} splits: {}", splits.size(), list()),
         "one split; choose one with --split NAME (Python split=NAME) rather than mixing them");
  }
  std::unordered_map<std::string, std::string> seen;
  for (Pending& p : records) {
    if (!chosen.empty() && p.split != chosen) continue;
    const auto [it, fresh] = seen.emplace(p.doc.id, p.where);
    if (!fresh) {
      FailAt(file.path, p, fmt::format("second record with id \"{}\" (the first is {})", p.doc.id, it->second),
             "unique document ids");
    }
    out.docs.push_back(std::move(p.doc));
  }
}


// The optional "split" column (a string).
void ReadSplit(const Line& line, Pending& p) {
  element e;
  if (line.obj.at_key("split").get(e) != simdjson::SUCCESS) return;
  if (e.type() != element_type::STRING) line.WrongType("field \"split\"", e, "a string (the split's name)");
  p.split.assign(Str(e));
  p.has_split = true;
}

Pending Start(const Line& line) {
  Pending p;
  p.where = Where(line);
  p.no = line.no;
  p.record = line.record;
  p.doc.loc = {LocPath(line.file), line.no};
  return p;
}

}  // namespace

void ImportMidas(const std::string& path, const DatasetOptions& options, RawDataset& out,
                 std::vector<FileData>& files) {
  const FileData& file = ReadOneRecordFile(path, files);
  std::vector<Pending> records;
  ForEachRecord(file,
                "a JSON object with \"id\", \"document\", \"extractive_keyphrases\" and "
                "\"abstractive_keyphrases\"",
                [&](const Line& line) {
                  Pending p = Start(line);
                  p.doc.id = RequiredId(line);
                  // The document is a token list (the dataset cards: "whitespace separated list of
                  // words"); joined with single spaces it is pretokenized text.
                  for (std::string_view token : StringList(line, "document", "tokens (strings)")) {
                    if (!p.doc.body.empty()) p.doc.body += ' ';
                    p.doc.body.append(token);
                  }
                  p.doc.pretokenized = true;
                  // Present (extractive) then absent (abstractive): together the document's gold.
                  for (std::string_view kp : StringList(line, "extractive_keyphrases", "keyphrases (strings)")) {
                    p.doc.refs.push_back({std::string(kp)});
                  }
                  for (std::string_view kp : StringList(line, "abstractive_keyphrases", "keyphrases (strings)")) {
                    p.doc.refs.push_back({std::string(kp)});
                  }
                  ReadSplit(line, p);
                  records.push_back(std::move(p));
                });
  SelectSplit(file, options, records, out);
}

void ImportTaln(const std::string& path, const DatasetOptions& options, RawDataset& out,
                std::vector<FileData>& files) {
  const FileData& file = ReadOneRecordFile(path, files);
  std::vector<Pending> records;
  constexpr std::string_view kExpected =
      "a JSON object with \"id\", \"title\", \"abstract\" (or \"text\") and \"keyphrases\"";
  ForEachRecord(file, kExpected, [&](const Line& line) {
    Pending p = Start(line);
    p.doc.id = RequiredId(line);
    p.doc.title.assign(line.String("title"));
    // Abstract collections have "abstract"; full-text ones (e.g. taln-ls2n/kptimes-style news) "text".
    if (line.Has("abstract")) {
      p.doc.body.assign(line.String("abstract"));
    } else if (line.Has("text")) {
      p.doc.body.assign(line.String("text"));
    } else {
      line.Fail("missing field \"abstract\" (or \"text\")", kExpected);
    }
    const auto keyphrases = StringList(line, "keyphrases", "keyphrases (strings)");
    for (std::string_view kp : keyphrases) p.doc.refs.push_back({std::string(kp)});
    // "prmu" holds one category (P, R, M, U) per keyphrase; a different count means the columns are
    // misaligned, so the record is refused rather than read.
    if (line.Has("prmu")) {
      const auto prmu = StringList(line, "prmu", "PRMU categories (strings)");
      if (prmu.size() != keyphrases.size()) {
        line.Fail(fmt::format("fields \"prmu\" and \"keyphrases\" differ in length ({} and {})", prmu.size(),
                              keyphrases.size()),
                  "one PRMU category per keyphrase");
      }
    }
    ReadSplit(line, p);
    records.push_back(std::move(p));
  });
  SelectSplit(file, options, records, out);
}

// DeepKPG (uclanlp/DeepKPG data/format.py): line i of <split>.source is "title [sep] abstract" and line
// i of <split>.target the keyphrases joined with " ; ".
void ImportDeepKpg(const std::string& path, const DatasetOptions& options, RawDataset& out,
                   std::vector<FileData>& files) {
  std::string source_path, target_path;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::set<std::string> stems;
    for (const auto& entry : ListDirectory(path)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_directory(ec)) continue;
      if (EndsWith(name, ".source")) stems.insert(name.substr(0, name.size() - 7));
      if (EndsWith(name, ".target")) stems.insert(name.substr(0, name.size() - 7));
    }
    std::string list;
    for (const auto& s : stems) list += (list.empty() ? "" : ", ") + s;
    std::string stem = options.split;
    if (stem.empty()) {
      if (stems.size() != 1) {
        Fail(path, 0, fmt::format("{} DeepKPG splits{}{}", stems.size(), stems.empty() ? "" : ": ", list),
             stems.empty() ? "a <split>.source and <split>.target file (test.source, test.target)"
                           : "one split; choose one with --split NAME (Python split=NAME)");
      }
      stem = *stems.begin();
    } else if (stems.count(stem) == 0) {
      Fail(path, 0, fmt::format("no split \"{}\"", stem), "one of the splits in the directory: " + list);
    }
    source_path = (fs::path(path) / (stem + ".source")).string();
    target_path = (fs::path(path) / (stem + ".target")).string();
  } else {
    const std::string name = fs::path(path).filename().string();
    const std::string base = path.substr(0, path.size() - 7);
    if (EndsWith(name, ".source")) {
      source_path = path;
      target_path = base + ".target";
    } else if (EndsWith(name, ".target")) {
      source_path = base + ".source";
      target_path = path;
    } else {
      Fail(path, 0, "not a .source or .target file", "a DeepKPG <split>.source or <split>.target file");
    }
    if (!options.split.empty()) {
      Fail(path, 0, fmt::format("split \"{}\" asked for, but a file was given", options.split),
           "a directory of <split>.source/<split>.target files with a split option, or a file without");
    }
  }
  if (!Present(source_path)) Fail(target_path, 0, "no source file", source_path);
  if (!Present(target_path)) Fail(source_path, 0, "no target file", target_path);
  files.reserve(2);
  files.push_back(ReadTextFile(source_path, fs::path(source_path).filename().string()));
  files.push_back(ReadTextFile(target_path, fs::path(target_path).filename().string()));
  const FileData& source = files[0];
  const FileData& target = files[1];
  const auto src_lines = SplitLines(source.bytes);
  const auto tgt_lines = SplitLines(target.bytes);
  if (src_lines.size() != tgt_lines.size()) {
    const int line = static_cast<int>(std::min(tgt_lines.size(), src_lines.size() + 1));
    FailCount(target.path, tgt_lines.size(), line, src_lines.size(), "line of " + source.path);
  }
  out.docs.resize(src_lines.size());
  std::vector<std::string_view> pieces;
  for (std::size_t i = 0; i < src_lines.size(); ++i) {
    RawDoc& doc = out.docs[i];
    const int no = static_cast<int>(i + 1);
    doc.id = std::to_string(no);
    doc.pretokenized = true;
    doc.loc = {LocPath(source), no};
    const std::string_view src = src_lines[i];
    const std::size_t sep = FindSep(src, 0);
    if (sep == std::string_view::npos) {
      doc.body.assign(src);
    } else {
      if (FindSep(src, sep + 5) != std::string_view::npos) {
        Fail(source.path, no, "second \"[sep]\"", "\"title [sep] abstract\" with one [sep]");
      }
      SplitTitleBody(src, sep, 5, "[sep]", doc);
    }
    pieces.clear();
    SplitChar(tgt_lines[i], ';', pieces);
    for (std::string_view p : pieces) doc.refs.push_back({std::string(p)});
  }
}

// pke's reference JSON ({id: [[keyphrase, variant...], ...]}, boudinfl/pke and ake-datasets) as the
// references of the documents already read from dir.
void ApplyPkeReferences(const std::string& dataset_path, const std::string& ref_path, RawDataset& out,
                        std::vector<FileData>& files) {
  fs::path abs_dir = fs::absolute(dataset_path).lexically_normal();
  if (abs_dir.filename().empty()) abs_dir = abs_dir.parent_path();
  const fs::path abs_ref = fs::absolute(ref_path).lexically_normal();
  std::string rel = abs_ref.lexically_relative(abs_dir).generic_string();
  if (rel.empty()) rel = abs_ref.filename().string();
  files.push_back(ReadTextFile(ref_path, rel));
  const FileData& file = files.back();
  constexpr std::string_view kExpected =
      "a JSON object {document id: [[keyphrase, variant...], ...]}, as pke's reference files";
  simdjson::dom::parser parser;
  element root;
  if (auto err = parser.parse(file.bytes.data(), file.bytes.size()).get(root); err != simdjson::SUCCESS) {
    Fail(file.path, 0, json_internal::JsonProblem(file.bytes, err), kExpected);
  }
  if (root.type() != element_type::OBJECT) {
    Fail(file.path, 0, fmt::format("the file is {}", json_internal::TypeName(root)), kExpected);
  }
  std::unordered_map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < out.docs.size(); ++i) index.emplace(out.docs[i].id, i);
  std::vector<bool> seen(out.docs.size(), false);
  const bool stemmed = fs::path(ref_path).filename().string().find(".stem.") != std::string::npos;
  const object entries = root.get_object().value_unsafe();
  for (auto [key, value] : entries) {
    const std::string id(key);
    const auto it = index.find(id);
    if (it == index.end()) {
      Fail(file.path, 0, fmt::format("key \"{}\" is not a document of {}", id, dataset_path),
           "the ids (file stems) of the dataset's documents");
    }
    if (seen[it->second]) Fail(file.path, 0, fmt::format("second key \"{}\"", id), "unique document ids");
    seen[it->second] = true;
    if (value.type() != element_type::ARRAY) {
      Fail(file.path, 0, fmt::format("\"{}\" is {}", id, json_internal::TypeName(value)),
           "a list of references, each a list of a keyphrase and its variants");
    }
    RawDoc& doc = out.docs[it->second];
    doc.refs.clear();
    doc.refs_stemmed = stemmed;
    std::size_t i = 0;
    for (element ref : Arr(value)) {
      if (ref.type() != element_type::ARRAY) {
        Fail(file.path, 0, fmt::format("\"{}\"[{}] is {}", id, i, json_internal::TypeName(ref)),
             "a list of strings: a keyphrase and its variants");
      }
      std::vector<std::string> alternatives;
      std::size_t k = 0;
      for (element alt : Arr(ref)) {
        if (alt.type() != element_type::STRING) {
          Fail(file.path, 0, fmt::format("\"{}\"[{}][{}] is {}", id, i, k, json_internal::TypeName(alt)),
               "a string");
        }
        alternatives.emplace_back(Str(alt));
        ++k;
      }
      if (alternatives.empty()) {
        Fail(file.path, 0, fmt::format("\"{}\"[{}] is an empty list", id, i),
             "a keyphrase and its variants");
      }
      doc.refs.push_back(std::move(alternatives));
      ++i;
    }
  }
  for (std::size_t i = 0; i < out.docs.size(); ++i) {
    if (!seen[i]) {
      Fail(file.path, 0, fmt::format("no references for document \"{}\"", out.docs[i].id),
           "a key for every document of " + dataset_path);
    }
  }
}

namespace {

// The first record of a JSON Lines or JSON array file, for detection; false if there is none or the
// file does not parse (the importer the user then names says what is wrong).
bool FirstRecord(const FileData& file, simdjson::dom::parser& parser, object& out) {
  element el;
  if (IsJsonArray(file.bytes)) {
    if (parser.parse(file.bytes.data(), file.bytes.size()).get(el) != simdjson::SUCCESS) return false;
    const simdjson::dom::array items = Arr(el);
    if (items.size() == 0) return false;
    el = items.at(0).value_unsafe();
  } else {
    const auto lines = SplitLines(file.bytes);
    const auto it = std::find_if(lines.begin(), lines.end(), [](std::string_view l) { return !IsBlankLine(l); });
    if (it == lines.end() || parser.parse(it->data(), it->size()).get(el) != simdjson::SUCCESS) return false;
  }
  if (el.type() != element_type::OBJECT) return false;
  out = el.get_object().value_unsafe();
  return true;
}

bool HasKey(const object& o, std::string_view key) {
  element e;
  return o.at_key(key).get(e) == simdjson::SUCCESS;
}

}  // namespace

std::string DetectRecordFormat(const FileData& file) {
  simdjson::dom::parser parser;
  object o;
  if (!FirstRecord(file, parser, o)) return "";
  if (HasKey(o, "source")) return "kpeval";
  if (HasKey(o, "keyword")) return "kptimes";
  if (HasKey(o, "document") || HasKey(o, "extractive_keyphrases")) return "midas";
  if (HasKey(o, "keyphrases") && HasKey(o, "title")) return "taln";
  return "";
}

std::string DetectPredictionRecords(const FileData& file) {
  simdjson::dom::parser parser;
  object o;
  if (!FirstRecord(file, parser, o)) return "";
  if (HasKey(o, "pred_sents")) return "opennmt-kpg";
  if (HasKey(o, "keyphrases") && !HasKey(o, "predictions")) return "hf";
  return "";
}

void ParseHfPredictions(const FileData& file, RawPredictions& out) {
  ForEachRecord(file, "a JSON object with \"id\" and \"keyphrases\"", [&](const Line& line) {
    RawPrediction pred;
    pred.doc_id = RequiredId(line);
    pred.loc = {LocPath(file), line.no};
    ParsePredictionList(line, "keyphrases", pred);
    out.docs.push_back(std::move(pred));
  });
}

// OpenNMT-kpg (memray/OpenNMT-kpg-release, onmt/translate/translation.py Translation.__dict__): one
// JSON object a line per source document, in source order, with the n-best "pred_sents" (token lists)
// and their "pred_scores" (log-probabilities). The beams are kept in the model's order.
void ParseOpenNmtKpgPredictions(const FileData& file, RawPredictions& out) {
  ForEachRecord(file, "a JSON object with \"pred_sents\"", [&](const Line& line) {
    RawPrediction pred;
    pred.loc = {LocPath(file), line.no};
    const element sents = line.Require("pred_sents");
    if (sents.type() != element_type::ARRAY) {
      line.WrongType("field \"pred_sents\"", sents, "an array of token lists");
    }
    std::size_t i = 0;
    for (element sent : Arr(sents)) {
      std::string phrase;
      if (sent.type() == element_type::STRING) {
        phrase.assign(Str(sent));
      } else if (sent.type() == element_type::ARRAY) {
        std::size_t k = 0;
        for (element token : Arr(sent)) {
          if (token.type() != element_type::STRING) {
            line.WrongType(fmt::format("\"pred_sents\"[{}][{}]", i, k), token, "a string (a token)");
          }
          if (!phrase.empty()) phrase += ' ';
          phrase.append(Str(token));
          ++k;
        }
      } else {
        line.WrongType(fmt::format("\"pred_sents\"[{}]", i), sent, "a token list or a string");
      }
      pred.phrases.push_back(std::move(phrase));
      ++i;
    }
    element scores;
    if (line.obj.at_key("pred_scores").get(scores) == simdjson::SUCCESS) {
      if (scores.type() != element_type::ARRAY) {
        line.WrongType("field \"pred_scores\"", scores, "an array of numbers, one per \"pred_sents\" item");
      }
      std::size_t k = 0;
      for (element s : Arr(scores)) {
        double v = 0;
        // A score saved from a one-element tensor may be a one-element list.
        if (s.type() == element_type::ARRAY && Arr(s).size() == 1) s = Arr(s).at(0).value_unsafe();
        if (s.get_double().get(v) != simdjson::SUCCESS) {
          line.WrongType(fmt::format("\"pred_scores\"[{}]", k), s, "a number");
        }
        pred.scores.push_back(v);
        ++k;
      }
      if (pred.scores.size() != pred.phrases.size()) {
        line.Fail(fmt::format("fields \"pred_scores\" and \"pred_sents\" differ in length ({} and {})",
                              pred.scores.size(), pred.phrases.size()),
                  "one score per predicted keyphrase");
      }
    }
    out.docs.push_back(std::move(pred));
  });
}

}  // namespace kplab::io_internal
