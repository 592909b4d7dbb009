#include "kplab/transformer.h"

#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>

#include <fmt/format.h>
#include <simdjson.h>

#include "embed/blas_internal.h"
#include "kplab/file_gate.h"
#include "kplab/hf_tokenizer.h"
#include "kplab/io.h"
#include "kplab/json.h"
#include "kplab/safe_text.h"
#include "kplab/safetensors.h"
#include "kplab/sha256.h"
#include "kplab/text.h"
#include "kplab/utf8.h"
#include "util/json_internal.h"

namespace fs = std::filesystem;

namespace kplab {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

// ---------------------------------------------------------------------------------------------
// Snapshot files

// Configuration files (JSON) and tokenizer.json: a real one is at most a few tens of MB, so a larger
// file (a sparse terabyte) is refused by its size, before it is read.
Result<std::string> ReadModelFile(const fs::path& p, std::string_view expected) {
  constexpr std::uintmax_t kMaxBytes = 1u << 30;
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(p, ec);
  if (!ec && size > kMaxBytes) {
    return Error::Input(
        fmt::format("{}: {} bytes, more than a model's configuration file can be (expected {} of at most "
                    "1 GiB)",
                    p.string(), size, expected));
  }
  return ReadRegularFile(p.string(), expected);
}

// A JSON object file, parsed; errors name the file.
struct JsonFile {
  std::string path;
  std::string bytes;
  simdjson::dom::parser parser;
  object root;

  static Result<std::unique_ptr<JsonFile>> Read(const fs::path& p, std::string_view expected) {
    auto f = std::make_unique<JsonFile>();
    f->path = p.string();
    auto b = ReadModelFile(p, expected);
    if (!b.ok()) return b.error();
    f->bytes = std::move(*b);
    element root;
    if (auto err = f->parser.parse(f->bytes).get(root); err != simdjson::SUCCESS) {
      return Error::Input(
          fmt::format("{}: {} (expected {})", f->path, json_internal::JsonProblem(f->bytes, err), expected));
    }
    if (root.type() != element_type::OBJECT) {
      return Error::Input(fmt::format("{}: not a JSON object (expected {})", f->path, expected));
    }
    f->root = root.get_object().value_unsafe();
    return f;
  }
  bool Has(std::string_view key) const {
    element e;
    return root.at_key(key).get(e) == simdjson::SUCCESS && e.type() != element_type::NULL_VALUE;
  }
  Result<std::int64_t> Int(std::string_view key, std::optional<std::int64_t> dflt, std::int64_t lo,
                           std::int64_t hi) const {
    element e;
    if (root.at_key(key).get(e) != simdjson::SUCCESS || e.type() == element_type::NULL_VALUE) {
      if (dflt) return *dflt;
      return Error::Input(fmt::format("{}: \"{}\" is missing (expected an integer)", path, key));
    }
    std::int64_t v = 0;
    if (e.get_int64().get(v) != simdjson::SUCCESS || v < lo || v > hi) {
      return Error::Input(fmt::format("{}: \"{}\" is {} (expected an integer from {} to {})", path, key,
                                      simdjson::to_string(e), lo, hi));
    }
    return v;
  }
  Result<double> Num(std::string_view key, double dflt) const {
    element e;
    if (root.at_key(key).get(e) != simdjson::SUCCESS || e.type() == element_type::NULL_VALUE) return dflt;
    double v = 0;
    if (e.get_double().get(v) != simdjson::SUCCESS || !std::isfinite(v) || v <= 0) {
      return Error::Input(
          fmt::format("{}: \"{}\" is {} (expected a positive number)", path, key, simdjson::to_string(e)));
    }
    return v;
  }
  Result<std::string> Str(std::string_view key, std::string dflt) const {
    element e;
    if (root.at_key(key).get(e) != simdjson::SUCCESS || e.type() == element_type::NULL_VALUE) return dflt;
    std::string_view v;
    if (e.get_string().get(v) != simdjson::SUCCESS) {
      return Error::Input(fmt::format("{}: \"{}\" is {} (expected a string)", path, key, simdjson::to_string(e)));
    }
    return std::string(v);
  }
  Result<bool> Bool(std::string_view key, bool dflt) const {
    element e;
    if (root.at_key(key).get(e) != simdjson::SUCCESS || e.type() == element_type::NULL_VALUE) return dflt;
    bool v = false;
    if (e.get_bool().get(v) != simdjson::SUCCESS) {
      return Error::Input(fmt::format("{}: \"{}\" is {} (expected true or false)", path, key, simdjson::to_string(e)));
    }
    return v;
  }
};

#define KP_TRY(var, expr)             \
  auto var##_r = (expr);              \
  if (!var##_r.ok()) return var##_r.error(); \
  auto var = std::move(*var##_r)

// SHA-256 over (name, NUL, decimal size, NUL, bytes) of each file in the given order (the scheme of
// the dataset content hashes and Model2Vec's).
std::string FilesHash(const std::vector<std::pair<std::string, std::string_view>>& files) {
  Sha256 h;
  for (const auto& [name, bytes] : files) {
    h.Update(name);
    h.Update(std::string_view("\0", 1));
    h.Update(std::to_string(bytes.size()));
    h.Update(std::string_view("\0", 1));
    h.Update(bytes);
  }
  return h.FinishHex();
}

// ---------------------------------------------------------------------------------------------
// Kernels

void LayerNormRows(float* x, std::size_t rows, int n, const float* g, const float* b, double eps) {
  for (std::size_t r = 0; r < rows; ++r) {
    float* v = x + r * static_cast<std::size_t>(n);
    double s = 0;
    for (int i = 0; i < n; ++i) s += v[i];
    const double mean = s / n;
    double q = 0;
    for (int i = 0; i < n; ++i) {
      const double d = v[i] - mean;
      q += d * d;
    }
    const float inv = static_cast<float>(1.0 / std::sqrt(q / n + eps));
    const float m = static_cast<float>(mean);
    for (int i = 0; i < n; ++i) v[i] = (v[i] - m) * inv * g[i] + b[i];
  }
}

// OpenBLAS is opened when the first transformer model is loaded, not linked into kplab: loaded with
// the executable (its relocations, the thread pool and buffers its initializer sets up) it cost every
// kplab process, `kplab --version` and every `kplab eval` included, some 8 ms of CPU for code only this
// backend runs (docs/design-notes.md, note 46, "OpenBLAS is opened on first use"). The library is the
// one the build found (KPLAB_OPENBLAS_LIBRARY), else the system's libopenblas.so.0.
struct Blas {
  decltype(&cblas_sgemm) sgemm = nullptr;
};
const Blas* g_blas = nullptr;  // set once, before the first model exists

}  // namespace

// Loads the library once (thread-safe); an error message if it cannot be, else empty.
const std::string& blas_internal::OpenBlas() {
  static const std::string error = [] {
    static Blas blas;
    std::string why;
    for (const char* name : {KPLAB_OPENBLAS_LIBRARY, "libopenblas.so.0"}) {
      void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (lib == nullptr) {
        const char* e = dlerror();
        why += fmt::format("{}{}", why.empty() ? "" : "; ", e ? e : name);
        continue;
      }
      blas.sgemm = reinterpret_cast<decltype(&cblas_sgemm)>(dlsym(lib, "cblas_sgemm"));
      auto set = reinterpret_cast<blas_internal::SetThreads>(dlsym(lib, "openblas_set_num_threads"));
      auto get = reinterpret_cast<blas_internal::GetThreads>(dlsym(lib, "openblas_get_num_threads"));
      if (blas.sgemm == nullptr || set == nullptr || get == nullptr) {
        why += fmt::format("{}{}: no cblas_sgemm / openblas_set_num_threads / openblas_get_num_threads",
                           why.empty() ? "" : "; ", name);
        continue;
      }
      // The thread count is the program's choice (kplab/blas.h): applied now if it made one before.
      blas_internal::Loaded(set, get);
      g_blas = &blas;
      return std::string();
    }
    return fmt::format("cannot load OpenBLAS, which transformer models need ({}); install libopenblas0", why);
  }();
  return error;
}

namespace {

// Rows per matrix product. Every product is made on blocks of exactly this many rows (the last one
// padded with zeros), so OpenBLAS takes the same kernel path for every call of a layer. On kernels
// whose rounding of a row does not depend on its place in the block (SkylakeX, Cooperlake, Sandybridge,
// Nehalem, Prescott) a phrase's vector is then the same bits whatever was embedded with it and however
// the phrases were sliced across threads; the Haswell / Zen kernels round by micro-tile position, so
// there vectors agree to ~1e-7 relative only (design note 35).
constexpr std::size_t kBlockRows = 256;

// y[rows x out] = x[rows x in] * W^T + bias, W stored [out x in] (PyTorch's Linear).
void Linear(const float* x, std::size_t rows, int in, const float* w, const float* bias, int out, float* y) {
  thread_local std::vector<float> xin, yout;
  for (std::size_t start = 0; start < rows; start += kBlockRows) {
    const std::size_t n = std::min(kBlockRows, rows - start);
    const float* a = x + start * static_cast<std::size_t>(in);
    float* c = y + start * static_cast<std::size_t>(out);
    if (n < kBlockRows) {
      xin.assign(kBlockRows * static_cast<std::size_t>(in), 0.0f);
      std::copy(a, a + n * static_cast<std::size_t>(in), xin.begin());
      yout.resize(kBlockRows * static_cast<std::size_t>(out));
      a = xin.data();
      c = yout.data();
    }
    for (std::size_t r = 0; r < kBlockRows; ++r) std::copy(bias, bias + out, c + r * static_cast<std::size_t>(out));
    g_blas->sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(kBlockRows), out, in, 1.0f, a, in, w, in,
                1.0f, c, out);
    if (n < kBlockRows) std::copy(yout.begin(), yout.begin() + static_cast<std::ptrdiff_t>(n * out), y + start * out);
  }
}

// Exact (erf) GELU, as torch.nn.functional.gelu with approximate='none'.
void Gelu(float* x, std::size_t n) {
  constexpr float kInvSqrt2 = 0.70710678118654752440f;
  for (std::size_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kInvSqrt2));
}

struct Linear_ {
  std::vector<float> w, b;  // [out x in], [out]
  int in = 0, out = 0;
};

struct LayerWeights {
  Linear_ qkv;  // q, k, v stacked: [3H x H]
  Linear_ attn_out, inter, out;
  std::vector<float> ln1_g, ln1_b, ln2_g, ln2_b;
};

}  // namespace

