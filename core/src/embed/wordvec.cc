#include "kplab/wordvec.h"
#include "kplab/file_gate.h"
#include "kplab/io.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>
#include <simdjson.h>

#include "kplab/text.h"
#include "util/json_internal.h"

namespace kplab {
namespace {

std::string JsonWhere(const std::string& path, simdjson::ondemand::document& doc,
                      const simdjson::padded_string& json) {
  const char* loc = nullptr;
  if (doc.current_location().get(loc) == simdjson::SUCCESS && loc != nullptr) {
    return fmt::format("{}: at byte {}", path, loc - json.data());
  }
  return path;
}

}  // namespace

Result<ImportStats> ConvertWinkJson(const std::string& json_path, const std::string& out_path) {
  simdjson::padded_string json;
  if (Status st = GateFile(json_path, FileAccess::kRead); !st.ok()) return st.error();
  if (auto err = simdjson::padded_string::load(json_path).get(json); err) {
    return Error::Input(fmt::format("{}: cannot read: {}", json_path, simdjson::error_message(err)));
  }
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  if (auto err = parser.iterate(json).get(doc); err) {
    return Error::Input(fmt::format("{}: {} (expected a wink-embeddings JSON file)", json_path,
                                    json_internal::JsonProblem(std::string_view(json.data(), json.size()), err)));
  }
  std::vector<std::string> words;
  std::unordered_map<std::string_view, std::size_t> word_row;
  std::vector<float> matrix;
  std::vector<std::uint8_t> seen;
  std::int64_t dims = -1, norm_at = -1, index_at = -1, size = -1;
  std::size_t filled = 0;
  std::string where;
  try {
    simdjson::ondemand::object top = doc.get_object();
    for (auto field : top) {
      std::string_view key = field.unescaped_key();
      if (key == "dimensions") {
        dims = field.value().get_int64();
      } else if (key == "l2NormIndex") {
        norm_at = field.value().get_int64();
      } else if (key == "wordIndex") {
        index_at = field.value().get_int64();
      } else if (key == "size") {
        size = field.value().get_int64();
      } else if (key == "words") {
        if (!words.empty()) return Error::Input(fmt::format("{}: \"words\" appears twice", json_path));
        for (auto w : field.value().get_array()) words.emplace_back(std::string_view(w.get_string()));
        for (std::size_t i = 0; i < words.size(); ++i) word_row.emplace(words[i], i);
      } else if (key == "vectors") {
        if (!matrix.empty()) return Error::Input(fmt::format("{}: \"vectors\" appears twice", json_path));
        if (dims < 1 || dims > 65536 || norm_at != dims || index_at != dims + 1 || words.empty()) {
          return Error::Input(
              fmt::format("{}: \"vectors\" before a valid header (expected dimensions, l2NormIndex = dimensions, "
                          "wordIndex = dimensions + 1 and the words array first)",
                          json_path));
        }
        matrix.assign(words.size() * dims, 0.0f);
        seen.assign(words.size(), 0);
        std::vector<double> row(dims + 2);
        for (auto entry : field.value().get_object()) {
          std::string_view word = entry.unescaped_key();
          std::size_t n = 0;
          for (auto x : entry.value().get_array()) {
            if (n >= row.size()) break;
            row[n++] = x.get_double();
          }
          if (n != row.size()) {
            return Error::Input(
                fmt::format("{}: the vector of '{}' has {} numbers (expected {} values, its "
                            "norm and its index)",
                            JsonWhere(json_path, doc, json), word, n, dims + 2));
          }
          auto it = word_row.find(word);
          double idx = row[index_at];
          if (it == word_row.end() || idx != static_cast<double>(it->second)) {
            return Error::Input(
                fmt::format("{}: '{}' has index {} but is {} in the words array", JsonWhere(json_path, doc, json), word,
                            idx, it == word_row.end() ? std::string("absent") : fmt::format("number {}", it->second)));
          }
          if (seen[it->second]) {
            return Error::Input(fmt::format("{}: '{}' has two vectors", JsonWhere(json_path, doc, json), word));
          }
          double norm2 = 0;
          float* dst = &matrix[it->second * dims];
          for (std::int64_t j = 0; j < dims; ++j) {
            if (!std::isfinite(row[j])) {
              return Error::Input(
                  fmt::format("{}: value {} of '{}' is not finite", JsonWhere(json_path, doc, json), j + 1, word));
            }
            dst[j] = static_cast<float>(row[j]);
            norm2 += row[j] * row[j];
          }
          double norm = std::sqrt(norm2);
          if (std::fabs(norm - row[norm_at]) > 1e-4 * std::max(1.0, norm)) {
            return Error::Input(
                fmt::format("{}: the stored norm of '{}' is {} but its vector's is {} "
                            "(corrupt vector?)",
                            JsonWhere(json_path, doc, json), word, row[norm_at], norm));
          }
          seen[it->second] = 1;
          ++filled;
        }
      }
      // precision, unkVector: not needed (an unknown word has no vector in kplab).
    }
  } catch (const simdjson::simdjson_error& e) {
    // The on-demand parser finds a bad number or too deep a nesting only when it reaches it: those are
    // described as every other JSON problem is (what and line:column); a value of the wrong type keeps
    // its byte position.
    const simdjson::error_code err = e.error();
    const std::string_view text(json.data(), json.size());
    const char* loc = nullptr;
    if (doc.current_location().get(loc) == simdjson::SUCCESS && loc != nullptr) {
      if (std::string p = json_internal::NumberProblemAt(text, static_cast<std::size_t>(loc - json.data()));
          !p.empty()) {
        return Error::Input(fmt::format("{}: {} (expected a wink-embeddings JSON file)", json_path, p));
      }
    }
    if (err == simdjson::NUMBER_ERROR || err == simdjson::NUMBER_OUT_OF_RANGE || err == simdjson::DEPTH_ERROR ||
        err == simdjson::UTF8_ERROR) {
      return Error::Input(fmt::format("{}: {} (expected a wink-embeddings JSON file)", json_path,
                                      json_internal::JsonProblem(text, err)));
    }
    return Error::Input(
        fmt::format("{}: {} (expected a wink-embeddings JSON file)", JsonWhere(json_path, doc, json), e.what()));
  }
  if (words.empty() || matrix.empty() || matrix.size() != words.size() * static_cast<std::size_t>(dims)) {
    return Error::Input(
        fmt::format("{}: no \"words\" or \"vectors\" (expected a wink-embeddings JSON file)", json_path));
  }
  if (size >= 0 && static_cast<std::size_t>(size) != words.size()) {
    return Error::Input(fmt::format("{}: \"size\" is {} but \"words\" has {} entries", json_path, size, words.size()));
  }
  if (filled != words.size()) {
    for (std::size_t i = 0; i < words.size(); ++i) {
      if (!seen[i]) {
        return Error::Input(fmt::format("{}: {} of {} words have no vector (first: '{}')", json_path,
                                        words.size() - filled, words.size(), words[i]));
      }
    }
  }
  VecFileWriter writer(static_cast<int>(dims), VecKind::kWords);
  for (std::size_t i = 0; i < words.size(); ++i) {
    Status st = writer.Add(words[i], &matrix[i * dims], json_path);
    if (!st.ok()) return st.error();
  }
  return writer.Finish(out_path);
}

Result<ImportStats> ConvertWordVecText(const std::string& text_path, const std::string& out_path) {
  if (Status st = CheckRegularFile(text_path, "a word-vector text file"); !st.ok()) return st.error();
  std::ifstream in(text_path, std::ios::binary);
  if (!in) return Error::Input(fmt::format("{}: cannot open", text_path));
  std::string line;
  std::size_t lineno = 0;
  int dims = -1;
  std::int64_t declared_rows = -1;
  std::unique_ptr<VecFileWriter> writer;
  std::vector<float> values;
  std::vector<std::string_view> fields;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (lineno == 1 && !ValidUtf8(line) && line.size() >= 3) {
      return Error::Input(
          fmt::format("{}:1: invalid UTF-8 (expected a text file of word vectors; binary "
                      "word2vec files must be converted to text first)",
                      text_path));
    }
    fields.clear();
    std::size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      std::size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
      if (j > i) fields.emplace_back(line.data() + i, j - i);
      i = j;
    }
    if (fields.empty()) continue;
    auto parse_int = [](std::string_view f, std::int64_t& v) {
      auto r = std::from_chars(f.data(), f.data() + f.size(), v);
      return r.ec == std::errc() && r.ptr == f.data() + f.size();
    };
    std::int64_t a, b;
    if (lineno == 1 && fields.size() == 2 && parse_int(fields[0], a) && parse_int(fields[1], b)) {
      if (b < 1 || b > 65536) {
        return Error::Input(fmt::format("{}:1: header says {} dimensions (expected 1..65536)", text_path, b));
      }
      declared_rows = a;
      dims = static_cast<int>(b);
      continue;
    }
    if (dims < 0) {
      if (fields.size() < 2) {
        return Error::Input(fmt::format("{}:{}: expected a word followed by its vector", text_path, lineno));
      }
      if (fields.size() - 1 > 65536) {
        return Error::Input(
            fmt::format("{}:{}: {} numbers (expected at most 65536 dimensions)", text_path, lineno, fields.size() - 1));
      }
      dims = static_cast<int>(fields.size() - 1);
    }
    if (!writer) writer = std::make_unique<VecFileWriter>(dims, VecKind::kWords);
    if (fields.size() < static_cast<std::size_t>(dims) + 1) {
      return Error::Input(fmt::format("{}:{}: {} numbers (expected {})", text_path, lineno, fields.size() - 1, dims));
    }
    // The last dims fields are the vector; anything before is the word (GloVe 840B has words with
    // spaces, e.g. ". . .").
    std::size_t first = fields.size() - dims;
    std::string_view word(fields[0].data(),
                          fields[first - 1].data() + fields[first - 1].size() - fields[0].data());
    if (first > 1) {
      // Only a word with spaces is legitimate; a number-like extra field means a wrong row length.
      double probe;
      auto r = std::from_chars(fields[1].data(), fields[1].data() + fields[1].size(), probe);
      if (r.ec == std::errc() && r.ptr == fields[1].data() + fields[1].size()) {
        return Error::Input(fmt::format("{}:{}: {} numbers (expected {})", text_path, lineno, fields.size() - 1, dims));
      }
    }
    if (!ValidUtf8(word)) {
      return Error::Input(fmt::format("{}:{}: the word is not valid UTF-8", text_path, lineno));
    }
    values.resize(dims);
    for (int d = 0; d < dims; ++d) {
      std::string_view f = fields[first + d];
      auto r = std::from_chars(f.data(), f.data() + f.size(), values[d]);
      if (r.ec != std::errc() || r.ptr != f.data() + f.size()) {
        return Error::Input(fmt::format("{}:{}: value {} '{}' is not a number (expected {} numbers)", text_path, lineno,
                                        d + 1, f, dims));
      }
    }
    Status st = writer->Add(word, values.data(), fmt::format("{}:{}", text_path, lineno));
    if (!st.ok()) return st.error();
  }
  if (!writer || writer->size() == 0) {
    return Error::Input(fmt::format("{}: no vectors (expected lines of 'word v1 ... vd')", text_path));
  }
  if (declared_rows >= 0 &&
      static_cast<std::size_t>(declared_rows) != writer->size() + writer->duplicates()) {
    return Error::Input(fmt::format("{}: header says {} rows but the file has {} (truncated?)", text_path,
                                    declared_rows, writer->size() + writer->duplicates()));
  }
  return writer->Finish(out_path);
}

