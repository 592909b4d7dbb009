#include "kplab/corpus.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "eval/on_threads.h"
#include "eval/piece_store.h"
#include "eval/slot_table.h"
#include "eval/surface.h"
#include "eval/token_table.h"
#include "kplab/stem.h"
#include "kplab/text.h"

namespace kplab {

const char* PrmuName(Prmu p) {
  switch (p) {
    case Prmu::kPresent: return "P";
    case Prmu::kReordered: return "R";
    case Prmu::kMixed: return "M";
    case Prmu::kUnseen: return "U";
  }
  return "?";
}

void* PhraseArena::Take(std::size_t bytes, std::size_t align) {
  std::size_t pad = (align - reinterpret_cast<std::uintptr_t>(pos_) % align) % align;
  if (pos_ == nullptr || left_ < bytes + pad) {
    const std::size_t size = std::max<std::size_t>(256 * 1024, bytes + align);
    chunks_.push_back(std::make_unique_for_overwrite<std::byte[]>(size));  // handed out to be written
    pos_ = chunks_.back().get();
    left_ = size;
    pad = (align - reinterpret_cast<std::uintptr_t>(pos_) % align) % align;
  }
  std::byte* out = pos_ + pad;
  pos_ = out + bytes;
  left_ -= pad + bytes;
  return out;
}

std::string_view PhraseArena::Copy(std::string_view s) {
  if (s.empty()) return {};
  char* out;
  if (left_ >= s.size()) {  // Take's own path for a chunk with room, without the call (once per phrase)
    out = reinterpret_cast<char*>(pos_);
    pos_ += s.size();
    left_ -= s.size();
  } else {
    out = static_cast<char*>(Take(s.size(), 1));
  }
  std::memcpy(out, s.data(), s.size());
  return {out, s.size()};
}

std::span<TokenId> PhraseArena::PhraseBlock(std::size_t n, std::string_view surface) {
  const std::size_t bytes = n * sizeof(TokenId) + surface.size();
  if (bytes == 0) return {};
  const std::size_t pad =
      (alignof(TokenId) - reinterpret_cast<std::uintptr_t>(pos_) % alignof(TokenId)) % alignof(TokenId);
  TokenId* ids;
  if (pos_ != nullptr && left_ >= bytes + pad) {  // Take's own path, without the call (once per phrase)
    ids = reinterpret_cast<TokenId*>(pos_ + pad);
    pos_ += pad + bytes;
    left_ -= pad + bytes;
  } else {
    ids = static_cast<TokenId*>(Take(bytes, alignof(TokenId)));
  }
  if (!surface.empty()) std::memcpy(ids + n, surface.data(), surface.size());
  return {ids, n};
}

std::span<TokenId> PhraseArena::Ids(std::size_t n) { return PhraseBlock(n, {}); }

void PhraseArena::Adopt(PhraseArena&& other) {
  for (auto& c : other.chunks_) chunks_.push_back(std::move(c));
  other.chunks_.clear();
  other.pos_ = nullptr;
  other.left_ = 0;
}

namespace {

constexpr std::string_view kPeos = "<peos>";

// SplitWhitespace (Python's str.split()) of ASCII text, appending to out without allocating a vector
// per call: the whitespace bytes are those IsPySpace accepts (which include \x1c-\x1f). They are all
// below 0x21, so a token's end is looked for eight bytes at a time, as any byte below 0x21 (the
// lowest such byte is exact: a borrow can only mark bytes above it), and only those are looked up.
void SplitAsciiWhitespace(std::string_view s, std::vector<std::string_view>& out) {
  static const auto kSpace = [] {
    std::array<bool, 128> t{};
    for (char32_t c = 0; c < 128; ++c) t[c] = IsPySpace(c);
    return t;
  }();
  constexpr std::uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
  const char* p = s.data();
  const std::size_t n = s.size();
  auto next_space = [&](std::size_t i) {  // the first whitespace byte at or after i (n if none)
    while (i + 8 <= n) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      std::uint64_t low = (w - 0x21 * kOnes) & ~w & kHigh;
      while (low != 0) {
        const std::size_t k = i + static_cast<std::size_t>(__builtin_ctzll(low)) / 8;
        if (kSpace[static_cast<unsigned char>(p[k])]) return k;
        i = k + 1;  // a control byte, not whitespace: look again from the byte after it
        if (i + 8 > n) break;
        std::memcpy(&w, p + i, 8);
        low = (w - 0x21 * kOnes) & ~w & kHigh;
      }
      if (low == 0) i += 8;
    }
    if (i < n && n >= 8) {  // the last 1-7 bytes as the word that ends s, its bytes before i masked off
      std::uint64_t w;
      std::memcpy(&w, p + n - 8, 8);
      std::uint64_t low = (w - 0x21 * kOnes) & ~w & kHigh & (~std::uint64_t{0} << (8 * (i - (n - 8))));
      for (; low != 0; low &= low - 1) {  // a mark may be a borrow's: each is looked up
        const std::size_t k = n - 8 + static_cast<std::size_t>(__builtin_ctzll(low)) / 8;
        if (kSpace[static_cast<unsigned char>(p[k])]) return k;
      }
      return n;
    }
    while (i < n && !kSpace[static_cast<unsigned char>(p[i])]) ++i;
    return i;
  };
  std::size_t i = 0;
  while (i < n) {
    while (i < n && kSpace[static_cast<unsigned char>(p[i])]) ++i;
    if (i == n) break;
    const std::size_t end = next_space(i);
    out.push_back(s.substr(i, end - i));
    i = end;
  }
}

// A document as Builder::Doc reads it: views into its reader's bytes (an import's RawDoc and
// RawPrediction, or a LineDocuments' file lines, not copied), valid while the document is built.
struct DocIn {
  std::string_view id;
  bool has_text = false, pretokenized = true, refs_stemmed = false;
  std::string_view title, body, separator;  // as RawDoc's
  std::span<const std::string_view> forms;  // every reference's forms (alternatives), in order
  std::span<const std::uint32_t> ref_ends;  // reference k's forms end at forms[ref_ends[k]]; empty: one form each
  bool has_preds = false;
  std::span<const std::string_view> pieces;  // the prediction pieces (RawPrediction::phrases)
  const RawPrediction* rp = nullptr;         // the predictions' other fields; null for a file line

