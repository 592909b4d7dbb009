// Model2Vec backend: directory layout, configuration, checks that the tensors fit the tokenizer,
// and the pooling rule of model2vec's StaticModel.encode() (see model2vec.h).
#include "kplab/model2vec.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "kplab/hf_tokenizer.h"
#include "kplab/io.h"
#include "kplab/safetensors.h"
#include "kplab/sha256.h"
#include "kplab/utf8.h"
#include "util/json_internal.h"

namespace kplab {
namespace {

namespace fs = std::filesystem;
using simdjson::dom::element;
using simdjson::dom::element_type;

constexpr std::size_t kMaxTokens = 512;  // encode()'s default max_length

constexpr std::string_view kLayout =
    "a Model2Vec model directory: model.safetensors, tokenizer.json, config.json";

struct NamedBytes {
  std::string name;
  std::string_view bytes;
};

// SHA-256 over (name, NUL, decimal size, NUL, bytes) of each file in name order: the scheme of
// io_internal::ContentHash, without copying the (possibly large) weights.
std::string FilesHash(std::vector<NamedBytes> files) {
  std::sort(files.begin(), files.end(),
            [](const NamedBytes& a, const NamedBytes& b) { return a.name < b.name; });
  Sha256 h;
  for (const NamedBytes& f : files) {
    h.Update(f.name);
    h.Update(std::string_view("\0", 1));
    h.Update(std::to_string(f.bytes.size()));
    h.Update(std::string_view("\0", 1));
    h.Update(f.bytes);
  }
  return h.FinishHex();
}

Result<std::string> ReadFile(const fs::path& p) {
  if (Status st = CheckRegularFile(p.string(), "a model file"); !st.ok()) return st.error();
  std::ifstream in(p, std::ios::binary);
  if (!in) return Error::Input(fmt::format("{}: cannot open", p.string()));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Error::Input(fmt::format("{}: read error", p.string()));
  return std::move(ss).str();
}

// "normalize" from a config file: 1 / 0, or -1 when the key is absent or null.
Result<int> ConfigNormalize(const fs::path& p, const std::string& bytes) {
  simdjson::dom::parser parser;
  element root;
  if (auto err = parser.parse(bytes).get(root); err != simdjson::SUCCESS) {
    return Error::Input(
        fmt::format("{}: {} (expected the model's configuration)", p.string(), json_internal::JsonProblem(bytes, err)));
  }
  if (root.type() != element_type::OBJECT) {
    return Error::Input(fmt::format("{}: not a JSON object (expected the model's configuration)", p.string()));
  }
  element v;
  const simdjson::dom::object obj = root.get_object().value_unsafe();
  if (obj.at_key("normalize").get(v) != simdjson::SUCCESS || v.type() == element_type::NULL_VALUE) {
    return -1;
  }
  if (v.type() != element_type::BOOL) {
    return Error::Input(fmt::format("{}: \"normalize\" is not a boolean (expected true or false)", p.string()));
  }
  return v.get_bool().value_unsafe() ? 1 : 0;
}

// Whether modules.json lists a Normalize module.
Result<bool> ModulesNormalize(const fs::path& p, const std::string& bytes) {
  simdjson::dom::parser parser;
  element root;
  if (auto err = parser.parse(bytes).get(root); err != simdjson::SUCCESS) {
    return Error::Input(fmt::format("{}: {} (expected sentence-transformers modules)", p.string(),
                                    json_internal::JsonProblem(bytes, err)));
  }
  if (root.type() != element_type::ARRAY) {
    return Error::Input(fmt::format("{}: not a JSON array (expected sentence-transformers modules)", p.string()));
  }
  const simdjson::dom::array modules = root.get_array().value_unsafe();
  for (element m : modules) {
    simdjson::dom::object mo;
    element t;
    std::string_view type;
    if (m.get_object().get(mo) == simdjson::SUCCESS &&
        mo.at_key("type").get(t) == simdjson::SUCCESS &&
        t.get_string().get(type) == simdjson::SUCCESS &&
        type.find("Normalize") != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

// int(np.median(lengths)) over the tokens' lengths in code points.
std::size_t MedianTokenLength(const HfTokenizer& tok) {
  std::vector<std::size_t> lens;
  for (std::string_view t : tok.Tokens()) {
    lens.push_back(Utf8Length(t));
  }
  if (lens.empty()) return 0;
  std::sort(lens.begin(), lens.end());
  const std::size_t m = lens.size() / 2;
  if (lens.size() % 2 == 1) return lens[m];
  return (lens[m - 1] + lens[m]) / 2;  // int() of the mean of the two middle values
}

class Model2VecEmbedder final : public Embedder {
 public:
  Model2VecEmbedder(HfTokenizer tok, std::vector<float> table, int dims,
                    std::vector<std::int64_t> mapping, std::vector<double> weights, bool normalize,
                    bool drop_unk, bool in_double, std::string fingerprint)
      : tok_(std::move(tok)),
        table_(std::move(table)),
        dims_(dims),
        rows_(table_.size() / static_cast<std::size_t>(dims)),
        mapping_(std::move(mapping)),
        weights_(std::move(weights)),
        normalize_(normalize),
        double_(in_double || !weights_.empty()),
        unk_(drop_unk ? tok_.unk_id() : -1),
        max_chars_(kMaxTokens * MedianTokenLength(tok_)),
        fp_(std::move(fingerprint)) {}

  std::string_view backend() const override { return "model2vec"; }
  int dims() const override { return dims_; }
  const std::string& fingerprint() const override { return fp_; }

  Status Embed(const std::vector<std::string_view>& phrases, float* out,
               std::uint8_t* has) const override {
    std::vector<int> ids;
    std::vector<float> f32;
    std::vector<double> f64;
    for (std::size_t i = 0; i < phrases.size(); ++i) {
      float* row = out + i * static_cast<std::size_t>(dims_);
      tok_.Encode(CutChars(phrases[i]), ids);
      if (unk_ >= 0) std::erase(ids, unk_);
      if (ids.size() > kMaxTokens) ids.resize(kMaxTokens);
      has[i] = double_ ? Pool(ids, f64, row) : Pool(ids, f32, row);
    }
    return Status::Ok();
  }

 private:
  // Mean (then L2 normalization) in T, in numpy's order of operations: the mean of an (n, d) array
  // along axis 0 adds the rows one after the other and divides by n in T; the norm is
  // sqrt(pairwise sum of squares) + 1e-32. Returns 0 (zero row) when no id has a row.
  template <class T>
  std::uint8_t Pool(const std::vector<int>& ids, std::vector<T>& acc, float* row) const {
    const auto d = static_cast<std::size_t>(dims_);
    acc.assign(2 * d, T(0));
    T* sum = acc.data();
    std::size_t n = 0;
    for (int id : ids) {
      const float* src = Row(id);
      if (src == nullptr) continue;
      if (weights_.empty()) {
        for (std::size_t k = 0; k < d; ++k) sum[k] += static_cast<T>(src[k]);
      } else {
        // float32 row x float64 weight is float64 in numpy.
        const double w = weights_[static_cast<std::size_t>(id)];
        for (std::size_t k = 0; k < d; ++k)
          sum[k] += static_cast<T>(static_cast<double>(src[k]) * w);
      }
      ++n;
    }
    if (n == 0) {
      std::fill(row, row + d, 0.0f);
      return 0;
    }
    const T count = static_cast<T>(n);
    for (std::size_t k = 0; k < d; ++k) sum[k] /= count;
    T norm = 1;
    if (normalize_) {
      T* sq = acc.data() + d;
      for (std::size_t k = 0; k < d; ++k) sq[k] = sum[k] * sum[k];
      norm = std::sqrt(PairwiseSum(sq, d)) + static_cast<T>(1e-32);
    }
    for (std::size_t k = 0; k < d; ++k)
      row[k] = static_cast<float>(normalize_ ? sum[k] / norm : sum[k]);
    return 1;
  }

  // numpy's pairwise summation (pairwise_sum in loops_utils.h), the inner loop of add.reduce over a
  // contiguous axis: plain below 8 values, 8 interleaved partial sums up to 128, halves above.
  template <class T>
  static T PairwiseSum(const T* a, std::size_t n) {
    if (n < 8) {
      T res = 0;
      for (std::size_t i = 0; i < n; ++i) res += a[i];
      return res;
    }
    if (n <= 128) {
      T r[8];
      for (int j = 0; j < 8; ++j) r[j] = a[j];
      std::size_t i = 8;
      for (; i < n - (n % 8); i += 8) {
        for (int j = 0; j < 8; ++j) r[j] += a[i + static_cast<std::size_t>(j)];
      }
      T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
      for (; i < n; ++i) res += a[i];
      return res;
    }
    std::size_t n2 = n / 2;
    n2 -= n2 % 8;
    return PairwiseSum(a, n2) + PairwiseSum(a + n2, n - n2);
  }

  // The first max_chars_ code points of s (Python's sentence[:m]).
  std::string_view CutChars(std::string_view s) const {
    if (s.size() <= max_chars_) return s;
    std::size_t chars = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (!IsUtf8Continuation(static_cast<unsigned char>(s[i]))) {
        if (chars == max_chars_) return s.substr(0, i);
        ++chars;
      }
    }
    return s;
  }

  const float* Row(int id) const {
    if (id < 0) return nullptr;
    auto r = static_cast<std::size_t>(id);
    if (!mapping_.empty()) {
      if (r >= mapping_.size()) return nullptr;
      r = static_cast<std::size_t>(mapping_[r]);
    }
    if (r >= rows_ || (!weights_.empty() && static_cast<std::size_t>(id) >= weights_.size())) {
      return nullptr;  // the loader's checks make this unreachable
    }
    return table_.data() + r * static_cast<std::size_t>(dims_);
  }

  HfTokenizer tok_;
  std::vector<float> table_;
  int dims_;
  std::size_t rows_;
  std::vector<std::int64_t> mapping_;
  std::vector<double> weights_;
  bool normalize_;
  bool double_;  // pool in float64 (numpy does for int8 / float64 tables and weighted rows)
  int unk_;
  std::size_t max_chars_;
  std::string fp_;
};

}  // namespace

Result<std::unique_ptr<Embedder>> LoadModel2Vec(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Error::Input(fmt::format("{}: no such directory (expected {})", dir, kLayout));
  }
  const fs::path root(dir);
  const fs::path model_path = root / "model.safetensors";
  const fs::path tok_path = root / "tokenizer.json";
  if (!fs::exists(model_path, ec)) {
    return Error::Input(fmt::format("{}: missing (expected {})", model_path.string(), kLayout));
  }
  if (!fs::exists(tok_path, ec)) {
    return Error::Input(fmt::format("{}: missing (expected {})", tok_path.string(), kLayout));
  }

  auto st = Safetensors::Open(model_path.string());
  if (!st.ok()) return st.error();
  const SafetensorInfo* emb = st->Find("embeddings");
  const bool st_layout = emb == nullptr && st->Find("embedding.weight") != nullptr;
  if (st_layout) emb = st->Find("embedding.weight");
  if (emb == nullptr) {
    std::vector<std::string> names;
    for (const auto& t : st->tensors()) names.push_back("\"" + t.name + "\"");
    return Error::Input(
        fmt::format("{}: no tensor \"embeddings\" or \"embedding.weight\" (has {}) (expected "
                    "the token embedding table)",
                    model_path.string(), names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))));
  }
  if (emb->shape.size() != 2 || emb->shape[0] == 0 || emb->shape[1] == 0 ||
      emb->shape[1] > (1 << 20)) {
    return Error::Input(fmt::format("{}: tensor \"{}\" has shape [{}] (expected [vocabulary, dimensions])",
                                    model_path.string(), emb->name, fmt::join(emb->shape, ", ")));
  }
  const auto rows = static_cast<std::size_t>(emb->shape[0]);
  const int dims = static_cast<int>(emb->shape[1]);
  auto table = st->ToFloat(*emb);
  if (!table.ok()) return table.error();

