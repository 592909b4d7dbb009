// The pairs of a run for metric plugins that declare needs = {"pairs"}: built by the engine
// (engine/pairs.h, from the plugin's parameters), read by ctx.partners and ctx.pairs.normalize
// (lua_homog.cc). Read-only once built, so every scoring lane shares one.
//
// Threads: a PairIndex is read-only once built, so every scoring lane shares one.
#pragma once

#include <memory>

#include "kplab/embedding_plan.h"
#include "kplab/homog_corpus.h"

namespace kplab::host {

struct PairIndex {
  homog::GoldPairs gold;
  // Vocabulary normalisation (plugin parameter vocabulary = "gold"): the space whose surface vectors
  // the index holds, and the index (empty without it).
  std::shared_ptr<const EmbeddingSpace> space;
  homog::GoldVocabulary vocab;
};

}  // namespace kplab::host
