#include "kplab/registry.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <simdjson.h>

#include "kplab/file_gate.h"
#include "kplab/json.h"
#include "kplab/model2vec.h"
#include "kplab/transformer.h"
#include "kplab/sha256.h"
#include "kplab/vecfile.h"
#include "store/store_internal.h"
#include "util/json_internal.h"

namespace fs = std::filesystem;

namespace kplab {
namespace {

constexpr const char* kManifest = "model.json";
constexpr const char* kVectors = "vectors.kvec";

bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > 100 || name[0] == '.') return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  }
  return true;
}

Status CheckName(const std::string& name) {
  if (!ValidName(name)) {
    return Error::Usage(fmt::format("invalid model name '{}' (expected letters, digits, '-', '_' or '.')", name));
  }
  return Status::Ok();
}

std::string ManifestJson(const ModelInfo& m) {
  return fmt::format(
      "{{\n  \"kplab_model\": 1,\n  \"name\": {},\n  \"backend\": {},\n  \"fingerprint\": {},\n"
      "  \"weights_sha256\": {},\n  \"config\": {},\n  \"dims\": {},\n  \"rows\": {},\n"
      "  \"source\": {},\n  \"created_at\": {}\n}}\n",
      JsonString(m.name), JsonString(m.backend), JsonString(m.fingerprint), JsonString(m.weights_sha256), m.config_json, m.dims,
      m.rows, JsonString(m.source), JsonString(m.created_at));
}

Status WriteFile(const fs::path& p, const std::string& text) {
  if (Status st = GateFile(p.string(), FileAccess::kWrite); !st.ok()) return st;
  std::ofstream out(p, std::ios::binary);
  out << text;
  out.close();
  if (!out) return Error::Input(fmt::format("{}: cannot write", p.string()));
  return Status::Ok();
}

// Copies a file into a staging directory; the source is read through the gate like any other file.
Status CopyIn(const fs::path& src, const fs::path& read_from, const fs::path& dst,
              fs::copy_options options = fs::copy_options::none) {
  if (Status st = GateFile(read_from.string(), FileAccess::kRead); !st.ok()) return st;
  std::error_code ec;
  fs::copy_file(read_from, dst, options, ec);
  if (ec) return Error::Input(fmt::format("{}: cannot copy: {}", src.string(), ec.message()));
  return Status::Ok();
}

}  // namespace

// Removes hidden work directories (.NAME.tmpPID, .NAME.oldPID, .download-PID) left by an install or
// import that was killed: their process no longer exists.
void RemoveStaleWork(const std::string& models_dir) {
  std::error_code ec;
  if (!GateFile(models_dir, FileAccess::kWrite).ok()) return;  // removes: a write
  for (const auto& e : fs::directory_iterator(models_dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.empty() || n[0] != '.' || !e.is_directory()) continue;
    std::size_t i = n.size();
    while (i > 0 && std::isdigit(static_cast<unsigned char>(n[i - 1]))) --i;
    if (i == n.size()) continue;
    const std::string stem = n.substr(0, i);
    if (!(stem.ends_with(".tmp") || stem.ends_with(".old") || stem == ".download-")) continue;
    const std::string pid = n.substr(i);
    if (pid == std::to_string(::getpid()) || fs::exists("/proc/" + pid)) continue;
    std::error_code ec2;
    fs::remove_all(e.path(), ec2);
  }
}

