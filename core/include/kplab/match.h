// Matching primitives over keyphrase lists: which predictions match a reference, under exact stem-key
// matching, KPEval's character-substring approximate matching, and word-level approximate matching
// after Zesch & Gurevych (2009). Plus the rank arithmetic metrics are built from. Pure functions.
//
// Threads: no shared state: pure functions, safe from several threads at once.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/corpus.h"
#include "kplab/result.h"

namespace kplab {

using PhraseRefs = KeyphraseList;  // kplab/corpus.h

// Row-major preds.size() x refs.size(): cell (i, j) = 1 if prediction i's key equals reference j's key
// or one of its alternative keys (which references a prediction matches, for one-to-one matching).
std::vector<std::uint8_t> ExactMatchPairs(PhraseRefs preds, PhraseRefs refs);

// flags[i] = 1 if prediction i's key equals a reference's key or one of its alternative keys.
std::vector<std::uint8_t> ExactMatch(PhraseRefs preds, PhraseRefs refs);

// KPEval approximate matching: the stemmed joined string of the prediction is a character substring of
// a reference's, or the reference's of the prediction's (Python `in`: an empty prediction matches).
std::vector<std::uint8_t> SubstringMatch(const Lexicon& lex, PhraseRefs preds, PhraseRefs refs);

// Row-major preds.size() x refs.size(): cell (i, j) = 1 if prediction i and reference j match as
// SubstringMatch decides (the relation is symmetric), for reuse across sub-lists of the same document.
std::vector<std::uint8_t> SubstringMatchPairs(const Lexicon& lex, PhraseRefs preds, PhraseRefs refs);

// Zesch & Gurevych (2009) on words: MORPH (equal stem sequences), INCLUDES (the reference's stems occur
// contiguously in the prediction's), PARTOF (the prediction's occur contiguously in the reference's).
// Empty predictions match nothing.
std::vector<std::uint8_t> ZeschGurevychMatch(PhraseRefs preds, PhraseRefs refs);

// Subtopic coverage for KPEval's alpha-NDCG: cover[i * refs.size() + j] = 1 if prediction i's stemmed
// string is a character substring of reference j's (one direction, Python `in`).
std::vector<std::uint8_t> SubstringCover(const Lexicon& lex, PhraseRefs preds, PhraseRefs refs);

// A cut-off of a metric "@k": a number k >= 1, or 'M' (the number of predictions) or 'O' (of references).
struct Cutoff {
  int k = 0;         // 1..100000, or 0 for a symbolic cut-off
  char symbol = 0;   // 'M' or 'O' when k == 0
  std::string Text() const { return k > 0 ? std::to_string(k) : std::string(1, symbol); }
  // The cut-off for a list of n_preds predictions and n_refs references.
  std::size_t Resolve(std::size_t n_preds, std::size_t n_refs) const {
    return k > 0 ? static_cast<std::size_t>(k) : (symbol == 'M' ? n_preds : n_refs);
  }
};
// Parses "5,10,M,O" (items trimmed of spaces; integers 1..100000 in decimal, M, O; each once, in the
// order given). The error (ErrorKind::kUsage) names the bad item: "'x' is not a cut-off (expected ...)".
Result<std::vector<Cutoff>> ParseCutoffs(std::string_view spec);

// Number of flags set among the first k (k clipped to the size).
int HitsAt(std::span<const std::uint8_t> flags, std::size_t k);
// Sum over hits at rank i <= k of (hits in the first i) / i: the numerator of AP@k.
double PrecisionSumAt(std::span<const std::uint8_t> flags, std::size_t k);
// DCG@k = sum_{i<=k} rel_i / log2(i + 1), rel in {0, 1}.
double DcgAt(std::span<const std::uint8_t> flags, std::size_t k);
// DCG of n_relevant ones at the top, cut at k.
double IdealDcgAt(std::size_t n_relevant, std::size_t k);
// 1-based rank of the first hit, 0 if none.
int FirstHit(std::span<const std::uint8_t> flags);

// HitsAt, PrecisionSumAt and DcgAt at every k from 0 to flags.size(), for a caller that reads them at
// several cut-offs: hits[k], psum[k], dcg[k] (each array flags.size() + 1 long; psum and dcg may be null,
// then only hits are counted). Each is the same additions in the same order as the function's at k, so
// the same number to the bit.
void RunningRankSums(std::span<const std::uint8_t> flags, int* hits, double* psum, double* dcg);

// alpha-NDCG@k (Clarke et al. 2008) with references as subtopics: gain of rank i = sum over subtopics j
// covered by i of (1 - alpha)^(times j was covered before i); discount log2(i + 1). The ideal ordering
// is built greedily from the same predictions (the usual approximation). Returns 0 when the ideal
// gain is 0.
double AlphaNdcgAt(std::span<const std::uint8_t> cover, std::size_t n_preds, std::size_t n_refs,
                   std::size_t k, double alpha);

// kplab's alpha-NDCG@k (docs/profiles.md §2): an item covers reference t when its stem sequence is
// non-empty and occurs contiguously in t's. The ideal is built greedily (ties: lowest index) to depth
// k from the pool "references, then the predictions that are not a reference", so references the
// system missed lower the score. 0 without predictions or references.
double AlphaNdcgWordPool(PhraseRefs preds, PhraseRefs refs, std::size_t k, double alpha);

// Both alpha-NDCG forms at several cut-offs at once (the coverage and the greedy ideal are computed
// once): result[i] is the value at ks[i].
std::vector<double> AlphaNdcgWordPool(PhraseRefs preds, PhraseRefs refs, std::span<const std::size_t> ks,
                                      double alpha);
// kplab's alpha-NDCG (word pool) from coverage masks, bit t of a mask meaning "covers reference t" (at
// most 64 references): pred_cover for the ranked predictions, pool for the greedy ideal's candidates in
// index order (AlphaNdcgWordPool's: references, then predictions that are not a reference). out[i]
// receives the value at ks[i], bit for bit what AlphaNdcgWordPool gives for the lists the masks
// describe. Returns false (out untouched) for more than 256 predictions or pool items.
bool AlphaNdcgFromMasks(std::span<const std::uint64_t> pred_cover, std::span<const std::uint64_t> pool,
                        std::span<const std::size_t> ks, double alpha, std::span<double> out);
std::vector<double> AlphaNdcgSubstring(const Lexicon& lex, PhraseRefs preds, PhraseRefs refs,
                                       std::span<const std::size_t> ks, double alpha);

}  // namespace kplab
