// Plain-text dataset formats: Meng-2017 (context + allkeywords), kg_one2set (src + trg), Inspec as
// released by Hulth (2003) and SemEval-2010 Task 5. See docs/formats.md for the layouts.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "io/io_internal.h"
#include "kplab/io.h"

namespace kplab::io_internal {
namespace {

namespace fs = std::filesystem;

// A directory given as "dir/" has an empty filename; messages and lookups want "dir".
fs::path TrimmedPath(const std::string& path) {
  fs::path p(path);
  while (!p.empty() && p.filename().empty() && p.has_parent_path() && p != p.root_path()) {
    p = p.parent_path();
  }
  return p;
}

// The pair of line-aligned files of Meng-2017 / kg_one2set. keys is required; text may be absent
// (Meng-2017 kp20k ships allkeywords only).
struct FilePair {
  std::string text_path;  // "" if none
  std::string keys_path;
};

std::string Partner(const std::string& name, std::string_view from, std::string_view to) {
  return name.substr(0, name.size() - from.size()) + std::string(to);
}

FilePair ResolvePair(const std::string& path, std::string_view text_suffix,
                     std::string_view keys_suffix) {
  const fs::path p = TrimmedPath(path);
  FilePair pair;
  if (fs::is_regular_file(p)) {
    const std::string name = p.filename().string();
    const fs::path dir = p.parent_path();
    if (EndsWith(name, text_suffix)) {
      const fs::path keys = dir / Partner(name, text_suffix, keys_suffix);
      if (!Present(keys.string())) {
        Fail(path, 0, "no matching reference file", fmt::format("{} next to it", keys.string()));
      }
      return {p.string(), keys.string()};
    }
    if (EndsWith(name, keys_suffix)) {
      const fs::path text = dir / Partner(name, keys_suffix, text_suffix);
      return {Present(text.string()) ? text.string() : "", p.string()};
    }
    Fail(path, 0, "unexpected file name",
         fmt::format("a name ending in {} or {}", text_suffix, keys_suffix));
  }
  std::vector<std::string> texts, keys;
  std::error_code ec;
  for (const auto& entry : ListDirectory(p.string())) {
    if (entry.is_directory(ec)) continue;  // a FIFO or link loop under a dataset name is read and refused
    const std::string name = entry.path().filename().string();
    if (EndsWith(name, text_suffix)) texts.push_back(name);
    if (EndsWith(name, keys_suffix)) keys.push_back(name);
  }
  std::sort(texts.begin(), texts.end());
  std::sort(keys.begin(), keys.end());
  if (keys.size() > 1) {
    Fail(p.string(), 0, fmt::format("several *{} files", keys_suffix),
         "one dataset per directory, or the path of one file");
  }
  for (const std::string& t : texts) {
    if (keys.empty() || Partner(t, text_suffix, keys_suffix) != keys[0]) {
      Fail((p / t).string(), 0, "no matching reference file",
           fmt::format("{} next to it", (p / Partner(t, text_suffix, keys_suffix)).string()));
    }
  }
  if (keys.empty()) {
    Fail(p.string(), 0, fmt::format("no *{} file", keys_suffix),
         fmt::format("*{} and *{} files", text_suffix, keys_suffix));
  }
  pair.keys_path = (p / keys[0]).string();
  if (!texts.empty()) pair.text_path = (p / texts[0]).string();
  return pair;
}

}  // namespace

// Meng-2017 and kg_one2set share one layout: line i of the text file is "title <eos> abstract" and
// line i of the keys file is "kp1;kp2;...".
PairLines ReadLinePair(const std::string& path, std::string_view text_suffix, std::string_view keys_suffix,
                       std::vector<FileData>& files) {
  const FilePair pair = ResolvePair(path, text_suffix, keys_suffix);
  files.reserve(2);
  files.push_back(ReadTextFile(pair.keys_path, fs::path(pair.keys_path).filename().string()));
  const bool has_text = !pair.text_path.empty();
  if (has_text) {
    files.push_back(ReadTextFile(pair.text_path, fs::path(pair.text_path).filename().string()));
  }
  PairLines lines;
  lines.keys = LineIndex(files[0].bytes);
  if (has_text) {
    lines.text = LineIndex(files[1].bytes);
    if (lines.keys.size() != lines.text->size()) {
      const int line = static_cast<int>(std::min(lines.keys.size(), lines.text->size() + 1));
      FailCount(files[0].path, lines.keys.size(), line, lines.text->size(), "line of " + files[1].path);
    }
  }
  return lines;
}

void SplitLinePairDoc(std::string_view key_line, const std::string_view* text_line, LineDocuments::Lines& out) {
  out.has_text = text_line != nullptr;
  out.title = out.body = out.separator = {};
  if (text_line) {
    const std::string_view src = *text_line;
    const std::size_t pos = src.find("<eos>");
    if (pos == std::string_view::npos) {
      out.body = src;
    } else {
      std::tie(out.title, out.body) = TitleAndBody(src, pos, 5);
      out.separator = "<eos>";
    }
  }
  out.refs.clear();
  SplitChar(key_line, ';', out.refs);
}

void ParseLinePairDoc(std::size_t i, std::string_view key_line, const std::string_view* text_line, RawDoc& doc,
                      LineDocuments::Lines& lines) {
  SplitLinePairDoc(key_line, text_line, lines);
  doc.id = std::to_string(i + 1);
  doc.pretokenized = true;
  doc.has_text = lines.has_text;
  doc.title.assign(lines.title);
  doc.body.assign(lines.body);
  doc.separator.assign(lines.separator);
  // Assigned in place, so that a document object read into again and again keeps its buffers
  // (cleared and appended to: assign() takes the general path for overlapping bytes, per piece).
  doc.refs.resize(lines.refs.size());
  for (std::size_t k = 0; k < lines.refs.size(); ++k) {
    doc.refs[k].resize(1);
    std::string& form = doc.refs[k][0];
    form.clear();
    form.append(lines.refs[k]);
  }
  doc.loc.line = static_cast<int>(i + 1);
}

namespace {

void ImportLinePair(const std::string& path, std::string_view text_suffix,
                    std::string_view keys_suffix, RawDataset& out, std::vector<FileData>& files) {
  const PairLines lines = ReadLinePair(path, text_suffix, keys_suffix, files);
  const bool has_text = lines.text.has_value();
  const SharedPath loc_file(has_text ? files[1].path : files[0].path);  // one copy for every document
  out.docs.resize(lines.keys.size());
  LineDocuments::Lines pieces;
  for (std::size_t i = 0; i < lines.keys.size(); ++i) {
    RawDoc& doc = out.docs[i];
    const std::string_view text_line = has_text ? lines.text->At(files[1].bytes, i) : std::string_view();
    ParseLinePairDoc(i, lines.keys.At(files[0].bytes, i), has_text ? &text_line : nullptr, doc, pieces);
    doc.loc.file = loc_file;
  }
}

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

// Hulth's files wrap long logical lines onto physical lines that start with a tab. Returns the
// logical lines, each wrap replaced by one space.
std::vector<std::string> HulthLogicalLines(std::string_view text) {
  std::vector<std::string> logical;
  for (std::string_view line : SplitLines(text)) {
    if (!logical.empty() && !line.empty() && line.front() == '\t') {
      std::string& prev = logical.back();
      while (!prev.empty() && IsBlank(prev.back())) prev.pop_back();
      prev += ' ';
      prev.append(TrimBlanks(line));
    } else {
      logical.emplace_back(line);
    }
  }
  return logical;
}

// Stems of the files in dir whose names end in suffix, in natural order.
std::vector<std::string> StemsWithSuffix(const fs::path& dir, std::string_view suffix) {
  std::vector<std::string> stems;
  std::error_code ec;
  for (const auto& entry : ListDirectory(dir.string())) {
    if (entry.is_directory(ec)) continue;  // a FIFO or link loop under a document's name is read and refused
    const std::string name = entry.path().filename().string();
    if (EndsWith(name, suffix) && name.size() > suffix.size()) {
      stems.push_back(name.substr(0, name.size() - suffix.size()));
    }
  }
  std::sort(stems.begin(), stems.end(),
            [](const std::string& a, const std::string& b) { return NaturalLess(a, b); });
  return stems;
}

// Name of a file for the content hash: relative to the dataset directory (abs_dir, absolute and
// normalized), so that the hash does not depend on where the data lives or how the path was
// spelled.
std::string RelativeName(const fs::path& file, const fs::path& abs_dir) {
  const fs::path abs_file = fs::absolute(file).lexically_normal();
  const std::string rel = abs_file.lexically_relative(abs_dir).generic_string();
  return rel.empty() ? abs_file.filename().string() : rel;
}

void RequireDirectory(const std::string& path, const fs::path& p, std::string_view expected) {
  if (!fs::is_directory(p)) Fail(path, 0, "not a directory", expected);
}

// SemEval answer files: "ID : kp1,kp2+variant,...". Fills refs of the documents named in it.
void ParseSemEvalAnswers(const FileData& file, const fs::path& text_dir,
                         const std::unordered_map<std::string, std::size_t>& index,
                         RawDataset& out) {
  const bool stemmed = file.rel_name.find(".stem.") != std::string::npos;
  std::vector<bool> seen(out.docs.size(), false);
  const auto lines = SplitLines(file.bytes);
  std::vector<std::string_view> pieces, alternatives;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const int line_no = static_cast<int>(i + 1);
    const std::string_view line = lines[i];
    if (TrimBlanks(line).empty()) continue;
    const std::size_t colon = line.find(" : ");
    if (colon == std::string_view::npos) {
      Fail(file.path, line_no, "no \" : \" after the document id",
           "lines \"ID : kp1,kp2+variant,...\"");
    }
    const std::string id(TrimBlanks(line.substr(0, colon)));
    const auto it = index.find(id);
    if (it == index.end()) {
      Fail(file.path, line_no, fmt::format("no text file for \"{}\"", id),
           (text_dir / (id + ".txt.final")).string());
    }
    if (seen[it->second]) {
      Fail(file.path, line_no, fmt::format("second answer line for \"{}\"", id),
           "one line per document");
    }
    seen[it->second] = true;
    RawDoc& doc = out.docs[it->second];
    doc.refs_stemmed = stemmed;
    const std::string_view answers = line.substr(colon + 3);
    if (answers.empty()) continue;
    pieces.clear();
    SplitChar(answers, ',', pieces);
    for (std::string_view piece : pieces) {
      alternatives.clear();
      SplitChar(piece, '+', alternatives);
      doc.refs.emplace_back(alternatives.begin(), alternatives.end());
    }
  }
  for (std::size_t j = 0; j < out.docs.size(); ++j) {
    if (!seen[j]) {
      Fail(file.path, 0, fmt::format("no answer line for \"{}\"", out.docs[j].id),
           fmt::format("one line per text file in {}", text_dir.string()));
    }
  }
}

}  // namespace