namespace {

// A staging directory beside the final one; Commit renames it into place.
class Staging {
 public:
  static Result<Staging> Begin(const std::string& models_dir, const std::string& name, bool replace) {
    Status st = CheckName(name);
    if (!st.ok()) return st.error();
    std::error_code ec;
    fs::create_directories(models_dir, ec);
    if (ec) return Error::Input(fmt::format("{}: cannot create: {}", models_dir, ec.message()));
    RemoveStaleWork(models_dir);
    Staging s;
    s.final_ = fs::path(models_dir) / name;
    s.replace_ = replace;
    if (fs::exists(s.final_ / kManifest) && !replace) {
      return Error::Usage(
          fmt::format("model '{}' is already installed in {} (remove it with `kplab model rm "
                      "{}` or pass --replace)",
                      name, models_dir, name));
    }
    // Unique in the process too (imports on several threads); RemoveStaleWork reads the pid at the end.
    static std::atomic<unsigned> serial{0};
    s.tmp_ = fs::path(models_dir) / fmt::format(".{}.{}.tmp{}", name, serial++, ::getpid());
    fs::remove_all(s.tmp_, ec);
    fs::create_directories(s.tmp_, ec);
    if (ec) return Error::Input(fmt::format("{}: cannot create: {}", s.tmp_.string(), ec.message()));
    return s;
  }
  Staging() = default;
  Staging(Staging&& o) noexcept : final_(std::move(o.final_)), tmp_(std::move(o.tmp_)), replace_(o.replace_) {
    o.tmp_.clear();
  }
  ~Staging() {
    std::error_code ec;
    if (!tmp_.empty()) fs::remove_all(tmp_, ec);
  }
  const fs::path& dir() const { return tmp_; }
  Status Commit(ModelInfo& info) {
    info.dir = final_.string();
    Status st = WriteFile(tmp_ / kManifest, ManifestJson(info));
    if (!st.ok()) return st;
    std::error_code ec;
    // The previous version (with --replace) is moved to a hidden name first and put back if the new
    // one cannot be moved into place.
    static std::atomic<unsigned> serial{0};
    fs::path old = final_.parent_path() / fmt::format(".{}.{}.old{}", final_.filename().string(), serial++, ::getpid());
    fs::remove_all(old, ec);
    if (!replace_) {
      // Without --replace the rename itself refuses an existing name: another import of the same
      // name may have finished since Begin checked (renameat2 RENAME_NOREPLACE, atomic).
      if (::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, final_.c_str(), RENAME_NOREPLACE) != 0) {
        const int e = errno;
        if (e == EEXIST || e == ENOTEMPTY) {
          return Error::Usage(
              fmt::format("model '{}' is already installed in {} (another import finished first; "
                          "pass --replace to replace it)",
                          final_.filename().string(), final_.parent_path().string()));
        }
        return Error::Input(fmt::format("{}: cannot install: {}", final_.string(), std::strerror(e)));
      }
      tmp_.clear();
      return Status::Ok();
    }
    // With --replace an existing model is swapped with the new one in one step (RENAME_EXCHANGE), so a
    // process killed here leaves one of the two whole under the name, never neither.
    if (::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, final_.c_str(), RENAME_EXCHANGE) == 0) {
      fs::remove_all(tmp_, ec);  // now the previous version
      tmp_.clear();
      return Status::Ok();
    }
    const bool had_old = fs::exists(final_);
    if (had_old) {
      fs::rename(final_, old, ec);
      if (ec) return Error::Input(fmt::format("{}: cannot replace: {}", final_.string(), ec.message()));
    }
    fs::rename(tmp_, final_, ec);
    if (ec) {
      std::error_code ec2;
      if (had_old) fs::rename(old, final_, ec2);
      return Error::Input(fmt::format("{}: cannot install: {}", final_.string(), ec.message()));
    }
    tmp_.clear();
    fs::remove_all(old, ec);
    return Status::Ok();
  }

 private:
  fs::path final_, tmp_;
  bool replace_ = false;
};