// ---------------------------------------------------------------------------------------------

struct TransformerModel::Impl {
  std::string dir;
  TransformerConfig cfg;
  std::string fingerprint;
  std::vector<std::string> hashed;
  std::optional<HfTokenizer> tok;
  int head_dim = 0;
  int pos_offset = 0;  // mpnet: padding_idx + 1

  std::vector<float> word, pos, type0;  // [V x H], [P x H], [H] (bert)
  std::vector<float> emb_ln_g, emb_ln_b;
  std::vector<LayerWeights> layers;
  std::vector<float> rel_bias;  // mpnet: [buckets x heads]
  std::vector<int> bucket_of;   // mpnet: bucket of rel + (max_positions - 1)
  // Cross-encoders (BertForSequenceClassification): token type 1's row, the pooler and the classifier,
  // present when the checkpoint has them (LoadClassifierHead).
  std::vector<float> type1;
  Linear_ pooler, classifier;
  bool scale_query_first = false;    // distilbert: q / sqrt(head size) before q k^T
  std::vector<std::string> id_text;  // TokenText

  mutable std::atomic<bool> warned_cut{false};

  // Sequences of any lengths run together: their tokens are the rows of one matrix (seq i's rows
  // start at off[i]; off has one more entry, the total), every row-wise step (embeddings, Linear,
  // LayerNorm, GELU) runs over all rows, attention over each sequence's own rows. No padding.
  // types: per row, the token type (0 or 1: a pair's second sequence), or null for all 0.
  void Embeddings(const std::vector<int>& ids, const std::vector<std::size_t>& off, float* x,
                  const std::vector<std::uint8_t>* types = nullptr) const;
  // Runs `last` layers, keeping the output of each layer in `keep` when it is not null (keep[0] =
  // embeddings). x ends as the last one.
  void Run(const std::vector<int>& ids, const std::vector<std::size_t>& off, int last, std::vector<float>& x,
           std::vector<std::vector<float>>* keep, const std::vector<std::uint8_t>* types = nullptr,
           const std::vector<char>* keep_only = nullptr) const;
  Status LoadClassifierHead(const Safetensors& st, const std::string& prefix, const std::vector<float>& token_types);
  // DistilBERT: every row's query divided by sqrt(head size) in float32, as its attention does before
  // the product (the other architectures scale the product).
  void ScaleQueries(float* qkv, std::size_t rows) const;
};

namespace {

// Where a tensor is in the file, under the names Hugging Face accepts: the plain name, the model
// prefix ("bert.", "mpnet.") that task heads' checkpoints have, and LayerNorm's old gamma / beta.
const SafetensorInfo* FindTensor(const Safetensors& st, const std::string& name, const std::string& prefix) {
  std::vector<std::string> names = {name, prefix + name};
  auto alias = [&](const std::string& from, const std::string& to) {
    if (name.size() > from.size() && name.compare(name.size() - from.size(), from.size(), from) == 0 &&
        name.find("LayerNorm") != std::string::npos) {
      const std::string n = name.substr(0, name.size() - from.size()) + to;
      names.push_back(n);
      names.push_back(prefix + n);
    }
  };
  alias(".weight", ".gamma");
  alias(".bias", ".beta");
  for (const auto& n : names) {
    if (const SafetensorInfo* t = st.Find(n)) return t;
  }
  return nullptr;
}

Result<std::vector<float>> Tensor(const Safetensors& st, const std::string& name, const std::string& prefix,
                                  std::vector<std::int64_t> shape, const std::string& why) {
  const SafetensorInfo* t = FindTensor(st, name, prefix);
  if (t == nullptr) {
    return Error::Input(fmt::format("{}: has no tensor '{}' (expected {})", st.path(), name, why));
  }
  if (t->dtype != "F32" && t->dtype != "F16" && t->dtype != "BF16") {
    return Error::Input(
        fmt::format("{}: tensor '{}' has dtype {} (expected F32, F16 or BF16)", st.path(), t->name, t->dtype));
  }
  if (t->shape != shape) {
    auto show = [](const std::vector<std::int64_t>& s) { return fmt::format("[{}]", fmt::join(s, ", ")); };
    return Error::Input(fmt::format("{}: tensor '{}' has shape {} (expected {}: {})", st.path(), t->name,
                                    show(t->shape), show(shape), why));
  }
  return st.ToFloat(*t);
}

// A Linear's weight [out x in] and bias [out], checked against those sizes (why: where the sizes come
// from, for the error).
Status ReadLinear(const Safetensors& st, const std::string& base, const std::string& prefix, std::int64_t out,
                  std::int64_t in, const std::string& why, Linear_& l) {
  auto w = Tensor(st, base + ".weight", prefix, {out, in}, why);
  if (!w.ok()) return w.error();
  auto b = Tensor(st, base + ".bias", prefix, {out}, why);
  if (!b.ok()) return b.error();
  l.w = std::move(*w);
  l.b = std::move(*b);
  l.in = static_cast<int>(in);
  l.out = static_cast<int>(out);
  return Status::Ok();
}

// Hugging Face's relative_position_bucket (modeling_mpnet.py), bidirectional, in float32 as it
// computes it: n = -rel; half the buckets for n < 0; exact below max_exact, logarithmic above.
int MpnetBucket(int rel, int num_buckets, int max_distance) {
  int ret = 0;
  int n = -rel;
  num_buckets /= 2;
  if (n < 0) ret += num_buckets;
  n = std::abs(n);
  const int max_exact = num_buckets / 2;
  if (n < max_exact) return ret + n;
  const float ratio = static_cast<float>(n) / static_cast<float>(max_exact);
  const float scale = static_cast<float>(std::log(static_cast<double>(max_distance) / max_exact));
  const float v = std::log(ratio) / scale * static_cast<float>(num_buckets - max_exact);
  long large = max_exact + static_cast<long>(v);
  large = std::min<long>(large, num_buckets - 1);
  return ret + static_cast<int>(large);
}

constexpr int kMpnetBuckets = 32;

// The pooling modes of a sentence-transformers Pooling config, in its concatenation order.
constexpr std::pair<const char*, const char*> kPoolModes[] = {
    {"pooling_mode_cls_token", "cls"},
    {"pooling_mode_max_tokens", "max"},
    {"pooling_mode_mean_tokens", "mean"},
    {"pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len"},
};

// config.json's names for the sizes: BertConfig / MPNetConfig, or DistilBertConfig's own.
struct ConfigKeys {
  const char* hidden;
  const char* layers;
  const char* heads;
  const char* intermediate;
  const char* act;
};

ConfigKeys ConfigKeysOf(const std::string& model_type) {
  if (model_type == "distilbert") return {"dim", "n_layers", "n_heads", "hidden_dim", "activation"};
  return {"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "hidden_act"};
}

// DistilBERT (Sanh et al. 2019; transformers' modeling_distilbert.py) is BERT's post-LayerNorm layer
// without token types, positions 0, 1, 2, ... and the query scaled by 1/sqrt(head size) before the
// product. Its sinusoidal option only fills the position table at initialisation, so a checkpoint's
// table is read either way.
Status ReadDistilBertConfig(const JsonFile& conf, TransformerConfig& c) {
  auto pad = conf.Int("pad_token_id", 0, 0, 1 << 24);
  if (!pad.ok()) return pad.error();
  c.pad_token_id = static_cast<int>(*pad);
  c.type_vocab = 0;
  return Status::Ok();
}

// The tensors of encoder layer i, by architecture.
struct LayerNames {
  std::string base, q, k, v, attn_out, ln1, inter, out, ln2;
};

LayerNames LayerNamesOf(const std::string& model_type, int i) {
  if (model_type == "distilbert") {
    return {fmt::format("transformer.layer.{}.", i), "attention.q_lin", "attention.k_lin", "attention.v_lin",
            "attention.out_lin", "sa_layer_norm", "ffn.lin1", "ffn.lin2", "output_layer_norm"};
  }
  if (model_type == "mpnet") {
    return {fmt::format("encoder.layer.{}.", i), "attention.attn.q", "attention.attn.k", "attention.attn.v",
            "attention.attn.o", "attention.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm"};
  }
  return {fmt::format("encoder.layer.{}.", i), "attention.self.query", "attention.self.key", "attention.self.value",
          "attention.output.dense", "attention.output.LayerNorm", "intermediate.dense", "output.dense",
          "output.LayerNorm"};
}

// A tokenizer.json for a BERT directory that has only vocab.txt (pytorch_pretrained_bert, Google's
// BERT; MoverScore's MNLI checkpoint): what their BertTokenizer does: BasicTokenizer (clean text,
// split CJK characters, lower-case and strip accents when lowercase, split on whitespace and
// punctuation), then WordPiece with "##" continuations, [UNK] for a word of more than 100 characters
// or with no pieces; [CLS] ... [SEP] around the text. Tokens of the vocabulary in brackets ([CLS],
// [SEP], [UNK], [PAD], [MASK]) are kept whole when they occur in the text, as its never_split.
Result<std::string> BertTokenizerJsonFromVocab(const std::string& vocab_text, const std::string& path,
                                               bool lowercase) {
  std::string vocab = "{";
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < vocab_text.size()) {
    std::size_t end = vocab_text.find('\n', start);
    if (end == std::string::npos) end = vocab_text.size();
    std::string_view line(vocab_text.data() + start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  std::map<std::string_view, int> seen;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!ValidUtf8(lines[i])) {
      return Error::Input(fmt::format("{}:{}: not valid UTF-8 (expected one WordPiece token a line)", path, i + 1));
    }
    // BertTokenizer's load_vocab keeps the last line of a repeated token; a later id wins here too.
    seen[lines[i]] = static_cast<int>(i);
  }
  for (const char* needed : {"[CLS]", "[SEP]", "[UNK]"}) {
    if (!seen.count(needed)) {
      return Error::Input(
          fmt::format("{}: no token {} (expected BERT's vocabulary with [CLS], [SEP] and [UNK])", path, needed));
    }
  }
  bool first = true;
  for (const auto& [tok, id] : seen) {
    vocab += fmt::format("{}{}:{}", first ? "" : ",", JsonString(tok), id);
    first = false;
  }
  vocab += "}";
  std::string added;
  for (const char* sp : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) {
    auto it = seen.find(sp);
    if (it == seen.end()) continue;
    added += fmt::format("{}{{\"id\":{},\"content\":\"{}\",\"single_word\":false,\"lstrip\":false,"
                         "\"rstrip\":false,\"normalized\":false,\"special\":true}}",
                         added.empty() ? "" : ",", it->second, sp);
  }
  return fmt::format(
      "{{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":[{}],"
      "\"normalizer\":{{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":true,"
      "\"strip_accents\":null,\"lowercase\":{}}},\"pre_tokenizer\":{{\"type\":\"BertPreTokenizer\"}},"
      "\"post_processor\":{{\"type\":\"BertProcessing\",\"sep\":[\"[SEP]\",{}],\"cls\":[\"[CLS]\",{}]}},"
      "\"decoder\":null,\"model\":{{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\","
      "\"continuing_subword_prefix\":\"##\",\"max_input_chars_per_word\":100,\"vocab\":{}}}}}",
      added, lowercase ? "true" : "false", seen["[SEP]"], seen["[CLS]"], vocab);
}

// do_lower_case of a vocab.txt directory's tokenizer_config.json; true without one (the uncased
// checkpoints, and MoverScore, which loads its MNLI model with do_lower_case=True).
Result<bool> VocabLowercase(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir / "tokenizer_config.json", ec)) return true;
  auto tc = JsonFile::Read(dir / "tokenizer_config.json", "the tokenizer's configuration");
  if (!tc.ok()) return tc.error();
  return (*tc)->Bool("do_lower_case", true);
}