  std::string tok_bytes;
  {
    auto b = ReadFile(tok_path);
    if (!b.ok()) return b.error();
    tok_bytes = std::move(*b);
  }
  auto tok = HfTokenizer::Parse(tok_bytes, tok_path.string());
  if (!tok.ok()) return tok.error();
  const auto vocab = static_cast<std::size_t>(tok->vocab_size());

  std::vector<std::int64_t> mapping;
  if (const SafetensorInfo* m = st->Find("mapping")) {
    auto v = st->ToInt(*m);
    if (!v.ok()) return v.error();
    mapping = std::move(*v);
    if (m->shape.size() != 1 || mapping.size() != vocab) {
      return Error::Input(
          fmt::format("{}: tensor \"mapping\" has shape [{}] but the tokenizer has {} ids "
                      "(expected one row index per token id)",
                      model_path.string(), fmt::join(m->shape, ", "), vocab));
    }
    for (std::size_t i = 0; i < mapping.size(); ++i) {
      if (mapping[i] < 0 || static_cast<std::size_t>(mapping[i]) >= rows) {
        return Error::Input(
            fmt::format("{}: tensor \"mapping\" element {} is {} (expected a row of "
                        "\"{}\", 0 to {})",
                        model_path.string(), i, mapping[i], emb->name, rows - 1));
      }
    }
  } else if (rows != vocab) {
    return Error::Input(
        fmt::format("{}: tensor \"{}\" has {} rows but {} has {} token ids (expected one "
                    "row per token)",
                    model_path.string(), emb->name, rows, tok_path.string(), vocab));
  }
  std::vector<double> weights;
  if (const SafetensorInfo* w = st->Find("weights")) {
    auto v = st->ToDouble(*w);
    if (!v.ok()) return v.error();
    weights = std::move(*v);
    if (w->shape.size() != 1 || weights.size() != vocab) {
      return Error::Input(
          fmt::format("{}: tensor \"weights\" has shape [{}] but the tokenizer has {} ids "
                      "(expected one weight per token id)",
                      model_path.string(), fmt::join(w->shape, ", "), vocab));
    }
  }