Result<ModelInfo> ParseManifest(const fs::path& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (Status st = GateFile(path.string(), FileAccess::kRead); !st.ok()) return st.error();
  simdjson::padded_string text;
  if (auto err = simdjson::padded_string::load(path.string()).get(text); err) {
    return Error::Input(
        fmt::format("{}: cannot read the model manifest: {}", path.string(), simdjson::error_message(err)));
  }
  if (auto err = parser.parse(text).get(doc); err) {
    return Error::Input(fmt::format("{}: {} (expected a kplab model manifest)", path.string(),
                                    json_internal::JsonProblem(std::string_view(text.data(), text.size()), err)));
  }
  ModelInfo m;
  auto str = [&](const char* key, std::string& out) -> Status {
    std::string_view v;
    if (doc[key].get_string().get(v) != simdjson::SUCCESS) {
      return Error::Input(
          fmt::format("{}: missing or non-string \"{}\" (expected a kplab model manifest)", path.string(), key));
    }
    out = std::string(v);
    return Status::Ok();
  };
  for (auto [key, out] : {std::pair{"name", &m.name}, {"backend", &m.backend},
                          {"fingerprint", &m.fingerprint}, {"weights_sha256", &m.weights_sha256},
                          {"source", &m.source}, {"created_at", &m.created_at}}) {
    Status st = str(key, *out);
    if (!st.ok()) return st.error();
  }
  int64_t dims = 0, rows = 0;
  simdjson::dom::object cfg;
  if (doc["dims"].get_int64().get(dims) || doc["rows"].get_int64().get(rows) ||
      doc["config"].get_object().get(cfg) || dims < 1) {
    return Error::Input(
        fmt::format("{}: missing \"dims\", \"rows\" or \"config\" (expected a kplab model "
                    "manifest)",
                    path.string()));
  }
  m.dims = static_cast<int>(dims);
  m.rows = static_cast<std::size_t>(rows);
  m.config_json = simdjson::minify(cfg);
  m.dir = path.parent_path().string();
  if (ModelFingerprint(m.backend, m.weights_sha256, m.config_json) != m.fingerprint) {
    return Error::Input(
        fmt::format("{}: the fingerprint does not match the weights hash and configuration "
                    "(edited manifest?)",
                    path.string()));
  }
  return m;
}

std::string WordVecConfigJson(const WordVecConfig& c) {
  return fmt::format("{{\"lowercase\":{},\"sif_a\":{}}}", c.lowercase ? "true" : "false", c.sif_a);
}

Result<WordVecConfig> ParseWordVecConfig(const ModelInfo& m) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  WordVecConfig c;
  if (parser.parse(m.config_json).get(doc) || doc["lowercase"].get_bool().get(c.lowercase) ||
      doc["sif_a"].get_double().get(c.sif_a) || !(c.sif_a >= 0)) {
    return Error::Input(fmt::format("{}/{}: bad wordvec config {} (expected lowercase and sif_a >= 0)", m.dir,
                                    kManifest, m.config_json));
  }
  return c;
}

Result<ModelInfo> FinishVectors(Staging& stage, const std::string& name, const std::string& backend,
                                const ImportStats& stats, const std::string& config_json,
                                const std::string& source) {
  ModelInfo info;
  info.name = name;
  info.backend = backend;
  info.weights_sha256 = stats.weights_sha256;
  // The fingerprint is computed from the configuration exactly as a manifest reader will see it
  // (simdjson's minified form), so number formatting can never make a model unloadable.
  {
    simdjson::dom::parser parser;
    simdjson::dom::element cfg;
    if (parser.parse(config_json).get(cfg)) return Error::Internal("internal: bad model configuration JSON");
    info.config_json = simdjson::minify(cfg);
  }
  info.fingerprint = ModelFingerprint(backend, stats.weights_sha256, info.config_json);
  info.dims = stats.dims;
  info.rows = stats.rows;
  info.source = source;
  info.created_at = store_internal::NowIsoUtc();
  Status st = stage.Commit(info);
  if (!st.ok()) return st.error();
  return info;
}

// Model2Vec file hash as recorded by the loader: the embedder's own fingerprint.
Result<std::shared_ptr<const Embedder>> LoadModel2VecChecked(const ModelInfo& info);

// Forwards to a backend embedder under the registry's fingerprint.
class Fingerprinted final : public Embedder {
 public:
  Fingerprinted(std::shared_ptr<const Embedder> inner, std::string fp)
      : inner_(std::move(inner)), fp_(std::move(fp)) {}
  std::string_view backend() const override { return inner_->backend(); }
  int dims() const override { return inner_->dims(); }
  const std::string& fingerprint() const override { return fp_; }
  Status Embed(const std::vector<std::string_view>& p, float* out, std::uint8_t* has) const override {
    return inner_->Embed(p, out, has);
  }
  int token_layers() const override { return inner_->token_layers(); }
  int token_max_length() const override { return inner_->token_max_length(); }
  Status EmbedTokens(const std::vector<std::string_view>& texts, int layer, TokenBatch& out) const override {
    return inner_->EmbedTokens(texts, layer, out);
  }
  Status EmbedLimited(const std::vector<std::string_view>& texts, int max_tokens, float* out,
                      std::uint8_t* has) const override {
    return inner_->EmbedLimited(texts, max_tokens, out, has);
  }
  Status EmbedTokenLayers(const std::vector<std::string_view>& texts, const std::vector<int>& layers,
                          TokenBatch& out) const override {
    return inner_->EmbedTokenLayers(texts, layers, out);
  }
  std::string TokenText(int id) const override { return inner_->TokenText(id); }