// Every id's vocabulary string ("" for an id with none).
std::vector<std::string> TokenTexts(const HfTokenizer& tok) {
  std::vector<std::string> out(static_cast<std::size_t>(std::max(tok.vocab_size(), 0)));
  for (std::string_view t : tok.Tokens()) {
    const int id = tok.TokenToId(t);
    if (id >= 0 && static_cast<std::size_t>(id) < out.size()) out[static_cast<std::size_t>(id)] = std::string(t);
  }
  return out;
}

}  // namespace

Result<std::string> ResolveSnapshot(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  if (!fs::is_directory(p, ec)) {
    return Error::Input(
        fmt::format("{}: not a directory (expected a Hugging Face snapshot directory with config.json)", path));
  }
  if (fs::exists(p / "config.json", ec) || fs::exists(p / "bert_config.json", ec)) return path;
  const fs::path snaps = p / "snapshots";
  if (!fs::is_directory(snaps, ec)) {
    return Error::Input(
        fmt::format("{}: has no config.json (expected a Hugging Face snapshot directory, or a hub cache "
                    "directory models--ORG--NAME with snapshots/)",
                    path));
  }
  const fs::path ref = p / "refs" / "main";
  if (fs::exists(fs::symlink_status(ref, ec)) || fs::is_symlink(ref, ec)) {
    auto sha = ReadModelFile(ref, "the commit id of refs/main");
    if (!sha.ok()) return sha.error();
    std::string s = *sha;
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    if (s.empty() || s == "." || s.find('/') != std::string::npos || s.find("..") != std::string::npos) {
      return Error::Input(fmt::format("{}: '{}' is not a commit id (expected the snapshot's name)", ref.string(), s));
    }
    const fs::path snap = snaps / s;
    if (!fs::is_directory(snap, ec)) {
      return Error::Input(
          fmt::format("{}: points to snapshot '{}', which {} does not have", ref.string(), s, snaps.string()));
    }
    return snap.string();
  }
  std::vector<fs::path> all;
  if (Status st = GateFile(snaps.string(), FileAccess::kRead); !st.ok()) return st.error();
  for (const auto& e : fs::directory_iterator(snaps, ec)) {
    if (e.is_directory()) all.push_back(e.path());
  }
  if (all.size() != 1) {
    return Error::Input(fmt::format("{}: {} snapshots and no refs/main (expected one, or name the snapshot directory)",
                                    snaps.string(), all.size()));
  }
  return all[0].string();
}

TransformerModel::TransformerModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TransformerModel::~TransformerModel() = default;

int TransformerModel::dims() const {
  const auto& c = impl_->cfg;
  int modes = 1;
  for (char ch : c.pooling) modes += ch == '+';
  return c.hidden * modes;
}
const std::string& TransformerModel::fingerprint() const { return impl_->fingerprint; }
const TransformerConfig& TransformerModel::config() const { return impl_->cfg; }
const std::vector<std::string>& TransformerModel::hashed_files() const { return impl_->hashed; }
const std::string& TransformerModel::dir() const { return impl_->dir; }
int TransformerModel::token_layers() const { return impl_->cfg.layers; }
int TransformerModel::token_max_length() const { return impl_->cfg.token_max_length; }

int TransformerModel::Bucket(int rel) const { return MpnetBucket(rel, kMpnetBuckets, 128); }

// Load's phases, in the order Load runs them (each reads one part of the snapshot).
struct TransformerModel::Loader {
  using Hashed = std::vector<std::pair<std::string, std::string>>;  // (name in the snapshot, bytes)
  // What config.json says that the later phases need.
  struct Config {
    std::unique_ptr<JsonFile> conf;
    std::string config_name, model_type, prefix;
    bool vocab_only = false;  // vocab.txt without tokenizer.json
    std::int64_t vocab = 0, maxpos = 0, heads = 0;
    int capacity = 0;  // positions a sequence may use
  };

  static std::string Named(const std::string& sub, const std::string& file) {
    return sub.empty() ? file : (fs::path(sub) / file).string();
  }

  // The Transformer module's folder inside the snapshot ("" for the top).
  static Result<std::string> ModuleDir(const fs::path& dir) {
    std::error_code ec;
    // Where the Transformer module's files are: the snapshot's top (sentence-transformers 2 and later,
    // plain Hugging Face snapshots), or the module's own folder (sentence-transformers' older layout:
    // 0_Transformer/ with config.json, weights, tokenizer and sentence_bert_config.json; the top's
    // config.json is then sentence-transformers' version file). modules.json is checked in full below.
    std::string sub;
    if (fs::exists(dir / "modules.json", ec)) {
      if (auto mb = ReadModelFile(dir / "modules.json", "sentence-transformers' modules.json"); mb.ok()) {
        simdjson::dom::parser parser;
        element root;
        simdjson::dom::array mods;
        if (parser.parse(*mb).get(root) == simdjson::SUCCESS && root.get_array().get(mods) == simdjson::SUCCESS) {
          for (element m : mods) {
            std::string_view type, mod_path;
            if (m.type() == element_type::OBJECT && m["type"].get_string().get(type) == simdjson::SUCCESS &&
                type == "sentence_transformers.models.Transformer" &&
                m["path"].get_string().get(mod_path) == simdjson::SUCCESS) {
              sub = std::string(mod_path);
            }
          }
        }
      }
    }
    // Checked here too: the module folder is read before modules.json's full check.
    {
      const fs::path rel(sub);
      bool escapes = rel.is_absolute();
      for (const auto& part : rel) escapes = escapes || part == "..";
      if (escapes) {
        return Error::Input(
            fmt::format("{}: the Transformer module's path '{}' leaves the snapshot (expected a directory "
                        "inside it, such as 0_Transformer)",
                        (dir / "modules.json").string(), sub));
      }
    }
    return sub;
  }

