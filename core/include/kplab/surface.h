// The distinct keyphrase surfaces of a dataset (and its predictions) under a profile, without building
// a corpus: what `kplab cache add` embeds. The pieces read and the normalization applied are
// BuildCorpus's own (eval/surface.h); no token, stem, presence or document is made.
//
// Threads: no shared state: BuildSurfaces uses threads of its own and may run beside other calls.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/io.h"
#include "kplab/profile.h"
#include "kplab/result.h"

namespace kplab {

// Distinct strings, back to back in one buffer.
struct Surfaces {
  std::string bytes;
  std::vector<std::size_t> ends;  // string i is bytes[ends[i - 1], ends[i]) (from 0 for i = 0)
  std::size_t size() const { return ends.size(); }
  std::string_view operator[](std::size_t i) const {
    const std::size_t begin = i == 0 ? 0 : ends[i - 1];
    return std::string_view(bytes).substr(begin, ends[i] - begin);
  }
};

// The surfaces of BuildCorpus(dataset, predictions, profile)'s phrases, each once, in the order of
// the corpus's phrases (the first phrase with a surface places it): the texts CollectPhrases gives
// for the surface form and also those of the pieces the profile then drops (the "<peos>" marker, an
// invalid prediction, a repeat's other spelling), which no document lists. Predictions must be aligned (AlignPredictions); a count that differs
// from the dataset's documents is the error BuildCorpus gives. threads: documents are read in that
// many contiguous ranges at once (0 = one per core, at most 8, one for a few thousand documents); the
// list is the same for every count.
Result<Surfaces> DistinctSurfaces(const RawDataset& dataset, const RawPredictions* predictions,
                                  const Profile& profile, int threads = 0);

}  // namespace kplab
