// The phrase cache: every phrase a model has embedded, stored in the run store's SQLite file
// (tables embed_models and phrase_vectors, schema version 4: one B-tree keyed by (model, phrase as
// embedded), WITHOUT ROWID), so each distinct phrase is embedded once per model across runs and
// processes. Beside the database, one HNSW index per model (<db>.hnsw/<fingerprint>-<db id>.hnsw,
// kplab's own header) answers nearest-phrase queries; its labels are the rows' `label` column. It is
// brought up to date with the table when opened, and rebuilt when it does not match it. Not
// thread-safe: one PhraseCache per thread (it uses threads of its own inside Get and Index).
//
// Threads: one PhraseCache per thread (it is not thread-safe; Get and Index use threads of their own inside).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kplab/ann.h"
#include "kplab/embed.h"
#include "kplab/result.h"

namespace kplab {

struct CacheStats {
  std::size_t requested = 0;  // distinct phrases asked for
  std::size_t hits = 0;       // found in the cache
  std::size_t embedded = 0;   // embedded now and stored
  std::size_t no_vector = 0;  // of requested, phrases the model has no vector for
  double lookup_seconds = 0, embed_seconds = 0, store_seconds = 0;
};

struct IndexStats {
  std::size_t size = 0;      // vectors in the index
  std::size_t added = 0;     // added to a loaded index to catch up with the table
  bool rebuilt = false;      // built from scratch (missing, stale or mismatching file)
  std::string rebuild_reason;
  double seconds = 0;
};

class PhraseCache {
 public:
  // Opens (and migrates) the database at db_path; ":memory:" keeps everything in memory.
  static Result<PhraseCache> Open(const std::string& db_path);
  PhraseCache(PhraseCache&&) noexcept;
  PhraseCache& operator=(PhraseCache&&) noexcept;
  ~PhraseCache();

  // Rows stored per write transaction: a process killed during Get leaves whole transactions of
  // this many rows (the last one of a call may be smaller), never part of one.
  static constexpr std::size_t kRowsPerTransaction = 65536;

  // Vectors for phrases, as the model embeds them: out gets phrases.size() * dims floats, has[i] = 1
  // when phrase i has a vector. A phrase given twice is looked up, embedded and stored once, and
  // both positions get its vector (stats count positions). Phrases are handled in byte order:
  // looked up by one ordered scan merged with them (or one query each when few are wanted), and
  // the misses embedded on `threads` threads (0: every core) and inserted in key order,
  // kRowsPerTransaction rows per transaction. The vectors do not depend on `threads`.
  Result<CacheStats> Get(const Embedder& model, const std::string& model_name,
                         const std::vector<std::string_view>& phrases, float* out, std::uint8_t* has,
                         int threads = 0);

  // Get without the vectors: every phrase ends up cached (the misses embedded and stored exactly as
  // Get does), the cached ones are read and checked as Get checks them, and nothing is copied out —
  // `kplab cache add`, where a million vectors (400 MB for GloVe) would be copied only to be freed.
  Result<CacheStats> Add(const Embedder& model, const std::string& model_name,
                         const std::vector<std::string_view>& phrases, int threads = 0);

  // Number of phrases cached for a model (with or without a vector).
  Result<std::size_t> Count(const std::string& fingerprint);

  // The model's nearest-phrase index over every cached phrase that has a vector. Rows it lacks are
  // inserted on `threads` threads (0: every core), so a built graph depends on thread timing; its
  // search results are checked by recall against exact search, not by identity.
  Result<std::shared_ptr<AnnIndex>> Index(const Embedder& model, IndexStats* stats = nullptr,
                                          int threads = 0);
  // Phrase text of the model's index labels (phrase_vectors.label), one scan of the model's rows;
  // unknown labels give "".
  Result<std::vector<std::string>> Phrases(const std::string& fingerprint,
                                           const std::vector<std::int64_t>& labels);

  // Every cached phrase of a model that has a vector, as (label, phrase).
  Result<std::vector<std::pair<std::int64_t, std::string>>> AllPhrases(const std::string& fingerprint);

  // Where the model's index file lives ("" for an in-memory database).
  std::string IndexPath(const std::string& fingerprint) const;
  const std::string& db_path() const;

 private:
  // Get and Add: out may be null (no vector is copied out), has may not.
  Result<CacheStats> Fetch(const Embedder& model, const std::string& model_name,
                           const std::vector<std::string_view>& phrases, float* out, std::uint8_t* has,
                           int threads);
  struct Impl;
  explicit PhraseCache(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kplab
