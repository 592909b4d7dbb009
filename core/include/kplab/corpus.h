// A Corpus is a dataset (and optionally one system's predictions) normalized under a profile: every
// source is tokenized and stemmed once, every keyphrase carries its surface, token ids, stem ids and an
// interned stem key, and present/absent is decided against the source. Metrics work on this.
//
// Threads: a built Corpus is read-only: one Corpus (and its Documents and lists) may be read from several
// threads at once, as the scoring lanes do; building one (BuildCorpus) uses threads of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kplab/index_iterator.h"
#include "kplab/io.h"
#include "kplab/lexicon.h"
#include "kplab/profile.h"
#include "kplab/result.h"

namespace kplab {

// Storage with stable addresses for the corpus's phrases: their surfaces and token/stem id sequences
// live in large chunks (one allocation per 256 KiB) rather than three heap blocks per phrase.
class PhraseArena {
 public:
  std::string_view Copy(std::string_view s);
  std::span<TokenId> Ids(std::size_t n);  // uninitialized: the caller writes every id
  // A phrase's block (Phrase::set_block): room for n ids (uninitialized: the caller writes every one),
  // followed by a copy of surface. The span points at the block even when n is 0.
  std::span<TokenId> PhraseBlock(std::size_t n, std::string_view surface);
  // A copy of objects that need no destructor (the documents' keyphrase lists).
  template <typename T>
  std::span<const T> CopyOf(std::span<const T> items) {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);
    if (items.empty()) return {};
    T* out = static_cast<T*>(Take(items.size_bytes(), alignof(T)));
    std::memcpy(static_cast<void*>(out), items.data(), items.size_bytes());
    return {out, items.size()};
  }
  // Takes over another arena's chunks (their addresses do not move).
  void Adopt(PhraseArena&& other);

 private:
  void* Take(std::size_t bytes, std::size_t align);
  std::vector<std::unique_ptr<std::byte[]>> chunks_;
  std::byte* pos_ = nullptr;
  std::size_t left_ = 0;
};

// A distinct normalized phrase, interned once per corpus (Corpus::phrases): the same string in many
// documents is tokenized and stemmed once. Its ids and surface are one block of Corpus::arena
// (PhraseArena::PhraseBlock; or, for a phrase made by hand, storage its maker keeps alive): the token
// ids, the stem ids, then the surface's bytes, so that one pointer finds all three.
// Twenty-four bytes: a million documents of distinct phrases hold some four million. (The key under the
// profile's dedup_join, where that is not ' ', is Corpus::DedupKey's.)
struct Phrase {
  // After strip/lower/cleanup.
  std::string_view surface() const {
    return {reinterpret_cast<const char*>(ids_ + 2 * std::size_t{n_}), surface_size_};
  }
  std::span<const TokenId> tokens() const { return {ids_, n_}; }      // token ids (lower-cased)
  std::span<const TokenId> stems() const { return {ids_ + n_, n_}; }  // stem ids, one per token
  // The token ids then the stem ids, back to back.
  std::span<const TokenId> ids() const { return {ids_, 2 * std::size_t{n_}}; }
  // No token or only empty tokens: never present.
  bool blank() const { return blank_; }
  void set_blank(bool b) { blank_ = b; }
  // ids: n token ids followed by their n stem ids, then the surface's surface_size bytes right after the
  // last id (PhraseArena::PhraseBlock lays them out so), kept alive by the phrase's maker.
  void set_block(std::span<const TokenId> ids, std::size_t surface_size) {
    ids_ = ids.data();
    n_ = static_cast<std::uint32_t>(ids.size() / 2);
    surface_size_ = static_cast<std::uint32_t>(surface_size);
  }

 private:
  const TokenId* ids_ = nullptr;
  std::uint32_t surface_size_ = 0;
  std::uint32_t n_ : 31 = 0;
  std::uint32_t blank_ : 1 = 1;

 public:
  TokenId key = kNoToken;  // id of the stems joined by ' ' (the match key)
  std::uint32_t id = 0;    // index in Corpus::phrases
};
static_assert(sizeof(Phrase) == 24);

