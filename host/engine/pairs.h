// The pairs of a run for a metric plugin that declares needs = {"pairs"}: its parameters (theta,
// mine_stem, keep_identical, vocabulary; docs/homogeneity.md) read into core's options
// (kplab/homog_corpus.h).
//
// Threads: MineCorpusPairs runs on the calling thread; the PairIndex it returns is read-only and shared by
// every scoring lane.
#pragma once

#include <memory>

#include "kplab/corpus.h"
#include "kplab/result.h"
#include "pair_index.h"
#include "plugin.h"

namespace kplab::host {

// Pairs of documents whose gold sets have Jaccard >= the plugin's `theta` (default 0.5); with
// vocabulary = "gold", also an HNSW index over the gold keyphrases' surface vectors in `space`.
// Errors name the bad parameter, or say that vocabulary = "gold" needs embeddings.
Result<std::shared_ptr<const PairIndex>> MineCorpusPairs(const Corpus& corpus, const MetricPlugin& plugin,
                                                         std::shared_ptr<const EmbeddingSpace> space);

}  // namespace kplab::host
