// Per-document drill-down into a stored run (`kplab runs doc RUN DOC_ID`, `kplab runs docs RUN --sort
// METRIC`): what a document's references and predictions were, which matched, and its scores.
//
// Threads: the functions use their RunStore on the calling thread (one store per thread); DocView and RankedDoc
// are plain values.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kplab/corpus.h"
#include "kplab/result.h"
#include "kplab/store.h"

namespace kplab::host {

struct DocItem {
  std::string surface;
  bool present = false;  // occurs in the source (meaningful when the document has text)
  bool matched = false;  // exact (stem-key) match with the other side, as `exact` counts it
};

struct DocView {
  std::int64_t run = 0;
  std::string doc_id, system, dataset, profile;
  bool has_text = false;
  std::vector<DocItem> refs, preds;  // deduplicated, in file / model order, after the profile's filters
  std::vector<std::pair<std::string, double>> scores;  // every stored per-document column (NaN: none)
};

// Re-imports the run's dataset and predictions under its profile (refusing files whose content
// changed since the run: the hashes are stored) and shows one document. Errors name the run and
// document ("run 3 has no document 'C-99' (it has 100, e.g. 'C-17')").
Result<DocView> ViewDocument(RunStore& store, std::int64_t run, const std::string& doc_id);

// The run's dataset and predictions re-read under its profile; an error when either file's content
// changed since the run (the hashes are stored) or cannot be read.
Result<Corpus> ReloadRunCorpus(const RunRecord& run);

struct RankedDoc {
  std::string doc_id;
  double value = 0;
};
// The documents of a run ordered by a per-document metric (worst first unless `best_first`; documents
// without a value last), at most `limit` (0: all). An unknown metric names the run's columns.
Result<std::vector<RankedDoc>> RankDocuments(RunStore& store, std::int64_t run, const std::string& metric,
                                             bool best_first, std::size_t limit);

}  // namespace kplab::host
