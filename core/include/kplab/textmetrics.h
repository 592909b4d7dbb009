// The counting behind the text-overlap metrics of KPEval's table (docs/design-notes.md, note 38):
// ROUGE-N and ROUGE-L (plugins/rouge.lua), METEOR's word alignment (plugins/meteor.lua), BLEU's clipped
// n-gram counts for Self-BLEU and the Indel similarity of rapidfuzz's fuzz.ratio
// (plugins/diversity.lua). These functions count; the plugins turn the counts into scores, so that every
// formula is readable in Lua (docs/metrics.md). Two readings of ROUGE are kept: kLin, Lin (2004) over
// units (keyphrases), and kPltrdy, pltrdy/rouge 1.0.1's (the `rouge` package KPEval's rouge_metric.py
// runs on).
//
// Inputs are valid UTF-8 (callers check); views must outlive the call.
// Threads: every function is pure and thread-safe.
// Work is bounded by the input sizes, as each function's comment says; callers that run them for a
// sandboxed script charge it first (host/lua/lua_textmetrics.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kplab {
class WordNet;
}

namespace kplab::textmetrics {

// Called now and then from long loops with the work done since the last call (DP cells, pairs), so a
// caller can enforce a deadline; it may throw to stop the loop.
using Checkpoint = std::function<void(double)>;

// A text as units (keyphrases, or pltrdy's sentences) of tokens, flattened: unit u is
// tokens[ends[u - 1], ends[u]). Views into storage the caller keeps alive.
struct Units {
  std::vector<std::string_view> tokens;
  std::vector<std::uint32_t> ends;

  std::size_t size() const { return ends.size(); }
  std::span<const std::string_view> unit(std::size_t u) const {
    const std::size_t b = u == 0 ? 0 : ends[u - 1];
    return {tokens.data() + b, ends[u] - b};
  }
  void Add(std::span<const std::string_view> unit) {
    tokens.insert(tokens.end(), unit.begin(), unit.end());
    ends.push_back(static_cast<std::uint32_t>(tokens.size()));
  }
};

// How pltrdy/rouge 1.0.1 reads a text (Rouge._get_scores): the text is cut at every '.', empty pieces
// are dropped, each piece's whitespace (Python str.split) is collapsed to single spaces, and a sentence's
// words are its pieces between spaces: a piece of whitespace only is one empty word. Views into text.
Units PltrdySentences(std::string_view text);

enum class RougeStyle {
  // Lin (2004): n-grams inside each unit, counted with multiplicity; hits = sum over n-grams of
  // min(count in hyp, count in ref). ROUGE-L at summary level with ROUGE-1.5.5's clipped union hits.
  kLin,
  // pltrdy/rouge 1.0.1 (`exclusive=True`): the distinct n-grams of all units' tokens concatenated
  // (n-grams cross unit boundaries); ROUGE-L counts distinct words.
  kPltrdy,
};

// hits, and the n-gram (ROUGE-N) or word (ROUGE-L) counts of each side that precision and recall
// divide by.
struct Overlap {
  std::int64_t hits = 0, hyp = 0, ref = 0;
};

// ROUGE-N counts (n >= 1). Linear in the number of tokens.
Overlap RougeN(const Units& hyp, const Units& ref, int n, RougeStyle style);

// Summary-level ROUGE-L counts. For each reference unit r and hypothesis unit c, one longest common
// subsequence of (r, c) is traced back from the end: equal words are taken; otherwise the step that
// drops r's word is taken when its prefix keeps a strictly longer LCS, else the step that drops c's
// (pltrdy's _recon_lcs; the same trace for both styles).
//   kLin: per reference unit, the union of its positions on those LCSs; hits = sum over words w of
//         min(union positions holding w, count of w in hyp) (ROUGE-1.5.5); hyp, ref = token counts.
//   kPltrdy: hits = distinct words of the union of all the traced LCSs; hyp, ref = distinct words.
// Work: RougeLCells(hyp, ref) table cells.
Overlap RougeL(const Units& hyp, const Units& ref, RougeStyle style, const Checkpoint& checkpoint = {});
double RougeLCells(const Units& hyp, const Units& ref);
// The largest table one (reference unit, hypothesis unit) pair needs, in cells of 4 bytes: the memory
// RougeL holds at once.
double RougeLTableCells(const Units& hyp, const Units& ref);

// METEOR's alignment as nltk 3.8's meteor_score.single_meteor_score computes it (the version KPEval's
// requirements pin, 3.8.1, has the same code). Tokens are lower-cased (Python str.lower) and aligned in
// three stages, each over the words the earlier ones left: exact, then their Porter stems (nltk's
// default mode), then WordNet synonyms of those stems (nltk passes the stemmed lists on). Within a stage
// the hypothesis is walked from its last word to its first, each word taking the last remaining
// reference word that matches. A synonym stage match: the reference stem equals the hypothesis stem or
// a lemma name without '_' of a synset of WordNet's synsets(stem) (kplab/wordnet.h). wordnet == nullptr
// skips the third stage. chunks = runs of matches adjacent in both texts, in hypothesis order.
struct MeteorAlignment {
  std::int64_t hyp_len = 0, ref_len = 0, matches = 0, chunks = 0;
  std::int64_t exact = 0, stem = 0, synonym = 0;  // matches per stage
};
// Work: about (hyp + ref) tokens, plus a WordNet lookup per hypothesis word left after stage two.
MeteorAlignment MeteorAlign(std::span<const std::string_view> hyp, std::span<const std::string_view> ref,
                            const WordNet* wordnet);

// nltk 3.8 bleu_score's counts for one hypothesis against its references, n = 1..max_n:
// num[n-1] = sum over the hypothesis's n-grams of min(count, max count in one reference)
// (modified_precision's numerator), den[n-1] = max(1, number of the hypothesis's n-grams);
// ref_len = closest_ref_length (the reference length nearest the hypothesis's, the shorter on a tie;
// 0 without references).
struct BleuCounts {
  std::vector<std::int64_t> num, den;
  std::int64_t hyp_len = 0, ref_len = 0;
};
BleuCounts SentenceBleuCounts(std::span<const std::string_view> hyp,
                              std::span<const std::span<const std::string_view>> refs, int max_n);

// Self-BLEU's counts: item i (a unit) as the hypothesis, every other item as a reference (KPEval's
// diversity_metric.calc_selfbleu). Equal to SentenceBleuCounts per item, in time linear in the
// n-grams: each n-gram keeps its largest and second-largest count over the items.
std::vector<BleuCounts> SelfBleuCounts(const Units& items, int max_n);

// Indel distance (insertions and deletions; Levenshtein with substitution cost 2) between two strings
// of code points: len(a) + len(b) - 2 LCS(a, b), as rapidfuzz's Indel.distance.
std::int64_t IndelDistance(std::u32string_view a, std::u32string_view b);
// For each item, the mean over the other items j of rapidfuzz 3.1.1's normalized Indel similarity
// 1 - d(i, j) / (len(i) + len(j)) (1 when both are empty): fuzz.ratio / 100, averaged as KPEval's
// diversity_metric.calc_edit_distance averages it per item. Fewer than two items: empty. Work:
// SelfIndelCells(items) character pairs.
std::vector<double> SelfIndelSimilarity(std::span<const std::u32string> items, const Checkpoint& checkpoint = {});
double SelfIndelCells(std::span<const std::u32string> items);

}  // namespace kplab::textmetrics
