// Phrase tables made elsewhere (e.g. sentence-transformers in Python) -> .kvec phrase files.
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <regex>

#include <fmt/format.h>
#include <simdjson.h>

#include "kplab/registry.h"
#include "kplab/io.h"
#include "kplab/text.h"
#include "kplab/vecfile.h"
#include "util/json_internal.h"

namespace kplab {
namespace {

Result<ImportStats> Finish(VecFileWriter& w, const std::string& path, const std::string& out_path) {
  if (w.size() == 0) return Error::Input(fmt::format("{}: no vectors", path));
  return w.Finish(out_path);
}

Result<ImportStats> FromJsonl(const std::string& path, const std::string& out_path) {
  if (Status st = CheckRegularFile(path, "a JSONL table of phrase vectors"); !st.ok()) return st.error();
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::Input(fmt::format("{}: cannot open", path));
  simdjson::dom::parser parser;
  std::unique_ptr<VecFileWriter> w;
  std::vector<float> v;
  std::string line;
  std::size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = fmt::format("{}:{}", path, lineno);
    simdjson::dom::element doc;
    if (auto err = parser.parse(line).get(doc); err) {
      return Error::Input(fmt::format("{}: {} (expected {{\"phrase\": ..., \"vector\": [...]}})", where,
                                      json_internal::JsonProblem(line, err, true)));
    }
    std::string_view phrase;
    simdjson::dom::array arr;
    if (doc["phrase"].get_string().get(phrase) || doc["vector"].get_array().get(arr)) {
      return Error::Input(
          fmt::format("{}: expected an object with a string \"phrase\" and an array "
                      "\"vector\"",
                      where));
    }
    v.clear();
    for (auto x : arr) {
      double d;
      if (x.get_double().get(d)) {
        return Error::Input(fmt::format("{}: \"vector\" entry {} is not a number", where, v.size() + 1));
      }
      v.push_back(static_cast<float>(d));
    }
    if (!w) {
      if (v.empty()) return Error::Input(fmt::format("{}: empty \"vector\"", where));
      w = std::make_unique<VecFileWriter>(static_cast<int>(v.size()), VecKind::kPhrases);
    }
    if (static_cast<int>(v.size()) != w->dims()) {
      return Error::Input(
          fmt::format("{}: vector of {} values (expected {}, as on the first line)", where, v.size(), w->dims()));
    }
    Status st = w->Add(phrase, v.data(), where);
    if (!st.ok()) return st.error();
  }
  if (!w) return Error::Input(fmt::format("{}: no vectors", path));
  return Finish(*w, path, out_path);
}

Result<ImportStats> FromTsv(const std::string& path, const std::string& out_path) {
  if (Status st = CheckRegularFile(path, "a TSV table of phrase vectors"); !st.ok()) return st.error();
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::Input(fmt::format("{}: cannot open", path));
  std::unique_ptr<VecFileWriter> w;
  std::vector<float> v;
  std::string line;
  std::size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::string where = fmt::format("{}:{}", path, lineno);
    std::size_t tab = line.find('\t');
    if (tab == std::string::npos) {
      return Error::Input(
          fmt::format("{}: no tab (expected phrase TAB v1 TAB v2 ... or phrase TAB \"v1 v2 "
                      "...\")",
                      where));
    }
    std::string_view phrase(line.data(), tab);
    if (!ValidUtf8(phrase)) return Error::Input(fmt::format("{}: the phrase is not valid UTF-8", where));
    v.clear();
    const char* p = line.data() + tab + 1;
    const char* end = line.data() + line.size();
    while (p < end) {
      while (p < end && (*p == ' ' || *p == '\t')) ++p;
      if (p >= end) break;
      char* q = nullptr;
      float x = std::strtof(p, &q);
      if (q == p || (q < end && *q != ' ' && *q != '\t')) {
        return Error::Input(fmt::format("{}: value {} is not a number", where, v.size() + 1));
      }
      v.push_back(x);
      p = q;
    }
    if (!w) {
      if (v.empty()) return Error::Input(fmt::format("{}: no values after the phrase", where));
      w = std::make_unique<VecFileWriter>(static_cast<int>(v.size()), VecKind::kPhrases);
    }
    if (static_cast<int>(v.size()) != w->dims()) {
      return Error::Input(fmt::format("{}: {} values (expected {}, as on the first line)", where, v.size(), w->dims()));
    }
    Status st = w->Add(phrase, v.data(), where);
    if (!st.ok()) return st.error();
  }
  if (!w) return Error::Input(fmt::format("{}: no vectors", path));
  return Finish(*w, path, out_path);
}