  // config.json: the architecture and its sizes, into impl.cfg (and the head size, position offset).
  static Result<Config> ReadConfig(const fs::path& mdir, Impl& impl) {
    TransformerConfig& c = impl.cfg;
    std::error_code ec;
    // config.json (bert_config.json in a pytorch_pretrained_bert / Google BERT directory)
    const bool old_bert_config = !fs::exists(mdir / "config.json", ec) && fs::exists(mdir / "bert_config.json", ec);
    const std::string config_name = old_bert_config ? "bert_config.json" : "config.json";
    KP_TRY(conf, JsonFile::Read(mdir / config_name, "the model's config.json"));
    const bool vocab_only = !fs::exists(mdir / "tokenizer.json", ec) && fs::exists(mdir / "vocab.txt", ec);
    KP_TRY(model_type, conf->Str("model_type", vocab_only ? "bert" : ""));
    if (model_type != "bert" && model_type != "mpnet" && model_type != "distilbert") {
      return Error::Input(
          fmt::format("{}: unknown architecture: model_type \"{}\" (expected \"bert\", \"mpnet\" or "
                      "\"distilbert\")",
                      conf->path, model_type));
    }
    c.model_type = model_type;
    const std::string prefix = model_type + ".";
    constexpr std::int64_t kBig = 1 << 24;
    const ConfigKeys keys = ConfigKeysOf(model_type);
    KP_TRY(vocab, conf->Int("vocab_size", std::nullopt, 1, kBig));
    KP_TRY(hidden, conf->Int(keys.hidden, std::nullopt, 1, 1 << 16));
    KP_TRY(nlayers, conf->Int(keys.layers, std::nullopt, 0, 1000));
    KP_TRY(heads, conf->Int(keys.heads, std::nullopt, 1, 1 << 12));
    KP_TRY(inter, conf->Int(keys.intermediate, std::nullopt, 1, 1 << 18));
    KP_TRY(maxpos, conf->Int("max_position_embeddings", std::nullopt, 1, 1 << 20));
    // BertConfig's and MPNetConfig's default; DistilBERT's LayerNorms are built with 1e-12 whatever the
    // config says.
    KP_TRY(eps, model_type == "distilbert" ? Result<double>(1e-12) : conf->Num("layer_norm_eps", 1e-12));
    KP_TRY(act, conf->Str(keys.act, "gelu"));
    if (act != "gelu") {
      return Error::Input(
          fmt::format("{}: \"{}\" is \"{}\" (expected \"gelu\", the exact erf GELU)", conf->path, keys.act, act));
    }
    if (hidden % heads != 0) {
      return Error::Input(
          fmt::format("{}: {} {} is not a multiple of {} {}", conf->path, keys.hidden, hidden, keys.heads, heads));
    }
    c.vocab_size = static_cast<int>(vocab);
    c.hidden = static_cast<int>(hidden);
    c.layers = static_cast<int>(nlayers);
    c.heads = static_cast<int>(heads);
    c.intermediate = static_cast<int>(inter);
    c.max_positions = static_cast<int>(maxpos);
    c.layer_norm_eps = eps;
    impl.head_dim = c.hidden / c.heads;
    if (model_type == "bert") {
      KP_TRY(pet, conf->Str("position_embedding_type", "absolute"));
      if (pet != "absolute") {
        return Error::Input(
            fmt::format("{}: \"position_embedding_type\" is \"{}\" (expected \"absolute\")", conf->path, pet));
      }
      KP_TRY(tv, conf->Int("type_vocab_size", 2, 1, 1 << 16));
      c.type_vocab = static_cast<int>(tv);
      KP_TRY(pad, conf->Int("pad_token_id", 0, 0, kBig));
      c.pad_token_id = static_cast<int>(pad);
    } else if (model_type == "distilbert") {
      if (Status st = ReadDistilBertConfig(*conf, c); !st.ok()) return st.error();
      impl.scale_query_first = true;
    } else {
      KP_TRY(pad, conf->Int("pad_token_id", 1, 0, kBig));
      c.pad_token_id = static_cast<int>(pad);
      // Hugging Face's MPNet buckets with 32 whatever the config says (compute_position_bias's default
      // argument) and reads the table with those buckets, so it needs at least 32 rows.
      KP_TRY(nb, conf->Int("relative_attention_num_buckets", 32, kMpnetBuckets, 1 << 12));
      c.buckets = static_cast<int>(nb);
      // MPNetEmbeddings' padding_idx is 1 whatever pad_token_id says: positions start at 2.
      impl.pos_offset = 2;
    }
    const int capacity = c.max_positions - impl.pos_offset;
    if (capacity < 2) {
      return Error::Input(
          fmt::format("{}: max_position_embeddings {} leaves no room for a sequence", conf->path, c.max_positions));
    }

    return Config{std::move(conf), config_name, model_type, prefix, vocab_only, vocab, maxpos, heads, capacity};
  }

  static Result<Safetensors> OpenWeights(const fs::path& mdir) {
    std::error_code ec;
    const fs::path st_path = mdir / "model.safetensors";
    if (!fs::exists(st_path, ec)) {
      const bool bin = fs::exists(mdir / "pytorch_model.bin", ec);
      return Error::Input(
          fmt::format("{}: no model.safetensors{} (kplab reads safetensors only; convert once with Python: "
                      "`python3 -c \"import torch; from safetensors.torch import save_file; "
                      "sd = torch.load('{}/pytorch_model.bin', map_location='cpu'); "
                      "save_file({{k: v.contiguous() for k, v in sd.items()}}, '{}/model.safetensors')\"`, "
                      "or save the model with transformers' save_pretrained(safe_serialization=True))",
                      mdir.string(), bin ? " (it has pytorch_model.bin)" : "", mdir.string(), mdir.string()));
    }
    return Safetensors::Open(st_path.string());
  }

  // Every tensor the architecture needs, checked against config.json's sizes.
  static Status ReadWeights(const Safetensors& st, const Config& k, Impl& impl) {
    const TransformerConfig& c = impl.cfg;
    const std::string& prefix = k.prefix;
    const std::string& model_type = k.model_type;
    const std::int64_t vocab = k.vocab, maxpos = k.maxpos, heads = k.heads;
    const std::int64_t H = c.hidden, I = c.intermediate;
    const std::string why_h = fmt::format("config.json hidden_size {}", H);
    {
      KP_TRY(w, Tensor(st, "embeddings.word_embeddings.weight", prefix, {vocab, H},
                       fmt::format("config.json vocab_size {} x hidden_size {}", vocab, H)));
      impl.word = std::move(w);
      KP_TRY(p, Tensor(st, "embeddings.position_embeddings.weight", prefix, {maxpos, H},
                       fmt::format("config.json max_position_embeddings {} x hidden_size {}", maxpos, H)));
      impl.pos = std::move(p);
      if (model_type == "bert") {
        KP_TRY(t, Tensor(st, "embeddings.token_type_embeddings.weight", prefix, {c.type_vocab, H},
                         fmt::format("config.json type_vocab_size {} x hidden_size {}", c.type_vocab, H)));
        impl.type0.assign(t.begin(), t.begin() + H);
        if (Status head = impl.LoadClassifierHead(st, prefix, t); !head.ok()) return head.error();
      }
      KP_TRY(g, Tensor(st, "embeddings.LayerNorm.weight", prefix, {H}, why_h));
      KP_TRY(b, Tensor(st, "embeddings.LayerNorm.bias", prefix, {H}, why_h));
      impl.emb_ln_g = std::move(g);
      impl.emb_ln_b = std::move(b);
    }
    auto linear = [&](const std::string& base, std::int64_t out, std::int64_t in, Linear_& l) -> Status {
      return ReadLinear(st, base, prefix, out, in,
                        fmt::format("a Linear of {} inputs and {} outputs for these config.json sizes", in, out), l);
    };
    auto norm = [&](const std::string& base, std::vector<float>& g, std::vector<float>& b) -> Status {
      auto gw = Tensor(st, base + ".weight", prefix, {H}, why_h);
      if (!gw.ok()) return gw.error();
      auto bw = Tensor(st, base + ".bias", prefix, {H}, why_h);
      if (!bw.ok()) return bw.error();
      g = std::move(*gw);
      b = std::move(*bw);
      return Status::Ok();
    };
    impl.layers.resize(static_cast<std::size_t>(c.layers));
    for (int i = 0; i < c.layers; ++i) {
      LayerWeights& lw = impl.layers[static_cast<std::size_t>(i)];
      const LayerNames names = LayerNamesOf(model_type, i);
      const std::string& L = names.base;
      Linear_ q, k, v;
      for (auto [name, lin] : {std::pair<const std::string*, Linear_*>{&names.q, &q}, {&names.k, &k}, {&names.v, &v}}) {
        if (Status s = linear(L + *name, H, H, *lin); !s.ok()) return s.error();
      }
      lw.qkv.in = c.hidden;
      lw.qkv.out = 3 * c.hidden;
      for (Linear_* l : {&q, &k, &v}) {
        lw.qkv.w.insert(lw.qkv.w.end(), l->w.begin(), l->w.end());
        lw.qkv.b.insert(lw.qkv.b.end(), l->b.begin(), l->b.end());
      }
      if (Status s = linear(L + names.attn_out, H, H, lw.attn_out); !s.ok()) return s.error();
      if (Status s = norm(L + names.ln1, lw.ln1_g, lw.ln1_b); !s.ok()) return s.error();
      if (Status s = linear(L + names.inter, I, H, lw.inter); !s.ok()) return s.error();
      if (Status s = linear(L + names.out, H, I, lw.out); !s.ok()) return s.error();
      if (Status s = norm(L + names.ln2, lw.ln2_g, lw.ln2_b); !s.ok()) return s.error();
    }
    if (model_type == "mpnet") {
      KP_TRY(rb, Tensor(st, "encoder.relative_attention_bias.weight", prefix, {c.buckets, heads},
                        fmt::format("relative_attention_num_buckets {} x num_attention_heads {}", c.buckets, heads)));
      impl.rel_bias = std::move(rb);
      impl.bucket_of.resize(static_cast<std::size_t>(2 * c.max_positions - 1));
      for (int r = -(c.max_positions - 1); r <= c.max_positions - 1; ++r) {
        impl.bucket_of[static_cast<std::size_t>(r + c.max_positions - 1)] = MpnetBucket(r, kMpnetBuckets, 128);
      }
    }

    return Status::Ok();
  }