  // Configuration: the layout's own config file first.
  std::vector<NamedBytes> hashed{{"model.safetensors", st->bytes()}, {"tokenizer.json", tok_bytes}};
  std::string cfg_bytes, modules_bytes;
  const char* own = st_layout ? "config_sentence_transformers.json" : "config.json";
  const char* other = st_layout ? "config.json" : "config_sentence_transformers.json";
  int normalize = -1;
  for (const char* name : {own, other}) {
    const fs::path p = root / name;
    if (!fs::exists(p, ec)) continue;
    auto b = ReadFile(p);
    if (!b.ok()) return b.error();
    cfg_bytes = std::move(*b);
    auto n = ConfigNormalize(p, cfg_bytes);
    if (!n.ok()) return n.error();
    normalize = *n;
    hashed.push_back({name, cfg_bytes});
    break;
  }
  if (normalize < 0) {
    const fs::path p = root / "modules.json";
    if (fs::exists(p, ec)) {
      auto b = ReadFile(p);
      if (!b.ok()) return b.error();
      modules_bytes = std::move(*b);
      auto n = ModulesNormalize(p, modules_bytes);
      if (!n.ok()) return n.error();
      normalize = *n ? 1 : 0;
      hashed.push_back({"modules.json", modules_bytes});
    }
  }
  std::string fp = FilesHash(std::move(hashed));

  // model2vec drops tokenizer.model.unk_token's id; the Python Unigram model has no such attribute.
  const bool drop_unk = tok->model_type() != "Unigram";
  return std::unique_ptr<Embedder>(std::make_unique<Model2VecEmbedder>(
      std::move(*tok), std::move(*table), dims, std::move(mapping), std::move(weights),
      normalize != 0, drop_unk, emb->dtype == "I8" || emb->dtype == "F64", std::move(fp)));
}

}  // namespace kplab
