#include "eval/surface.h"

#include "kplab/surface.h"

#include <cstdint>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "eval/slot_table.h"
#include "kplab/text.h"

namespace kplab {
namespace eval_internal {
namespace {

std::string ReplaceAll(std::string s, std::string_view from, std::string_view to) {
  std::size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
  return s;
}

// ExHiRD's keyphrase-line markers, replaced in its order (a deletion can create a later marker):
// split points become ';', <eokp> and <blank> are deleted.
constexpr std::pair<std::string_view, std::string_view> kExhirdReplacements[] = {
    {"/", ";"}, {"<eokp>", ""}, {"<p_start>", ";"}, {"<a_start>", ";"},
    {"<blank>", ""}, {"<p_end>", ";"}, {"<a_end>", ";"}};

}  // namespace

bool NormalizeSurface(std::string_view piece, const Profile& profile, std::string& s, bool& ascii) {
  const std::string_view stripped = Strip(piece);
  ascii = IsAscii(stripped);
  if (profile.lowercase && !ascii) {
    s = Lower(stripped);
  } else {
    s.assign(stripped);
    if (profile.lowercase) {
      for (char& ch : s) {
        if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
      }
    }
  }
  if (profile.kpeval_cleanup) {
    s = ReplaceAll(std::move(s), " ##", "");
    s = ReplaceAll(std::move(s), "[ digit ]", "[digit]");
  }
  return !(s.empty() && profile.drop_empty);
}

std::vector<std::string> ExhirdPieces(const std::vector<std::string>& pieces) {
  std::vector<std::string> out;
  for (std::string piece : pieces) {
    for (const auto& [marker, with] : kExhirdReplacements) piece = ReplaceAll(std::move(piece), marker, with);
    for (auto part : SplitOn(piece, ";")) {
      const auto t = Strip(part);
      if (t.empty() || t == "<absent_end>") continue;
      out.emplace_back(t);
    }
  }
  return out;
}

std::vector<std::vector<std::string>> ExhirdReferences(const std::vector<std::vector<std::string>>& refs) {
  std::vector<std::vector<std::string>> out;
  for (const auto& alternatives : refs) {
    if (alternatives.empty()) continue;
    for (auto& part : ExhirdPieces({alternatives[0]})) out.push_back({std::move(part)});
  }
  return out;
}

std::size_t InternedPredictionPieces(const Profile& profile, const RawPrediction& prediction) {
  std::size_t n = prediction.phrases.size();
  if (profile.max_pieces > 0) n = std::min(n, static_cast<std::size_t>(profile.max_pieces));
  if (profile.empty_line_is_none && n == 1 && Strip(prediction.phrases[0]).empty()) n = 0;
  return n;
}

}  // namespace eval_internal

namespace {

std::uint64_t HashBytes(std::string_view s) {
  std::uint64_t h = 0x9E3779B97F4A7C15ull ^ (s.size() * 0xC2B2AE3D27D4EB4Full);
  const char* p = s.data();
  std::size_t n = s.size();
  while (n >= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    p += 8;
    n -= 8;
  }
  std::uint64_t w = 0;
  if (n > 0) std::memcpy(&w, p, n);
  h = (h ^ w) * 0x94D049BB133111EBull;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  return h;
}

// Surfaces in order of first appearance, each once.
class SurfaceSet {
 public:
  explicit SurfaceSet(const Profile& p) : p_(p) {}

  void AddPiece(std::string_view piece) {
    bool ascii = false;
    if (!eval_internal::NormalizeSurface(piece, p_, s_, ascii)) return;
    const std::uint64_t h = HashBytes(s_);
    bool found = false;
    const std::size_t pos =
        table_.Probe(h, [&](std::uint32_t k) { return out_[k] == std::string_view(s_); }, &found);
    if (found) return;
    out_.bytes.append(s_);
    out_.ends.push_back(out_.bytes.size());
    table_.Fill(pos, h, static_cast<std::uint32_t>(out_.size() - 1));
  }

  Surfaces Take() { return std::move(out_); }

 private:
  const Profile& p_;
  std::string s_;
  Surfaces out_;
  eval_internal::SlotTable table_;
};

}  // namespace

Result<Surfaces> DistinctSurfaces(const RawDataset& dataset, const RawPredictions* predictions,
                                  const Profile& profile) {
  if (predictions && predictions->docs.size() != dataset.docs.size()) {
    return Error{fmt::format("{}: {} prediction lines for {} documents of {} (expected one per document)",
                             predictions->path, predictions->docs.size(), dataset.docs.size(),
                             dataset.path)};
  }
  SurfaceSet set(profile);
  // Document by document, references then predictions: the order in which BuildCorpus meets pieces.
  for (std::size_t i = 0; i < dataset.docs.size(); ++i) {
    const RawDoc& raw = dataset.docs[i];
    if (profile.exhird_markers) {
      for (const auto& ref : eval_internal::ExhirdReferences(raw.refs)) set.AddPiece(ref[0]);
    } else {
      for (const auto& alternatives : raw.refs) {
        for (const auto& form : alternatives) set.AddPiece(form);
      }
    }
    if (!predictions) continue;
    const RawPrediction& rp = predictions->docs[i];
    const std::size_t n = eval_internal::InternedPredictionPieces(profile, rp);
    if (profile.exhird_markers) {
      for (const auto& piece : eval_internal::ExhirdPieces(
               {rp.phrases.begin(), rp.phrases.begin() + static_cast<std::ptrdiff_t>(n)})) {
        set.AddPiece(piece);
      }
    } else {
      for (std::size_t j = 0; j < n; ++j) set.AddPiece(rp.phrases[j]);
    }
  }
  return set.Take();
}

}  // namespace kplab