  // tokenizer.json (or BERT's vocab.txt): a WordPiece tokenizer whose ids fit the embeddings.
  static Result<HfTokenizer> ReadTokenizer(const fs::path& mdir, bool vocab_only, const TransformerConfig& c,
                                           std::string& bytes) {
    const fs::path tok_path = mdir / (vocab_only ? "vocab.txt" : "tokenizer.json");
    auto tok_bytes = ReadModelFile(tok_path, vocab_only ? "BERT's WordPiece vocabulary" : "the model's tokenizer.json");
    if (!tok_bytes.ok()) return tok_bytes.error();
    bytes = std::move(*tok_bytes);
    std::string tok_json;
    if (vocab_only) {
      KP_TRY(lower, VocabLowercase(mdir));
      KP_TRY(j, BertTokenizerJsonFromVocab(bytes, tok_path.string(), lower));
      tok_json = std::move(j);
    }
    auto tok = HfTokenizer::Parse(vocab_only ? tok_json : bytes, tok_path.string(), /*for_encoder=*/true);
    if (!tok.ok()) return tok.error();
    if (tok->model_type() != "WordPiece") {
      return Error::Input(fmt::format("{}: a {} tokenizer (expected WordPiece, as BERT and MPNet use)",
                                      tok_path.string(), tok->model_type()));
    }
    if (!tok->has_post_processor() || tok->num_special_tokens() == 0) {
      return Error::Input(fmt::format(
          "{}: no post_processor adding special tokens (expected [CLS] ... [SEP] or <s> ... </s>)", tok_path.string()));
    }
    if (tok->vocab_size() > c.vocab_size) {
      return Error::Input(
          fmt::format("{}: the tokenizer has {} token ids but config.json vocab_size is {} (the word "
                      "embeddings have {} rows): tokenizer and model do not match",
                      tok_path.string(), tok->vocab_size(), c.vocab_size, c.vocab_size));
    }
    {
      std::vector<int> ids;
      std::vector<std::uint8_t> sp;
      tok->EncodeWithSpecials("", 0, ids, sp);
      for (int id : ids) {
        if (id < 0 || id >= c.vocab_size) {
          return Error::Input(fmt::format("{}: the post-processor adds token id {}, outside config.json vocab_size {}",
                                          tok_path.string(), id, c.vocab_size));
        }
      }
    }

    return std::move(*tok);
  }

  // sentence-transformers: modules.json and the Pooling config (pooling, Normalize).
  static Status ReadSentenceTransformers(const fs::path& dir, TransformerConfig& c, Hashed& hashed) {
    std::error_code ec;
    // sentence-transformers: modules.json, the Pooling config, sentence_bert_config.json.
    std::string pooling = "mean";
    if (fs::exists(dir / "modules.json", ec)) {
      auto mb = ReadModelFile(dir / "modules.json", "sentence-transformers' modules.json");
      if (!mb.ok()) return mb.error();
      simdjson::dom::parser parser;
      element root;
      const std::string mpath = (dir / "modules.json").string();
      if (parser.parse(*mb).get(root) != simdjson::SUCCESS || root.type() != element_type::ARRAY) {
        return Error::Input(
            fmt::format("{}: not a JSON array (expected sentence-transformers' list of modules)", mpath));
      }
      bool have_transformer = false, have_pooling = false;
      std::size_t i = 0;
      const simdjson::dom::array arr1 = root.get_array().value_unsafe();  // a copy, not the temporary's
      for (element m : arr1) {
        std::string_view type, mod_path;
        if (m.type() != element_type::OBJECT || m["type"].get_string().get(type) != simdjson::SUCCESS) {
          return Error::Input(
              fmt::format("{}: module {} has no \"type\" (expected {{\"type\": ..., \"path\": ...}})", mpath, i));
        }
        if (m["path"].get_string().get(mod_path) != simdjson::SUCCESS) mod_path = "";
        const fs::path rel{std::string(mod_path)};
        bool escapes = rel.is_absolute();
        for (const auto& part : rel) escapes = escapes || part == "..";
        if (escapes) {
          return Error::Input(
              fmt::format("{}: module {} has path '{}', which leaves the snapshot (expected a "
                          "directory inside it, such as 1_Pooling)",
                          mpath, i, mod_path));
        }
        const std::string t(type);
        if (t == "sentence_transformers.models.Transformer") {
          have_transformer = true;

        } else if (t == "sentence_transformers.models.Pooling") {
          have_pooling = true;
          const fs::path pc = dir / std::string(mod_path) / "config.json";
          KP_TRY(pconf, JsonFile::Read(pc, "sentence-transformers' Pooling config"));
          std::string modes;
          for (auto [key, mode] : kPoolModes) {
            KP_TRY(on, pconf->Bool(key, false));
            if (on) modes += (modes.empty() ? "" : "+") + std::string(mode);
          }
          for (const char* unsupported : {"pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"}) {
            KP_TRY(on, pconf->Bool(unsupported, false));
            if (on) {
              return Error::Input(
                  fmt::format("{}: \"{}\" is true (kplab pools with cls, max, mean and mean_sqrt_len_tokens)",
                              pconf->path, unsupported));
            }
          }
          if (modes.empty())
            return Error::Input(fmt::format("{}: no pooling mode is true (expected one)", pconf->path));
          KP_TRY(wdim, pconf->Int("word_embedding_dimension", c.hidden, 1, 1 << 16));
          if (wdim != c.hidden) {
            return Error::Input(fmt::format("{}: word_embedding_dimension {} but config.json hidden_size is {}",
                                            pconf->path, wdim, c.hidden));
          }
          pooling = modes;
          hashed.emplace_back((fs::path(std::string(mod_path)) / "config.json").string(), pconf->bytes);
        } else if (t == "sentence_transformers.models.Normalize") {
          c.normalize = true;
        } else {
          return Error::Input(fmt::format(
              "{}: module \"{}\" is not supported (expected Transformer, Pooling and Normalize)", mpath, t));
        }
        ++i;
      }
      if (!have_transformer || !have_pooling) {
        return Error::Input(fmt::format("{}: expected a Transformer and a Pooling module", mpath));
      }
      hashed.emplace_back("modules.json", *mb);
    }
    c.pooling = pooling;
    return Status::Ok();
  }

  // The length limits: tokenizer_config.json's model_max_length, sentence_bert_config.json's
  // max_seq_length and do_lower_case.
  static Status ReadLengthLimits(const fs::path& dir, const fs::path& mdir, const std::string& sub, int capacity,
                                 int pos_offset, std::size_t specials, TransformerConfig& c, Hashed& hashed) {
    std::error_code ec;
    // The model's own length limit: tokenizer_config.json model_max_length, else the position table.
    int model_max = capacity;
    if (fs::exists(mdir / "tokenizer_config.json", ec)) {
      KP_TRY(tc, JsonFile::Read(mdir / "tokenizer_config.json", "the tokenizer's configuration"));
      element e;
      double v = 0;
      // Hugging Face writes a huge sentinel (1e30) when no limit is known.
      if (tc->root.at_key("model_max_length").get(e) == simdjson::SUCCESS &&
          e.get_double().get(v) == simdjson::SUCCESS && v >= 2 && v < capacity) {
        model_max = static_cast<int>(v);
      }
      hashed.emplace_back(Named(sub, "tokenizer_config.json"), tc->bytes);
    }
    c.token_max_length = model_max;
    c.max_seq_length = model_max;
    const fs::path sb_dir = fs::exists(mdir / "sentence_bert_config.json", ec) ? mdir : dir;
    if (fs::exists(sb_dir / "sentence_bert_config.json", ec)) {
      KP_TRY(sb,
             JsonFile::Read(sb_dir / "sentence_bert_config.json", "sentence-transformers' sentence_bert_config.json"));
      KP_TRY(msl, sb->Int("max_seq_length", model_max, 1, 1 << 20));
      if (msl > capacity) {
        return Error::Input(
            fmt::format("{}: max_seq_length {} is longer than the position table allows ({} = "
                        "config.json max_position_embeddings {}{})",
                        sb->path, msl, capacity, c.max_positions, pos_offset ? fmt::format(" - {}", pos_offset) : ""));
      }
      c.max_seq_length = static_cast<int>(msl);
      KP_TRY(lc, sb->Bool("do_lower_case", false));
      c.lowercase = lc;
      hashed.emplace_back(sb_dir == mdir ? Named(sub, "sentence_bert_config.json") : "sentence_bert_config.json",
                          sb->bytes);
    }
    if (c.max_seq_length <= static_cast<int>(specials) || c.token_max_length <= static_cast<int>(specials)) {
      return Error::Input(
          fmt::format("{}: a length limit of {} tokens (max_seq_length from sentence_bert_config.json, else "
                      "model_max_length from tokenizer_config.json) leaves no room beside the {} special tokens",
                      dir.string(), std::min(c.max_seq_length, c.token_max_length), specials));
    }

    return Status::Ok();
  }
};