// What only some keyphrases carry, kept apart so that a keyphrase is three words (a million documents
// hold some 14 million keyphrases): alternative forms, a ranked list's score, token probabilities.
struct KeyphraseExtra {
  std::span<const TokenId> alt_keys;  // keys of alternative forms (references only; SemEval '+', KPTimes)
  double score = 0;                   // confidence from a ranked-list file (JSONL "score")
  // Predictions from a "tokens" file: the generated tokens and their log-probabilities (points into
  // Document::pred_probs).
  const TokenProbs* probs = nullptr;
};

// One occurrence of a phrase in a document's reference or prediction list. Sixteen bytes: a million
// documents hold some 14 million keyphrases.
struct Keyphrase {
  const Phrase* phrase = nullptr;  // owned by the corpus

  // Owned by the corpus (Corpus::extras) or, for a keyphrase made by hand, by its maker; null when the
  // keyphrase has none of its fields.
  KeyphraseExtra* extra() const { return reinterpret_cast<KeyphraseExtra*>(bits_ & ~kFlags); }
  bool present() const { return (bits_ & kPresent) != 0; }      // meaningful only if the document has text
  bool after_peos() const { return (bits_ & kAfterPeos) != 0; }  // the generator placed it after its <peos> marker
  void set_extra(KeyphraseExtra* e) { bits_ = reinterpret_cast<std::uintptr_t>(e) | (bits_ & kFlags); }
  void set_present(bool v) { bits_ = v ? bits_ | kPresent : bits_ & ~kPresent; }
  void set_after_peos(bool v) { bits_ = v ? bits_ | kAfterPeos : bits_ & ~kAfterPeos; }

  std::string_view surface() const { return phrase->surface(); }
  std::span<const TokenId> tokens() const { return phrase->tokens(); }
  std::span<const TokenId> stems() const { return phrase->stems(); }
  TokenId key() const { return phrase->key; }
  std::span<const TokenId> alt_keys() const { return extra() ? extra()->alt_keys : std::span<const TokenId>{}; }
  double score() const { return extra() ? extra()->score : 0; }
  const TokenProbs* probs() const { return extra() ? extra()->probs : nullptr; }

 private:
  // The extra's address with the two flags in its low bits (a KeyphraseExtra is 8-byte aligned).
  static constexpr std::uintptr_t kPresent = 1, kAfterPeos = 2, kFlags = 3;
  std::uintptr_t bits_ = 0;
};
static_assert(alignof(KeyphraseExtra) >= 4 && sizeof(Keyphrase) == 16);

// A list of keyphrases, in order, read as a sequence of `const Keyphrase*` (as a std::span of them
// reads): either keyphrase objects in place (a document's own list, or the present or absent part of
// it when that is the whole list: no copy) or an array of their addresses (a filtered or reordered
// list). Sixteen bytes, copied by value; does not own what it lists.
class KeyphraseList {
 public:
  using iterator = IndexIterator<KeyphraseList, const Keyphrase*>;
  using const_iterator = iterator;
  using value_type = const Keyphrase*;
  using size_type = std::size_t;

  KeyphraseList() = default;
  KeyphraseList(std::span<const Keyphrase> in_place)  // NOLINT: implicit, as a span converts
      : p_(in_place.data()), n_(static_cast<std::uint32_t>(in_place.size())), in_place_(true) {}
  KeyphraseList(std::span<const Keyphrase* const> addresses)  // NOLINT
      : p_(addresses.data()), n_(static_cast<std::uint32_t>(addresses.size())) {}
  KeyphraseList(const std::vector<const Keyphrase*>& addresses)  // NOLINT
      : KeyphraseList(std::span<const Keyphrase* const>(addresses)) {}
  template <std::size_t N>
  KeyphraseList(const Keyphrase* const (&addresses)[N])  // NOLINT
      : KeyphraseList(std::span<const Keyphrase* const>(addresses)) {}

