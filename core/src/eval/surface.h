// How a keyphrase piece becomes a phrase's surface, and which pieces of a document are interned: shared
// by BuildCorpus (corpus.cc) and DistinctSurfaces (surface.cc, kplab/surface.h), so the phrases a
// corpus has and the surfaces `kplab cache add` embeds cannot drift apart.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/io.h"
#include "kplab/profile.h"

namespace kplab::eval_internal {

// A raw piece's surface under the profile, written to s: stripped, lower-cased (ASCII in place, full
// Unicode otherwise), KPEval's cleanup. False when the profile drops the piece (an empty surface
// with drop_empty); s is then empty. ascii: the stripped piece is ASCII.
bool NormalizeSurface(std::string_view piece, const Profile& profile, std::string& s, bool& ascii);

// ExHiRD's re-cut of keyphrase pieces at its line markers (split points and deletions), each part
// stripped, empty parts and "<absent_end>" dropped.
std::vector<std::string> ExhirdPieces(const std::vector<std::string>& pieces);

// A document's references as a profile with exhird_markers interns them: each reference's first form
// split at the markers, every part a reference of its own with no alternatives.
std::vector<std::vector<std::string>> ExhirdReferences(const std::vector<std::vector<std::string>>& refs);

// How many of a prediction line's raw pieces are interned (before ExHiRD's re-cut): the first
// max_pieces, none for an empty line under empty_line_is_none.
std::size_t InternedPredictionPieces(const Profile& profile, const RawPrediction& prediction);
// The same for a line of n pieces whose first is first ("" when n is 0).
std::size_t InternedPredictionPieces(const Profile& profile, std::size_t n, std::string_view first);

}  // namespace kplab::eval_internal
