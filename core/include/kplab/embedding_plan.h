// The plan phase of a run with semantic metrics: every distinct phrase the plugins may ask about is
// looked up in the phrase cache, the misses are embedded in batches and stored, and the vectors are
// kept in one read-only EmbeddingSpace that every scoring lane shares. Scoring never calls the model
// per document (DESIGN.md, "Plan").
//
// Threads: PlanEmbeddings runs on the caller's thread (with threads of its own for the embedder); the
// EmbeddingSpace it returns is read-only afterwards and shared by every scoring lane (Row and Lookup
// may be called from any number of threads at once).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kplab/ann.h"
#include "kplab/cache.h"
#include "kplab/corpus.h"
#include "kplab/embed.h"
#include "kplab/registry.h"
#include "kplab/sim.h"

namespace kplab {

// The strings a phrase is embedded as: its normalized surface, or its stems joined by spaces (the
// KPEval fork of SemR-p embeds stemmed strings).
enum class EmbedForm { kSurface = 0, kStems = 1 };
inline constexpr int kEmbedForms = 2;

struct EmbeddingSpace {
  ModelInfo model;
  std::shared_ptr<const Embedder> embedder;
  int dims = 0;
  std::vector<float> vecs;         // row-major, as embedded
  std::vector<std::uint8_t> has;   // per row: has a vector
  std::vector<std::int32_t> row_of[kEmbedForms];  // [form][Phrase::id] -> row, -1 = not planned
  std::vector<std::string> texts;  // row -> the string embedded
  CacheStats cache;
  std::size_t no_vector = 0;  // planned strings without a vector
  // Nearest-phrase search (plugins that declare needs = {"neighbors"}).
  std::shared_ptr<AnnIndex> index;
  std::unordered_map<std::int64_t, std::string> label_text;

  // Row of a corpus phrase in a form, or -1.
  std::int32_t Row(const Phrase& p, EmbedForm f) const {
    const auto& v = row_of[static_cast<int>(f)];
    return p.id < v.size() ? v[p.id] : -1;
  }
  // Vector for any string: planned rows are read, others embedded now (not cached). has=false when
  // the model has no vector. Thread-safe.
  Status Lookup(std::string_view text, std::vector<float>& out, bool& has_vec) const;

 private:
  // text -> row, made on the first Lookup: most runs ask for rows by phrase only (Row), and a map of a
  // hundred thousand strings is a tenth of a warm SemR-p run's plan.
  mutable std::once_flag row_by_text_once_;
  mutable std::unordered_map<std::string_view, std::int32_t> row_by_text_;
};

struct PlanRequest {
  std::string model_name;  // "" = DefaultModelName()
  std::string db_path;     // run store / phrase cache database
  bool forms[kEmbedForms] = {true, false};
  bool neighbors = false;
  bool tokens = false;  // a plugin asks for token embeddings (needs = {"tokens"}): the model must have them
  int threads = 0;
};

// The corpus's own string (its arena's surface or its lexicon's stem key): valid while the corpus is.
std::string_view FormText(const Corpus& c, const Phrase& p, EmbedForm f);

// The distinct strings a plan embeds: every phrase some document lists (its references, before and
// after dedup, and the predictions the profile keeps — not the "<peos>" marker, an invalid
// prediction or any other piece the profile drops, which the corpus interns all the same) in each
// requested form, in the order of first appearance — all such phrases in corpus order in the surface
// form, then those in the stems form — each string once even when it is both a surface and a stem key.
// `kplab cache phrases` prints exactly these texts (docs/embeddings.md).
struct PhrasePlan {
  std::vector<std::string> texts;
  std::vector<std::uint8_t> forms;  // per text: bit f set when it is form f of some phrase
  std::vector<std::int32_t> row_of[kEmbedForms];  // as EmbeddingSpace::row_of
};
PhrasePlan CollectPhrases(const Corpus& corpus, const bool (&forms)[kEmbedForms]);

Result<std::shared_ptr<EmbeddingSpace>> PlanEmbeddings(const Corpus& corpus, const PlanRequest& req);

// Nearest phrases to a query vector in the space's index: (phrase, cosine), best first.
std::vector<std::pair<std::string, double>> Neighbors(const EmbeddingSpace& s, const float* q, int k,
                                                      std::string_view exclude);

}  // namespace kplab