  std::size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  const Keyphrase* operator[](std::size_t i) const {
    return in_place_ ? static_cast<const Keyphrase*>(p_) + i : static_cast<const Keyphrase* const*>(p_)[i];
  }
  const Keyphrase* front() const { return (*this)[0]; }
  const Keyphrase* back() const { return (*this)[n_ - 1]; }
  iterator begin() const { return {this, 0}; }
  iterator end() const { return {this, n_}; }
  // The first n items (n <= size()), the same storage.
  KeyphraseList first(std::size_t n) const {
    KeyphraseList l = *this;
    l.n_ = static_cast<std::uint32_t>(n);
    return l;
  }
  // The same storage and length (not merely the same items).
  bool SameAs(const KeyphraseList& o) const { return p_ == o.p_ && n_ == o.n_ && in_place_ == o.in_place_; }
  // The same storage from the same first item: one list is a prefix (first(n)) of the other.
  bool SharesStart(const KeyphraseList& o) const { return p_ == o.p_ && in_place_ == o.in_place_; }

 private:
  const void* p_ = nullptr;
  std::uint32_t n_ = 0;
  bool in_place_ = false;
};

// Present/Reordered/Mixed/Unseen (Boudin & Gallina 2021).
enum class Prmu { kPresent, kReordered, kMixed, kUnseen };
const char* PrmuName(Prmu p);

// A document's tokenized source, for documents with text only (Document::source).
struct DocumentSource {
  std::span<const TokenId> tokens, stems;
  std::span<const std::uint32_t> section_starts;
  std::uint32_t title_end = 0, body_start = 0;
};

// What few documents carry (a reference line with a repeat, a "tokens" file's whole sequence), kept
// apart so that every document does not pay for it (Document::extra, in the corpus's arena).
struct DocumentExtra {
  // The references before the profile's dedup dropped a repeat (Document::refs_before_dedup()).
  std::span<const Keyphrase> refs_before_dedup;
  // A "tokens" file's whole generated sequence (RawPrediction::sequence_logprobs).
  std::span<const double> sequence_logprobs;
};

