// Homogeneity on a normalized corpus (kplab/homog.h does the pure set and string work): the gold sets
// of a run, its PRMU counts, the genericity of mined pairs, the pairs a run's metric plugins score
// (with an HNSW index over the gold vocabulary), and the reformulation study (docs/homogeneity.md).
// The Lua bindings (host/lua/lua_homog.cc) check arguments, call these and push the results; the
// engine reads plugin parameters into the options below.
//
// Threads: no shared state: functions of a read-only Corpus, safe from several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kplab/ann.h"
#include "kplab/corpus.h"
#include "kplab/homog.h"
#include "kplab/io.h"
#include "kplab/profile.h"
#include "kplab/result.h"

namespace kplab::homog {

// Each document's references (primary forms, blank ones skipped) as stem keys, or, without stemming,
// as normalized phrases (Phrase::id: one id per distinct normalized surface).
std::vector<std::vector<std::uint32_t>> GoldSets(const Corpus& c, bool stem = true);

// ---- PRMU counts of a system --------------------------------------------------------------------------

struct SystemCounts {
  std::size_t docs = 0;            // documents asked about
  std::size_t docs_with_text = 0;  // of them, with a source text (present/absent is undefined without)
  std::size_t preds = 0;           // predictions of the documents with text
  std::size_t absent = 0;          // of them, not present in the text
  std::size_t prmu[4] = {0, 0, 0, 0};  // by Prmu (kPresent, kReordered, kMixed, kUnseen)
};
// Counts over c.docs[i] for i in docs (indices must be < c.docs.size()), each document's predictions
// capped to its first top_k (0: all of them), as the CP of a capped system sees them.
SystemCounts CountSystem(const Corpus& c, std::span<const std::size_t> docs, std::size_t top_k = 0);

// ---- Genericity ---------------------------------------------------------------------------------------

// ComputeGenericity on the gold sets of c (GoldSets(c, stem)); a keyphrase's length is the number of
// stems of its first occurrence. Pair indices must be < c.docs.size().
GenericityReport CorpusGenericity(const Corpus& c, std::span<const DocPair> pairs, bool stem);

// ---- The pairs of a run -------------------------------------------------------------------------------

struct GoldPairOptions {
  double theta = 0.5;           // Jaccard threshold, in (0, 1]
  bool stem = false;            // gold sets of stem keys instead of normalized phrases
  bool keep_identical = false;  // keep pairs with identical gold sets (in KP20k almost always a
                                // record present twice)
};

// The pairs of a run's gold, per document: the partners with a higher index (so that every pair is
// scored once, by its first document) and the Jaccard of each, in MinePairs order. Pairs with identical
// gold sets are counted whether kept or not, so that a report can give both totals.
struct GoldPairs {
  double theta = 0.5;
  std::size_t n_pairs = 0;      // pairs in `partners`
  std::size_t n_identical = 0;  // mined pairs with identical gold sets (in n_pairs only when kept)
  std::vector<std::vector<std::pair<std::uint32_t, double>>> partners;  // one list per document
  std::vector<std::uint32_t> identical;  // per document: of the pairs it opens, those with identical gold
};
// Errors: theta out of range (MinePairs).
Result<GoldPairs> MineGoldPairs(const Corpus& c, const GoldPairOptions& options);

// An HNSW index over the vectors of a run's distinct gold keyphrases, labelled by Phrase::id, for
// vocabulary normalisation (nearest gold keyphrase of a prediction).
struct GoldVocabulary {
  std::unique_ptr<AnnIndex> index;
  std::size_t size = 0;  // entries
};
// row_of(phrase) is the phrase's row in `vecs` (row-major, `dims` floats a row), or -1 when it has no
// vector; rows range over [0, n_rows). One entry per distinct row, the first gold phrase (document
// order, then reference order) that has it. Built on one thread, so the index does not depend on
// thread timing.
Result<GoldVocabulary> BuildGoldVocabulary(const Corpus& c, int dims, const std::string& fingerprint,
                                           std::size_t n_rows, const float* vecs,
                                           const std::function<std::int32_t(const Phrase&)>& row_of);

// ---- Reformulations -----------------------------------------------------------------------------------

// Predictions given as ';' lines, one per document, line i named "NAME:i". Errors: a line that is not
// UTF-8 ("NAME:i: invalid UTF-8 (expected UTF-8 text)"). A trailing '\r' is dropped.
Result<RawPredictions> PredictionsFromLines(std::span<const std::string_view> lines, const std::string& name);

struct ReformulationRow {
  std::size_t words_original = 0, words_reformulation = 0;  // source tokens with a letter or digit
  double wer = 0;     // of the reformulation against the original
  double rouge1 = 0;  // ROUGE-1 recall, the same way round
  FilterVerdict verdict;
};

struct ReformulationStudy {
  std::shared_ptr<const Corpus> original, reformulation;  // document i = pair i, the same gold
  std::vector<ReformulationRow> rows;                     // one per pair
};

// The two corpora of the pairs under `profile` (named `name`, as their file) with their optional
// predictions (names given to AlignPredictions as they come), and each pair's word counts, WER,
// ROUGE-1 and the paper's quality filters at `tolerance`. Errors: those of DatasetFromRecords,
// AlignPredictions and BuildCorpus.
Result<ReformulationStudy> StudyReformulations(std::span<const ReformulationPair> pairs, const std::string& name,
                                               const Profile& profile,
                                               std::optional<RawPredictions> predictions_original,
                                               std::optional<RawPredictions> predictions_reformulation,
                                               double tolerance);

}  // namespace kplab::homog