 private:
  std::shared_ptr<const Embedder> inner_;
  std::string fp_;
};

// The files a transformer import copies, relative to the snapshot (those present are copied).
constexpr const char* kTransformerFiles[] = {
    "config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "modules.json",
    "sentence_bert_config.json", "config_sentence_transformers.json", "README.md", "LICENSE",
    // A BERT saved by pytorch_pretrained_bert or Google's scripts (MoverScore's MNLI checkpoint): its
    // WordPiece vocabulary instead of tokenizer.json, and the older name of the configuration.
    "vocab.txt", "bert_config.json"};

// The transformer's own configuration as kplab read it, in the manifest (pooling, normalize, lengths).
std::string TransformerConfigJson(const TransformerModel& m) {
  const TransformerConfig& c = m.config();
  return fmt::format(
      "{{\"model_type\":{},\"layers\":{},\"hidden\":{},\"pooling\":{},\"normalize\":{},\"lowercase\":{},"
      "\"max_seq_length\":{},\"token_max_length\":{}}}",
      JsonString(c.model_type), c.layers, c.hidden, JsonString(c.pooling), c.normalize ? "true" : "false",
      c.lowercase ? "true" : "false", c.max_seq_length, c.token_max_length);
}

Result<std::shared_ptr<const Embedder>> LoadTransformerChecked(const ModelInfo& info) {
  auto m = TransformerModel::Load(info.dir);
  if (!m.ok()) return m.error();
  if ((*m)->fingerprint() != info.weights_sha256) {
    return Error::Input(
        fmt::format("{}: the model files do not match the model's fingerprint (changed since "
                    "import; import it again)",
                    info.dir));
  }
  if ((*m)->dims() != info.dims || TransformerConfigJson(**m) != info.config_json) {
    return Error::Input(fmt::format("{}: the model is not the one its manifest describes", info.dir));
  }
  std::shared_ptr<const Embedder> inner = std::move(*m);
  return std::shared_ptr<const Embedder>(std::make_shared<Fingerprinted>(inner, info.fingerprint));
}

Result<std::shared_ptr<const Embedder>> LoadModel2VecChecked(const ModelInfo& info) {
  auto m = LoadModel2Vec(info.dir);
  if (!m.ok()) return m.error();
  std::shared_ptr<const Embedder> inner = std::move(*m);
  if (inner->fingerprint() != info.weights_sha256) {
    return Error::Input(
        fmt::format("{}: the model files do not match the model's fingerprint (changed since "
                    "import; import it again)",
                    info.dir));
  }
  if (inner->dims() != info.dims) {
    return Error::Input(
        fmt::format("{}: the model has {} dimensions, its manifest says {}", info.dir, inner->dims(), info.dims));
  }
  return std::shared_ptr<const Embedder>(std::make_shared<Fingerprinted>(inner, info.fingerprint));
}

}  // namespace

std::string ModelFingerprint(const std::string& backend, const std::string& weights_sha256,
                             const std::string& config_json) {
  return Sha256Hex(fmt::format("kplab-model/1\n{}\n{}\n{}", backend, weights_sha256, config_json));
}

std::string ModelsDir() {
  auto env = [](const char* k) -> std::string {
    const char* v = std::getenv(k);
    return v != nullptr ? v : "";
  };
  if (!env("KPLAB_MODELS").empty()) return env("KPLAB_MODELS");
  if (!env("KPLAB_HOME").empty()) return env("KPLAB_HOME") + "/models";
  if (!env("XDG_DATA_HOME").empty()) return env("XDG_DATA_HOME") + "/kplab/models";
  std::string home = env("HOME");
  if (home.empty()) home = ".";
  return home + "/.local/share/kplab/models";
}

std::string DefaultModelName() {
  const char* v = std::getenv("KPLAB_MODEL");
  return v != nullptr && *v != '\0' ? v : kDefaultModel;
}