struct Document {
  std::string id;
  // The source, in the corpus (Corpus::sources); null without text (then the spans are empty).
  const DocumentSource* source = nullptr;
  std::span<const TokenId> src_tokens() const { return source ? source->tokens : std::span<const TokenId>{}; }
  std::span<const TokenId> src_stems() const { return source ? source->stems : std::span<const TokenId>{}; }
  // Start index of each section in src_* (title, body).
  std::span<const std::uint32_t> section_starts() const {
    return source ? source->section_starts : std::span<const std::uint32_t>{};
  }
  // The title is src_*[0, title_end) and the body src_*[body_start, end), as the profile tokenized them
  // (a separator token kept in the source, ExHiRD's "<eos>", belongs to neither). An empty title is an
  // empty range even where the profile gives it a token (KPEval's split(' ') of "").
  std::uint32_t title_end() const { return source ? source->title_end : 0; }
  std::uint32_t body_start() const { return source ? source->body_start : 0; }
  // In the corpus's arena (Corpus::arena), each document's together: no heap block per list.
  std::span<const Keyphrase> refs;
  std::span<const Keyphrase> preds;
  // Null unless the document has one of DocumentExtra's lists (in the corpus's arena).
  const DocumentExtra* extra = nullptr;
  // Set only when the reference line had a repeat the profile's dedup dropped (ref_view_dups).
  std::span<const Keyphrase> refs_before_dedup() const {
    return extra ? extra->refs_before_dedup : std::span<const Keyphrase>{};
  }
  // A "tokens" file's whole generated sequence (RawPrediction::sequence_logprobs), in the corpus's
  // arena; empty otherwise. (The predictions' own token probabilities: Keyphrase::probs.)
  std::span<const double> sequence_logprobs() const {
    return extra ? extra->sequence_logprobs : std::span<const double>{};
  }
  // The counts and flags sit together, without padding between them (paid a million times over).
  int n_pred_pieces = 0;  // prediction pieces in the file line before any filtering
  // Prediction pieces the profile dropped for an invalid token such as <unk> (Profile::invalid_tokens /
  // invalid_substring). Calibration reports them, with n_pred_dups().
  int n_pred_invalid = 0;
  bool has_text = false;
  bool one2set = false;  // the predictions were decoded set-style (One2Set)
  // The document's lists for zero-copy views, in order: v = 0 all, 1 present, 2 absent. The whole list
  // and a part that is the whole list (no text: every keyphrase is absent) are the keyphrases in
  // place; only a list with both present and absent keyphrases has its parts as addresses, in
  // Corpus::view_blocks.
  KeyphraseList pred_view(int v) const { return View(preds, n_present_preds, 0, v); }
  KeyphraseList ref_view(int v) const { return View(refs, n_present_refs, Mixed(preds, n_present_preds), v); }
  // The predictions before dedup (after every other filter), a repeat pointing at its first
  // occurrence in preds; empty when the line had no repeat (then it equals pred_view(0)). Diversity
  // metrics count repeats (KPEval's diversity_metric.py does not dedup).
  KeyphraseList pred_view_dups() const {
    const std::size_t at = Mixed(preds, n_present_preds) + Mixed(refs, n_present_refs);
    return std::span<const Keyphrase* const>(view_block ? view_block + at : nullptr, n_dup_view);
  }
  // Repeats the profile's dedup dropped: what pred_view_dups holds beyond preds (empty when none).
  int n_pred_dups() const { return n_dup_view == 0 ? 0 : static_cast<int>(n_dup_view - preds.size()); }
  // The references before dedup, in file order, each with its own phrase (a repeat keeps its own
  // surface, which may differ from the first occurrence's: "neural networks" after "neural network")
  // and presence, without alternative forms. KPEval pairs these with the flags of the deduplicated list
  // (its ROUGE and BERTScore strings); kplab's metrics read refs.
  KeyphraseList ref_view_dups() const {
    const std::span<const Keyphrase> before = refs_before_dedup();
    return before.empty() ? KeyphraseList(refs) : before;
  }
  // Set by BuildCorpus for the views: how many of preds and refs are present, how long the repeats'
  // list is (0 without a repeat), and where the document's addresses start in Corpus::view_blocks.
  std::uint32_t n_present_preds = 0, n_present_refs = 0, n_dup_view = 0;
  const Keyphrase* const* view_block = nullptr;

  // Addresses a list of keyphrases, p of them present, takes in the view block: all of them (present
  // ones, then absent ones) when mixed, none otherwise.
  static std::size_t Mixed(std::span<const Keyphrase> kps, std::uint32_t p) {
    return p > 0 && p < kps.size() ? kps.size() : 0;
  }

 private:
  KeyphraseList View(std::span<const Keyphrase> kps, std::uint32_t p, std::size_t at, int v) const {
    if (v == 0) return kps;
    const bool present = v == 1;
    if (p == 0) return present ? std::span<const Keyphrase>{} : kps;
    if (p == kps.size()) return present ? kps : std::span<const Keyphrase>{};
    return std::span<const Keyphrase* const>(view_block + at + (present ? 0 : p), present ? p : kps.size() - p);
  }
};
// The id's string and 80 bytes (112 with libstdc++): a million documents hold a million of them.
static_assert(sizeof(Document) == sizeof(std::string) + 80);

// What a phrase id, and a key's or token's id, names (BuildCorpus). kCorpus: one string of the corpus,
// whichever documents it occurs in (one id per string, one phrase per normalized piece), as every
// consumer of phrases across documents needs (the embedding plan, SemR-p, homogeneity, the Lua corpus
// API). kPerRange: the same within each range of documents built together, and unique over the corpus,
// but a string met in two ranges has two ids: what a run whose metrics compare keys only within a
// document needs (the exact, rank and rprec kernels), without the merge of the ranges' strings and
// phrases (design note 61). Every number such a run gives is the same either way.
enum class PhraseIds { kCorpus, kPerRange };
// BuildCorpus's choice of PhraseIds, asked once, before its documents are built, when the build could
// have two ranges or more (two threads, or more documents than a range takes: then kPerRange also cuts
// each thread's documents into ranges of a bounded size, design note 70): a caller can learn there what
// the corpus will be used for. Null: kCorpus. (kplab eval no longer builds a kPerRange corpus: a run whose
// metrics all compare within a document streams its documents instead, StreamCorpus, design note 72.)
using ChoosePhraseIds = std::function<PhraseIds()>;