// ---- pooling --------------------------------------------------------------------------------------

std::vector<PooledToken> WordVecTokens(const VecFile& vf, const WordVecConfig& cfg,
                                       std::string_view phrase) {
  std::string text = cfg.lowercase ? Lower(phrase) : std::string(phrase);
  std::vector<PooledToken> out;
  for (std::string& tok : WordTokenize(text)) {
    std::int64_t row = vf.Find(tok);
    if (row >= 0 || tok.find_first_of("-/") == std::string::npos) {
      out.push_back({std::move(tok), row});
      continue;
    }
    std::size_t i = 0;
    while (i <= tok.size()) {
      std::size_t j = tok.find_first_of("-/", i);
      if (j == std::string::npos) j = tok.size();
      if (j > i) {
        std::string part = tok.substr(i, j - i);
        std::int64_t r = vf.Find(part);
        out.push_back({std::move(part), r});
      }
      i = j + 1;
    }
  }
  return out;
}

namespace {

class WordVecEmbedder final : public Embedder {
 public:
  WordVecEmbedder(std::shared_ptr<const VecFile> vf, WordVecConfig cfg, std::string fp)
      : vf_(std::move(vf)), cfg_(cfg), fp_(std::move(fp)) {
    if (cfg_.sif_a > 0) {
      double h = 0;
      for (std::size_t r = 1; r <= vf_->size(); ++r) h += 1.0 / static_cast<double>(r);
      harmonic_ = h;
    }
  }
  std::string_view backend() const override { return "wordvec"; }
  int dims() const override { return vf_->dims(); }
  const std::string& fingerprint() const override { return fp_; }