Result<std::vector<ModelInfo>> ListModels(const std::string& models_dir) {
  std::vector<ModelInfo> out;
  std::error_code ec;
  if (!fs::exists(models_dir, ec)) return out;
  if (Status st = GateFile(models_dir, FileAccess::kRead); !st.ok()) return st.error();
  for (const auto& e : fs::directory_iterator(models_dir, ec)) {
    std::string n = e.path().filename().string();
    if (!e.is_directory() || n.empty() || n[0] == '.' || !fs::exists(e.path() / kManifest)) continue;
    auto m = ParseManifest(e.path() / kManifest);
    if (!m.ok()) return m.error();
    out.push_back(std::move(*m));
  }
  std::sort(out.begin(), out.end(),
            [](const ModelInfo& a, const ModelInfo& b) { return a.name < b.name; });
  return out;
}

Result<ModelInfo> GetModel(const std::string& models_dir, const std::string& name) {
  Status st = CheckName(name);
  if (!st.ok()) return st.error();
  fs::path p = fs::path(models_dir) / name / kManifest;
  if (!fs::exists(p)) {
    std::string hint = name == kDefaultModel
                           ? fmt::format("install it with `kplab model install {}` (scripts/setup.sh "
                                         "does this)",
                                         name)
                           : "import it with `kplab model import`";
    return Error::Usage(fmt::format("model '{}' is not installed in {} ({})", name, models_dir, hint));
  }
  return ParseManifest(p);
}

Status RemoveModel(const std::string& models_dir, const std::string& name) {
  Status st = CheckName(name);
  if (!st.ok()) return st;
  // A model whose manifest no longer parses can still be removed.
  const fs::path dir = fs::path(models_dir) / name;
  if (!fs::exists(dir / kManifest)) {
    return Error::Usage(fmt::format("model '{}' is not installed in {}", name, models_dir));
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ec) return Error::Input(fmt::format("{}: cannot remove: {}", dir.string(), ec.message()));
  return Status::Ok();
}

Result<std::shared_ptr<const Embedder>> LoadEmbedder(const ModelInfo& info) {
  if (info.backend == "model2vec") return LoadModel2VecChecked(info);
  if (info.backend == "transformer") return LoadTransformerChecked(info);
  if (info.backend != "wordvec" && info.backend != "precomputed") {
    return Error::Input(
        fmt::format("{}/{}: unknown backend '{}' (expected wordvec, model2vec, transformer or precomputed)", info.dir,
                    kManifest, info.backend));
  }
  std::string path = (fs::path(info.dir) / kVectors).string();
  auto vf = VecFile::Open(path);
  if (!vf.ok()) return vf.error();
  if (vf->weights_sha256() != info.weights_sha256 || vf->dims() != info.dims ||
      vf->size() != info.rows) {
    return Error::Input(
        fmt::format("{}: the vectors do not match the model's fingerprint (weights {} with "
                    "{} x {}, manifest says {} with {} x {})",
                    path, vf->weights_sha256().substr(0, 12), vf->size(), vf->dims(), info.weights_sha256.substr(0, 12),
                    info.rows, info.dims));
  }
  auto shared = std::make_shared<const VecFile>(std::move(*vf));
  if (info.backend == "precomputed") {
    if (shared->kind() != VecKind::kPhrases) {
      return Error::Input(fmt::format("{}: a word-vector file where a phrase table was expected", path));
    }
    return std::shared_ptr<const Embedder>(MakePrecomputedEmbedder(shared, info.fingerprint));
  }
  if (shared->kind() != VecKind::kWords) {
    return Error::Input(fmt::format("{}: a phrase table where word vectors were expected", path));
  }
  auto cfg = ParseWordVecConfig(info);
  if (!cfg.ok()) return cfg.error();
  return std::shared_ptr<const Embedder>(MakeWordVecEmbedder(shared, *cfg, info.fingerprint));
}