Result<std::unique_ptr<TransformerModel>> TransformerModel::Load(const std::string& path) {
  if (const std::string& e = blas_internal::OpenBlas(); !e.empty()) return Error::Internal(e);
  // The BLAS thread count is the program's to choose (kplab/blas.h), not a side effect of loading.
  auto resolved = ResolveSnapshot(path);
  if (!resolved.ok()) return resolved.error();
  const fs::path dir(*resolved);
  auto impl = std::make_unique<Impl>();
  impl->dir = dir.string();
  TransformerConfig& c = impl->cfg;
  KP_TRY(sub, Loader::ModuleDir(dir));
  const fs::path mdir = sub.empty() ? dir : dir / sub;
  KP_TRY(cfg, Loader::ReadConfig(mdir, *impl));
  auto st = Loader::OpenWeights(mdir);
  if (!st.ok()) return st.error();
  if (Status s = Loader::ReadWeights(*st, cfg, *impl); !s.ok()) return s.error();
  std::string tok_bytes;
  auto tok = Loader::ReadTokenizer(mdir, cfg.vocab_only, c, tok_bytes);
  if (!tok.ok()) return tok.error();
  Loader::Hashed hashed;
  if (Status s = Loader::ReadSentenceTransformers(dir, c, hashed); !s.ok()) return s.error();
  if (Status s = Loader::ReadLengthLimits(dir, mdir, sub, cfg.capacity, impl->pos_offset, tok->num_special_tokens(), c,
                                          hashed);
      !s.ok()) {
    return s.error();
  }
  // Fingerprint: weights, config, tokenizer and the sentence-transformers files, name order.
  hashed.emplace_back(Loader::Named(sub, cfg.config_name), cfg.conf->bytes);
  hashed.emplace_back(Loader::Named(sub, cfg.vocab_only ? "vocab.txt" : "tokenizer.json"), tok_bytes);
  std::sort(hashed.begin(), hashed.end());
  std::vector<std::pair<std::string, std::string_view>> files;
  for (const auto& [n, b] : hashed) files.emplace_back(n, b);
  files.emplace_back(Loader::Named(sub, "model.safetensors"), st->bytes());
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& f : files) impl->hashed.push_back(f.first);
  impl->fingerprint = FilesHash(files);
  impl->tok.emplace(std::move(*tok));
  impl->id_text = TokenTexts(*impl->tok);
  return std::unique_ptr<TransformerModel>(new TransformerModel(std::move(impl)));
}

bool TransformerModel::Tokenize(std::string_view text, std::size_t max_len, std::vector<int>& ids,
                                std::vector<std::uint8_t>& special, bool raw) const {
  const auto& c = impl_->cfg;
  if (max_len == 0) max_len = static_cast<std::size_t>(c.max_seq_length);
  if (c.lowercase && !raw) {
    // Lower() wants valid UTF-8; the tokenizer would read each bad sequence as U+FFFD anyway.
    std::string valid;
    if (!ValidUtf8(text)) {
      for (std::size_t i = 0; i < text.size();) {
        const Utf8Char ch = DecodeUtf8Char(text, i);
        AppendUtf8(valid, ch.cp);
        i += ch.size;
      }
      text = valid;
    }
    const std::string lower = Lower(text);
    return impl_->tok->EncodeWithSpecials(lower, max_len, ids, special);
  }
  return impl_->tok->EncodeWithSpecials(text, max_len, ids, special);
}

void TransformerModel::Impl::Embeddings(const std::vector<int>& ids, const std::vector<std::size_t>& off,
                                        float* x, const std::vector<std::uint8_t>* types) const {
  const int H = cfg.hidden;
  for (std::size_t s = 0; s + 1 < off.size(); ++s) {
    std::size_t counted = 0;  // MPNet: tokens that are not padding so far
    for (std::size_t r = off[s]; r < off[s + 1]; ++r) {
      float* row = x + r * H;
      const float* w = word.data() + static_cast<std::size_t>(ids[r]) * H;
      // BERT: 0, 1, 2, ...; MPNet (RoBERTa-style): padding_idx (1) for a padding id, else padding_idx +
      // the count of non-padding tokens up to it, as Hugging Face's create_position_ids_from_input_ids
      // (a literal "<pad>" in the text gets position 1 and does not advance the others).
      std::size_t at = r - off[s];
      if (pos_offset > 0) at = ids[r] == 1 ? 1 : ++counted + 1;
      const float* p = pos.data() + at * H;
      if (type0.empty()) {
        for (int i = 0; i < H; ++i) row[i] = w[i] + p[i];
      } else {
        const float* t = types != nullptr && (*types)[r] == 1 ? type1.data() : type0.data();
        for (int i = 0; i < H; ++i) row[i] = w[i] + t[i] + p[i];
      }
    }
  }
  LayerNormRows(x, off.back(), H, emb_ln_g.data(), emb_ln_b.data(), cfg.layer_norm_eps);
}

void TransformerModel::Impl::ScaleQueries(float* qkv, std::size_t rows) const {
  const int H = cfg.hidden;
  const float d = static_cast<float>(std::sqrt(static_cast<double>(head_dim)));
  for (std::size_t r = 0; r < rows; ++r) {
    float* q = qkv + r * 3 * H;
    for (int i = 0; i < H; ++i) q[i] = q[i] / d;
  }
}

// keep_only (when given, one flag per layer 0 .. last): keep only the flagged layers' outputs in keep
// (the others as empty vectors), so several layers of a long batch do not hold every layer.
void TransformerModel::Impl::Run(const std::vector<int>& ids, const std::vector<std::size_t>& off, int last,
                                 std::vector<float>& x, std::vector<std::vector<float>>* keep,
                                 const std::vector<std::uint8_t>* types, const std::vector<char>* keep_only) const {
  const int H = cfg.hidden, I = cfg.intermediate, nh = cfg.heads, hd = head_dim;
  const std::size_t rows = off.back();
  x.resize(rows * H);
  Embeddings(ids, off, x.data(), types);
  auto keep_layer = [&](int layer) {
    if (!keep) return;
    if (keep_only == nullptr || (*keep_only)[static_cast<std::size_t>(layer)]) {
      keep->push_back(x);
    } else {
      keep->emplace_back();
    }
  };
  keep_layer(0);
  std::vector<float> qkv(rows * 3 * H), ctx(rows * H), tmp(rows * H), mid(rows * I), scores;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int li = 0; li < last; ++li) {
    const LayerWeights& lw = layers[static_cast<std::size_t>(li)];
    Linear(x.data(), rows, H, lw.qkv.w.data(), lw.qkv.b.data(), 3 * H, qkv.data());
    if (scale_query_first) ScaleQueries(qkv.data(), rows);
    const float score_scale = scale_query_first ? 1.0f : scale;
    for (std::size_t sq = 0; sq + 1 < off.size(); ++sq) {
      const int L = static_cast<int>(off[sq + 1] - off[sq]);
      if (L == 0) continue;
      scores.resize(static_cast<std::size_t>(L) * L);
      const float* base = qkv.data() + off[sq] * 3 * H;
      for (int h = 0; h < nh; ++h) {
        const float* q = base + h * hd;
        const float* k = base + H + h * hd;
        const float* v = base + 2 * H + h * hd;
        // scores = q k^T * scale (+ bias)
        g_blas->sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, L, hd, score_scale, q, 3 * H, k, 3 * H, 0.0f,
                    scores.data(), L);
        for (int i = 0; i < L; ++i) {
          float* s = scores.data() + static_cast<std::size_t>(i) * L;
          if (!rel_bias.empty()) {  // MPNet: the head's bias for (i, j), the same in every layer
            const int* bk = bucket_of.data() + (cfg.max_positions - 1 - i);
            for (int j = 0; j < L; ++j) s[j] += rel_bias[static_cast<std::size_t>(bk[j]) * nh + h];
          }
          float m = s[0];
          for (int j = 1; j < L; ++j) m = std::max(m, s[j]);
          float sum = 0;
          for (int j = 0; j < L; ++j) {
            s[j] = std::exp(s[j] - m);
            sum += s[j];
          }
          const float inv = 1.0f / sum;
          for (int j = 0; j < L; ++j) s[j] *= inv;
        }
        float* out = ctx.data() + off[sq] * H + h * hd;
        g_blas->sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, L, hd, L, 1.0f, scores.data(), L, v, 3 * H, 0.0f,
                    out, H);
      }
    }
    Linear(ctx.data(), rows, H, lw.attn_out.w.data(), lw.attn_out.b.data(), H, tmp.data());
    for (std::size_t i = 0; i < rows * H; ++i) tmp[i] += x[i];
    LayerNormRows(tmp.data(), rows, H, lw.ln1_g.data(), lw.ln1_b.data(), cfg.layer_norm_eps);
    Linear(tmp.data(), rows, H, lw.inter.w.data(), lw.inter.b.data(), I, mid.data());
    Gelu(mid.data(), mid.size());
    Linear(mid.data(), rows, I, lw.out.w.data(), lw.out.b.data(), H, x.data());
    for (std::size_t i = 0; i < rows * H; ++i) x[i] += tmp[i];
    LayerNormRows(x.data(), rows, H, lw.ln2_g.data(), lw.ln2_b.data(), cfg.layer_norm_eps);
    keep_layer(li + 1);
  }
}