bool NaturalLess(std::string_view a, std::string_view b) {
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      std::size_t ie = i, je = j;
      while (ie < a.size() && is_digit(a[ie])) ++ie;
      while (je < b.size() && is_digit(b[je])) ++je;
      std::string_view da = a.substr(i, ie - i), db = b.substr(j, je - j);
      while (da.size() > 1 && da.front() == '0') da.remove_prefix(1);
      while (db.size() > 1 && db.front() == '0') db.remove_prefix(1);
      if (da.size() != db.size()) return da.size() < db.size();
      if (da != db) return da < db;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
      ++i;
      ++j;
    }
  }
  if ((i < a.size()) != (j < b.size())) return j < b.size();
  return a < b;
}

std::pair<std::string_view, std::string_view> TitleAndBody(std::string_view src, std::size_t pos, std::size_t sep_len) {
  std::string_view title = src.substr(0, pos);
  std::string_view body = src.substr(pos + sep_len);
  if (!title.empty() && title.back() == ' ') title.remove_suffix(1);
  if (!body.empty() && body.front() == ' ') body.remove_prefix(1);
  return {title, body};
}

void SplitTitleBody(std::string_view src, std::size_t pos, std::size_t sep_len, std::string_view separator,
                    RawDoc& doc) {
  const auto [title, body] = TitleAndBody(src, pos, sep_len);
  doc.title.assign(title);
  doc.body.assign(body);
  doc.separator.assign(separator);
}