namespace {

class Deferred final : public Embedder {
 public:
  // The files are opened in the context of the code that chose the model (kplab/file_gate.h), even
  // when the first phrase to embed comes from a plugin's lane or a worker thread.
  explicit Deferred(ModelInfo info) : info_(std::move(info)), grants_(CurrentFileGrants()) {}
  std::string_view backend() const override { return info_.backend; }
  int dims() const override { return info_.dims; }
  const std::string& fingerprint() const override { return info_.fingerprint; }
  Status Embed(const std::vector<std::string_view>& p, float* out, std::uint8_t* has) const override {
    if (!Load()) return *error_;
    return loaded_->Embed(p, out, has);
  }
  // Loads the model to answer: only a plugin that asks for token embeddings calls it.
  int token_layers() const override { return Load() ? loaded_->token_layers() : -1; }
  int token_max_length() const override { return Load() ? loaded_->token_max_length() : 0; }
  Status EmbedTokens(const std::vector<std::string_view>& texts, int layer, TokenBatch& out) const override {
    if (!Load()) return *error_;
    return loaded_->EmbedTokens(texts, layer, out);
  }
  Status EmbedLimited(const std::vector<std::string_view>& texts, int max_tokens, float* out,
                      std::uint8_t* has) const override {
    if (!Load()) return *error_;
    return loaded_->EmbedLimited(texts, max_tokens, out, has);
  }
  Status EmbedTokenLayers(const std::vector<std::string_view>& texts, const std::vector<int>& layers,
                          TokenBatch& out) const override {
    if (!Load()) return *error_;
    return loaded_->EmbedTokenLayers(texts, layers, out);
  }
  std::string TokenText(int id) const override { return Load() ? loaded_->TokenText(id) : std::string(); }

 private:
  bool Load() const {
    std::call_once(once_, [this] {
      FileScope scope(grants_);
      auto e = LoadEmbedder(info_);
      if (!e.ok()) {
        error_ = e.error();
      } else if ((*e)->dims() != info_.dims || (*e)->fingerprint() != info_.fingerprint ||
                 (*e)->backend() != info_.backend) {
        error_ = Error::Input(fmt::format("{}: the loaded model is not the one its manifest describes", info_.dir));
      } else {
        loaded_ = std::move(*e);
      }
    });
    return loaded_ != nullptr;
  }

  ModelInfo info_;
  std::shared_ptr<const FileGrants> grants_;
  mutable std::once_flag once_;
  mutable std::shared_ptr<const Embedder> loaded_;
  mutable std::optional<Error> error_;
};

}  // namespace

Status Embedder::EmbedTokens(const std::vector<std::string_view>&, int, TokenBatch&) const {
  return Error::Usage(
      fmt::format("model backend '{}' has no token embeddings (a transformer model has: "
                  "kplab model import NAME --backend transformer DIR)",
                  backend()));
}

Status Embedder::EmbedTokenLayers(const std::vector<std::string_view>& texts, const std::vector<int>& layers,
                                  TokenBatch& out) const {
  out = TokenBatch{};
  if (layers.empty()) return Error::Usage("EmbedTokenLayers: no layer asked for");
  std::vector<TokenBatch> each(layers.size());
  for (std::size_t k = 0; k < layers.size(); ++k) {
    if (Status s = EmbedTokens(texts, layers[k], each[k]); !s.ok()) return s;
  }
  const std::size_t rows = each[0].ids.size(), d = static_cast<std::size_t>(each[0].dims), k = layers.size();
  out = std::move(each[0]);
  std::vector<float> first = std::move(out.vecs);
  out.dims = static_cast<int>(d * k);
  out.vecs.assign(rows * d * k, 0.0f);
  for (std::size_t l = 0; l < k; ++l) {
    const std::vector<float>& src = l == 0 ? first : each[l].vecs;
    for (std::size_t r = 0; r < rows; ++r) {
      std::copy(src.begin() + static_cast<std::ptrdiff_t>(r * d), src.begin() + static_cast<std::ptrdiff_t>((r + 1) * d),
                out.vecs.begin() + static_cast<std::ptrdiff_t>((r * k + l) * d));
    }
  }
  return Status::Ok();
}

std::string Embedder::TokenText(int) const { return {}; }

std::shared_ptr<const Embedder> DeferredEmbedder(const ModelInfo& info) {
  return std::make_shared<const Deferred>(info);
}