Result<std::vector<std::vector<float>>> TransformerModel::HiddenStates(const std::vector<int>& ids, int last) const {
  const auto& c = impl_->cfg;
  if (last < 0 || last > c.layers) {
    return Error::Usage(fmt::format("layer {} is outside 0..{} (the model has {} layers)", last, c.layers, c.layers));
  }
  if (ids.empty() || static_cast<int>(ids.size()) > c.max_positions - impl_->pos_offset) {
    return Error::Usage(fmt::format("{} ids (expected 1 to {})", ids.size(), c.max_positions - impl_->pos_offset));
  }
  for (int id : ids) {
    if (id < 0 || id >= c.vocab_size)
      return Error::Usage(fmt::format("token id {} outside 0..{}", id, c.vocab_size - 1));
  }
  std::vector<float> x;
  std::vector<std::vector<float>> keep;
  impl_->Run(ids, {0, ids.size()}, last, x, &keep);
  return keep;
}

std::vector<float> TransformerModel::Pool(const float* rows, std::size_t n, int dims, std::string_view mode) {
  std::vector<float> out(static_cast<std::size_t>(dims), 0.0f);
  if (n == 0) return out;
  if (mode == "cls") {
    std::copy(rows, rows + dims, out.begin());
  } else if (mode == "max") {
    std::copy(rows, rows + dims, out.begin());
    for (std::size_t t = 1; t < n; ++t) {
      for (int i = 0; i < dims; ++i) out[i] = std::max(out[i], rows[t * dims + i]);
    }
  } else {
    std::vector<double> s(static_cast<std::size_t>(dims), 0.0);
    for (std::size_t t = 0; t < n; ++t) {
      for (int i = 0; i < dims; ++i) s[i] += rows[t * dims + i];
    }
    const double d = mode == "mean_sqrt_len" ? std::sqrt(static_cast<double>(n)) : static_cast<double>(n);
    for (int i = 0; i < dims; ++i) out[i] = static_cast<float>(s[i] / d);
  }
  return out;
}

namespace {

// Tokens run together at most: bounds the activations (intermediate: rows x 3072 floats for a base
// model, 48 MB) while keeping the matrix products large.
constexpr std::size_t kChunkRows = 4096;

// Calls run(ids, off, first, count) for consecutive sequences of seqs whose tokens fit kChunkRows
// (a longer sequence goes alone).
template <typename Fn>
void ForChunks(const std::vector<std::vector<int>>& seqs, Fn run) {
  std::vector<int> ids;
  std::vector<std::size_t> off;
  std::size_t k = 0;
  while (k < seqs.size()) {
    ids.clear();
    off.assign(1, 0);
    const std::size_t first = k;
    while (k < seqs.size() && (k == first || ids.size() + seqs[k].size() <= kChunkRows)) {
      ids.insert(ids.end(), seqs[k].begin(), seqs[k].end());
      off.push_back(ids.size());
      ++k;
    }
    run(ids, off, first, k - first);
  }
}

}  // namespace

Status TransformerModel::Embed(const std::vector<std::string_view>& phrases, float* out, std::uint8_t* has) const {
  try {
    return EmbedUnchecked(phrases, out, has);
  } catch (const std::bad_alloc&) {
    return Error::Limit(fmt::format("{}: out of memory embedding {} texts", impl_->dir, phrases.size()));
  }
}

Status TransformerModel::EmbedTokens(const std::vector<std::string_view>& texts, int layer, TokenBatch& out) const {
  try {
    return EmbedTokensUnchecked(texts, layer, out);
  } catch (const std::bad_alloc&) {
    out = TokenBatch{};
    return Error::Limit(fmt::format("{}: out of memory embedding the tokens of {} texts", impl_->dir, texts.size()));
  }
}

Status TransformerModel::EmbedUnchecked(const std::vector<std::string_view>& phrases, float* out,
                                        std::uint8_t* has, std::size_t max_len) const {
  const auto& c = impl_->cfg;
  const int H = c.hidden, D = dims();
  const std::size_t n = phrases.size();
  std::vector<std::vector<int>> ids(n);
  std::vector<std::uint8_t> sp;
  std::size_t first_cut = n;
  for (std::size_t i = 0; i < n; ++i) {
    if (Tokenize(phrases[i], max_len, ids[i], sp) && first_cut == n) first_cut = i;
  }
  if (first_cut < n && max_len == 0 && !impl_->warned_cut.exchange(true)) {
    std::string_view t = phrases[first_cut];
    std::size_t shown = std::min<std::size_t>(t.size(), 60);
    while (shown < t.size() && shown > 0 && IsUtf8Continuation(static_cast<unsigned char>(t[shown]))) --shown;
    // The text is data (a phrase from a dataset or predictions) and the directory a path: both escaped
    // (kplab/safe_text.h), since this goes straight to stderr from the library.
    const std::string message = fmt::format(
        "kplab: transformer model {}: texts longer than max_seq_length = {} tokens are cut to it, as "
        "sentence-transformers does (the first: \"{}{}\")\n",
        TerminalText(impl_->dir), c.max_seq_length, TerminalText(t.substr(0, shown)), shown < t.size() ? "..." : "");
    std::fputs(message.c_str(), stderr);
  }
  std::vector<float> x;
  ForChunks(ids, [&](const std::vector<int>& chunk, const std::vector<std::size_t>& off, std::size_t first,
                     std::size_t count) {
    impl_->Run(chunk, off, c.layers, x, nullptr);
    for (std::size_t b = 0; b < count; ++b) {
      const std::size_t i = first + b;
      float* o = out + i * static_cast<std::size_t>(D);
      const float* rows = x.data() + off[b] * H;
      const std::size_t L = off[b + 1] - off[b];
      int at = 0;
      std::size_t start = 0;
      while (start <= c.pooling.size()) {
        std::size_t end = c.pooling.find('+', start);
        if (end == std::string::npos) end = c.pooling.size();
        const auto v = Pool(rows, L, H, std::string_view(c.pooling).substr(start, end - start));
        std::copy(v.begin(), v.end(), o + at);
        at += H;
        start = end + 1;
      }
      if (c.normalize) {
        double s = 0;
        for (int j = 0; j < D; ++j) s += static_cast<double>(o[j]) * o[j];
        // torch.nn.functional.normalize: x / max(|x|, 1e-12)
        const float inv = static_cast<float>(1.0 / std::max(std::sqrt(s), 1e-12));
        for (int j = 0; j < D; ++j) o[j] *= inv;
      }
      has[i] = 1;
    }
  });
  return Status::Ok();
}

Status TransformerModel::EmbedTokensUnchecked(const std::vector<std::string_view>& texts, int layer,
                                              TokenBatch& out) const {
  const auto& c = impl_->cfg;
  if (layer < 0 || layer > c.layers) {
    return Error::Usage(
        fmt::format("layer {} is outside 0..{} (the model {} has {} layers)", layer, c.layers, impl_->dir, c.layers));
  }
  const int H = c.hidden;
  const std::size_t n = texts.size();
  std::vector<std::vector<int>> ids(n);
  std::vector<std::vector<std::uint8_t>> sp(n);
  out = TokenBatch{};
  out.dims = H;
  out.truncated.assign(n, 0);
  out.offsets.assign(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    out.truncated[i] = Tokenize(texts[i], static_cast<std::size_t>(c.token_max_length), ids[i], sp[i], /*raw=*/true);
    out.offsets[i + 1] = out.offsets[i] + ids[i].size();
  }
  const std::size_t total = out.offsets[n];
  out.vecs.assign(total * H, 0.0f);
  out.ids.resize(total);
  out.special.resize(total);
  for (std::size_t i = 0; i < n; ++i) {
    std::copy(ids[i].begin(), ids[i].end(), out.ids.begin() + static_cast<std::ptrdiff_t>(out.offsets[i]));
    std::copy(sp[i].begin(), sp[i].end(), out.special.begin() + static_cast<std::ptrdiff_t>(out.offsets[i]));
  }
  std::vector<float> x;
  ForChunks(ids, [&](const std::vector<int>& chunk, const std::vector<std::size_t>& off, std::size_t first,
                     std::size_t count) {
    impl_->Run(chunk, off, layer, x, nullptr);
    for (std::size_t b = 0; b < count; ++b) {
      std::copy(x.begin() + static_cast<std::ptrdiff_t>(off[b] * H), x.begin() + static_cast<std::ptrdiff_t>(off[b + 1] * H),
                out.vecs.begin() + static_cast<std::ptrdiff_t>(out.offsets[first + b] * H));
    }
  });
  return Status::Ok();
}

// ---- Retrieval (the utility metric): whole documents under a token limit of the caller's -------------