void ImportMeng(const std::string& path, RawDataset& out, std::vector<FileData>& files) {
  ImportLinePair(path, "_context.txt", "_allkeywords.txt", out, files);
}

void ImportOne2Set(const std::string& path, RawDataset& out, std::vector<FileData>& files) {
  ImportLinePair(path, "src.txt", "trg.txt", out, files);
}

void ImportHulth(const std::string& path, const DatasetOptions& options, RawDataset& out,
                 std::vector<FileData>& files) {
  const fs::path dir = TrimmedPath(path);
  RequireDirectory(path, dir, "a directory of <id>.abstr files with <id>.uncontr / <id>.contr");
  std::vector<std::string> key_exts;
  if (options.hulth_keys.empty() || options.hulth_keys == "uncontr") {
    key_exts = {".uncontr"};
  } else if (options.hulth_keys == "contr") {
    key_exts = {".contr"};
  } else if (options.hulth_keys == "both") {
    key_exts = {".uncontr", ".contr"};
  } else {
    Fail(path, 0, fmt::format("unknown hulth_keys \"{}\"", options.hulth_keys),
         "uncontr, contr or both");
  }
  // References from pke's JSON (ApplyPkeReferences) replace the key files, which need not exist.
  if (!options.references.empty()) key_exts.clear();
  const std::vector<std::string> ids = StemsWithSuffix(dir, ".abstr");
  if (ids.empty()) Fail(path, 0, "no .abstr files", "a directory of <id>.abstr files");
  files.reserve(ids.size() * (1 + key_exts.size()));
  out.docs.resize(ids.size());
  std::vector<std::string_view> pieces;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::string& id = ids[i];
    const std::string abstr_path = (dir / (id + ".abstr")).string();
    for (const std::string& ext : key_exts) {
      const fs::path key_path = dir / (id + ext);
      if (!Present(key_path.string())) {
        Fail(abstr_path, 0, "no key file", key_path.string());
      }
    }
    files.push_back(ReadTextFile(abstr_path, id + ".abstr"));
    RawDoc& doc = out.docs[i];
    doc.id = id;
    doc.loc = {abstr_path, 0};
    const std::vector<std::string> logical = HulthLogicalLines(files.back().bytes);
    if (!logical.empty()) doc.title = logical[0];
    for (std::size_t k = 1; k < logical.size(); ++k) {
      if (k > 1) doc.body += '\n';
      doc.body += logical[k];
    }
    for (const std::string& ext : key_exts) {
      files.push_back(ReadTextFile((dir / (id + ext)).string(), id + ext));
      std::string joined;
      for (std::string_view line : SplitLines(files.back().bytes)) {
        while (!joined.empty() && IsBlank(joined.back())) joined.pop_back();
        if (!joined.empty()) joined += ' ';
        joined.append(TrimBlanks(line));
      }
      if (joined.empty()) continue;
      pieces.clear();
      SplitChar(joined, ';', pieces);
      for (std::string_view piece : pieces) doc.refs.push_back({std::string(piece)});
    }
  }
}