class Corpus {
 public:
  Profile profile;
  Lexicon lex;
  PhraseArena arena;           // the phrases' surfaces and ids, the keyphrases' alternative keys
  std::deque<Phrase> phrases;  // stable addresses
  PhraseIds phrase_ids = PhraseIds::kCorpus;       // kPerRange: phrases holds each range's, one after another
  std::vector<std::deque<KeyphraseExtra>> extras;  // Keyphrase::extra, stable addresses
  // Per phrase id, the stems joined by the profile's dedup_join, when that is not ' ' (DedupKey).
  std::vector<TokenId> dedup_keys;
  std::vector<std::deque<TokenProbs>> token_probs;  // KeyphraseExtra::probs, stable addresses
  std::vector<std::deque<DocumentSource>> sources;  // Document::source, stable addresses
  std::vector<Document> docs;
  // The addresses of the documents' mixed lists and repeats (Document::pred_view, ref_view,
  // pred_view_dups), one block per range of documents built together.
  std::vector<std::vector<const Keyphrase*>> view_blocks;
  std::string dataset_name, dataset_path, dataset_format, dataset_hash;
  std::string predictions_path, predictions_hash;
  bool has_predictions = false;
  bool refs_stemmed = false;           // some document's references were matched as given
  std::vector<std::string> warnings;   // one line each, for the user (e.g. stemmed SemEval gold)

  // Is the stem sequence a contiguous run inside the document's source (within one section unless the
  // profile allows matches across sections)? Empty sequences are never present.
  bool IsPresent(const Document& doc, std::span<const TokenId> stems) const {
    return FirstOccurrence(doc, stems).has_value();
  }
  // The source token index where the earliest such run starts (std::nullopt when not present).
  std::optional<std::size_t> FirstOccurrence(const Document& doc, std::span<const TokenId> stems) const;
  Prmu Classify(const Document& doc, const Keyphrase& kp) const;
  std::string_view Str(TokenId id) const { return lex.Str(id); }
  // The id of p's stems joined by the profile's dedup_join: what dedup compares (its key when the
  // join is ' ').
  TokenId DedupKey(const Phrase& p) const { return dedup_keys.empty() ? p.key : dedup_keys[p.id]; }
};

// For code that reads phrases across documents (by phrase id or key id: the embedding plan,
// homogeneity): throws std::logic_error, naming who, when the corpus's ids are per range (a bug of the
// caller: kplab eval builds such a corpus only for metrics that compare within a document).
inline void RequireCorpusIds(const Corpus& corpus, std::string_view who) {
  if (corpus.phrase_ids != PhraseIds::kCorpus) {
    throw std::logic_error(std::string(who) +
                           ": needs a corpus whose phrase ids name one string across documents "
                           "(PhraseIds::kCorpus)");
  }
}

// KPEval's reference lists (uclanlp/KPEval metrics/rouge_metric.py; bert_score_metric.py and
// mover_score_metric.py join the same lists into strings): the references before dedup
// (Document::ref_view_dups, repeats and their own surfaces kept) zipped with the presence flags of the
// deduplicated ones (Document::refs) — reference i of the line takes unique reference i's flag, so a line
// that repeats a reference has its flags shifted from the repeat on and its last references dropped (one
// for each repeat). A line without a repeat gives each unique reference with its own flag. Without text
// every reference is absent (KPEval run with an empty source). The addresses point into the corpus.
struct KpevalReferences {
  std::vector<const Keyphrase*> present, absent;
};
KpevalReferences KpevalReferenceLists(const Document& doc);