Status TransformerModel::EmbedLimited(const std::vector<std::string_view>& texts, int max_tokens, float* out,
                                      std::uint8_t* has) const {
  const int cap = impl_->cfg.max_positions - impl_->pos_offset;
  if (max_tokens < 3) return Error::Usage(fmt::format("a token limit of {} (expected at least 3)", max_tokens));
  try {
    return EmbedUnchecked(texts, out, has, static_cast<std::size_t>(std::min(max_tokens, cap)));
  } catch (const std::bad_alloc&) {
    return Error::Limit(fmt::format("{}: out of memory embedding {} texts", impl_->dir, texts.size()));
  }
}

// ---- Cross-encoders: BERT with a sequence-classification head (the utility metric's re-ranker) ---------

// The head of a BertForSequenceClassification checkpoint, when it has one: token type 1's row, the
// pooler (dense + tanh over the first token) and the classifier. A checkpoint without "classifier.weight"
// is an encoder only; one with a classifier but a missing or misshapen pooler is an error.
Status TransformerModel::Impl::LoadClassifierHead(const Safetensors& st, const std::string& prefix,
                                                  const std::vector<float>& token_types) {
  const SafetensorInfo* cw = FindTensor(st, "classifier.weight", prefix);
  if (cw == nullptr) return Status::Ok();
  const std::int64_t H = cfg.hidden;
  if (cw->shape.size() != 2 || cw->shape[1] != H || cw->shape[0] < 1) {
    return Error::Input(
        fmt::format("{}: tensor '{}' must have shape [num_labels, {}] (hidden_size {})", st.path(), cw->name, H, H));
  }
  if (token_types.size() < static_cast<std::size_t>(2 * H)) {
    return Error::Input(
        fmt::format("{}: a classifier needs token type 1 (a pair's second text), but type_vocab_size is 1", st.path()));
  }
  type1.assign(token_types.begin() + H, token_types.begin() + 2 * H);
  const std::int64_t labels = cw->shape[0];
  auto linear = [&](const std::string& base, std::int64_t out, std::int64_t in, Linear_& l) -> Status {
    return ReadLinear(st, base, prefix, out, in, fmt::format("the {} of a sequence-classification head", base), l);
  };
  if (Status s = linear("pooler.dense", H, H, pooler); !s.ok()) return s;
  return linear("classifier", labels, H, classifier);
}

int TransformerModel::num_labels() const { return impl_->classifier.out; }

Result<std::vector<float>> TransformerModel::ScorePairs(
    const std::vector<std::pair<std::string_view, std::string_view>>& pairs, int max_tokens) const {
  const auto& c = impl_->cfg;
  const int H = c.hidden, labels = impl_->classifier.out;
  if (labels != 1) {
    return Error::Input(
        fmt::format("{}: not a cross-encoder with one output (config and weights give {} labels; expected "
                    "a BertForSequenceClassification with num_labels 1, as sentence-transformers' "
                    "CrossEncoder scores with)",
                    impl_->dir, labels));
  }
  const int cls = impl_->tok->TokenToId("[CLS]"), sep = impl_->tok->TokenToId("[SEP]");
  if (c.model_type != "bert" || cls < 0 || sep < 0) {
    return Error::Input(
        fmt::format("{}: a cross-encoder must be a BERT model with [CLS] and [SEP] tokens", impl_->dir));
  }
  const int wanted = max_tokens > 0 ? max_tokens : c.token_max_length;
  const std::size_t limit = static_cast<std::size_t>(std::min(wanted, c.max_positions));
  if (limit < 4) return Error::Usage(fmt::format("a token limit of {} (expected at least 4 for a pair)", max_tokens));
  // [CLS] a [SEP] b [SEP], types 0 through the first [SEP] and 1 after; truncated as transformers'
  // truncate_sequences('longest_first'): one token at a time from the end of the longer text, the second
  // one when they are as long.
  std::vector<int> ids, a, b;
  std::vector<std::uint8_t> types;
  std::vector<std::size_t> off{0};
  for (const auto& [first, second] : pairs) {
    impl_->tok->Encode(first, a);
    impl_->tok->Encode(second, b);
    while (a.size() + b.size() + 3 > limit) {
      if (a.size() > b.size()) {
        a.pop_back();
      } else {
        b.pop_back();
      }
    }
    ids.push_back(cls);
    ids.insert(ids.end(), a.begin(), a.end());
    ids.push_back(sep);
    types.insert(types.end(), a.size() + 2, 0);
    ids.insert(ids.end(), b.begin(), b.end());
    ids.push_back(sep);
    types.insert(types.end(), b.size() + 1, 1);
    off.push_back(ids.size());
  }
  for (int id : ids) {
    if (id < 0 || id >= c.vocab_size)
      return Error::Input(fmt::format("{}: token id {} outside the vocabulary", impl_->dir, id));
  }
  const std::size_t n = pairs.size();
  std::vector<float> x, first(n * H), pooled(n * H), logits(n);
  try {
    impl_->Run(ids, off, c.layers, x, nullptr, &types);
  } catch (const std::bad_alloc&) {
    return Error::Limit(fmt::format("{}: out of memory scoring {} pairs", impl_->dir, n));
  }
  // BertPooler (dense + tanh over each pair's first token), then the classifier, on all pairs at once.
  for (std::size_t i = 0; i < n; ++i) {
    std::copy(x.begin() + static_cast<std::ptrdiff_t>(off[i] * H),
              x.begin() + static_cast<std::ptrdiff_t>(off[i] * H + H), first.begin() + static_cast<std::ptrdiff_t>(i * H));
  }
  Linear(first.data(), n, H, impl_->pooler.w.data(), impl_->pooler.b.data(), H, pooled.data());
  for (float& v : pooled) v = std::tanh(v);
  Linear(pooled.data(), n, H, impl_->classifier.w.data(), impl_->classifier.b.data(), 1, logits.data());
  // CrossEncoder.predict with one label: the sigmoid of the logit, a float32.
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(logits[i]))));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Several layers per token (MoverScore v1) and token strings (MoverScore's filters).

std::string TransformerModel::TokenText(int id) const {
  const auto& t = impl_->id_text;
  return id >= 0 && static_cast<std::size_t>(id) < t.size() ? t[static_cast<std::size_t>(id)] : std::string();
}

Status TransformerModel::EmbedTokenLayers(const std::vector<std::string_view>& texts, const std::vector<int>& layers,
                                          TokenBatch& out) const {
  try {
    return EmbedTokenLayersUnchecked(texts, layers, out);
  } catch (const std::bad_alloc&) {
    out = TokenBatch{};
    return Error::Limit(fmt::format("{}: out of memory embedding the tokens of {} texts", impl_->dir, texts.size()));
  }
}

Status TransformerModel::EmbedTokenLayersUnchecked(const std::vector<std::string_view>& texts,
                                                   const std::vector<int>& layers, TokenBatch& out) const {
  const auto& c = impl_->cfg;
  out = TokenBatch{};
  if (layers.empty()) return Error::Usage(fmt::format("{}: no layer asked for", impl_->dir));
  int last = 0;
  std::vector<char> wanted(static_cast<std::size_t>(c.layers) + 1, 0);
  for (int layer : layers) {
    if (layer < 0 || layer > c.layers) {
      return Error::Usage(
          fmt::format("layer {} is outside 0..{} (the model {} has {} layers)", layer, c.layers, impl_->dir, c.layers));
    }
    wanted[static_cast<std::size_t>(layer)] = 1;
    last = std::max(last, layer);
  }
  const std::size_t H = static_cast<std::size_t>(c.hidden), k = layers.size(), n = texts.size();
  std::vector<std::vector<int>> ids(n);
  std::vector<std::vector<std::uint8_t>> sp(n);
  out.dims = static_cast<int>(H * k);
  out.truncated.assign(n, 0);
  out.offsets.assign(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    out.truncated[i] = Tokenize(texts[i], static_cast<std::size_t>(c.token_max_length), ids[i], sp[i], /*raw=*/true);
    out.offsets[i + 1] = out.offsets[i] + ids[i].size();
  }
  const std::size_t total = out.offsets[n];
  out.vecs.assign(total * H * k, 0.0f);
  out.ids.reserve(total);
  out.special.reserve(total);
  for (std::size_t i = 0; i < n; ++i) {
    out.ids.insert(out.ids.end(), ids[i].begin(), ids[i].end());
    out.special.insert(out.special.end(), sp[i].begin(), sp[i].end());
  }
  std::vector<float> x;
  std::vector<std::vector<float>> keep;
  ForChunks(ids, [&](const std::vector<int>& chunk, const std::vector<std::size_t>& off, std::size_t first,
                     std::size_t count) {
    keep.clear();
    impl_->Run(chunk, off, last, x, &keep, nullptr, &wanted);
    for (std::size_t l = 0; l < k; ++l) {
      const std::vector<float>& states = keep[static_cast<std::size_t>(layers[l])];
      for (std::size_t r = 0; r < off[count]; ++r) {
        const std::size_t row = out.offsets[first] + r;
        std::copy(states.begin() + static_cast<std::ptrdiff_t>(r * H), states.begin() + static_cast<std::ptrdiff_t>((r + 1) * H),
                  out.vecs.begin() + static_cast<std::ptrdiff_t>((row * k + l) * H));
      }
    }
  });
  return Status::Ok();
}

}  // namespace kplab