  Status Embed(const std::vector<std::string_view>& phrases, float* out,
               std::uint8_t* has) const override {
    const int d = vf_->dims();
    std::vector<double> acc(d);
    for (std::size_t i = 0; i < phrases.size(); ++i) {
      std::fill(acc.begin(), acc.end(), 0.0);
      double wsum = 0;
      for (const PooledToken& t : WordVecTokens(*vf_, cfg_, phrases[i])) {
        if (t.row < 0) continue;
        double w = 1;
        if (cfg_.sif_a > 0) {
          double p = 1.0 / ((static_cast<double>(t.row) + 1.0) * harmonic_);
          w = cfg_.sif_a / (cfg_.sif_a + p);
        }
        const float* v = vf_->row(static_cast<std::size_t>(t.row));
        for (int j = 0; j < d; ++j) acc[j] += w * v[j];
        wsum += w;
      }
      float* dst = out + i * d;
      double n2 = 0;
      for (int j = 0; j < d; ++j) {
        dst[j] = wsum > 0 ? static_cast<float>(acc[j] / wsum) : 0.0f;
        n2 += static_cast<double>(dst[j]) * dst[j];
      }
      has[i] = n2 > 0;  // all words unknown, or vectors that cancel out: no vector
    }
    return Status::Ok();
  }