  std::size_t n_refs() const { return ref_ends.empty() ? forms.size() : ref_ends.size(); }
  std::span<const std::string_view> Ref(std::size_t k) const {
    if (ref_ends.empty()) return forms.subspan(k, 1);
    const std::size_t begin = k == 0 ? 0 : ref_ends[k - 1];
    return forms.subspan(begin, ref_ends[k] - begin);
  }
  bool from_line() const { return rp == nullptr || rp->from_line; }
};

using eval_internal::PieceStore;

// Is the stem sequence a contiguous run of the document's source stems (Corpus::FirstOccurrence)?
std::optional<std::size_t> FirstOccurrenceIn(const Lexicon& lex, const Profile& profile, const Document& doc,
                                             std::span<const TokenId> stems) {
  if (stems.empty() || !doc.has_text) return std::nullopt;
  if (std::all_of(stems.begin(), stems.end(), [&](TokenId t) { return lex.Str(t).empty(); })) return std::nullopt;
  const auto src = doc.src_stems();
  const auto starts = doc.section_starts();
  const std::size_t n = stems.size();
  const bool cross = profile.match_across_sections || starts.size() <= 1;
  // Sections are in source order, so the first section with a match has the earliest one.
  const std::size_t n_sections = cross ? 1 : starts.size();
  for (std::size_t s = 0; s < n_sections; ++s) {
    const std::size_t begin = cross ? 0 : starts[s];
    const std::size_t end = (cross || s + 1 == starts.size()) ? src.size() : starts[s + 1];
    for (std::size_t i = begin; i + n <= end; ++i) {
      if (src[i] == stems[0] && std::equal(stems.begin(), stems.end(), src.begin() + static_cast<std::ptrdiff_t>(i))) {
        return i;
      }
    }
  }
  return std::nullopt;
}

std::uint32_t PresentCount(std::span<const Keyphrase> kps) {
  return static_cast<std::uint32_t>(std::count_if(kps.begin(), kps.end(), [](const Keyphrase& k) { return k.present(); }));
}

// Dedup sets are usually small (tens of keyphrases): a table of 256 slots stamped with the set's
// generation (clear() is one increment) holds the first 64 items, at most a quarter full, so an insert
// is a probe or two rather than a scan of the items so far; a hash set takes over for long lists so
// a line with thousands of predictions stays linear.
struct SmallSet {
  static constexpr std::size_t kSmall = 64, kSlots = 256;
  std::array<TokenId, kSlots> keys;
  std::array<std::uint32_t, kSlots> stamps{};  // a slot is in the set when its stamp is gen
  std::array<TokenId, kSmall> items;           // the items in order (for the hand-over to big)
  std::uint32_t gen = 1;
  std::size_t n = 0;
  std::unordered_set<TokenId> big;
  void clear() {
    if (n == kSmall) big.clear();
    n = 0;
    if (++gen == 0) {  // after 2^32 - 1 clears the stamps start again
      stamps.fill(0);
      gen = 1;
    }
  }
  bool insert(TokenId t) {
    if (n < kSmall) {
      std::size_t i = (t * 0x9E3779B1u) >> 24;
      for (; stamps[i] == gen; i = (i + 1) % kSlots) {
        if (keys[i] == t) return false;
      }
      stamps[i] = gen;
      keys[i] = t;
      items[n++] = t;
      if (n == kSmall) big.insert(items.begin(), items.end());
      return true;
    }
    return big.insert(t).second;
  }
};

std::string AsciiLower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// Whether the gold looks stemmed, judged from the references themselves (docs/formats.md, "References
// released stemmed"): the share of their word tokens (3 or more ASCII letters; Porter leaves shorter ones
// alone) that the profile's stemmer changes. Unstemmed English keyphrases change about 60% of them
// (Meng-2017 Inspec 62%, Krapivin 65%, KP20k 61%); stemmed gold only where Porter is not idempotent
// (Meng-2017 SemEval 3.1%, SemEval-2010's test.combined.stem.final 4.3%). Below 15% the gold looks
// stemmed, above 35% it looks unstemmed; in between, or with fewer than kMinWords tokens, nothing is
// said. The first changed token in document order is named as the evidence.
constexpr std::size_t kMinWords = 50;
constexpr double kStemmedBelow = 0.15, kUnstemmedAbove = 0.35;

// The references' word tokens of a range of documents, and how many of them the stemmer changes, with
// the first changed one in document order as the example. Counted by the range's builder as it keeps
// each reference (Builder::Doc), then added in range order (GoldStems::Add).
struct GoldStems {
  std::size_t words = 0, changed = 0;
  std::string example;
  // Adds the counts of the documents after these (the example stays the earlier one).
  void Add(const GoldStems& later) {
    words += later.words;
    changed += later.changed;
    if (example.empty()) example = later.example;
  }
};

// v grown to at least n elements (never shrunk), for a scratch array a document writes by index: a
// resize to each document's size was a call (value-initializing the new elements) every document.
template <typename T>
T* Room(std::vector<T>& v, std::size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// Builds the documents of one range with its own lexicon, phrases and memos (interned tokens, stems
// memoized by token id, normalized phrases by raw piece). One builder per range (a range a thread, or
// with per-range ids several a thread, built in turn); BuildCorpus merges them in range order, which
// gives every string and phrase the id a single builder would (the first occurrence in document order
// decides), or appends them (per-range ids).
class Builder {
 public:
  struct Options {
    const Profile* profile;
    bool raw_text;   // untokenized dataset: keyphrases go through the source's word tokenizer
    bool stem_refs;  // references are stemmed (unless released stemmed)
    // The raw documents are released as they are built (BuildCorpus of an rvalue import): the piece
    // memo then keeps its own copy of every distinct piece's bytes.
    bool consume;
    // A later range's: each listed keyphrase holds its phrase's local id in place of the address until
    // the merge has made the corpus's phrases (Listed), so the merge can free each local phrase as it
    // goes (they are moved into the corpus or are duplicates). Nothing reads the field in between.
    bool local_ids;
  };
  explicit Builder(const Options& o) : o_(o), p_(*o.profile), stemmer_(p_.stem_mode), as_written_(p_) {
    as_written_.lowercase = false;
    peos_ = p_.peos == "first_token"      ? Peos::kFirstToken
            : p_.peos == "piece"          ? Peos::kPiece
            : p_.peos == "piece_in_lines" ? Peos::kPieceInLines
                                          : Peos::kKeep;
    same_join_ = p_.dedup_join == " ";
  }

  Lexicon lex;
  PhraseArena arena;           // the phrases' surfaces and ids (adopted by the corpus)
  std::deque<KeyphraseExtra> extras;  // the range's keyphrases' (moved into the corpus)
  std::deque<TokenProbs> probs;        // the range's predictions' token probabilities (moved there too)
  std::deque<DocumentSource> sources;  // the range's documents' sources (moved there too)
  std::deque<Phrase> phrases;  // ids are indices here (local until merged)
  std::vector<TokenId> dedup_keys;  // per local phrase id, when the profile's dedup_join is not ' '
  TokenId DedupKey(const Phrase& p) const { return dedup_keys.empty() ? p.key : dedup_keys[p.id]; }
  // The distinct raw pieces met (each with its phrase's local id, or kDropped), and their records'
  // indices in order of first use; phrases are made in this order. A long piece's bytes outlive the
  // build: the raw import's (BuildCorpus of a const import), the surface of its phrase when the piece
  // is that surface already, or the builder's copies (ExHiRD's re-cut pieces; other pieces when the
  // import is released as it is built); a short one's are in its record.
  PieceStore piece_store;
  std::vector<std::uint32_t> pieces;
  eval_internal::SlotTable memo[2];  // unstemmed / stemmed piece -> its record in piece_store
  // Documents with a repeated prediction, in document order: each one's index in the corpus and where
  // its run in dup_indices begins (per kept or repeated piece, its index in preds). One array for the
  // range rather than a vector per document: most documents of a generator's output repeat a piece.
  struct DupRun {
    std::size_t doc, begin;
  };
  std::vector<DupRun> dups;
  std::vector<std::uint32_t> dup_indices;
  GoldStems gold;  // of the range's kept references, in document order (StemmedGoldWarning)
  // Run k of dups (never empty: a document is listed from its first repeat on).
  std::span<const std::uint32_t> DupsOf(std::size_t k) const {
    const std::size_t end = k + 1 < dups.size() ? dups[k + 1].begin : dup_indices.size();
    return std::span<const std::uint32_t>(dup_indices).subspan(dups[k].begin, end - dups[k].begin);
  }

  // Sizes the build's tables for a range of `docs` documents, so that they do not grow (each growth is
  // a fresh zeroed table and every entry placed again) on the way. The rates per document (4 distinct
  // pieces, 1.1 tokens, 1.5 strings without a space and 3.4 with one) are about what one range of
  // KP20k's 20,000 documents with a generator's predictions held, the largest of the standard test sets
  // (read once from a throwaway build that printed its tables' sizes; bench/instructions.py shows the
  // effect: bench/README.md). A hint only: a range that holds more grows its tables as before, one that holds fewer
  // leaves part of them unused. At most a streamed range's documents (DocsPerRange) are reserved for (some 14 MB of
  // tables): a larger range, whose vocabulary grows slower than its documents, grows past that only if it needs to.
  // Called on the range's thread, before its first document.
  void Reserve(std::size_t docs) {
    docs = std::min(docs, eval_internal::DocsPerRange());
    memo[1].Reserve(docs * 4);
    token_table_.Reserve(docs + docs / 10);
    lex.Reserve(docs + docs / 2, docs * 3 + docs * 2 / 5);
  }

  // Frees what only the build probes (the piece memo and its records, the token table, the lexicon's
  // index), once the range is built and its ids are per range (nothing looks a string up again): a
  // table of 2 MiB or more goes back to the system, the rest to the allocator, for the next range built
  // on this thread. What the corpus keeps (strings, phrases, arena, the range's lists) stays.
  void ReleaseBuildTables() {
    memo[0] = eval_internal::SlotTable();
    memo[1] = eval_internal::SlotTable();
    pieces = {};
    piece_store = PieceStore();
    token_table_ = eval_internal::TokenTable();
    owned_ = {};
    piece_bytes_ = PhraseArena();
    Lexicon unindexed;  // the same strings and ids (base 0), without the index
    unindexed.AppendUnindexed(std::move(lex));
    lex = std::move(unindexed);
  }

  // ReleaseBuildTables, but the piece memo, its records and the lexicon's index go to next, the builder
  // of this thread's next range, emptied: their memory is reused (design note 71).
  void PassBuildTables(Builder& next) {
    next.lex.TakeIndex(lex);
    for (int k = 0; k < 2; ++k) {
      memo[k].Clear();
      next.memo[k] = std::move(memo[k]);
    }
    pieces.clear();
    next.pieces = std::move(pieces);
    piece_store.Clear();
    next.piece_store = std::move(piece_store);
    ReleaseBuildTables();
  }

  void Doc(std::size_t i, const DocIn& in, Document& doc) {
    doc.id = in.id;
    doc.has_text = in.has_text;
    if (in.has_text) Source(doc, in);

    // References: each with its alternative forms; dedup by key, first wins.
    std::vector<std::string> exhird_refs;  // ExHiRD's re-cut references (one form each)
    std::vector<std::string_view> exhird_forms;
    DocIn refs_in = in;  // whose forms are interned (ExHiRD: the re-cut ones)
    if (p_.exhird_markers) {
      for (auto& ref : eval_internal::ExhirdReferences(ExhirdInput(in))) exhird_refs.push_back(std::move(ref[0]));
      exhird_forms.assign(exhird_refs.begin(), exhird_refs.end());
      refs_in.forms = exhird_forms;
      refs_in.ref_ends = {};
    }
    seen_.clear();
    const bool stem_refs = o_.stem_refs && !in.refs_stemmed;
    // Every piece hashed and its memo slot requested first: the probes then overlap their cache misses.
    // The raw pieces were hashed by Prefetch (the document before this one) unless ExHiRD re-cut them.
    const PieceHashes& ahead = HashesOf(i, in);
    if (!p_.exhird_markers) PrefetchRecords(ahead, stem_refs);
    std::span<const std::uint64_t> ref_hashes = ahead.refs;
    if (p_.exhird_markers) {
      hashes_.clear();
      for (std::string_view form : refs_in.forms) Hash(form, stem_refs);
      ref_hashes = hashes_;
    }
    const bool batched = !p_.exhird_markers;  // ExHiRD's re-cut pieces are interned one by one
    if (batched) {
      // Every piece looked up first (the new ones normalized), then the new phrases' keys interned together.
      // Sized first and written by index: a push_back a piece is a call (the vector's growth path is
      // not inlined), twice per piece of every document.
      std::uint32_t* const ref_records = Room(ref_records_, in.forms.size());
      for (std::size_t k = 0; k < in.forms.size(); ++k) ref_records[k] = Lookup(in.forms[k], stem_refs, ahead.refs[k]);
      if (in.has_preds) {
        const std::size_t n =
            eval_internal::InternedPredictionPieces(p_, in.pieces.size(), in.pieces.empty() ? "" : in.pieces[0]);
        std::uint32_t* const pred_records = Room(pred_records_, n);
        for (std::size_t j = 0; j < n; ++j) pred_records[j] = Lookup(in.pieces[j], true, ahead.preds[j]);
      }
      FinishPieces();
    }
    std::size_t next_hash = 0;
    refs_.clear();
    refs_all_.clear();
    bool ref_repeat = false;
    for (std::size_t r = 0; r < refs_in.n_refs(); ++r) {
      Keyphrase kp;
      TokenId dedup = 0;
      std::uint16_t ref_gold = 0;  // the first form's gold counts (PackGold)
      alt_.clear();
      for (std::string_view form : refs_in.Ref(r)) {
        const Interned in_memo =
            batched ? FromRecord(ref_records_[next_hash]) : Intern(form, stem_refs, true, ref_hashes[next_hash]);
        ++next_hash;
        const Phrase* ph = in_memo.phrase;
        if (!ph) continue;
        if (!kp.phrase) {
          kp.phrase = ph;
          dedup = in_memo.dedup;
          ref_gold = in_memo.gold;
        } else if (ph->key != kp.key() && std::find(alt_.begin(), alt_.end(), ph->key) == alt_.end()) {
          alt_.push_back(ph->key);
        }
      }
      if (!kp.phrase) continue;
      if (p_.dedup && !seen_.insert(dedup)) {
        kp.set_present(Present(doc, kp));
        refs_all_.push_back(Listed(kp));
        ref_repeat = true;
        continue;
      }
      if (!alt_.empty()) {
        const std::span<TokenId> keys = arena.Ids(alt_.size());
        std::copy(alt_.begin(), alt_.end(), keys.begin());
        kp.set_extra(&extras.emplace_back());
        kp.extra()->alt_keys = keys;
      }
      kp.set_present(Present(doc, kp));
      CountGold(ref_gold, *kp.phrase);
      refs_.push_back(Listed(kp));
      kp.set_extra(nullptr);  // an extra belongs to one keyphrase (the merge remaps its keys once)
      refs_all_.push_back(Listed(kp));
    }
    doc.refs = arena.CopyOf(std::span<const Keyphrase>(refs_));
    doc.n_present_refs = PresentCount(refs_);
    DocumentExtra extra;
    if (ref_repeat) extra.refs_before_dedup = arena.CopyOf(std::span<const Keyphrase>(refs_all_));
    if (in.has_preds) extra.sequence_logprobs = Predictions(i, in, ahead.preds, doc);
    if (!extra.refs_before_dedup.empty() || !extra.sequence_logprobs.empty()) {
      doc.extra = arena.CopyOf(std::span<const DocumentExtra>(&extra, 1)).data();
    }
  }

  // The document's prediction pieces (in.has_preds): filtered, deduplicated, into doc.preds. Returns
  // the whole sequence's log-probabilities of a "tokens" file, copied into the arena (for
  // DocumentExtra), or nothing.
  std::span<const double> Predictions(std::size_t i, const DocIn& in, std::span<const std::uint64_t> pred_hashes,
                                      Document& doc) {
    const RawPrediction* rp = in.rp;
    doc.n_pred_pieces = static_cast<int>(in.pieces.size());
    std::span<const double> sequence_logprobs;
    if (rp) {
      doc.one2set = rp->one2set;
      sequence_logprobs = arena.CopyOf(std::span<const double>(rp->sequence_logprobs));
    }
    // Token probabilities follow their piece; ExHiRD's marker splitting re-cuts the pieces, so they
    // cannot be attached then (as scores).
    const bool with_probs = rp && !rp->token_probs.empty() && !p_.exhird_markers;
    std::size_t n_pieces =
        eval_internal::InternedPredictionPieces(p_, in.pieces.size(), in.pieces.empty() ? "" : in.pieces[0]);
    std::vector<std::string> exhird_pieces;
    if (p_.exhird_markers) {
      exhird_pieces =
          eval_internal::ExhirdPieces({in.pieces.begin(), in.pieces.begin() + static_cast<std::ptrdiff_t>(n_pieces)});
      n_pieces = exhird_pieces.size();
    }
    auto raw_piece = [&](std::size_t j) -> std::string_view {
      return p_.exhird_markers ? std::string_view(exhird_pieces[j]) : in.pieces[j];
    };
    bool after_peos = false;
    int one_word = 0;  // one-token pieces met so far (Profile::first_one_word_only)
    seen_.clear();
    bool any_dup = false;
    // Kept in a scratch list first: the document keeps exactly its own (dups and markers drop many).
    preds_.clear();
    TokenId* const pred_dedups = Room(pred_dedups_, n_pieces);  // [f]: preds_[f]'s, written as preds_ grows
    // Per kept or repeated piece from the first repeat on, its index in preds_ (at most one a piece).
    std::uint32_t* const dup_index = Room(dup_index_, n_pieces);
    std::size_t n_dup = 0;
    if (p_.exhird_markers) {
      hashes_.clear();
      for (std::size_t j = 0; j < n_pieces; ++j) Hash(raw_piece(j), true);
      pred_hashes = hashes_;
    }
    for (std::size_t j = 0; j < n_pieces; ++j) {
      const Interned in_memo =
          p_.exhird_markers ? Intern(raw_piece(j), true, true, pred_hashes[j]) : FromRecord(pred_records_[j]);
      const Phrase* ph = in_memo.phrase;
      if (!ph) continue;
      const std::uint8_t flags = in_memo.flags;
      if (flags & (kPeosSurface | kPeosStem)) {
        const bool exact = (flags & kPeosSurface) != 0;
        if (exact) after_peos = true;
        if (peos_ == Peos::kFirstToken || (peos_ == Peos::kPiece && exact) ||
            (peos_ == Peos::kPieceInLines && exact && in.from_line())) {
          continue;
        }
      }
      // Before the invalid and dedup checks: kenchan0226 counts every one-token piece in its mask.
      if (p_.first_one_word_only && ph->tokens().size() == 1 && ++one_word > 1) continue;
      if (flags & kInvalid) {
        ++doc.n_pred_invalid;
        continue;
      }
      if (p_.dedup && !seen_.insert(in_memo.dedup)) {
        if (!any_dup) {  // the index is kept from the first repeat on: before it, kept piece k is preds k
          for (std::size_t f = 0; f < preds_.size(); ++f) dup_index[n_dup++] = static_cast<std::uint32_t>(f);
        }
        for (std::size_t f = 0; f < preds_.size(); ++f) {
          if (pred_dedups[f] == in_memo.dedup) {
            dup_index[n_dup++] = static_cast<std::uint32_t>(f);
            break;
          }
        }
        any_dup = true;
        continue;
      }
      if (any_dup) dup_index[n_dup++] = static_cast<std::uint32_t>(preds_.size());
      Keyphrase kp;
      kp.phrase = ph;
      kp.set_after_peos(after_peos);
      if (rp && j < rp->scores.size() && !p_.exhird_markers && rp->scores[j] != 0) {
        kp.set_extra(&extras.emplace_back());
        kp.extra()->score = rp->scores[j];
      }
      kp.set_present(Present(doc, kp));
      if (with_probs) {
        if (!kp.extra()) kp.set_extra(&extras.emplace_back());
        kp.extra()->probs = &probs.emplace_back(rp->token_probs[j]);
      }
      pred_dedups[preds_.size()] = in_memo.dedup;
      preds_.push_back(Listed(kp));
    }
    doc.preds = arena.CopyOf(std::span<const Keyphrase>(preds_));
    doc.n_present_preds = PresentCount(preds_);
    if (any_dup) {
      dups.push_back({i, dup_indices.size()});
      dup_indices.insert(dup_indices.end(), dup_index, dup_index + n_dup);
    }
    return sequence_logprobs;
  }

  // kp as the document's lists keep it: a later range's names its phrase by local id (Options::local_ids;
  // FinishRange gives it the corpus's address). Set as the keyphrase is listed, when its phrase is at
  // hand: a pass over the range's lists afterwards read every phrase again.
  Keyphrase Listed(Keyphrase kp) const {
    if (o_.local_ids) kp.phrase = reinterpret_cast<const Phrase*>(static_cast<std::uintptr_t>(kp.phrase->id));
    return kp;
  }

  // Is the keyphrase in the document's source? (Asked only of a document with text: most of the
  // shared test sets have none, and the call was a tenth of the bookkeeping.)
  bool Present(const Document& doc, const Keyphrase& kp) const {
    return doc.has_text && FirstOccurrenceIn(lex, p_, doc, kp.stems()).has_value();
  }

  // Requests the memo slots of a document about to be built (the next one), so that they are in
  // cache when Doc probes them. A hint only.
  // i: the document's index (raw's and rp's); its pieces' hashes are kept for Doc(i).
  void Prefetch(std::size_t i, const DocIn& in) {
    if (p_.exhird_markers) return;  // its pieces are re-cut first
    const PieceHashes& h = HashesOf(i, in);
    const eval_internal::SlotTable& refs_memo = memo[o_.stem_refs && !in.refs_stemmed ? 1 : 0];
    for (std::uint64_t x : h.refs) refs_memo.Prefetch(x);
    const std::size_t n = std::min(h.preds.size(), std::size_t{64});
    for (std::size_t j = 0; j < n; ++j) memo[1].Prefetch(h.preds[j]);
  }

 private:
  // Per token (TokenTable::Entry::flags): what the profile's filters say of the token and of its stem,
  // asked once per distinct token rather than once per phrase.
  static constexpr std::uint32_t kTokenInvalid = 1, kTokenPeos = 2, kStemInvalid = 4, kStemPeos = 8;
  // And what GoldStems counts of it (ClassifyGold): known, a word, a word the stemmer changes.
  static constexpr std::uint32_t kGoldKnown = 16, kGoldWord = 32, kGoldChanged = 64;
  static_assert(kGoldChanged <= 0xFFFF, "a token's flags are 16 bits (TokenTable::Entry)");
  std::uint32_t FilterFlags(std::string_view s, std::uint32_t invalid, std::uint32_t peos) const {
    std::uint32_t f = s == kPeos ? peos : 0;
    for (const auto& bad : p_.invalid_tokens) {
      if (s == bad) f |= invalid;
    }
    return f;
  }

  // Token t's entry in the builder's token table, with its stem asked when stem (then entry.stem is
  // set). Valid until the next call. Inlined: nearly every token was met before (the first meeting
  // and the first stem are NewToken and StemToken, out of line).
  [[gnu::always_inline]] eval_internal::TokenTable::Entry& Token(std::string_view t, bool stem) {
    eval_internal::TokenTable::Entry& e =
        token_table_.Get(t, eval_internal::HashBytes(t), [&](auto& fresh) { NewToken(fresh, t); });
    if (stem && e.stem == kNoToken) StemToken(e, t);
    return e;
  }
  [[gnu::noinline]] void NewToken(eval_internal::TokenTable::Entry& fresh, std::string_view t) {
    fresh.token = lex.Intern(t);
    fresh.bytes = lex.Str(fresh.token).data();  // the lexicon's bytes stay where they are
    fresh.flags = FilterFlags(t, kTokenInvalid, kTokenPeos);
  }
  [[gnu::noinline]] void StemToken(eval_internal::TokenTable::Entry& e, std::string_view t) {
    // The peers stem w.strip() (nltk lower-cases inside stem()); a token can only hold other
    // whitespace when it came from split(' ').
    e.stem = lex.Intern(stemmer_.Stem(Strip(t)));
    e.stem_str = lex.Packed(e.stem);
    e.flags |= FilterFlags(lex.Str(e.stem), kStemInvalid, kStemPeos);
  }

  // GoldStems' view of token t (whose entry is e), kept in e's flags: a word when, lower-cased, it is 3
  // or more ASCII letters (Porter leaves shorter ones alone); changed when the profile's stemmer changes
  // that lower-cased word. A function of the token's bytes alone, so ranges with ids of their own count
  // alike. The stem already asked (a lower-case word's stem is the stem of its bytes) is compared by id;
  // otherwise the word is stemmed here, without interning its stem (the lexicon's ids stay as they were).
  [[gnu::noinline]] void ClassifyGold(eval_internal::TokenTable::Entry& e, std::string_view t) {
    std::uint32_t c = kGoldKnown;
    if (IsLowerWord(t)) {
      c |= kGoldWord;
      if (e.stem != kNoToken ? e.stem != e.token : stemmer_.Stem(t) != t) c |= kGoldChanged;
    } else if (t.size() >= 3) {
      const std::string w = AsciiLower(std::string(t));
      if (IsLowerWord(w)) c |= kGoldWord | (stemmer_.Stem(w) != w ? kGoldChanged : 0);
    }
    e.flags |= c;
  }
  // e's flags, with GoldStems' view of its token t in them (asked once per token).
  std::uint32_t GoldFlags(eval_internal::TokenTable::Entry& e, std::string_view t) {
    if (!(e.flags & kGoldKnown)) ClassifyGold(e, t);
    return e.flags;
  }
  static bool IsLowerWord(std::string_view s) {
    return s.size() >= 3 && std::all_of(s.begin(), s.end(), [](char ch) { return ch >= 'a' && ch <= 'z'; });
  }
  // A phrase's word tokens and changed ones, in a piece record's 16 bits: words | changed << 8, or
  // kGoldMany when it has more than 254 words (then CountGold counts them from its tokens).
  static constexpr std::uint16_t kGoldMany = 0xFFFF;
  static std::uint16_t PackGold(std::size_t words, std::size_t changed) {
    return words > 254 ? kGoldMany : static_cast<std::uint16_t>(words | changed << 8);
  }
  // A kept reference (phrase ph, packed counts g) into gold; the first with a changed word names the
  // first such word as the example. Inlined where Doc keeps a reference: nearly every call adds the
  // packed counts (CountGoldTokens counts from the tokens).
  [[gnu::always_inline]] void CountGold(std::uint16_t g, const Phrase& ph) {
    const std::size_t changed = g >> 8;
    if (g == kGoldMany || (changed > 0 && gold.example.empty())) return CountGoldTokens(ph);
    gold.words += g & 0xFF;
    gold.changed += changed;
  }
  [[gnu::noinline]] void CountGoldTokens(const Phrase& ph) {
    std::size_t words = 0, changed = 0;
    for (const TokenId t : ph.tokens()) {
      const std::string_view s = lex.Str(t);
      const std::uint32_t f =
          GoldFlags(token_table_.Get(s, eval_internal::HashBytes(s), [&](auto& fresh) { NewToken(fresh, s); }), s);
      words += (f & kGoldWord) != 0;
      if (!(f & kGoldChanged)) continue;
      ++changed;
      if (gold.example.empty()) {
        const std::string w = AsciiLower(std::string(s));
        gold.example = fmt::format("'{}' -> '{}'", w, stemmer_.Stem(w));
      }
    }
    gold.words += words;
    gold.changed += changed;
  }

  // Token t's id and, with stem, its stem's id and string (without: the token's own); the string is
  // valid while the lexicon lives.
  void TokenStem(std::string_view t, bool stem, TokenId& id, TokenId& st, std::string_view& st_str) {
    const auto& e = Token(t, stem);
    id = e.token;
    st = stem ? e.stem : e.token;
    st_str = stem ? Lexicon::Unpack(e.stem_str) : e.view();
  }

  // The document's source into the range's arena (Document::source).
  void Source(Document& doc, const DocIn& raw) {
    src_ids_.clear();
    src_stems_.clear();
    sections_.clear();
    DocumentSource& out = sources.emplace_back();
    SourceTokens(out, raw);
    out.tokens = arena.CopyOf(std::span<const TokenId>(src_ids_));
    out.stems = arena.CopyOf(std::span<const TokenId>(src_stems_));
    out.section_starts = arena.CopyOf(std::span<const std::uint32_t>(sections_));
    doc.source = &out;
  }

  void SourceTokens(DocumentSource& doc, const DocIn& raw) {
    auto add_tokens = [&](const auto& toks) {
      for (const auto& t : toks) {
        TokenId id, st;
        std::string_view unused;
        TokenStem(t, true, id, st, unused);
        src_ids_.push_back(id);
        src_stems_.push_back(st);
      }
    };
    auto section = [&] { sections_.push_back(static_cast<std::uint32_t>(src_ids_.size())); };
    const std::string title = p_.lowercase ? Lower(raw.title) : std::string(raw.title);
    const std::string body = p_.lowercase ? Lower(raw.body) : std::string(raw.body);
    auto mark_title = [&](std::size_t skip) {
      doc.title_end = static_cast<std::uint32_t>(src_ids_.size());
      doc.body_start = doc.title_end + static_cast<std::uint32_t>(skip);
    };
    if (!raw.pretokenized) {  // raw text: kplab's word tokenizer, title and body as sections
      section();
      add_tokens(WordTokenize(title));
      mark_title(0);
      section();
      add_tokens(WordTokenize(body));
      return;
    }
    switch (p_.source_split) {
      case SourceSplit::kSections:
        section();
        add_tokens(SplitWhitespace(title));
        mark_title(0);
        section();
        add_tokens(SplitWhitespace(body));
        break;
      case SourceSplit::kJoinedSplitSpace: {
        section();
        const auto title_tokens = SplitSpace(Strip(title));
        add_tokens(title_tokens);
        // split(' ') of an empty title is one empty token: a token of the sequence, not a title.
        if (Strip(title).empty()) doc.title_end = 0, doc.body_start = static_cast<std::uint32_t>(src_ids_.size());
        else mark_title(0);
        add_tokens(SplitSpace(Strip(body)));
        break;
      }
      case SourceSplit::kWholeLine: {
        section();
        if (raw.separator.empty()) {
          mark_title(0);
          add_tokens(SplitWhitespace(body));
        } else {  // the line "title SEP body", split as one: the separator stays a token
          add_tokens(SplitWhitespace(title));
          mark_title(1);
          add_tokens(SplitWhitespace(std::string(raw.separator) + " " + body));
        }
        break;
      }
    }
  }

  // One keyphrase piece -> its interned Phrase, or nullptr if the profile drops it as empty.
  // Memoized on the raw piece (separately for unstemmed references). A transient piece (ExHiRD's
  // re-cut ones) is copied when it becomes a key of the memo, which must outlive the build.
  void Hash(std::string_view piece, bool stem) {
    const std::uint64_t h = eval_internal::HashBytes(piece);
    memo[stem ? 1 : 0].Prefetch(h);
    hashes_.push_back(h);
  }

  // HashBytes of a document's raw pieces (its references' forms in order; all its prediction pieces),
  // for the document doc. Computed once, by Prefetch for the document built next or else by Doc;
  // not used under exhird_markers (the pieces are re-cut first).
  struct PieceHashes {
    std::size_t doc = SIZE_MAX;
    std::vector<std::uint64_t> refs, preds;
  };
  PieceHashes ahead_[2];  // by document index parity: the one being built and the next

  const PieceHashes& HashesOf(std::size_t i, const DocIn& in) {
    PieceHashes& h = ahead_[i & 1];
    if (h.doc == i || p_.exhird_markers) return h;
    h.doc = i;
    h.refs.resize(in.forms.size());
    h.preds.resize(in.pieces.size());
    for (std::size_t k = 0; k < in.forms.size(); ++k) h.refs[k] = eval_internal::HashBytes(in.forms[k]);
    for (std::size_t k = 0; k < in.pieces.size(); ++k) h.preds[k] = eval_internal::HashBytes(in.pieces[k]);
    return h;
  }

  // Requests the piece records of a document about to be built, whose memo slots were requested while
  // the document before it was built: each home slot that holds a matching hash half names the record
  // the probe will read, so the document's record misses overlap instead of coming one by one. A hint
  // only (a piece further down its probe path is read without it).
  void PrefetchRecords(const PieceHashes& h, bool stem_refs) const {
    auto request = [&](const eval_internal::SlotTable& m, std::uint64_t hash) {
      const std::uint64_t slot = m.AtHome(hash);
      if (slot != 0 && eval_internal::SlotTable::HashMatches(slot, hash)) {
        eval_internal::RequestLine(piece_store.RecordAddress(eval_internal::SlotTable::Index(slot)));
      }
    };
    for (std::uint64_t x : h.refs) request(memo[stem_refs ? 1 : 0], x);
    const std::size_t n = std::min(h.preds.size(), std::size_t{64});
    for (std::size_t j = 0; j < n; ++j) request(memo[1], h.preds[j]);
  }

  // A document's references as ExHiRD's re-cut reads them.
  static std::vector<std::vector<std::string>> ExhirdInput(const DocIn& in) {
    std::vector<std::vector<std::string>> refs(in.n_refs());
    for (std::size_t k = 0; k < refs.size(); ++k) refs[k].assign(in.Ref(k).begin(), in.Ref(k).end());
    return refs;
  }

  // A piece's phrase (null: the profile drops the piece) with what Doc asks of it, from the piece's
  // record: its dedup key and filter flags (Normalize's kPeosSurface, kPeosStem, kInvalid).
  struct Interned {
    const Phrase* phrase;
    TokenId dedup;
    std::uint8_t flags;
    std::uint16_t gold;  // the phrase's word tokens and changed ones (PackGold)
  };

  // A piece looked up and, when new, made with its key at once (ExHiRD's re-cut pieces, one by one).
  // h: eval_internal::HashBytes(piece).
  Interned Intern(std::string_view piece, bool stem, bool transient, std::uint64_t h) {
    const std::uint32_t record = Lookup(piece, stem, h, transient);
    FinishPieces();
    return FromRecord(record);
  }

  // A piece met for the first time (its memo slot: the free position pos): normalized, remembered. Its
  // record is complete once FinishPieces has interned its phrase's key. Returns the record.
  [[gnu::noinline]] std::uint32_t BeginPiece(std::string_view piece, bool stem, bool transient, std::uint64_t h,
                                             std::size_t pos) {
    eval_internal::SlotTable& m = memo[stem ? 1 : 0];
    const Phrase* ph = Normalize(piece, stem);  // reads piece during the call only
    if (piece.size() <= PieceStore::kInline) {
      // Its bytes are copied into its record.
    } else if (transient) {
      piece = owned_.emplace_back(piece);
    } else if (o_.consume) {
      const bool is_surface = ph && ph->surface().size() == piece.size() &&
                              eval_internal::SameBytes(ph->surface().data(), piece.data(), piece.size());
      piece = is_surface ? ph->surface() : piece_bytes_.Copy(piece);
    }
    PieceStore::Head head;
    head.phrase = ph ? ph->id : PieceStore::kDropped;
    head.stem = stem ? 1 : 0;
    const std::uint32_t record = piece_store.Add(piece, head);
    if (ph) pending_.back().record = record;
    pieces.push_back(record);
    m.Fill(pos, h, record);
    return record;
  }

  // The record of a piece (h: its HashBytes), made when the piece is new (its key pending until
  // FinishPieces). Inlined where a document's pieces are read: most pieces were met before, and their
  // probe is the whole call (a new piece's work is in BeginPiece, not inlined). transient: the piece's
  // bytes do not outlive the call (BeginPiece keeps a copy).
  [[gnu::always_inline]] std::uint32_t Lookup(std::string_view piece, bool stem, std::uint64_t h,
                                              bool transient = false) {
    eval_internal::SlotTable& m = memo[stem ? 1 : 0];
    bool found = false;
    const std::size_t pos = m.Probe(
        h, [&](std::uint32_t r) { return piece_store.Same(r, piece); }, &found);
    if (found) return eval_internal::SlotTable::Index(m.At(pos));
    return BeginPiece(piece, stem, transient, h, pos);
  }

  // What Doc asks of a piece, from its (complete) record.
  Interned FromRecord(std::uint32_t record) const {
    const PieceStore::Head head = piece_store.HeadOf(record);
    if (head.phrase == PieceStore::kDropped) return {nullptr, 0, 0, 0};
    return {&phrases[head.phrase], head.dedup, head.flags, head.gold};
  }

  const Phrase* Normalize(std::string_view piece, bool stem) {
    std::string& s = surface_;  // reused: no allocation per phrase
    bool ascii = false;
    // Unstemmed pieces are references matched as given: written case kept when the profile says so.
    const Profile& norm = !stem && !p_.lowercase_given_refs ? as_written_ : p_;
    if (!eval_internal::NormalizeSurface(piece, norm, s, ascii)) return nullptr;
    Phrase& ph = phrases.emplace_back();
    ph.id = static_cast<std::uint32_t>(phrases.size() - 1);
    // The tokens first (views into s, or into the word tokenizer's strings), so that their ids are
    // written straight into the phrase's block of the arena: the tokens' ids, then their stems'.
    tokens_.clear();
    if (o_.raw_text) {
      words_ = WordTokenize(s);
      tokens_.assign(words_.begin(), words_.end());
    } else if (p_.keyphrase_split_space) {
      for (auto t : SplitSpace(s)) tokens_.push_back(t);
    } else if (ascii) {  // s is the ASCII piece stripped, lower-cased, maybe cleaned up: still ASCII
      SplitAsciiWhitespace(s, tokens_);
    } else {
      for (auto t : SplitWhitespace(s)) tokens_.push_back(t);
    }
    const std::size_t n = tokens_.size();
    const std::span<TokenId> ids = arena.PhraseBlock(2 * n, s);
    const bool same_join = same_join_;
    // The key is written where FinishPieces reads it, after the pending keys' bytes (kept there only
    // when it is kBytes); pending_bytes_ is a buffer whose size only grows.
    const std::size_t key_at = pending_size_;
    std::size_t key_size = 0;
    dedup_.clear();
    bool first_peos = false, any_invalid = false;  // the first stem is "<peos>"; a stem is invalid
    std::size_t gold_words = 0, gold_changed = 0;  // GoldStems' counts, were the phrase a reference
    for (std::size_t k = 0; k < n; ++k) {
      auto& e = Token(tokens_[k], stem);
      const std::uint32_t gold_flags = GoldFlags(e, tokens_[k]);
      gold_words += (gold_flags & kGoldWord) != 0;
      gold_changed += (gold_flags & kGoldChanged) != 0;
      const TokenId st = stem ? e.stem : e.token;
      const std::string_view sv = stem ? Lexicon::Unpack(e.stem_str) : e.view();
      // The filters read the phrase's stems (its tokens when unstemmed).
      const std::uint32_t f = stem ? e.flags >> 2 : e.flags & (kTokenInvalid | kTokenPeos);
      if (k == 0 && (f & kTokenPeos)) first_peos = true;
      any_invalid = any_invalid || (f & kTokenInvalid);
      ids[k] = e.token;
      ids[n + k] = st;
      if (!sv.empty()) ph.set_blank(false);
      if (pending_bytes_.size() < key_at + key_size + 1 + sv.size()) {
        pending_bytes_.resize(2 * (key_at + key_size + 1 + sv.size()));
      }
      char* const key = pending_bytes_.data() + key_at;
      if (k > 0) {
        key[key_size++] = ' ';
        if (!same_join) dedup_.append(p_.dedup_join);
      }
      eval_internal::CopyBytes(key + key_size, sv.data(), sv.size());
      key_size += sv.size();
      if (!same_join) dedup_.append(sv);
    }
    ph.set_block(ids, s.size());
    // The key is interned by FinishPieces, with the other new pieces' of the document (PendingKey).
    PendingKey& pk = pending_.emplace_back();
    pk.phrase = &ph;
    if (n == 1) {
      // A one-token phrase's key is its one stem's string, interned already: that string's id.
      ph.key = ids[1];
      pk.kind = PendingKey::kKnown;
    } else if (key_size == s.size() && eval_internal::SameBytes(pending_bytes_.data() + key_at, s.data(), s.size())) {
      // A key that reads as the surface (nothing the stemmer changed) is the surface's bytes, not a copy.
      pk.kind = PendingKey::kSurface;
      pk.hash = Lexicon::Hash(ph.surface());
    } else {
      pk.kind = PendingKey::kBytes;
      pk.key_at = static_cast<std::uint32_t>(key_at);
      pk.key_size = static_cast<std::uint32_t>(key_size);
      pending_size_ = key_at + key_size;
      pk.hash = Lexicon::Hash(std::string_view(pending_bytes_.data() + key_at, key_size));
    }
    if (pk.kind != PendingKey::kKnown) {
      // Two or more tokens: the key holds the ' ' that joins them (Lexicon::InternWords). None: "".
      pk.words = n >= 2;
      if (pk.words) {
        lex.PrefetchWords(pk.hash);
      } else {
        lex.Prefetch(std::string_view(pending_bytes_.data() + key_at, key_size), pk.hash);
      }
    }
    if (!same_join) {
      pk.dedup_at = static_cast<std::uint32_t>(pending_size_);
      pk.dedup_size = static_cast<std::uint32_t>(dedup_.size());
      if (pending_bytes_.size() < pending_size_ + dedup_.size())
        pending_bytes_.resize(2 * (pending_size_ + dedup_.size()));
      eval_internal::CopyBytes(pending_bytes_.data() + pending_size_, dedup_.data(), dedup_.size());
      pending_size_ += dedup_.size();
    }
    // What Doc asks of every prediction, once per phrase rather than once per occurrence (each a
    // look-up of strings spread over the whole lexicon); the invalid substring is looked for in the
    // key once it is interned.
    std::uint8_t flags = 0;
    if (ph.surface() == kPeos) flags |= kPeosSurface;
    if (first_peos) flags |= kPeosStem;
    if (any_invalid) flags |= kInvalid;
    pk.flags = flags;
    pk.gold = PackGold(gold_words, gold_changed);
    return &ph;
  }

  // A new phrase whose key Normalize left to FinishPieces: the key's look-up is in a table of the
  // range's size, a cache miss nearly every time, and a document's new phrases' misses overlap when
  // their look-ups come one after another (their slots requested as each key was made) rather than
  // each between its phrase's normalization and the next's.
  struct PendingKey {
    enum Kind : std::uint8_t { kKnown, kSurface, kBytes };
    Phrase* phrase = nullptr;
    std::uint32_t record = 0;  // its piece's record, whose head FinishPieces completes
    std::uint32_t key_at = 0, key_size = 0, dedup_at = 0, dedup_size = 0;  // in pending_bytes_
    std::uint64_t hash = 0;                                                // the key's (kSurface, kBytes)
    Kind kind = kKnown;
    bool words = false;      // the key joins two or more tokens (Lexicon::InternWords)
    std::uint8_t flags = 0;  // Normalize's, but for the invalid substring
    std::uint16_t gold = 0;
  };

  // Interns the pending phrases' keys in the order their phrases were made (so ids come out as if
  // each had been interned at once: the phrases' dedup keys are indexed by phrase id) and completes
  // their pieces' records.
  void FinishPieces() {
    const bool same_join = same_join_;
    for (const PendingKey& pk : pending_) {
      Phrase& ph = *pk.phrase;
      if (pk.kind == PendingKey::kSurface) {
        ph.key = pk.words ? lex.InternStableWords(ph.surface(), pk.hash) : lex.InternStable(ph.surface(), pk.hash);
      } else if (pk.kind == PendingKey::kBytes) {
        const std::string_view key(pending_bytes_.data() + pk.key_at, pk.key_size);
        ph.key = pk.words ? lex.InternWords(key, pk.hash) : lex.Intern(key, pk.hash);
      }
      if (!same_join) {
        dedup_keys.push_back(lex.Intern(std::string_view(pending_bytes_.data() + pk.dedup_at, pk.dedup_size)));
      }
      std::uint8_t flags = pk.flags;
      if (!p_.invalid_substring.empty() && lex.Str(ph.key).find(p_.invalid_substring) != std::string_view::npos) {
        flags |= kInvalid;
      }
      piece_store.Complete(pk.record, DedupKey(ph), flags, pk.gold);
    }
    pending_.clear();
    pending_size_ = 0;
  }

  Options o_;
  const Profile& p_;
  // Profile::peos, read once rather than compared as strings at every "<peos>" piece.
  enum class Peos : std::uint8_t { kKeep, kFirstToken, kPiece, kPieceInLines };
  Peos peos_ = Peos::kKeep;
  bool same_join_ = true;  // Profile::dedup_join is " ": the dedup key is the match key (DedupKey)
  PorterStemmer stemmer_;
  Profile as_written_;  // p_ without lower-casing, for references compared as written
  std::string surface_, dedup_;              // scratch buffers of Normalize
  std::vector<std::string_view> tokens_;     // a new phrase's tokens while Normalize makes it
  std::vector<std::string> words_;           // the word tokenizer's, which tokens_ views (raw text)
  std::vector<TokenId> alt_;                 // a reference's alternative keys while Doc reads them
  // Of a phrase: its surface is "<peos>", its first stem is, the profile drops it as invalid (its
  // piece's record keeps them: PendingKey, FinishPieces).
  static constexpr std::uint8_t kPeosSurface = 1, kPeosStem = 2, kInvalid = 4;
  std::vector<PendingKey> pending_;  // the new phrases whose keys FinishPieces interns, in order
  std::string pending_bytes_;        // their keys' and dedup keys' bytes: the first pending_size_
  std::size_t pending_size_ = 0;
  // A document's pieces' records (Doc, but for ExHiRD's re-cut pieces): references' forms, predictions.
  std::vector<std::uint32_t> ref_records_, pred_records_;
  eval_internal::TokenTable token_table_;  // every distinct token met (Token)
  std::deque<std::string> owned_;
  PhraseArena piece_bytes_;  // the memo's copies of pieces (o_.consume)
  SmallSet seen_;
  // Per prediction piece kept or repeated, its index in doc.preds (a repeat: its first occurrence's),
  // from the document's first repeat on (written out for the pieces before it then).
  std::vector<std::uint32_t> dup_index_;
  std::vector<Keyphrase> preds_, refs_;   // a document's keyphrases while they are filtered
  std::vector<TokenId> pred_dedups_;      // the dedup keys of preds_ (a repeat looks its first one up)
  std::vector<Keyphrase> refs_all_;       // its references before dedup (Document::refs_before_dedup())
  std::vector<TokenId> src_ids_, src_stems_;  // a document's source while it is tokenized
  std::vector<std::uint32_t> sections_;
  std::vector<std::uint64_t> hashes_;  // HashBytes of a document's re-cut pieces (ExHiRD), in order
};

// Addresses a document's views need in its range's view block (Document::View): the parts of a list
// with both present and absent keyphrases, and the repeats' list. The present counts were set when
// the lists were made (Builder::Doc), so a document whose lists are not mixed is not read again.
std::size_t ViewSlots(const Document& doc, std::span<const std::uint32_t> dup_indices) {
  return Document::Mixed(doc.preds, doc.n_present_preds) + Document::Mixed(doc.refs, doc.n_present_refs) +
         dup_indices.size();
}

// The views of a document (Document::pred_view, ref_view, pred_view_dups), once its keyphrases have
// their final addresses. The addresses are appended to block, which has room for them (ViewSlots).
void FinishDocument(Document& doc, std::span<const std::uint32_t> dup_indices, std::vector<const Keyphrase*>& block) {
  doc.view_block = block.data() + block.size();
  auto parts = [&](std::span<const Keyphrase> kps, std::uint32_t p) {
    if (Document::Mixed(kps, p) > 0) {
      for (const bool present : {true, false}) {
        for (const Keyphrase& k : kps) {
          if (k.present() == present) block.push_back(&k);
        }
      }
    }
  };
  parts(doc.preds, doc.n_present_preds);
  parts(doc.refs, doc.n_present_refs);
  for (std::uint32_t f : dup_indices) block.push_back(&doc.preds[f]);
  doc.n_dup_view = static_cast<std::uint32_t>(dup_indices.size());
}

}  // namespace

std::optional<std::size_t> Corpus::FirstOccurrence(const Document& doc, std::span<const TokenId> stems) const {
  return FirstOccurrenceIn(lex, profile, doc, stems);
}

Prmu Corpus::Classify(const Document& doc, const Keyphrase& kp) const {
  if (kp.phrase->blank()) return Prmu::kPresent;  // boudinfl: an empty keyphrase counts as present
  if (IsPresent(doc, kp.stems())) return Prmu::kPresent;
  std::size_t seen = 0;
  for (TokenId s : kp.stems()) {
    const auto src = doc.src_stems();
    if (std::find(src.begin(), src.end(), s) != src.end()) ++seen;
  }
  if (seen == kp.stems().size()) return Prmu::kReordered;
  if (seen > 0) return Prmu::kMixed;
  return Prmu::kUnseen;
}

namespace {

// Where BuildCorpusImpl's documents come from. A reader has the dataset's and predictions' descriptive
// fields and a Local per building thread: Get(i) gives document i with its predictions, valid until
// Get of document i + 2 (the one being built and the next are held together); Done(i) says it is built.

// An import in memory. When the caller gave it up (an rvalue), each document's raw text is freed
// once it is built, so the import and the corpus are not both held in full at the end of the build.
struct ImportReader {
  static constexpr bool kNumberedIds = false;  // the importers' ids, kept (StreamedCorpus::doc_ids)
  const RawDataset& dataset;
  const RawPredictions* predictions;
  RawDataset* owned_dataset;  // the same objects, or null when the import is not given up
  RawPredictions* owned_predictions;
  std::size_t size() const { return dataset.docs.size(); }
  bool any_refs_stemmed() const {
    return std::any_of(dataset.docs.begin(), dataset.docs.end(), [](const RawDoc& d) { return d.refs_stemmed; });
  }
  bool any_raw_text() const {
    return std::any_of(dataset.docs.begin(), dataset.docs.end(),
                       [](const RawDoc& d) { return d.has_text && !d.pretokenized; });
  }
  bool any_text() const {
    return std::any_of(dataset.docs.begin(), dataset.docs.end(), [](const RawDoc& d) { return d.has_text; });
  }
  struct Local {
    const ImportReader& r;
    // Two documents' views (the one being built and the next), by index parity, and which each holds.
    DocIn in[2];
    std::vector<std::string_view> forms[2], pieces[2];
    std::vector<std::uint32_t> ends[2];
    std::size_t read[2] = {SIZE_MAX, SIZE_MAX};
    Local(const ImportReader& reader, std::size_t /*begin*/) : r(reader) {}
    const DocIn& Get(std::size_t i) {
      const std::size_t b = i & 1;
      if (read[b] == i) return in[b];
      read[b] = i;
      const RawDoc& d = r.dataset.docs[i];
      forms[b].clear();
      ends[b].clear();
      bool one_form_each = true;
      for (const auto& alternatives : d.refs) {
        forms[b].insert(forms[b].end(), alternatives.begin(), alternatives.end());
        ends[b].push_back(static_cast<std::uint32_t>(forms[b].size()));
        one_form_each = one_form_each && alternatives.size() == 1;
      }
      DocIn& x = in[b];
      x = DocIn{};
      x.id = d.id;
      x.has_text = d.has_text;
      x.pretokenized = d.pretokenized;
      x.refs_stemmed = d.refs_stemmed;
      x.title = d.title;
      x.body = d.body;
      x.separator = d.separator;
      x.forms = forms[b];
      if (!one_form_each) x.ref_ends = ends[b];
      if (r.predictions) {
        const RawPrediction& p = r.predictions->docs[i];
        pieces[b].assign(p.phrases.begin(), p.phrases.end());
        x.has_preds = true;
        x.pieces = pieces[b];
        x.rp = &p;
      }
      return x;
    }
    void Done(std::size_t i) {
      // Moved out and destroyed, not assigned an empty one: a std::string assigned from an empty
      // (short) string keeps its heap buffer, and the predictions' bytes stayed to the end that way.
      if (r.owned_dataset) RawDoc(std::move(r.owned_dataset->docs[i]));
      if (r.owned_predictions) RawPrediction(std::move(r.owned_predictions->docs[i]));
    }
    void Finish(std::size_t) {}
  };
};

// Documents split from their lines by the thread that builds them (LineDocuments::View: views into the
// files' bytes, no copy); the lines' memory goes back to the system, in whole 2 MiB extents, every few
// thousand documents.
struct LineReader {
  static constexpr bool kNumberedIds = true;  // document i's id is i + 1 (Local::Get)
  LineDocuments& docs;
  std::size_t size() const { return docs.size(); }
  bool any_refs_stemmed() const { return docs.refs_stemmed(); }
  bool any_raw_text() const { return false; }  // Meng-2017 text is pre-tokenized
  bool any_text() const {                      // the dataset has a text file or not: every document alike
    if (docs.size() == 0) return false;
    LineDocuments::Lines first;
    docs.View(0, first);
    return first.has_text;
  }
  struct Local {
    LineDocuments& docs;
    // The range's first document, and the end of the last release (every 4096 documents). Each release
    // names the range from its start: only whole 2 MiB extents go back, so one that straddles two
    // releases goes with the later one (an extent already given back costs the call next to nothing).
    std::size_t first, released;
    // Two documents: the one being built and the next (read ahead for Builder::Prefetch).
    LineDocuments::Lines lines[2];
    DocIn in[2];
    char id[2][24];                              // the document's number, as the importer names it ("1", "2", ...)
    std::size_t read[2] = {SIZE_MAX, SIZE_MAX};  // which document each holds
    Local(const LineReader& r, std::size_t begin) : docs(r.docs), first(begin), released(begin) {}
    const DocIn& Get(std::size_t i) {
      const std::size_t b = i & 1;
      if (read[b] == i) return in[b];
      read[b] = i;
      LineDocuments::Lines& l = lines[b];
      docs.View(i, l);
      DocIn& x = in[b];
      x.id = std::string_view(id[b],
                              static_cast<std::size_t>(std::to_chars(id[b], id[b] + sizeof id[b], i + 1).ptr - id[b]));
      x.has_text = l.has_text;
      x.pretokenized = true;
      x.refs_stemmed = docs.refs_stemmed();
      x.title = l.title;
      x.body = l.body;
      x.separator = l.separator;
      x.forms = l.refs;
      x.has_preds = true;
      x.pieces = l.predictions;
      return x;
    }
    void Done(std::size_t i) {
      if (i + 1 - released >= 4096) Finish(i + 1);
    }
    void Finish(std::size_t end) {
      docs.Release(first, end);
      released = end;
    }
  };
};

std::optional<std::string> StemmedGoldWarning(const GoldStems& gold, bool refs_as_given) {
  const std::size_t words = gold.words, changed = gold.changed;
  const std::string& example = gold.example;
  if (words < kMinWords) return std::nullopt;
  const double share = static_cast<double>(changed) / static_cast<double>(words);
  const std::string evidence = fmt::format("{:.1f}% of their {} word tokens change when stemmed{}", 100 * share, words,
                                           example.empty() ? "" : " (e.g. " + example + ")");
  if (!refs_as_given && share < kStemmedBelow) {
    return "warning: the references look Porter-stemmed already: " + evidence +
           ", against about 60% for unstemmed English keyphrases; stemming them again stops correct predictions "
           "from matching: add --refs-stemmed (refs_stemmed in kp.load, manifests, Python and the C ABI; "
           "kenchan0226's -target_already_stemmed) to match them as given";
  }
  if (refs_as_given && share > kUnstemmedAbove) {
    return "warning: the references are matched as given (--refs-stemmed, refs_stemmed, or a *.stem.* answer "
           "file) but do not look Porter-stemmed: " + evidence +
           ", against about 4% for stemmed gold; an inflected reference then never matches a prediction: leave "
           "out --refs-stemmed";
  }
  return std::nullopt;
}

// The corpus's fields that describe what was read (no documents yet).
Corpus CorpusHeader(const RawDataset& dataset, const RawPredictions* predictions, const Profile& profile) {
  Corpus corpus;
  corpus.profile = profile;
  corpus.dataset_name = dataset.name;
  corpus.dataset_path = dataset.path;
  corpus.dataset_format = dataset.format;
  corpus.dataset_hash = dataset.content_hash;
  if (predictions) {
    corpus.has_predictions = true;
    corpus.predictions_path = predictions->path;
    corpus.predictions_hash = predictions->content_hash;
  }
  return corpus;
}

// ExHiRD does not stem the references when the keywords file's path contains "semeval" (they are
// released stemmed).
bool StemReferences(const Profile& profile, const RawDataset& dataset) {
  if (!profile.semeval_refs_as_given) return true;
  for (const auto& f : dataset.files) {
    const std::string lower = AsciiLower(f);
    if (lower.find("semeval") != std::string::npos && lower.find("keyword") != std::string::npos) return false;
  }
  return true;
}

// The ranges of a build: range r is documents [start[r], start[r + 1]); thread t builds ranges
// [first[t], first[t + 1]), one contiguous block of documents (n_docs * t / threads onwards, as one range
// a thread was). split: each block is cut into ranges of at most DocsPerRange documents (per-range ids).
struct Ranges {
  std::vector<std::size_t> start, first;
  std::size_t size() const { return start.size() - 1; }
  std::size_t threads() const { return first.size() - 1; }
  std::pair<std::size_t, std::size_t> Of(std::size_t r) const { return {start[r], start[r + 1]}; }
};

Ranges PlanRanges(std::size_t n_docs, std::size_t threads, std::size_t per_range, bool split) {
  Ranges out;
  const std::size_t per = std::max<std::size_t>(per_range, 1);
  for (std::size_t t = 0; t < threads; ++t) {
    const std::size_t begin = n_docs * t / threads, end = n_docs * (t + 1) / threads;
    const std::size_t parts = split ? std::max<std::size_t>((end - begin + per - 1) / per, 1) : 1;
    out.first.push_back(out.start.size());
    for (std::size_t k = 0; k < parts; ++k) out.start.push_back(begin + (end - begin) * k / parts);
  }
  out.first.push_back(out.start.size());
  out.start.push_back(n_docs);
  return out;
}

// Builds every range's documents, each thread its block's ranges in order (builders[r] range r).
// per_range: each range's build tables are freed as soon as it is built (Builder::ReleaseBuildTables).
template <typename Reader>
void BuildRanges(const Reader& reader, Corpus& corpus, std::vector<std::unique_ptr<Builder>>& builders,
                 const Ranges& ranges, bool per_range) {
  // The calling thread builds the last block: the merge frees that range's lexicon and tables on the
  // calling thread, whose allocator then reuses their memory (the metrics' slot columns, allocated
  // next, were fresh pages after a two-thread build: design note 59). With per-range ids each range's
  // build tables go as soon as it is built, on its thread (ReleaseBuildTables).
  eval_internal::OnThreads(
      ranges.threads(),
      [&](std::size_t t) {
        const std::size_t block_end = ranges.start[ranges.first[t + 1]];
        typename Reader::Local local(reader, ranges.start[ranges.first[t]]);
        for (std::size_t r = ranges.first[t]; r < ranges.first[t + 1]; ++r) {
          const auto [begin, end] = ranges.Of(r);
          Builder& b = *builders[r];
          if (r == ranges.first[t]) b.Reserve(end - begin);  // a later range takes the tables it grew
          for (std::size_t i = begin; i < end; ++i) {
            const DocIn& in = local.Get(i);
            if (i + 1 < end) b.Prefetch(i + 1, local.Get(i + 1));  // the next document's memo slots load meanwhile
            b.Doc(i, in, corpus.docs[i]);
            local.Done(i);
          }
          if (per_range && r + 1 < ranges.first[t + 1]) {
            b.PassBuildTables(*builders[r + 1]);
          } else if (per_range) {
            b.ReleaseBuildTables();
          }
        }
        local.Finish(block_end);
      },
      /*caller_last=*/true);
}

constexpr std::size_t kAhead = 16;  // each table slot is requested this many items before it is read

// A later range's strings interned after the corpus's, in their id order (tmap: local id -> corpus
// id). The range's string bytes become the corpus's where they are: its strings are interned without
// a copy (and the bytes of the few already known stay unused). The slots of millions of new keys are
// cache misses: each is requested kAhead strings ahead.
void MergeStrings(Lexicon& lex, Lexicon& from, std::vector<TokenId>& tmap) {
  lex.AdoptBytes(from);
  std::uint64_t hashes[kAhead];
  auto str = [&](std::size_t id) { return from.Str(static_cast<TokenId>(id)); };
  for (std::size_t id = 0; id < std::min(kAhead, tmap.size()); ++id) {
    hashes[id] = Lexicon::Hash(str(id));
    lex.Prefetch(str(id), hashes[id]);
  }
  for (std::size_t id = 0; id < tmap.size(); ++id) {
    const std::uint64_t h = hashes[id % kAhead];
    if (id + kAhead < tmap.size()) {
      hashes[id % kAhead] = Lexicon::Hash(str(id + kAhead));
      lex.Prefetch(str(id + kAhead), hashes[id % kAhead]);
    }
    tmap[id] = lex.InternStable(str(id), h);
  }
}

// A later range's pieces probed in the earlier ranges' memo (the first builder's). Probe must be
// called in piece order, from 0: the memo slots are requested kAhead pieces ahead.
class EarlierPieces {
 public:
  struct Probed {
    bool found;
    std::size_t pos;
    std::uint64_t hash;
  };
  static constexpr std::uint32_t kNew = 0xFFFFFFFFu;