Status VerifyModel(const ModelInfo& info) {
  if (info.backend == "model2vec") {
    auto e = LoadModel2VecChecked(info);
    return e.ok() ? Status::Ok() : Status(e.error());
  }
  if (info.backend == "transformer") {
    auto e = LoadTransformerChecked(info);
    return e.ok() ? Status::Ok() : Status(e.error());
  }
  auto vf = VecFile::Open((fs::path(info.dir) / kVectors).string());
  if (!vf.ok()) return vf.error();
  Status st = vf->VerifySha256();
  if (!st.ok()) return st;
  if (vf->weights_sha256() != info.weights_sha256) {
    return Error::Input(fmt::format("{}: the vectors do not match the model's fingerprint", vf->path()));
  }
  return Status::Ok();
}

Result<ModelInfo> ImportWordVecText(const std::string& models_dir, const std::string& name,
                                    const std::string& path, const WordVecConfig& cfg,
                                    const ImportOptions& opt) {
  if (!(cfg.sif_a >= 0)) return Error::Usage("--sif must be >= 0");
  auto stage = Staging::Begin(models_dir, name, opt.replace);
  if (!stage.ok()) return stage.error();
  auto stats = ConvertWordVecText(path, (stage->dir() / kVectors).string());
  if (!stats.ok()) return stats.error();
  return FinishVectors(*stage, name, "wordvec", *stats, WordVecConfigJson(cfg),
                       opt.source.empty() ? path : opt.source);
}

Result<ModelInfo> ImportWinkJson(const std::string& models_dir, const std::string& name,
                                 const std::string& json_path,
                                 const std::vector<std::string>& notice_files,
                                 const ImportOptions& opt) {
  auto stage = Staging::Begin(models_dir, name, opt.replace);
  if (!stage.ok()) return stage.error();
  auto stats = ConvertWinkJson(json_path, (stage->dir() / kVectors).string());
  if (!stats.ok()) return stats.error();
  for (const std::string& f : notice_files) {
    Status st = CopyIn(f, f, stage->dir() / fs::path(f).filename(), fs::copy_options::overwrite_existing);
    if (!st.ok()) return st.error();
  }
  return FinishVectors(*stage, name, "wordvec", *stats, WordVecConfigJson(WordVecConfig{}),
                       opt.source.empty() ? json_path : opt.source);
}

Result<ModelInfo> ImportModel2Vec(const std::string& models_dir, const std::string& name,
                                  const std::string& dir, const ImportOptions& opt) {
  auto probe = LoadModel2Vec(dir);  // validates the files before anything is copied
  if (!probe.ok()) return probe.error();
  auto stage = Staging::Begin(models_dir, name, opt.replace);
  if (!stage.ok()) return stage.error();
  for (const char* f : {"model.safetensors", "tokenizer.json", "config.json",
                        "config_sentence_transformers.json", "modules.json", "README.md", "LICENSE"}) {
    fs::path src = fs::path(dir) / f;
    if (!fs::exists(src)) continue;
    if (Status st = CopyIn(src, src, stage->dir() / f); !st.ok()) return st.error();
  }
  auto copied = LoadModel2Vec(stage->dir().string());
  if (!copied.ok()) return copied.error();
  ModelInfo info;
  info.name = name;
  info.backend = "model2vec";
  info.weights_sha256 = (*copied)->fingerprint();
  info.config_json = "{}";
  info.fingerprint = ModelFingerprint(info.backend, info.weights_sha256, info.config_json);
  info.dims = (*copied)->dims();
  info.source = opt.source.empty() ? dir : opt.source;
  info.created_at = store_internal::NowIsoUtc();
  Status st = stage->Commit(info);
  if (!st.ok()) return st.error();
  return info;
}

