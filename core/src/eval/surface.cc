#include "eval/surface.h"

#include "kplab/surface.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "eval/on_threads.h"
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
  // Python's whitespace below 0x80 (IsPySpace), stripped here byte by byte; where a non-ASCII byte
  // ends the strip (it may be a Unicode space), Strip decodes the piece instead.
  static const auto kSpace = [] {
    std::array<bool, 256> t{};
    for (char32_t c = 0; c < 128; ++c) t[c] = IsPySpace(c);
    return t;
  }();
  const char* b = piece.data();
  const char* e = b + piece.size();
  while (b < e && kSpace[static_cast<unsigned char>(*b)]) ++b;
  while (e > b && kSpace[static_cast<unsigned char>(e[-1])]) --e;
  std::string_view stripped(b, static_cast<std::size_t>(e - b));
  if (!stripped.empty() && (static_cast<unsigned char>(*b) >= 0x80 || static_cast<unsigned char>(e[-1]) >= 0x80)) {
    stripped = Strip(piece);
  }
  // One pass copies, lower-cases ASCII letters and finds whether every byte is ASCII; a piece that is
  // not is lower-cased again in full Unicode from the stripped bytes.
  s.assign(stripped);
  std::uint64_t any = 0;
  char* c = s.data();
  const std::size_t n = s.size();
  std::size_t i = 0;
  constexpr std::uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
  auto word = [&](std::size_t at) {  // eight bytes: the high bit of each A-Z byte, moved to 0x20
    std::uint64_t w;
    std::memcpy(&w, c + at, 8);
    any |= w;
    if (!profile.lowercase) return;
    const std::uint64_t low7 = w & ~kHigh;
    const std::uint64_t upper = ((low7 + (0x80 - 'A') * kOnes) ^ (low7 + (0x80 - 'Z' - 1) * kOnes)) & ~w & kHigh;
    w |= upper >> 2;
    std::memcpy(c + at, &w, 8);
  };
  for (; i + 8 <= n; i += 8) word(i);
  // The last 1-7 bytes of a piece of 8 or more as the word that ends it: lower-casing a byte twice
  // changes nothing, and the bytes seen twice are ASCII or not alike.
  if (i < n && n >= 8) {
    word(n - 8);
    i = n;
  }
  for (; i < n; ++i) {
    any |= static_cast<unsigned char>(c[i]);
    if (profile.lowercase && static_cast<unsigned char>(c[i] - 'A') < 26) c[i] = static_cast<char>(c[i] - 'A' + 'a');
  }
  ascii = (any & kHigh) == 0;
  if (profile.lowercase && !ascii) s = Lower(stripped);
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
  return InternedPredictionPieces(profile, prediction.phrases.size(),
                                  prediction.phrases.empty() ? std::string_view() : prediction.phrases[0]);
}

std::size_t InternedPredictionPieces(const Profile& profile, std::size_t n, std::string_view first) {
  if (profile.max_pieces > 0) n = std::min(n, static_cast<std::size_t>(profile.max_pieces));
  if (profile.empty_line_is_none && n == 1 && Strip(first).empty()) n = 0;
  return n;
}

}  // namespace eval_internal

namespace {

// Surfaces in order of first appearance, each once. A document's pieces are normalized and hashed
// first and their slots prefetched, then probed in order: the table (millions of slots) misses the
// cache on nearly every probe, and the probes of one document overlap.
class SurfaceSet {
 public:
  explicit SurfaceSet(const Profile& p) : p_(p) {}