  EarlierPieces(const Builder& first, const Builder& later) : first_(first), later_(later) {}
  Probed Probe(std::size_t k) {
    if (k == 0) {
      for (std::size_t j = 0; j < std::min(kAhead, later_.pieces.size()); ++j) Ahead(j);
    }
    const std::uint32_t record = later_.pieces[k];
    const std::string_view piece = later_.piece_store.View(record);
    const std::uint64_t h = hashes_[k % kAhead];
    if (k + kAhead < later_.pieces.size()) Ahead(k + kAhead);
    Probed r{false, 0, h};
    r.pos = Memo(record).Probe(
        h, [&](std::uint32_t i) { return first_.piece_store.Same(i, piece); }, &r.found);
    return r;
  }
  // The corpus phrase an earlier range made of piece k (probed as r), or kNew.
  std::uint32_t PhraseOf(std::size_t k, const Probed& r) const {
    if (!r.found) return kNew;
    return first_.piece_store.HeadOf(eval_internal::SlotTable::Index(Memo(later_.pieces[k]).At(r.pos))).phrase;
  }

 private:
  const eval_internal::SlotTable& Memo(std::uint32_t record) const {
    return first_.memo[later_.piece_store.HeadOf(record).stem];
  }
  void Ahead(std::size_t k) {
    const std::uint32_t record = later_.pieces[k];
    hashes_[k % kAhead] = eval_internal::HashBytes(later_.piece_store.View(record));
    Memo(record).Prefetch(hashes_[k % kAhead]);
  }
  const Builder& first_;
  const Builder& later_;
  std::uint64_t hashes_[kAhead];
};

// Range b's phrases into the corpus after the earlier ranges' (tmap: its strings' corpus ids): a
// phrase an earlier range made of the same raw piece is that one (normalizing is deterministic),
// others are appended. pmap: local phrase id -> the corpus's phrase. last: no range follows, so the
// earlier ranges' memo is not grown (and its probes ran ahead, on another thread, into known).
void MergePhrases(Corpus& corpus, Builder& first, Builder& b, const std::vector<TokenId>& tmap,
                  std::vector<const Phrase*>& pmap, bool last, const std::vector<std::uint32_t>& known) {
  pmap.resize(b.phrases.size());
  EarlierPieces earlier_pieces(first, b);
  for (std::size_t k = 0; k < b.pieces.size(); ++k) {
    const PieceStore::Head piece = b.piece_store.HeadOf(b.pieces[k]);
    EarlierPieces::Probed r{};
    std::uint32_t earlier = EarlierPieces::kNew;
    if (last) {
      earlier = known[k];
    } else {
      r = earlier_pieces.Probe(k);  // every piece in order, dropped ones too (the requests run ahead)
      earlier = earlier_pieces.PhraseOf(k, r);
    }
    if (piece.phrase == PieceStore::kDropped) continue;  // dropped in every range alike
    // Local phrases are made in piece order: this piece's is the oldest one left.
    if (earlier != EarlierPieces::kNew) {
      pmap[piece.phrase] = &corpus.phrases[earlier];
      b.phrases.pop_front();
      continue;
    }
    Phrase& ph = corpus.phrases.emplace_back(std::move(b.phrases.front()));
    b.phrases.pop_front();
    ph.id = static_cast<std::uint32_t>(corpus.phrases.size() - 1);
    // The ids live in the builder's arena, which the corpus adopts: its own, mutable memory.
    for (const TokenId& x : ph.ids()) const_cast<TokenId&>(x) = tmap[x];
    ph.key = tmap[ph.key];
    if (!b.dedup_keys.empty()) corpus.dedup_keys.push_back(tmap[b.dedup_keys[piece.phrase]]);
    // Remembered for the ranges still to merge; after the last one the memo is dropped unread (and
    // growing it then was the build's peak of memory).
    if (!last) {
      // Only the phrase is read of it (PhraseOf): no dedup key or flags.
      PieceStore::Head head;
      head.phrase = ph.id;
      head.stem = piece.stem;
      const std::uint32_t record = first.piece_store.Add(b.piece_store.View(b.pieces[k]), head);
      first.pieces.push_back(record);
      first.memo[piece.stem].Fill(r.pos, r.hash, record);
    }
    pmap[piece.phrase] = &ph;
  }
}

// Merges a later range b into the corpus (which holds the first builder's and the ranges' before b).
void MergeRange(Corpus& corpus, Builder& first, Builder& b, bool last, std::vector<TokenId>& tmap,
                std::vector<const Phrase*>& pmap) {
  tmap.resize(b.lex.size());
  // The range's own memo is not read again (its pieces are, in order).
  b.memo[0] = eval_internal::SlotTable();
  b.memo[1] = eval_internal::SlotTable();
  // The last range adds nothing to the memo, so its probes only read: they run on a second thread
  // while this one merges the strings (the merge is the build's serial part).
  std::vector<std::uint32_t> known;  // last range: per piece, the corpus phrase an earlier range made
  if (last) {
    known.resize(b.pieces.size());
    eval_internal::OnThreads(2, [&](std::size_t part) {
      if (part == 0) return MergeStrings(corpus.lex, b.lex, tmap);
      EarlierPieces earlier_pieces(first, b);
      for (std::size_t k = 0; k < b.pieces.size(); ++k) known[k] = earlier_pieces.PhraseOf(k, earlier_pieces.Probe(k));
    });
  } else {
    MergeStrings(corpus.lex, b.lex, tmap);
  }
  b.lex = Lexicon();
  MergePhrases(corpus, first, b, tmap, pmap, last, known);
  b.pieces = {};
  b.piece_store = PieceStore();
  corpus.arena.Adopt(std::move(b.arena));
}

// A later range's documents to the corpus's ids: token(x) is a local string id's, phrase(k) the
// keyphrase k's phrase.
template <typename TokenMap, typename PhraseMap>
void RemapRange(Corpus& corpus, std::size_t begin, std::size_t end, const TokenMap& token, const PhraseMap& phrase) {
  auto remap = [&](std::span<const Keyphrase> kps) {
    for (const Keyphrase& kc : kps) {
      Keyphrase& k = const_cast<Keyphrase&>(kc);  // the range's arena (the corpus's now)
      k.phrase = phrase(k);
      // Each extra belongs to one keyphrase, and its keys to the range's arena (the corpus's now).
      if (k.extra()) {
        for (const TokenId& x : k.extra()->alt_keys) const_cast<TokenId&>(x) = token(x);
      }
    }
  };
  for (std::size_t i = begin; i < end; ++i) {
    Document& doc = corpus.docs[i];
    // The range's arena (the corpus's now): its own, mutable memory.
    for (const TokenId& x : doc.src_tokens()) const_cast<TokenId&>(x) = token(x);
    for (const TokenId& x : doc.src_stems()) const_cast<TokenId&>(x) = token(x);
    remap(doc.refs);
    remap(doc.preds);
    remap(doc.refs_before_dedup());
  }
}

// How a later range's ids become the corpus's. Merged (kCorpus): tmap and pmap of MergeRange. Appended
// (kPerRange): its strings' and phrases' ids shifted past the ranges' before it; its phrases are
// corpus.phrases[phrase_base, phrase_base + n_phrases), in their local order.
struct RangeIds {
  const std::vector<TokenId>* tmap = nullptr;
  const std::vector<const Phrase*>* pmap = nullptr;
  TokenId token_base = 0;
  std::uint32_t phrase_base = 0;
  std::size_t n_phrases = 0;
};

// A later range's phrases appended to the corpus's as they are (kPerRange): moved in their local order,
// each freed from the range as it goes (as the merge frees them: the calling thread's allocator then
// reuses that memory for what comes next, the metrics' slot columns). Their ids are shifted later, on
// the range's own thread (FinishRange).
void AppendRange(Corpus& corpus, Builder& b, RangeIds& r) {
  b.memo[0] = eval_internal::SlotTable();
  b.memo[1] = eval_internal::SlotTable();
  b.pieces = {};
  b.piece_store = PieceStore();
  if (corpus.phrases.size() + b.phrases.size() > std::numeric_limits<std::uint32_t>::max()) {
    throw std::length_error("BuildCorpus: more than 2^32 - 1 phrases");
  }
  r.token_base = corpus.lex.AppendUnindexed(std::move(b.lex));
  b.lex = Lexicon();
  r.phrase_base = static_cast<std::uint32_t>(corpus.phrases.size());
  r.n_phrases = b.phrases.size();
  for (TokenId x : b.dedup_keys) corpus.dedup_keys.push_back(x + r.token_base);
  while (!b.phrases.empty()) {
    corpus.phrases.emplace_back(std::move(b.phrases.front()));
    b.phrases.pop_front();
  }
  corpus.arena.Adopt(std::move(b.arena));
}

// An appended range's phrases (kPerRange) to the corpus's ids. Run on another thread than the range's
// FinishRange, which gives its keyphrases their phrases' addresses and never reads a phrase.
void ShiftPhraseIds(Corpus& corpus, const RangeIds& ids) {
  const TokenId base = ids.token_base;
  for (std::size_t i = ids.phrase_base; i < ids.phrase_base + ids.n_phrases; ++i) {
    Phrase& ph = corpus.phrases[i];  // the range's own, its ids in its arena (the corpus's now)
    for (const TokenId& x : ph.ids()) const_cast<TokenId&>(x) += base;
    ph.key += base;
    ph.id += ids.phrase_base;
  }
}

// A range's documents to the corpus's ids (ids: null for the first range; appended, its phrases are
// ShiftPhraseIds'), then their views, into the range's own block. Document i is corpus.docs[i - base]
// (base, with ids null: a streamed range's corpus holds its own documents only).
void FinishRange(Corpus& corpus, const Builder& b, std::size_t begin, std::size_t end, const RangeIds* ids,
                 std::vector<const Keyphrase*>& block, std::size_t base = 0) {
  if (ids && ids->tmap) {
    const std::vector<TokenId>& tmap = *ids->tmap;
    const std::vector<const Phrase*>& pmap = *ids->pmap;
    RemapRange(
        corpus, begin, end, [&](TokenId x) { return tmap[x]; },
        // The local id (Builder::Listed) in place of the address.
        [&](const Keyphrase& k) { return pmap[reinterpret_cast<std::uintptr_t>(k.phrase)]; });
  } else if (ids) {
    const TokenId base = ids->token_base;
    const std::uint32_t phrase_base = ids->phrase_base;
    RemapRange(
        corpus, begin, end, [&](TokenId x) { return x + base; },
        // The local id (Builder::Listed) in place of the address.
        [&](const Keyphrase& k) { return &corpus.phrases[phrase_base + reinterpret_cast<std::uintptr_t>(k.phrase)]; });
  }
  auto dups_of = [&](std::size_t i, std::size_t& d) -> std::span<const std::uint32_t> {
    return d < b.dups.size() && b.dups[d].doc == i ? b.DupsOf(d++) : std::span<const std::uint32_t>{};
  };
  std::size_t slots = 0, d = 0;
  for (std::size_t i = begin; i < end; ++i) slots += ViewSlots(corpus.docs[i - base], dups_of(i, d));
  block.reserve(slots);  // exactly: the views' addresses never move
  d = 0;
  for (std::size_t i = begin; i < end; ++i) FinishDocument(corpus.docs[i - base], dups_of(i, d), block);
}

// Predictions (if any) with one line for each document of the dataset, or the input error naming both.
Status OnePredictionLineADocument(const RawDataset& dataset, const RawPredictions* predictions) {
  if (predictions && predictions->docs.size() != dataset.docs.size()) {
    return Error::Input(fmt::format("{}: {} prediction lines for {} documents of {} (expected one per document)",
                                    predictions->path, predictions->docs.size(), dataset.docs.size(), dataset.path));
  }
  return Status::Ok();
}

// The phases of every BuildCorpus: documents built in contiguous ranges, one builder each; the
// ranges merged in order; each range's documents remapped and given their views.
template <typename Reader>
Result<Corpus> BuildCorpusImpl(const Reader& reader, const RawDataset& dataset, const RawPredictions* predictions,
                               const Profile& profile, int threads, bool consume, const ChoosePhraseIds& choose_ids) {
  if (Status st = OnePredictionLineADocument(dataset, predictions); !st.ok()) return st.error();
  Corpus corpus = CorpusHeader(dataset, predictions, profile);
  const bool stem_refs = StemReferences(profile, dataset);
  // References released stemmed (RawDoc::refs_stemmed: SemEval *.stem.final, --refs-stemmed) are
  // matched as given: stemming "databas" again gives "databa" and a correct prediction stops matching.
  corpus.refs_stemmed = reader.any_refs_stemmed();
  const bool raw_text = reader.any_raw_text();
  const std::size_t n_docs = reader.size();
  corpus.docs.resize(n_docs);

  // A range a thread; asked for ids per range, ranges of at most DocsPerRange documents (each thread
  // builds its block's in turn). The choice is asked before the build when it could give two ranges.
  const std::size_t n_threads = eval_internal::RangeThreads(n_docs, threads);
  const std::size_t per_range = eval_internal::DocsPerRange();
  const bool may_split = n_threads > 1 || n_docs > per_range;
  const bool merged = !may_split || choose_ids == nullptr || choose_ids() == PhraseIds::kCorpus;
  corpus.phrase_ids = merged ? PhraseIds::kCorpus : PhraseIds::kPerRange;
  const Ranges ranges = PlanRanges(n_docs, n_threads, per_range, !merged);
  const std::size_t n = ranges.size();
  std::vector<std::unique_ptr<Builder>> builders;
  for (std::size_t t = 0; t < n; ++t) {
    builders.push_back(
        std::make_unique<Builder>(Builder::Options{&corpus.profile, raw_text, stem_refs, consume, t > 0}));
  }
  BuildRanges(reader, corpus, builders, ranges, !merged);

  // The first builder's lexicon and phrases are the corpus's. Merged, in range order: every later one's
  // strings are interned after them in its id order and its phrases not seen before (same raw piece)
  // appended, so ids come out as one builder in document order would give them. Appended: every later
  // one's strings and phrases follow, as they are, their ids shifted (in FinishRange).
  Builder& first = *builders[0];
  corpus.lex = std::move(first.lex);
  corpus.arena.Adopt(std::move(first.arena));
  corpus.phrases = std::move(first.phrases);  // a deque moves its blocks: phrase addresses stay
  corpus.dedup_keys = std::move(first.dedup_keys);
  std::vector<std::vector<TokenId>> token_map(n);
  std::vector<std::vector<const Phrase*>> phrase_map(n);
  std::vector<RangeIds> range_ids(n);
  if (merged) {
    for (std::size_t t = 1; t < n; ++t) {
      MergeRange(corpus, first, *builders[t], t + 1 == n, token_map[t], phrase_map[t]);
      range_ids[t].tmap = &token_map[t];
      range_ids[t].pmap = &phrase_map[t];
    }
  } else {
    for (std::size_t t = 1; t < n; ++t) AppendRange(corpus, *builders[t], range_ids[t]);
  }
  first.memo[0] = eval_internal::SlotTable();
  first.memo[1] = eval_internal::SlotTable();
  first.pieces = {};
  first.piece_store = PieceStore();
  corpus.view_blocks.resize(n);
  corpus.extras.resize(n);
  corpus.token_probs.resize(n);
  corpus.sources.resize(n);
  for (std::size_t t = 0; t < n; ++t) {  // a deque moves its blocks: addresses stay
    corpus.extras[t] = std::move(builders[t]->extras);
    corpus.token_probs[t] = std::move(builders[t]->probs);
    corpus.sources[t] = std::move(builders[t]->sources);
  }
  eval_internal::OnThreads(ranges.threads(), [&](std::size_t t) {
    for (std::size_t r = ranges.first[t]; r < ranges.first[t + 1]; ++r) {
      const auto [begin, end] = ranges.Of(r);
      FinishRange(corpus, *builders[r], begin, end, r > 0 ? &range_ids[r] : nullptr, corpus.view_blocks[r]);
      // The next range's phrases, while that range's thread remaps its documents (each range's are
      // shifted once, by the thread that finished the range before it: the first range's finish is the
      // shortest, nothing to remap).
      if (!merged && r + 1 < n) ShiftPhraseIds(corpus, range_ids[r + 1]);
    }
  });
  GoldStems gold;
  for (const auto& b : builders) gold.Add(b->gold);
  if (auto w = StemmedGoldWarning(gold, !stem_refs || corpus.refs_stemmed)) corpus.warnings.push_back(*w);
  return corpus;
}

// A streamed range's builder's strings, phrases and lists become its own corpus's, and its documents
// are finished as a one-range build's are (BuildCorpusImpl's first range).
void TakeRange(Corpus& range, Builder& b, std::size_t begin, std::size_t end) {
  range.lex = std::move(b.lex);
  range.arena.Adopt(std::move(b.arena));
  range.phrases = std::move(b.phrases);  // a deque moves its blocks: phrase addresses stay
  range.dedup_keys = std::move(b.dedup_keys);
  range.extras.resize(1);
  range.token_probs.resize(1);
  range.sources.resize(1);
  range.view_blocks.resize(1);
  range.extras[0] = std::move(b.extras);
  range.token_probs[0] = std::move(b.probs);
  range.sources[0] = std::move(b.sources);
  FinishRange(range, b, begin, end, nullptr, range.view_blocks[0], begin);
}

// StreamCorpus: BuildCorpusImpl's ranges with per-range ids, each finished as a corpus of its own on
// its thread, handed to sinks.range and freed; the next range of the thread takes the build tables
// (Builder::PassBuildTables) and, through the allocator, the memory of the range before.
template <typename Reader>
Result<StreamedCorpus> StreamCorpusImpl(const Reader& reader, const RawDataset& dataset,
                                        const RawPredictions* predictions, const Profile& profile, int threads,
                                        const CorpusSinks& sinks) {
  if (Status st = OnePredictionLineADocument(dataset, predictions); !st.ok()) return st.error();
  auto header = std::make_shared<Corpus>(CorpusHeader(dataset, predictions, profile));
  header->refs_stemmed = reader.any_refs_stemmed();
  header->phrase_ids = PhraseIds::kPerRange;
  const bool stem_refs = StemReferences(profile, dataset);
  const bool raw_text = reader.any_raw_text();
  const std::size_t n_docs = reader.size();
  const Ranges ranges =
      PlanRanges(n_docs, eval_internal::RangeThreads(n_docs, threads), eval_internal::DocsPerRange(), true);
  if (sinks.start) {
    if (Status st = sinks.start(header, StreamPlan{ranges.start, reader.any_text()}); !st.ok()) return st.error();
  }
  StreamedCorpus out;
  // A line dataset's ids are its documents' numbers (LineReader::Local): nothing to keep of them.
  if constexpr (Reader::kNumberedIds) {
    out.numbered_ids = n_docs;
  } else {
    out.doc_ids.resize(n_docs);
  }
  std::vector<GoldStems> gold(ranges.threads());
  const Builder::Options options{&header->profile, raw_text, stem_refs, /*consume=*/true, /*local_ids=*/false};
  eval_internal::OnThreads(
      ranges.threads(),
      [&](std::size_t t) {
        typename Reader::Local local(reader, ranges.start[ranges.first[t]]);
        auto b = std::make_unique<Builder>(options);
        const auto [first_begin, first_end] = ranges.Of(ranges.first[t]);
        b->Reserve(first_end - first_begin);  // a later range takes the tables this one grew
        for (std::size_t r = ranges.first[t]; r < ranges.first[t + 1]; ++r) {
          const auto [begin, end] = ranges.Of(r);
          Corpus range = CorpusHeader(dataset, predictions, profile);
          range.refs_stemmed = header->refs_stemmed;
          range.phrase_ids = PhraseIds::kPerRange;
          range.docs.resize(end - begin);
          for (std::size_t i = begin; i < end; ++i) {
            const DocIn& in = local.Get(i);
            if (i + 1 < end) b->Prefetch(i + 1, local.Get(i + 1));
            b->Doc(i, in, range.docs[i - begin]);
            local.Done(i);
          }
          std::unique_ptr<Builder> next;
          if (r + 1 < ranges.first[t + 1]) {
            next = std::make_unique<Builder>(options);
            b->PassBuildTables(*next);
          } else {
            b->ReleaseBuildTables();
          }
          TakeRange(range, *b, begin, end);
          gold[t].Add(b->gold);
          b = std::move(next);
          if (sinks.range) sinks.range(range, begin);
          if constexpr (!Reader::kNumberedIds) {
            for (std::size_t i = begin; i < end; ++i) out.doc_ids[i] = std::move(range.docs[i - begin].id);
          }
        }
        local.Finish(ranges.start[ranges.first[t + 1]]);
      },
      /*caller_last=*/true);
  GoldStems all;
  for (const GoldStems& g : gold) all.Add(g);
  if (auto w = StemmedGoldWarning(all, !stem_refs || header->refs_stemmed)) out.warnings.push_back(*w);
  out.header = std::move(header);
  return out;
}

}  // namespace

Result<Corpus> BuildCorpus(const RawDataset& dataset, const RawPredictions* predictions, const Profile& profile,
                           int threads, const ChoosePhraseIds& choose_ids) {
  return BuildCorpusImpl(ImportReader{dataset, predictions, nullptr, nullptr}, dataset, predictions, profile, threads,
                         false, choose_ids);
}

Result<Corpus> BuildCorpus(RawDataset&& dataset, std::optional<RawPredictions>&& predictions, const Profile& profile,
                           int threads, const ChoosePhraseIds& choose_ids) {
  RawPredictions* preds = predictions ? &*predictions : nullptr;
  auto corpus = BuildCorpusImpl(ImportReader{dataset, preds, &dataset, preds}, dataset, preds, profile, threads, true,
                                choose_ids);
  dataset.docs = {};
  if (preds) preds->docs = {};
  return corpus;
}

Result<Corpus> BuildCorpus(LineDocuments&& documents, const Profile& profile, int threads,
                           const ChoosePhraseIds& choose_ids) {
  LineDocuments docs = std::move(documents);  // freed on return, whatever the caller does
  // The descriptive fields only: the documents come from the reader.
  Result<Corpus> corpus =
      BuildCorpusImpl(LineReader{docs}, docs.dataset(), &docs.predictions(), profile, threads, true, choose_ids);
  // A mapped file cut shorter meanwhile read as zeros: that, not the corpus or its error, is the answer.
  if (Status st = docs.CheckUnchanged(); !st.ok()) return st.error();
  return corpus;
}

Result<StreamedCorpus> StreamCorpus(RawDataset&& dataset, std::optional<RawPredictions>&& predictions,
                                    const Profile& profile, int threads, const CorpusSinks& sinks) {
  RawPredictions* preds = predictions ? &*predictions : nullptr;
  auto streamed =
      StreamCorpusImpl(ImportReader{dataset, preds, &dataset, preds}, dataset, preds, profile, threads, sinks);
  dataset.docs = {};
  if (preds) preds->docs = {};
  return streamed;
}

Result<StreamedCorpus> StreamCorpus(LineDocuments&& documents, const Profile& profile, int threads,
                                    const CorpusSinks& sinks) {
  LineDocuments docs = std::move(documents);  // freed on return, whatever the caller does
  Result<StreamedCorpus> streamed =
      StreamCorpusImpl(LineReader{docs}, docs.dataset(), &docs.predictions(), profile, threads, sinks);
  // A mapped file cut shorter meanwhile read as zeros: that, not the run or its error, is the answer.
  if (Status st = docs.CheckUnchanged(); !st.ok()) return st.error();
  return streamed;
}

Status AttachSources(RawDataset& dataset, const std::string& path) {
  constexpr std::string_view kExpected = "a source file, one document a line";
  // A directory, FIFO or /dev/zero is refused before it is read (it used to attach nothing, or never end).
  Result<std::string> read = ReadRegularFile(path, kExpected);
  if (!read) return read.error();
  const std::string& file = *read;
  std::string_view text = file;
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // as the importers do (docs/formats.md)
  if (text.empty()) return Error::Input(fmt::format("{}: no source lines (expected {})", path, kExpected));
  std::string line;
  std::size_t i = 0;
  for (std::size_t start = 0; start < text.size(); ++i) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    line.assign(text.substr(start, end - start));
    start = end + 1;
    if (!line.empty() && line.back() == '\r' && end < text.size()) line.pop_back();
    if (line.find('\r') != std::string::npos) {
      return Error::Input(
          fmt::format("{}:{}: carriage return (CR) without a line feed after it (expected LF or CRLF "
                      "line ends; convert CR-only files with `tr '\\r' '\\n'`)",
                      path, i + 1));
    }
    if (i >= dataset.docs.size()) {
      return Error::Input(fmt::format("{}:{}: more source lines than the {} documents of {} (expected at most {})",
                                      path, i + 1, dataset.docs.size(), dataset.path, dataset.docs.size()));
    }
    std::size_t bad = 0;
    if (!ValidUtf8(line, &bad)) {
      return Error::Input(fmt::format("{}:{}: invalid UTF-8 at byte {} (expected UTF-8 text)", path, i + 1, bad + 1));
    }
    RawDoc& d = dataset.docs[i];
    // Same split as the line importers: at the first " <eos> ", one space dropped on each side.
    const auto pos = line.find("<eos>");
    if (pos == std::string::npos) {
      d.title.clear();
      d.body = line;
      d.separator.clear();
    } else {
      d.title = line.substr(0, pos > 0 && line[pos - 1] == ' ' ? pos - 1 : pos);
      const std::size_t after = pos + 5 < line.size() && line[pos + 5] == ' ' ? pos + 6 : pos + 5;
      d.body = line.substr(std::min(after, line.size()));
      d.separator = "<eos>";
    }
    d.pretokenized = true;
    d.has_text = true;
  }
  // The attached text is part of what was evaluated: it enters the dataset's content hash (the file's
  // bytes with a final newline, as when it was read line by line).
  const std::string hashed = file.ends_with('\n') ? file : file + '\n';
  dataset.content_hash = Sha256Hex(dataset.content_hash + "\nsource:" + Sha256Hex(hashed));
  dataset.files.push_back(path);
  return Status::Ok();
}

}  // namespace kplab