Result<ImportStats> FromNpy(const std::string& path, const std::string& phrases_path,
                            const std::string& out_path) {
  if (phrases_path.empty()) {
    return Error::Usage(
        fmt::format("{}: a .npy table needs --phrases FILE (one phrase per line, row i = "
                    "line i)",
                    path));
  }
  if (Status st = CheckRegularFile(path, "a .npy file"); !st.ok()) return st.error();
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::Input(fmt::format("{}: cannot open", path));
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.size() < 10 || std::memcmp(data.data(), "\x93NUMPY", 6) != 0) {
    return Error::Input(fmt::format("{}: not a .npy file (expected the \\x93NUMPY magic)", path));
  }
  unsigned major = static_cast<unsigned char>(data[6]);
  std::size_t hlen, hstart;
  if (major == 1) {
    hlen = static_cast<unsigned char>(data[8]) | (static_cast<unsigned char>(data[9]) << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12) return Error::Input(fmt::format("{}: truncated .npy header", path));
    std::uint32_t l;
    std::memcpy(&l, data.data() + 8, 4);
    hlen = l;
    hstart = 12;
  } else {
    return Error::Input(fmt::format("{}: unsupported .npy version {} (expected 1, 2 or 3)", path, major));
  }
  if (hstart + hlen > data.size()) return Error::Input(fmt::format("{}: truncated .npy header", path));
  // numpy's own reader refuses headers over 10,000 bytes; so does kplab (the regexes below recurse
  // per character).
  if (hlen > 10000) {
    return Error::Input(fmt::format("{}: .npy header of {} bytes (expected at most 10000)", path, hlen));
  }
  std::string header = data.substr(hstart, hlen);
  std::smatch m;
  std::string descr;
  bool fortran = false;
  std::size_t rows = 0, cols = 0;
  if (std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([^']*)')"))) descr = m[1];
  if (std::regex_search(header, m, std::regex(R"('fortran_order'\s*:\s*(True|False))"))) {
    fortran = m[1] == "True";
  }
  if (std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(\s*(\d+)\s*,\s*(\d+)\s*,?\s*\))"))) {
    const std::string a = m[1], b = m[2];
    auto ra = std::from_chars(a.data(), a.data() + a.size(), rows);
    auto rb = std::from_chars(b.data(), b.data() + b.size(), cols);
    if (ra.ec != std::errc() || rb.ec != std::errc()) {
      return Error::Input(fmt::format("{}: .npy shape ({}, {}) is too large", path, a, b));
    }
  } else {
    return Error::Input(fmt::format("{}: .npy shape is not 2-D (expected (phrases, dims))", path));
  }
  std::size_t esize;
  if (descr == "<f4") {
    esize = 4;
  } else if (descr == "<f8") {
    esize = 8;
  } else {
    return Error::Input(
        fmt::format("{}: .npy dtype '{}' (expected little-endian float32 '<f4' or float64 "
                    "'<f8')",
                    path, descr));
  }
  if (cols < 1 || cols > 65536) {
    return Error::Input(fmt::format("{}: {} columns (expected 1..65536 dimensions)", path, cols));
  }
  std::size_t off = hstart + hlen;
  if (rows > (data.size() - off) / esize / cols || data.size() - off != rows * cols * esize) {
    return Error::Input(fmt::format("{}: {} bytes of data for shape ({}, {}) (truncated or corrupt)", path,
                                    data.size() - off, rows, cols));
  }
  if (Status st = CheckRegularFile(phrases_path, "a phrases file, one a line"); !st.ok()) return st.error();
  std::ifstream pin(phrases_path, std::ios::binary);
  if (!pin) return Error::Input(fmt::format("{}: cannot open", phrases_path));
  std::vector<std::string> phrases;
  std::string line;
  while (std::getline(pin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!ValidUtf8(line)) {
      return Error::Input(fmt::format("{}:{}: invalid UTF-8", phrases_path, phrases.size() + 1));
    }
    phrases.push_back(line);
  }
  if (phrases.size() != rows) {
    return Error::Input(fmt::format("{}: {} phrases but {} has {} rows (expected one phrase per row)", phrases_path,
                                    phrases.size(), path, rows));
  }
  VecFileWriter w(static_cast<int>(cols), VecKind::kPhrases);
  std::vector<float> v(cols);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      std::size_t idx = fortran ? c * rows + r : r * cols + c;
      const char* p = data.data() + off + idx * esize;
      if (esize == 4) {
        std::memcpy(&v[c], p, 4);
      } else {
        double d;
        std::memcpy(&d, p, 8);
        v[c] = static_cast<float>(d);
      }
    }
    Status st = w.Add(phrases[r], v.data(), fmt::format("{} row {} ({}:{})", path, r, phrases_path, r + 1));
    if (!st.ok()) return st.error();
  }
  return Finish(w, path, out_path);
}

}  // namespace

Result<ImportStats> ConvertPhraseTable(const std::string& path, const std::string& format,
                                       const std::string& phrases_path, const std::string& out_path) {
  std::string fmt_name = format;
  if (fmt_name.empty()) {
    auto ends = [&](const char* s) {
      std::size_t n = std::strlen(s);
      return path.size() >= n && path.compare(path.size() - n, n, s) == 0;
    };
    fmt_name = ends(".npy") ? "npy" : ends(".tsv") || ends(".txt") ? "tsv" : "jsonl";
  }
  if (fmt_name == "jsonl") return FromJsonl(path, out_path);
  if (fmt_name == "tsv") return FromTsv(path, out_path);
  if (fmt_name == "npy") return FromNpy(path, phrases_path, out_path);
  return Error::Usage(fmt::format("{}: unknown phrase-table format '{}' (expected jsonl, tsv or npy)", path, format));
}

}  // namespace kplab
