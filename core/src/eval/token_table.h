// The corpus builder's table of the distinct tokens it met (eval/corpus.cc), keyed by the token's
// bytes: open addressing over 32-byte entries, each with 16 bits of the token's hash, its length, a
// pointer to its bytes (the lexicon's copy, which stays put), its lexicon id and, once asked, its
// stem's id and string (Lexicon::Packed), so that a token met again is one probe and one compare of
// its bytes, not a lexicon look-up, a stem memo and a third look-up for the stem's string. It replaced
// a direct-mapped cache of 16K slots (tokens under 12 bytes) in front of the lexicon, whose conflict
// misses and long tokens took the lexicon path again for every tenth token. It remembers only what
// the caller gave it, so ids come out as without it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

#include "kplab/lexicon.h"
#include "slot_table.h"

namespace kplab::eval_internal {

// Are the n bytes at a and b the same? Inline for the short strings tokens and pieces are (a library
// memcmp call costs more than the compare): 8 bytes at a time, the last 8 overlapping, or two
// overlapping 4-byte halves, or byte by byte below 4.
[[gnu::always_inline]] inline bool SameBytes(const char* a, const char* b, std::size_t n) {
  if (n >= 8) {
    std::uint64_t x, y;
    for (std::size_t i = 0; i + 8 < n; i += 8) {
      std::memcpy(&x, a + i, 8);
      std::memcpy(&y, b + i, 8);
      if (x != y) return false;
    }
    std::memcpy(&x, a + n - 8, 8);
    std::memcpy(&y, b + n - 8, 8);
    return x == y;
  }
  if (n >= 4) {
    std::uint32_t x0, y0, x1, y1;
    std::memcpy(&x0, a, 4);
    std::memcpy(&y0, b, 4);
    std::memcpy(&x1, a + n - 4, 4);
    std::memcpy(&y1, b + n - 4, 4);
    return x0 == y0 && x1 == y1;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

// Copies n bytes from src to dst without a library call for the short strings stems are, reading and
// writing only [src, src + n) and [dst, dst + n) (the copies' words overlap instead).
inline void CopyBytes(char* dst, const char* src, std::size_t n) {
  if (n >= 8) {
    std::uint64_t x;
    for (std::size_t i = 0; i + 8 < n; i += 8) {
      std::memcpy(&x, src + i, 8);
      std::memcpy(dst + i, &x, 8);
    }
    std::memcpy(&x, src + n - 8, 8);
    std::memcpy(dst + n - 8, &x, 8);
  } else if (n >= 4) {
    std::uint32_t x0, x1;
    std::memcpy(&x0, src, 4);
    std::memcpy(&x1, src + n - 4, 4);
    std::memcpy(dst, &x0, 4);
    std::memcpy(dst + n - 4, &x1, 4);
  } else {
    for (std::size_t i = 0; i < n; ++i) dst[i] = src[i];
  }
}

class TokenTable {
 public:
  struct Entry {
    std::uint16_t hash_tag = 0;   // 16 bits of the token's hash (a probe compares bytes only on a match)
    std::uint16_t flags = 0;      // the caller's, per token
    std::uint32_t size = 0;       // the token's length in bytes
    const char* bytes = nullptr;  // the token's bytes, kept alive by the caller; null: a free slot
    TokenId token = kNoToken;
    TokenId stem = kNoToken;     // kNoToken until the caller asks for the stem
    std::uint64_t stem_str = 0;  // the caller's, with the stem (the corpus builder: Lexicon::Packed)
    std::string_view view() const { return {bytes, size}; }
  };
  static_assert(sizeof(Entry) == 32);

  // hash: the function of a token's bytes the table's entries are placed by (equal bytes, equal
  // hashes); the table calls it only to place its entries again when it grows (an entry keeps 16 bits
  // of the hash, not its home slot). HashBytes unless a test needs another.
  using HashFn = std::uint64_t (*)(std::string_view);
  explicit TokenTable(HashFn hash = &HashOf) : hash_(hash) {}

  // The entry of token t, whose hash is hash (the table's HashFn of t). A token met for the first
  // time gets a new entry, which make(entry) must fill: bytes (with t's bytes, at an address that
  // outlives the table; may be null for the empty token) and token. The reference is valid until the
  // next call (the table may grow then).
  template <typename Make>
  Entry& Get(std::string_view t, std::uint64_t hash, const Make& make) {
    const auto hi = static_cast<std::uint32_t>(hash >> 32);
    const auto tag = static_cast<std::uint16_t>(hash);
    std::size_t mask = size_ - 1;
    for (std::size_t i = hi & mask;; i = (i + 1) & mask) {
      Entry& e = slots_[i];
      if (e.bytes == nullptr) {
        if ((used_ + 1) * 10 > size_ * 7) {  // over 70% full: double, then find the free slot again
          Grow();
          mask = size_ - 1;
          i = hi & mask;
          while (slots_[i].bytes != nullptr) i = (i + 1) & mask;
        }
        Entry& fresh = slots_[i];
        fresh.hash_tag = tag;
        fresh.size = static_cast<std::uint32_t>(t.size());
        make(fresh);
        if (fresh.bytes == nullptr) fresh.bytes = "";  // an empty token given no address: still in use
        ++used_;
        return fresh;
      }
      if (e.hash_tag == tag && e.size == t.size() && SameBytes(e.bytes, t.data(), t.size())) return e;
    }
  }
  std::size_t size() const { return used_; }
  // SlotTable::Reserve's, for this table: an empty table ready for about `entries` tokens.
  void Reserve(std::size_t entries) {
    const std::size_t slots = SlotTable::SlotsFor(entries);
    if (used_ != 0 || slots <= size_) return;
    slots_ = std::make_unique<Entry[]>(slots);
    size_ = slots;
  }

 private:
  void Grow() {
    std::unique_ptr<Entry[]> old = std::move(slots_);
    const std::size_t old_size = size_;
    size_ *= 2;
    slots_ = std::make_unique<Entry[]>(size_);
    const std::size_t mask = size_ - 1;
    for (std::size_t k = 0; k < old_size; ++k) {
      if (old[k].bytes == nullptr) continue;
      std::size_t i = static_cast<std::size_t>(hash_(old[k].view()) >> 32) & mask;
      while (slots_[i].bytes != nullptr) i = (i + 1) & mask;
      slots_[i] = old[k];
    }
  }

  static std::uint64_t HashOf(std::string_view t) { return HashBytes(t); }
  HashFn hash_;
  std::size_t size_ = 1024, used_ = 0;
  std::unique_ptr<Entry[]> slots_ = std::make_unique<Entry[]>(1024);
};

}  // namespace kplab::eval_internal
