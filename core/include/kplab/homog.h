// Homogeneity of keyphrase predictors across similar documents (Houbre, Boudin & Daille, "Evaluating
// the Homogeneity of Keyphrase Prediction Models"; docs/homogeneity.md):
//  - the consistency of a pair (CP) of two prediction lists: Hooper's CP on whole keyphrases and
//    Rodgers' CP on their words;
//  - pair mining: every pair of documents whose gold keyphrase sets have Jaccard >= theta, by an exact
//    set-similarity join (prefix + length filtering, AllPairs-style) and by the naive all-pairs loop
//    that is its reference;
//  - the genericity of the keyphrases shared by mined pairs (document frequency, length in words);
//  - reformulation pairs: import, the paper's quality filters, WER and ROUGE-1 recall.
// Pure functions on ids and strings; safe to call from several threads at once.
//
// Threads: no shared state: pure functions, safe from several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/result.h"

namespace kplab::homog {

// ---- Consistency of a pair ----------------------------------------------------------------------------

// The denominator of a CP, C = |A ∩ B| over distinct items:
//  kUnion: C / |A ∪ B|, the Jaccard index. The paper's definition ("intersection over union") and
//          Hooper's measure as Leonard (1977) reviews it, C / (A + B - C). The default.
//  kMax:   C / max(|A|, |B|), the document similarity of Houbre et al. (2025) (the paper's Eq. 1).
//  kMean:  C / ((|A| + |B|) / 2) = 2C / (A + B), Rolling's (1981) measure (Dice).
// The paper's worked example (2 of 3 keyphrases, 6 of 7 words) is what kMax and kMean give on two
// lists of equal size; kUnion gives 2/4 and 6/8 there. docs/homogeneity.md discusses the discrepancy.
enum class Denominator { kUnion, kMax, kMean };
// "union", "max", "mean"; false for anything else.
bool ParseDenominator(std::string_view name, Denominator* out);
const char* DenominatorName(Denominator d);

// C / denominator over the distinct items of a and b (duplicates count once). Both empty: NaN (the
// consistency of two empty indexings is undefined; callers skip NaN when averaging).
double SetConsistency(std::span<const std::uint32_t> a, std::span<const std::uint32_t> b, Denominator d);
double SetConsistency(std::span<const std::string_view> a, std::span<const std::string_view> b,
                      Denominator d);

// One keyphrase as its words (stems when the caller wants stemming, tokens otherwise).
using Words = std::vector<std::string_view>;

struct Cp {
  double hooper = 0;   // on whole keyphrases (word sequences compared exactly)
  double rodgers = 0;  // on the distinct words of all keyphrases of each list
};

// Hooper's and Rodgers' CP of two prediction lists. Keyphrases without words are ignored.
Cp Consistency(std::span<const Words> a, std::span<const Words> b, Denominator d = Denominator::kUnion);

// ---- Pair mining ----------------------------------------------------------------------------------------

// A pair of documents (a < b, 0-based indices into the sets given to the miner) and their gold
// overlap.
struct DocPair {
  std::uint32_t a = 0, b = 0;
  std::uint32_t shared = 0;  // |A ∩ B|
  std::uint32_t uni = 0;     // |A ∪ B|
  double jaccard = 0;        // shared / uni
  bool operator==(const DocPair&) const = default;
};

// The predicate both miners use, so that they agree to the last bit: double(shared) / double(uni) >=
// theta (a correctly rounded division, so 1/2 >= 0.5 and 3/10 >= 0.3 hold exactly).
inline bool PassesJaccard(std::uint32_t shared, std::uint32_t uni, double theta) {
  return uni > 0 && static_cast<double>(shared) / static_cast<double>(uni) >= theta;
}

struct MineStats {
  std::size_t sets = 0;        // documents with a non-empty set
  std::size_t candidates = 0;  // pairs verified (naive: every pair of non-empty sets)
  std::size_t pairs = 0;
};

// Every pair of documents whose sets (token ids, e.g. interned gold keyphrase keys; duplicates count
// once) have Jaccard >= theta, sorted by (a, b). Documents with an empty set are in no pair. theta
// must be in (0, 1] (theta = 0 would pair disjoint sets): an Error otherwise.
//
// MinePairs is an exact set-similarity join (Bayardo et al. 2007, AllPairs; Xiao et al. 2008,
// PPJoin's prefix filter): tokens are ordered by increasing document frequency, records by size; a
// record probes the inverted index with its prefix of |x| - ceil(theta |x|) + 1 rarest tokens,
// candidates shorter than theta |x| are skipped (length filter), and every candidate is verified by
// merging the two sets. Any pair with Jaccard >= theta shares a token in those prefixes, so the
// result equals MinePairsNaive's; the integer bounds are rounded so that they only ever admit more
// candidates, never fewer.
Result<std::vector<DocPair>> MinePairs(std::span<const std::vector<std::uint32_t>> sets, double theta,
                                       MineStats* stats = nullptr);

// Sets of strings (one per document) as sets of ids for the miners: each distinct string gets its
// rank in byte order, so the ids depend only on which strings there are, not on the order they come in
// (partitioned mining breaks ties in its token order by id: workers reading the same sets in another
// order must still agree on every pair's partition).
std::vector<std::vector<std::uint32_t>> InternSets(std::span<const std::vector<std::string>> sets);

// One of `count` disjoint parts of the pair mining: partition `index` (0-based) of `count`, for
// mining on several workers (docs/homogeneity.md, "Partitioned mining"). Every worker is given all the
// sets; what is divided is the join's work and its output.
struct Partition {
  std::uint32_t index = 0;
  std::uint32_t count = 1;
};

// MinePairs restricted to one partition. Under the global token order (increasing document
// frequency, then id; ranks 0, 1, ...), partition p owns the tokens whose rank r has r mod count == p,
// and it produces exactly the pairs whose rarest shared token it owns. That token lies in both
// records' prefixes, so each pair is produced by exactly one partition, with the same shared, uni and
// jaccard as MinePairs(sets, theta) gives it: the union over p = 0..count-1 is MinePairs' result and
// the partitions are pairwise disjoint. Candidates are divided the same way (a candidate is verified
// only by the partition owning the rarest token the two records share), so the partitions'
// MineStats::candidates add up to the single process's; MineStats::sets is every partition's count of
// non-empty sets. {0, 1} is MinePairs itself. Errors: theta as MinePairs; count == 0 or
// index >= count ("pair mining: partition 3 of 3 is out of range (expected 0 <= index < count)").
Result<std::vector<DocPair>> MinePairs(std::span<const std::vector<std::uint32_t>> sets, double theta, MineStats* stats,
                                       Partition partition);
// The reference: every pair (i < j) of non-empty sets, intersected by merging their sorted copies.
Result<std::vector<DocPair>> MinePairsNaive(std::span<const std::vector<std::uint32_t>> sets, double theta,
                                            MineStats* stats = nullptr);

// ---- Genericity of shared keyphrases ------------------------------------------------------------------

struct Genericity {
  std::size_t distinct = 0;  // distinct keyphrases
  double mean_df = 0;        // mean over them of their document frequency in the whole collection
  double mean_words = 0;     // mean over them of their length in words
};

struct GenericityReport {
  Genericity collection;     // every keyphrase of the collection's gold
  Genericity shared;         // the keyphrases shared by at least one mined pair
  std::size_t pair_docs = 0;  // distinct documents in the pairs
  std::size_t pairs = 0;
};

// words_of(id) is the length in words of keyphrase id. Document frequency = the number of documents
// whose set holds the id (duplicates in a set count once). Empty inputs give NaN means.
GenericityReport ComputeGenericity(std::span<const std::vector<std::uint32_t>> sets,
                                   std::span<const DocPair> pairs,
                                   const std::function<std::size_t(std::uint32_t)>& words_of);

// ---- Reformulations -------------------------------------------------------------------------------------

// Word error rate of a hypothesis (the reformulation) against a reference (the original): the word-level
// Levenshtein distance (insertions, deletions and substitutions, each costing 1) divided by the number
// of reference words. An empty reference: NaN.
double Wer(std::span<const std::string_view> hypothesis, std::span<const std::string_view> reference);
// As Wer, calling checkpoint(cells) now and then with the table cells filled since the last call (it may
// throw to cancel: the Lua host checks its deadline and Ctrl-C there).
double Wer(std::span<const std::string_view> hypothesis, std::span<const std::string_view> reference,
           const std::function<void(double)>& checkpoint);

// ROUGE-1 recall: the clipped unigram overlap sum_w min(count_ref(w), count_hyp(w)) over the number of
// reference words (Lin 2004). An empty reference: NaN.
double Rouge1Recall(std::span<const std::string_view> hypothesis, std::span<const std::string_view> reference);

// One (original, reformulation) pair as imported. Texts are raw (not tokenized).
struct ReformulationPair {
  std::string id;
  std::string method;  // "paraphrase", "back-translation", ... ("" when not given)
  std::string original;
  std::string reformulation;
  std::vector<std::string> keyphrases;  // the original's gold keyphrases
  int line = 0;
};

// Reads reformulation pairs: JSON lines {"id": string|integer (optional, default the line number),
// "original": string, "reformulation": string, "keyphrases": [string, ...] or "kp1;kp2",
// "method": string (optional)}. Blank lines are skipped. Errors "FILE:LINE: what (expected ...)";
// nothing is returned on error. Ids must be unique.
Result<std::vector<ReformulationPair>> ImportReformulations(const std::string& path);
// The same on the bytes of such a file; errors name `name` as the file.
Result<std::vector<ReformulationPair>> ParseReformulations(std::string_view text, const std::string& name);

// The paper's quality filters for one pair, given each present gold keyphrase of the original as its
// classification in the reformulation (true = Present or Reordered) and the two word counts.
struct FilterVerdict {
  bool keep = true;
  bool keyphrases_ok = true;  // every present keyphrase of the original is P or R in the reformulation
  bool length_ok = true;      // |words(reformulation) - words(original)| <= tolerance * words(original)
  std::size_t lost_keyphrases = 0;
};
FilterVerdict FilterReformulation(std::span<const bool> present_kept, std::size_t words_original,
                                  std::size_t words_reformulation, double tolerance = 0.10);

}  // namespace kplab::homog
