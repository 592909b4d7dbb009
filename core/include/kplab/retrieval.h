// Ad-hoc retrieval over a document collection, for the utility metric (KPEval's `retrieval` /
// `retrieval_v2`, docs/metrics.md): a query is written for one document of the collection, and the
// metric asks where that document ranks. Sparse retrieval is BM25 exactly as rank_bm25 0.2.2's
// BM25Okapi computes it (the same floating-point operations in the same order, so the same bits),
// over an inverted index instead of rank_bm25's loop over every document per query term; dense
// retrieval is exact cosine search over vectors the caller computed. Neither returns a ranked list:
// for each query, the rank of its target is summarized by three counts (Placement), from which
// recall@k and MRR@k under any tie rule follow (the plugin's formulas).
//
// Threads: all functions are pure and thread-safe; a Bm25Index is read-only after Build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kplab/result.h"

namespace kplab::retrieval {

// scikit-learn's ENGLISH_STOP_WORDS (sklearn/feature_extraction/_stop_words.py; 318 words, sorted by
// byte order), the list KPEval's BM25 tokenizer drops. Provenance in core/src/retrieval/stop_words.cc.
const std::vector<std::string_view>& SklearnEnglishStopWords();
bool IsSklearnStopWord(std::string_view word);

// KPEval's BM25 tokenizer (metrics/retrieval_metric.py, __bm25_tokenizer): Python's text.lower().split(),
// each token stripped of string.punctuation (ASCII) at both ends, empty tokens and stop words dropped.
// Appends to out. `text` must be valid UTF-8 (Lower's contract).
void KpevalTokens(std::string_view text, std::vector<std::string>& out);

struct Bm25Options {
  double k1 = 1.5;
  double b = 0.75;
  double epsilon = 0.25;  // rank_bm25's idf floor: a negative idf becomes epsilon * mean idf
};

// Called with the work done so far (in abstract steps: one per token indexed or posting scored), so a
// caller can meter it; may throw to stop. Optional.
using Meter = std::function<void(double steps)>;

// The inverted index of a tokenized collection. Term ids are given in order of first occurrence
// (documents in order, tokens in order): the order of rank_bm25's `nd` dict, which fixes the order in
// which its mean idf is summed.
class Bm25Index {
 public:
  // Documents as token lists. An empty collection, or one with no token at all, is an error (rank_bm25
  // divides by zero for both).
  static Result<Bm25Index> Build(const std::vector<std::vector<std::string>>& docs, const Bm25Options& opt = {},
                                 const Meter& meter = {});

  std::size_t size() const { return doc_len_.size(); }
  std::size_t terms() const { return idf_.size(); }
  double avgdl() const { return avgdl_; }
  double average_idf() const { return average_idf_; }
  // idf of a term as rank_bm25 stores it (after the floor); 0 for a term not in the collection.
  double Idf(std::string_view term) const;
  // rank_bm25's get_scores(query): one score per document, accumulated term by term in query order
  // (a repeated query term adds again, an unknown one adds nothing). `scores` is resized and
  // overwritten.
  void Scores(const std::vector<std::string>& query, std::vector<double>& scores, const Meter& meter = {}) const;
  // The same scores, sparse: `acc` must hold size() zeros on entry; the documents the query touches
  // (some posting of a query term) are appended to `touched` once each, with their scores in acc; every
  // other document scores 0. The caller zeroes acc[touched] before the next query. Work: the postings
  // of the query's terms.
  void ScoreSparse(const std::vector<std::string>& query, std::vector<double>& acc, std::vector<std::uint32_t>& touched,
                   const Meter& meter = {}) const;
  // The index's size in bytes (postings, lengths, dictionary), for memory accounting.
  std::size_t bytes() const;

 private:
  std::unordered_map<std::string, std::uint32_t> term_id_;
  std::vector<double> idf_;                  // by term id
  std::vector<std::uint32_t> post_begin_;    // by term id, CSR offsets into post_doc_ / post_tf_
  std::vector<std::uint32_t> post_doc_, post_tf_;
  std::vector<std::uint32_t> doc_len_;
  std::vector<double> norm_;                 // by document: k1 * (1 - b + b * len / avgdl)
  double avgdl_ = 0, average_idf_ = 0;
  Bm25Options opt_;
};

// Where a query's target document stands among n scored documents: `better` documents score strictly
// higher, `ties` other documents score exactly the same, `ties_before` of those have a lower index than
// the target. Scores are compared as numbers (NaN never occurs: callers pass finite scores).
struct Placement {
  std::int64_t better = 0, ties = 0, ties_before = 0;
};
Placement Place(const std::vector<double>& scores, std::size_t target);

// Place over sparse scores (Bm25Index::ScoreSparse): the n documents not in `touched` score 0. Work:
// touched.size().
Placement PlaceSparse(const std::vector<double>& acc, const std::vector<std::uint32_t>& touched, std::size_t n,
                      std::size_t target);

// Placement of the target among `scores` restricted to the documents in `pool` (indices into scores, in
// the order a stable sort keeps ties in: ties_before counts the tied ones listed before the target);
// the target must be in pool. For a re-ranker that only sees the first-stage candidates.
Placement PlaceAmong(const std::vector<double>& scores, const std::vector<std::size_t>& pool, std::size_t target);

// The first n documents by score, highest first, ties by lower index: the candidates a re-ranker sees.
std::vector<std::size_t> TopN(const std::vector<double>& scores, std::size_t n);

// Cosine similarities of one query vector with every row of a row-major matrix (rows x dims, float32),
// in double: dot / (|q| |row|). sentence-transformers' util.cos_sim normalizes both sides in float32 and
// multiplies in float32, so its scores differ from these in the last float32 bits (docs/metrics.md says
// what that means for ties). A zero vector scores 0 against everything.
void CosineScores(const float* query, const float* rows, std::size_t n, int dims, std::vector<double>& out);

}  // namespace kplab::retrieval
