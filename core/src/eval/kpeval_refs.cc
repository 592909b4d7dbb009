// KPEval's reference lists (corpus.h, KpevalReferenceLists).
#include <algorithm>

#include "kplab/corpus.h"

namespace kplab {

KpevalReferences KpevalReferenceLists(const Document& doc) {
  const KeyphraseList raw = doc.ref_view_dups();
  const std::span<const Keyphrase> unique = doc.refs;
  KpevalReferences out;
  // zip(references, flags) stops at the shorter: the line's references are at least as many as the
  // unique ones, so each unique reference's flag is taken once.
  const std::size_t n = std::min(raw.size(), unique.size());
  for (std::size_t i = 0; i < n; ++i) {
    (doc.has_text && unique[i].present() ? out.present : out.absent).push_back(raw[i]);
  }
  return out;
}

}  // namespace kplab