void ImportSemEval(const std::string& path, const DatasetOptions& options, RawDataset& out,
                   std::vector<FileData>& files) {
  const fs::path dir = TrimmedPath(path);
  RequireDirectory(path, dir, "a directory of <id>.txt.final files");
  const std::vector<std::string> ids = StemsWithSuffix(dir, ".txt.final");
  if (ids.empty()) Fail(path, 0, "no .txt.final files", "a directory of <id>.txt.final files");
  files.reserve(2 * ids.size() + 1);
  std::unordered_map<std::string, std::size_t> index;
  out.docs.resize(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::string text_path = (dir / (ids[i] + ".txt.final")).string();
    files.push_back(ReadTextFile(text_path, ids[i] + ".txt.final"));
    const std::string_view text = files.back().bytes;
    RawDoc& doc = out.docs[i];
    doc.id = ids[i];
    doc.loc = {text_path, 0};
    // SemEval texts mark no title; the first line is the paper's title in every released file.
    const std::size_t nl = text.find('\n');
    std::string_view title = text.substr(0, nl);
    if (!title.empty() && title.back() == '\r') title.remove_suffix(1);
    doc.title.assign(title);
    if (nl != std::string_view::npos) doc.body.assign(text.substr(nl + 1));
    index.emplace(ids[i], i);
  }
  // References from pke's JSON (ApplyPkeReferences) replace the answer files, which need not exist.
  if (!options.references.empty()) return;

  // Where the references are: an answer file, or a directory of <id>.key files (LIAAD layout).
  fs::path abs_dir = fs::absolute(dir).lexically_normal();
  if (abs_dir.filename().empty()) abs_dir = abs_dir.parent_path();  // "." normalizes to "/x/test/"
  const std::string split = abs_dir.filename().string();
  const fs::path parent = dir.has_parent_path() && dir.filename() != "." && dir.filename() != ".."
                              ? dir.parent_path()
                              : abs_dir.parent_path();
  const std::string& opt = options.semeval_answers;
  fs::path answer_file, key_dir;
  if (opt.empty() || opt == "combined" || opt == "author" || opt == "reader") {
    const std::string kind = opt.empty() ? "combined" : opt;
    const fs::path answer_dir = parent / (split + "_answer");
    // The stemmed file is the one the official scorer uses and the only one released for test.
    for (const std::string& name :
         {split + "." + kind + ".stem.final", split + "." + kind + ".final"}) {
      if (Present((answer_dir / name).string())) {
        answer_file = answer_dir / name;
        break;
      }
    }
    if (answer_file.empty()) {
      Fail(path, 0, "no answer file",
           fmt::format("{} or {}", (answer_dir / (split + "." + kind + ".stem.final")).string(),
                       (answer_dir / (split + "." + kind + ".final")).string()));
    }
  } else if (opt == "liaad") {
    key_dir = parent / "liaad_keys";
    RequireDirectory(key_dir.string(), key_dir, "a directory of <id>.key files");
  } else if (std::error_code ec; fs::is_directory(opt, ec)) {
    key_dir = opt;
  } else if (Present(opt)) {
    answer_file = opt;  // read below: a FIFO, device or link loop is refused there with its own message
  } else {
    Fail(opt, 0, "no such file or directory",
         "an answer file, a directory of <id>.key files, or one of: combined, author, reader, "
         "liaad");
  }

  if (!answer_file.empty()) {
    const std::string rel = RelativeName(answer_file, abs_dir);
    files.push_back(ReadTextFile(answer_file.string(), rel));
    ParseSemEvalAnswers(files.back(), dir, index, out);
    return;
  }
  for (RawDoc& doc : out.docs) {
    const fs::path key_path = key_dir / (doc.id + ".key");
    if (!Present(key_path.string())) Fail(doc.loc.file, 0, "no key file", key_path.string());
    const std::string rel = RelativeName(key_path, abs_dir);
    files.push_back(ReadTextFile(key_path.string(), rel));
    for (std::string_view line : SplitLines(files.back().bytes)) {
      if (!TrimBlanks(line).empty()) doc.refs.push_back({std::string(line)});
    }
  }
}

}  // namespace kplab::io_internal