Result<ModelInfo> ImportTransformer(const std::string& models_dir, const std::string& name,
                                    const std::string& dir, const ImportOptions& opt) {
  // Checked where it is first, so a broken snapshot is reported under its own path.
  auto original = TransformerModel::Load(dir);
  if (!original.ok()) return original.error();
  const fs::path snap((*original)->dir());
  auto stage = Staging::Begin(models_dir, name, opt.replace);
  if (!stage.ok()) return stage.error();
  std::vector<std::string> files(std::begin(kTransformerFiles), std::end(kTransformerFiles));
  for (const auto& f : (*original)->hashed_files()) {
    if (std::find(files.begin(), files.end(), f) == files.end()) files.push_back(f);  // 1_Pooling/config.json
  }
  original->reset();
  for (const auto& f : files) {
    const fs::path src = snap / f;
    std::error_code ec;
    if (!fs::exists(src, ec)) continue;
    fs::create_directories((stage->dir() / f).parent_path(), ec);
    // Hub cache snapshots are symbolic links into blobs/: the copy holds the bytes.
    const fs::path bytes = fs::canonical(src, ec);
    if (ec) return Error::Input(fmt::format("{}: cannot copy: {}", src.string(), ec.message()));
    if (Status st = CopyIn(src, bytes, stage->dir() / f); !st.ok()) return st.error();
  }
  auto copied = TransformerModel::Load(stage->dir().string());
  if (!copied.ok()) return copied.error();
  ModelInfo info;
  info.name = name;
  info.backend = "transformer";
  info.weights_sha256 = (*copied)->fingerprint();
  info.config_json = TransformerConfigJson(**copied);
  info.fingerprint = ModelFingerprint(info.backend, info.weights_sha256, info.config_json);
  info.dims = (*copied)->dims();
  info.source = opt.source.empty() ? dir : opt.source;
  info.created_at = store_internal::NowIsoUtc();
  Status st = stage->Commit(info);
  if (!st.ok()) return st.error();
  return info;
}

Result<ModelInfo> ImportPrecomputed(const std::string& models_dir, const std::string& name,
                                    const std::string& path, const std::string& format,
                                    const std::string& phrases_path, const ImportOptions& opt) {
  auto stage = Staging::Begin(models_dir, name, opt.replace);
  if (!stage.ok()) return stage.error();
  auto stats = ConvertPhraseTable(path, format, phrases_path, (stage->dir() / kVectors).string());
  if (!stats.ok()) return stats.error();
  return FinishVectors(*stage, name, "precomputed", *stats, "{}", opt.source.empty() ? path : opt.source);
}

// Runtime models (registry.h). A function-local static, so that registration works from any static
// initialization order; the map is never destroyed before its users.
namespace {
struct RuntimeRegistry {
  std::mutex mu;
  std::map<std::string, std::pair<ModelInfo, std::shared_ptr<const Embedder>>> models;
};
RuntimeRegistry& Runtime() {
  static auto* r = new RuntimeRegistry();  // leaked on purpose: embedders may outlive static destructors
  return *r;
}
}  // namespace

Status RegisterRuntimeModel(const ModelInfo& info, std::shared_ptr<const Embedder> embedder) {
  Status st = CheckName(info.name);
  if (!st.ok()) return st;
  if (!embedder) return Error::Usage(fmt::format("model '{}': no embedder", info.name));
  if (info.dims <= 0 || info.dims != embedder->dims()) {
    return Error::Usage(fmt::format("model '{}': {} dimensions (expected a positive number equal to the embedder's {})",
                                    info.name, info.dims, embedder->dims()));
  }
  if (info.fingerprint != embedder->fingerprint()) {
    return Error::Usage(fmt::format("model '{}': the info's fingerprint differs from the embedder's", info.name));
  }
  RuntimeRegistry& r = Runtime();
  std::lock_guard<std::mutex> lock(r.mu);
  r.models[info.name] = {info, std::move(embedder)};
  return Status::Ok();
}

bool UnregisterRuntimeModel(const std::string& name) {
  RuntimeRegistry& r = Runtime();
  std::shared_ptr<const Embedder> dropped;  // released after the lock
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.models.find(name);
  if (it == r.models.end()) return false;
  dropped = std::move(it->second.second);
  r.models.erase(it);
  return true;
}

std::shared_ptr<const Embedder> FindRuntimeModel(const std::string& name, ModelInfo* info) {
  RuntimeRegistry& r = Runtime();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.models.find(name);
  if (it == r.models.end()) return nullptr;
  if (info != nullptr) *info = it->second.first;
  return it->second.second;
}

std::vector<ModelInfo> RuntimeModels() {
  RuntimeRegistry& r = Runtime();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<ModelInfo> out;
  for (const auto& [name, m] : r.models) out.push_back(m.first);
  return out;
}

}  // namespace kplab