// Normalizes a dataset and (optionally) aligned predictions under a profile. Predictions must already be
// aligned (AlignPredictions). Errors: invalid profile options.
// threads: documents are built in that many contiguous blocks at once (0 = one per core, at most 8, one
// for a few thousand documents), a range each, or with PhraseIds::kPerRange ranges of a bounded size
// built in turn; with kCorpus the corpus is the same for every count, ids included; with kPerRange its
// documents and their keyphrases' strings are (choose_ids).
Result<Corpus> BuildCorpus(const RawDataset& dataset, const RawPredictions* predictions, const Profile& profile,
                           int threads = 0, const ChoosePhraseIds& choose_ids = nullptr);
// The same corpus from an import the caller gives up: each document's raw text is freed as soon as it
// is built, so the peak memory is not the import and the corpus in full side by side. The import is
// left without documents (its path, name, format, hash and files stay).
Result<Corpus> BuildCorpus(RawDataset&& dataset, std::optional<RawPredictions>&& predictions, const Profile& profile,
                           int threads = 0, const ChoosePhraseIds& choose_ids = nullptr);

// The same corpus from documents read a line at a time by the threads that build them: the import is
// never held, and the lines' memory goes back to the system in whole 2 MiB extents as the documents are
// built (LineDocuments::Release).
Result<Corpus> BuildCorpus(LineDocuments&& documents, const Profile& profile, int threads = 0,
                           const ChoosePhraseIds& choose_ids = nullptr);

// A streamed build (StreamCorpus, design note 72): for a run whose metrics compare keys only within a
// document (the exact, rank and rprec kernels), each range of documents is handed to the caller as soon
// as it is built and freed after: no corpus is kept, and the next range reuses the memory.
struct StreamPlan {
  std::span<const std::size_t> starts;  // range r is documents [starts[r], starts[r + 1]); the last: their count
  bool any_text = false;                // some document has source text (Document::has_text)
};
struct CorpusSinks {
  // Once, before any document is built: the corpus's header (its names, hashes, profile and
  // refs_stemmed; no documents, strings or phrases) and the plan of the build. An error stops the build
  // and is its result.
  std::function<Status(std::shared_ptr<const Corpus> header, const StreamPlan& plan)> start;
  // Each range once it is built, on the thread that built it (the threads' ranges at once): a corpus of
  // the range's documents alone, range.docs[i] being document begin + i, valid during the call. Its
  // documents read as BuildCorpus's (the same keyphrases, strings, flags, presence and views); its ids
  // are its own (PhraseIds::kPerRange).
  std::function<void(const Corpus& range, std::size_t begin)> range;
};

// What a streamed build keeps of its corpus.
struct StreamedCorpus {
  std::shared_ptr<const Corpus> header;  // as CorpusSinks::start saw it
  // Document::id of every document, in order; left empty when the ids are the documents' numbers 1 to
  // numbered_ids (a line dataset's: DocIds::Numbered).
  std::vector<std::string> doc_ids;
  std::size_t numbered_ids = 0;
  std::vector<std::string> warnings;     // what BuildCorpus puts in Corpus::warnings
};

// The documents BuildCorpus with PhraseIds::kPerRange builds, in the same ranges on the same threads,
// handed to sinks.range one range at a time. Errors: BuildCorpus's, or sinks.start's.
Result<StreamedCorpus> StreamCorpus(LineDocuments&& documents, const Profile& profile, int threads,
                                    const CorpusSinks& sinks);
Result<StreamedCorpus> StreamCorpus(RawDataset&& dataset, std::optional<RawPredictions>&& predictions,
                                    const Profile& profile, int threads, const CorpusSinks& sinks);

// Attaches source text to a dataset whose release has keyphrases only (KP20k): line i of the file
// becomes the text of document i ("title <eos> abstract"); later documents stay without text.
Status AttachSources(RawDataset& dataset, const std::string& path);

}  // namespace kplab
