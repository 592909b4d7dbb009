// String interning: every distinct token, stem and stem key of a corpus gets a dense 32-bit id, so
// matching compares integers and stemming is memoized per id.
// Threads: not thread-safe for Intern(); Str()/Find() are safe to call concurrently when no Intern() runs.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kplab {

using TokenId = std::uint32_t;
inline constexpr TokenId kNoToken = 0xFFFFFFFFu;

class Lexicon {
 public:
  Lexicon();
  ~Lexicon();
  Lexicon(Lexicon&&) noexcept;
  Lexicon& operator=(Lexicon&&) noexcept;

  TokenId Intern(std::string_view s);
  // The same, with s's hash (Hash) given.
  TokenId Intern(std::string_view s, std::uint64_t hash) { return Add(s, true, hash); }
  // Intern, but a new string is not copied: its bytes must stay where they are, unchanged, as long as
  // the lexicon is used (a phrase's surface in the corpus's arena, whose key is often the same text;
  // the chunks of a lexicon this one adopted).
  TokenId InternStable(std::string_view s);
  // The same, with s's hash (Hash) given, and a hint to start loading the table slot a later
  // InternStable(s, hash) reads: a merge of millions of new strings hides each slot's cache miss
  // behind the ones before it.
  static std::uint64_t Hash(std::string_view s);
  void Prefetch(std::string_view s, std::uint64_t hash) const;
  TokenId InternStable(std::string_view s, std::uint64_t hash);
  // Intern(s, hash), InternStable(s, hash) and Prefetch(s, hash) of a string the caller knows holds a
  // space (a key of two or more words, joined by ' '): the string's table (Table) is chosen without
  // reading s again. The caller must be right: a string without a space given here would get a second
  // id (debug builds assert; PhraseIds.EveryStringOfACorpusHasOneId checks the corpus builder's calls).
  TokenId InternWords(std::string_view s, std::uint64_t hash) { return Add(s, true, hash, kWords); }
  TokenId InternStableWords(std::string_view s, std::uint64_t hash) {
    return Add(s, s.size() >= kLongString, hash, kWords);
  }
  void PrefetchWords(std::uint64_t hash) const;
  std::optional<TokenId> Find(std::string_view s) const;
  // Sizes the index of a lexicon that holds no string yet for about `words` strings without a space
  // and `phrases` with one, so that it does not grow on the way there (a hint: it grows past them as
  // before, and a lexicon that holds strings keeps its index as it is).
  void Reserve(std::size_t words, std::size_t phrases);
  std::string_view Str(TokenId id) const { return Unpack(strings_[id]); }
  // String id as eight bytes (its address and length) that Unpack reads back without the lexicon's
  // table of strings: a caller that keeps a string's id beside it (the corpus builder's token table)
  // reads the string without another cache miss. Valid while the string's bytes are.
  std::uint64_t Packed(TokenId id) const { return strings_[id]; }
  static std::string_view Unpack(std::uint64_t v) {
    const char* p = reinterpret_cast<const char*>(static_cast<std::uintptr_t>(v >> 16));
    std::size_t n = v & kLongString;
    if (n == kLongString) std::memcpy(&n, p - sizeof n, sizeof n);  // a long string: its length is before it
    return {p, n};
  }
  std::size_t size() const { return strings_.size(); }
  // Takes over other's string bytes (not its ids): its strings stay readable where they are for as long
  // as this lexicon lives, so a merge can InternStable them instead of copying.
  void AdoptBytes(Lexicon& other);
  // Appends other's strings after this one's, unindexed: other's id i becomes the returned base + i and
  // its bytes stay where they are (adopted). Ids stay unique and Str() reads every one, but a string may
  // now have two ids, and Intern, InternStable and Find could not see other's strings: from then on they
  // throw std::logic_error rather than answer, and the index of this lexicon's own strings is freed.
  // For a corpus whose ids are per range of documents (PhraseIds::kPerRange in kplab/corpus.h), whose
  // lexicon nothing looks strings up in once it is built.
  TokenId AppendUnindexed(Lexicon&& other);
  // Takes from's index, emptied (its tables' sizes and memory kept), for this lexicon, which must hold
  // no string yet (else std::logic_error); from keeps its strings, unindexed (as after AppendUnindexed:
  // Intern, InternStable and Find throw). A corpus builder's next range of documents on one thread
  // interns into the tables its previous range grew (design note 71).
  void TakeIndex(Lexicon& from);
  // Whether every string is indexed (no AppendUnindexed), so that Intern and Find may be called.
  bool indexed() const { return indexed_; }

 private:
  static constexpr std::uint64_t kLongString = 0xFFFF;
  // Add's table: the one s's bytes choose (Table::For), or the one of strings with a space (kWords).
  enum Which : std::uint8_t { kBySpace, kWords };
  TokenId Add(std::string_view s, bool copy, std::uint64_t hash, Which which = kBySpace);
  char* Take(std::size_t bytes, bool phrase);
  [[gnu::noinline]] void NewChunk(std::size_t bytes, bool phrase);
  struct Table;
  std::unique_ptr<Table> table_;
  std::vector<std::unique_ptr<char[]>> chunks_;  // string bytes, stable addresses
  // Where the next string's bytes go: strings with a space (multi-word keys) and the rest (tokens,
  // stems) in chunks of their own, as in the index (Table), so that the words' bytes stay together.
  char* chunk_pos_[2] = {nullptr, nullptr};
  std::size_t chunk_left_[2] = {0, 0};
  // Each string as its address (48 bits: user-space addresses) and length (16 bits; 0xFFFF: stored
  // before the bytes): eight bytes a string rather than a view's sixteen, for millions of keys.
  std::vector<std::uint64_t> strings_;
  bool indexed_ = true;  // false after AppendUnindexed
};

}  // namespace kplab