  // One document's pieces: Piece for each, then Flush.
  void Piece(std::string_view piece) {
    bool ascii = false;
    if (!eval_internal::NormalizeSurface(piece, p_, s_, ascii)) return;
    batch_.append(s_);
    batch_ends_.push_back(batch_.size());
    const std::uint64_t h = eval_internal::HashBytes(s_);
    batch_hashes_.push_back(h);
    table_.Prefetch(h);
  }
  void Flush() {
    std::size_t begin = 0;
    for (std::size_t k = 0; k < batch_ends_.size(); ++k) {
      Add(std::string_view(batch_).substr(begin, batch_ends_[k] - begin), batch_hashes_[k]);
      begin = batch_ends_[k];
    }
    batch_.clear();
    batch_ends_.clear();
    batch_hashes_.clear();
  }
  // Every surface of another set (a later range of documents), in its order.
  void Merge(const SurfaceSet& later) {
    for (std::size_t i = 0; i < later.out_.size(); ++i) Add(later.out_[i], later.hashes_[i]);
  }

  Surfaces Take() { return std::move(out_); }

 private:
  void Add(std::string_view s, std::uint64_t h) {
    bool found = false;
    const std::size_t pos = table_.Probe(h, [&](std::uint32_t k) { return out_[k] == s; }, &found);
    if (found) return;
    out_.bytes.append(s);
    out_.ends.push_back(out_.bytes.size());
    hashes_.push_back(h);
    table_.Fill(pos, h, static_cast<std::uint32_t>(out_.size() - 1));
  }

  const Profile& p_;
  std::string s_, batch_;
  std::vector<std::size_t> batch_ends_;
  std::vector<std::uint64_t> batch_hashes_;
  Surfaces out_;
  std::vector<std::uint64_t> hashes_;  // of out_'s surfaces
  eval_internal::SlotTable table_;
};

// Adds document i's pieces in the order BuildCorpus meets them: references, then predictions.
void AddDocument(SurfaceSet& set, const RawDoc& raw, const RawPrediction* rp, const Profile& profile) {
  if (profile.exhird_markers) {
    for (const auto& ref : eval_internal::ExhirdReferences(raw.refs)) set.Piece(ref[0]);
  } else {
    for (const auto& alternatives : raw.refs) {
      for (const auto& form : alternatives) set.Piece(form);
    }
  }
  if (rp != nullptr) {
    const std::size_t n = eval_internal::InternedPredictionPieces(profile, *rp);
    if (profile.exhird_markers) {
      for (const auto& piece : eval_internal::ExhirdPieces(
               {rp->phrases.begin(), rp->phrases.begin() + static_cast<std::ptrdiff_t>(n)})) {
        set.Piece(piece);
      }
    } else {
      for (std::size_t j = 0; j < n; ++j) set.Piece(rp->phrases[j]);
    }
  }
  set.Flush();
}

}  // namespace

Result<Surfaces> DistinctSurfaces(const RawDataset& dataset, const RawPredictions* predictions,
                                  const Profile& profile, int threads) {
  if (predictions && predictions->docs.size() != dataset.docs.size()) {
    return Error::Input(fmt::format("{}: {} prediction lines for {} documents of {} (expected one per document)",
                                    predictions->path, predictions->docs.size(), dataset.docs.size(), dataset.path));
  }
  // Contiguous ranges of documents, one set each, merged in range order: a surface new to the whole
  // in range t is first met there at the point one pass would meet it, so the order is one pass's.
  const std::size_t n_docs = dataset.docs.size();
  const std::size_t n = eval_internal::RangeThreads(n_docs, threads);
  std::vector<std::unique_ptr<SurfaceSet>> sets;
  for (std::size_t t = 0; t < n; ++t) sets.push_back(std::make_unique<SurfaceSet>(profile));
  eval_internal::OnThreads(n, [&](std::size_t t) {
    for (std::size_t i = n_docs * t / n; i < n_docs * (t + 1) / n; ++i) {
      AddDocument(*sets[t], dataset.docs[i], predictions ? &predictions->docs[i] : nullptr, profile);
    }
  });
  for (std::size_t t = 1; t < n; ++t) {
    sets[0]->Merge(*sets[t]);
    sets[t].reset();
  }
  return sets[0]->Take();
}

}  // namespace kplab