 private:
  std::shared_ptr<const VecFile> vf_;
  WordVecConfig cfg_;
  std::string fp_;
  double harmonic_ = 1;
};

class PrecomputedEmbedder final : public Embedder {
 public:
  PrecomputedEmbedder(std::shared_ptr<const VecFile> vf, std::string fp)
      : vf_(std::move(vf)), fp_(std::move(fp)) {}
  std::string_view backend() const override { return "precomputed"; }
  int dims() const override { return vf_->dims(); }
  const std::string& fingerprint() const override { return fp_; }

  Status Embed(const std::vector<std::string_view>& phrases, float* out,
               std::uint8_t* has) const override {
    const int d = vf_->dims();
    std::size_t missing = 0;
    std::string first;
    for (std::size_t i = 0; i < phrases.size(); ++i) {
      std::int64_t r = vf_->Find(phrases[i]);
      float* dst = out + i * d;
      if (r < 0) {
        if (missing < 5) first += fmt::format("{}'{}'", missing ? ", " : "", phrases[i]);
        ++missing;
        std::fill(dst, dst + d, 0.0f);
        has[i] = 0;
        continue;
      }
      const float* v = vf_->row(static_cast<std::size_t>(r));
      std::copy(v, v + d, dst);
      double n2 = 0;
      for (int j = 0; j < d; ++j) n2 += static_cast<double>(v[j]) * v[j];
      has[i] = n2 > 0;
    }
    if (missing > 0) {
      return Error::Input(
          fmt::format("{}: {} of {} phrases are not in the precomputed table (first: {}); "
                      "embed them with the model that made the table and import it again",
                      vf_->path(), missing, phrases.size(), first));
    }
    return Status::Ok();
  }

 private:
  std::shared_ptr<const VecFile> vf_;
  std::string fp_;
};

}  // namespace

std::unique_ptr<Embedder> MakeWordVecEmbedder(std::shared_ptr<const VecFile> vf, WordVecConfig cfg,
                                              std::string fingerprint) {
  return std::make_unique<WordVecEmbedder>(std::move(vf), cfg, std::move(fingerprint));
}

std::unique_ptr<Embedder> MakePrecomputedEmbedder(std::shared_ptr<const VecFile> vf,
                                                  std::string fingerprint) {
  return std::make_unique<PrecomputedEmbedder>(std::move(vf), std::move(fingerprint));
}

}  // namespace kplab
