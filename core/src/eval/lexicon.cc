#include "kplab/lexicon.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "eval/slot_table.h"

namespace kplab {

// Two tables, chosen by the string alone: strings with a space (multi-word stem keys) in one, the rest
// (tokens, stems, one-word keys) in the other. A string is in exactly one, so equal strings still get
// one id, and ids are still handed out in Intern order. The split is for the cache: a million
// documents' corpus holds millions of keys but some hundred thousand words, and every token of a new
// phrase is looked up; in a table of their own the words' slots stay cached instead of being spread
// over a table sized for the keys.
struct Lexicon::Table {
  eval_internal::SlotTable words, phrases;
  eval_internal::SlotTable& For(std::string_view s) { return HasSpace(s) ? phrases : words; }
  // Eight bytes at a time (the strings are short: a library search cost more in its call): a space
  // is a zero byte of w ^ 0x20..., which the borrow trick marks exactly at the lowest one.
  static bool HasSpace(std::string_view s) {
    constexpr std::uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
    const char* p = s.data();
    std::size_t i = 0;
    auto space_in = [&](std::size_t at) {
      std::uint64_t w;
      std::memcpy(&w, p + at, 8);
      w ^= kOnes * ' ';
      return ((w - kOnes) & ~w & kHigh) != 0;
    };
    for (; i + 8 <= s.size(); i += 8) {
      if (space_in(i)) return true;
    }
    if (i < s.size() && s.size() >= 8) return space_in(s.size() - 8);  // the last 1-7 bytes, overlapped
    for (; i < s.size(); ++i) {
      if (p[i] == ' ') return true;
    }
    return false;
  }
};

Lexicon::Lexicon() : table_(std::make_unique<Table>()) {}

void Lexicon::Reserve(std::size_t words, std::size_t phrases) {
  if (!strings_.empty() || !indexed_) return;
  table_->words.Reserve(words);
  table_->phrases.Reserve(phrases);
}
Lexicon::~Lexicon() = default;
Lexicon::Lexicon(Lexicon&&) noexcept = default;
Lexicon& Lexicon::operator=(Lexicon&&) noexcept = default;

namespace {
[[noreturn]] void RefuseLookup() {
  throw std::logic_error("Lexicon: a string looked up in a lexicon with unindexed strings (AppendUnindexed)");
}
}  // namespace

std::optional<TokenId> Lexicon::Find(std::string_view s) const {
  if (!indexed_) RefuseLookup();
  bool found = false;
  const eval_internal::SlotTable& slots = table_->For(s);
  const std::size_t pos = slots.Probe(eval_internal::HashBytes(s), [&](std::uint32_t id) { return Str(id) == s; }, &found);
  if (!found) return std::nullopt;
  return eval_internal::SlotTable::Index(slots.At(pos));
}

TokenId Lexicon::Intern(std::string_view s) { return Add(s, true, eval_internal::HashBytes(s)); }
TokenId Lexicon::InternStable(std::string_view s) { return InternStable(s, eval_internal::HashBytes(s)); }
TokenId Lexicon::InternStable(std::string_view s, std::uint64_t hash) { return Add(s, s.size() >= kLongString, hash); }
std::uint64_t Lexicon::Hash(std::string_view s) { return eval_internal::HashBytes(s); }
void Lexicon::Prefetch(std::string_view s, std::uint64_t hash) const { table_->For(s).Prefetch(hash); }
void Lexicon::PrefetchWords(std::uint64_t hash) const { table_->phrases.Prefetch(hash); }

// Strings live in large chunks (stable addresses, one allocation per 64 KiB). Inlined in Add, once per
// new string; a new chunk is NewChunk's.
inline char* Lexicon::Take(std::size_t bytes, bool phrase) {
  char*& pos = chunk_pos_[phrase];
  std::size_t& left = chunk_left_[phrase];
  if (left < bytes) NewChunk(bytes, phrase);
  char* out = pos;
  pos += bytes;
  left -= bytes;
  return out;
}

void Lexicon::NewChunk(std::size_t bytes, bool phrase) {
  const std::size_t size = std::max<std::size_t>(64 * 1024, bytes);
  chunks_.push_back(std::make_unique_for_overwrite<char[]>(size));  // every byte is written before it is read
  chunk_pos_[phrase] = chunks_.back().get();
  chunk_left_[phrase] = size;
}

TokenId Lexicon::Add(std::string_view s, bool copy, std::uint64_t h, Which which) {
  if (!indexed_) RefuseLookup();
  assert(which == kBySpace || Table::HasSpace(s));  // InternWords: the caller's word
  const bool phrase = which == kWords || Table::HasSpace(s);
  auto& slots = phrase ? table_->phrases : table_->words;
  bool found = false;
  const std::size_t pos = slots.Probe(h, [&](std::uint32_t id) { return Str(id) == s; }, &found);
  if (found) return eval_internal::SlotTable::Index(slots.At(pos));
  const TokenId id = static_cast<TokenId>(strings_.size());
  const char* bytes = s.data();
  const bool long_string = s.size() >= kLongString;
  if (copy) {
    const std::size_t prefix = long_string ? sizeof(std::size_t) : 0;
    char* dst = Take(prefix + s.size() + 1, phrase);
    if (long_string) {
      const std::size_t n = s.size();
      std::memcpy(dst, &n, sizeof n);
    }
    std::memcpy(dst + prefix, s.data(), s.size());
    dst[prefix + s.size()] = '\0';
    bytes = dst + prefix;
  }
  const auto address = reinterpret_cast<std::uintptr_t>(bytes);
  if ((static_cast<std::uint64_t>(address) >> 48) != 0) throw std::length_error("Lexicon: an address beyond 48 bits");
  strings_.push_back((static_cast<std::uint64_t>(address) << 16) | (long_string ? kLongString : s.size()));
  slots.Fill(pos, h, id);
  return id;
}

TokenId Lexicon::AppendUnindexed(Lexicon&& other) {
  const std::size_t base = strings_.size();
  if (base + other.strings_.size() > kNoToken) throw std::length_error("Lexicon: more than 2^32 - 1 strings");
  AdoptBytes(other);
  strings_.insert(strings_.end(), other.strings_.begin(), other.strings_.end());
  other.strings_ = {};
  indexed_ = false;
  // Nothing looks a string up from now on (Add and Find refuse), so the index goes: at a million
  // documents its slots were 32 MB held through the metrics. An empty one stays for Prefetch.
  table_ = std::make_unique<Table>();
  return static_cast<TokenId>(base);
}

void Lexicon::TakeIndex(Lexicon& from) {
  if (!strings_.empty()) throw std::logic_error("Lexicon::TakeIndex: into a lexicon that holds strings");
  if (!indexed_) throw std::logic_error("Lexicon::TakeIndex: into an unindexed lexicon (AppendUnindexed)");
  if (&from == this) return;
  from.table_->words.Clear();
  from.table_->phrases.Clear();
  table_ = std::exchange(from.table_, std::make_unique<Table>());
  from.indexed_ = false;
}

void Lexicon::AdoptBytes(Lexicon& other) {
  for (auto& c : other.chunks_) chunks_.push_back(std::move(c));
  other.chunks_.clear();
  for (int k = 0; k < 2; ++k) {
    other.chunk_pos_[k] = nullptr;
    other.chunk_left_[k] = 0;
  }
}

}  // namespace kplab
